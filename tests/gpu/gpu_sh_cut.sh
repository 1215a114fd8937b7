#!/usr/bin/env bash
# bench/gpu.sh cut by the caller's time limit, on the CPU: a device call is a few minutes of
# a rare GPU, so a stage that hangs, or is cut, must leave nothing running and still write what
# it measured. Test doubles stand in for the GPU machine's programs (a python3 that says a GPU
# is there, gpu_tests, lockstep), each of the slow ones a `sleep` with a number of its own, so
# that what outlived the stage can be counted:
#   1. anchors cut inside flops' $(...): no process left, the report says no row was measured;
#   2. anchors cut in its third anchor run (a hung one): the two rows measured are a table;
#   3. tests cut inside gpu_e2e.sh (its lockstep run, a child of the e2e script): no process
#      left, the Tests line names gpu_tests' result and gpu_e2e's passes so far;
#   4. a probe pipeline (gpu_probe | tee) cut: nothing left;
#   5. rows a KILLed call left untabled become a table of their own in the next call.
#   gpu_sh_cut.sh LOCKSTEP MPIEXEC WORKDIR   (LOCKSTEP, MPIEXEC unused: doubles stand in)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)  # before common.sh changes directory
source "$ROOT/tests/e2e/common.sh" "$@"
REAL_PY=$(command -v "$PYTHON")  # resolved before the doubles come first on PATH
mkdir -p bin
# python3: a GPU is there; gpu_report.py is the real one; data is a touched file; the flops
# count answers at once unless FAKE_FLOPS_HANG; the anchor's first FAKE_ANCHOR_OK runs print
# their JSON and the next hangs; the probe hangs.
cat >bin/python3 <<EOF
#!/usr/bin/env bash
case "\$*" in
  *is_available*) exit 0 ;;
  *get_device_name*) echo "Fake GPU"; exit 0 ;;
  *torch.__version__*) echo "torch fake"; exit 0 ;;
  *gpu_report.py*) exec "$REAL_PY" "\$@" ;;
  *gpu_data.py*) touch "\$2"; exit 0 ;;
  *gpu_probe.py*) exec sleep 9701 ;;
  *gpu_anchor.py*)
    n=\$(cat "$WORK/anchor-count" 2>/dev/null || echo 0); echo \$((n + 1)) >"$WORK/anchor-count"
    [ "\$n" -lt "\${FAKE_ANCHOR_OK:-0}" ] || exec sleep 9702
    t=\$(date +%s); echo "{\"samples_per_s\": \$((1000 + n)), \"flops_per_sample\": 1e6, \"t_start\": \$t, \"t_end\": \$t}"; exit 0 ;;
  "- "*) [ -z "\${FAKE_FLOPS_HANG:-}" ] || exec sleep 9703; echo 1000000; exit 0 ;;
  *) echo "fake python3: unexpected \$*" >&2; exit 3 ;;
esac
EOF
# gpu_tests: two passes; lockstep: shard succeeds, train hangs (gpu_e2e.sh's first run).
cat >bin/gpu_tests <<'EOF'
#!/usr/bin/env bash
echo "[       OK ] Fake.One (1 ms)"; echo "[       OK ] Fake.Two (1 ms)"
EOF
cat >bin/lockstep <<'EOF'
#!/usr/bin/env bash
case "$1" in shard) exit 0 ;; train) exec sleep 9704 ;; --version) echo "lockstep fake"; exit 0 ;; esac
exit 3
EOF
cat >bin/nvidia-smi <<'EOF'
#!/usr/bin/env bash
exit 1
EOF
chmod +x bin/*
export PATH=$WORK/bin:$PATH LOCKSTEP_PYTHON=$WORK/bin/python3 GPU_WORK=$WORK/gpuwork

left() { pgrep -f "sleep 970[0-9]" || true; }  # what outlived a stage: the doubles' sleeps
trap 'pkill -f "sleep 970[0-9]" || true' EXIT  # a failed check leaves none behind either
gpu_sh() {  # gpu_sh LIMIT STAGE: bench/gpu.sh under the caller's timeout, as docs/gpu.md runs it
  local rc=0
  timeout -k 15 "$1" bash "$ROOT/bench/gpu.sh" "$2" >"$WORK/out.txt" 2>&1 || rc=$?
  sleep 0.5
  echo "$rc"
}

# 1. cut inside $(flops ...): a subshell's limit, which on_term's own stop never sees.
export GPU_REPORT_DIR=$WORK/rep1
rc=$(FAKE_FLOPS_HANG=1 gpu_sh 6 anchors)
[ "$rc" = 124 ] || fail "anchors cut in flops: exit $rc, expected 124: $(cat out.txt)"
[ -z "$(left)" ] || fail "processes outlived a stage cut in \$(flops ...): $(left)"
grep -q '^Stage anchors cut at its time limit with no table row measured.$' rep1/gpu-report.md ||
  fail "report of a stage cut before any row: $(cat rep1/gpu-report.md)"
grep -q '^#### bench/gpu.sh anchors, ' rep1/gpu-report.md || fail "no stage heading: $(cat rep1/gpu-report.md)"
pass "a stage cut inside \$(flops ...) leaves no process and says no row was measured"

# 2. cut in a hung anchor run after two rows: they are a table, the hung run is gone.
export GPU_REPORT_DIR=$WORK/rep2
rm -f anchor-count
rc=$(FAKE_ANCHOR_OK=2 gpu_sh 8 anchors)
[ "$rc" = 124 ] || fail "anchors cut in a run: exit $rc: $(cat out.txt)"
[ -z "$(left)" ] || fail "processes outlived a stage cut in an anchor run: $(left)"
grep -q '^### Rows measured before the stage was cut at its time limit$' rep2/gpu-report.md ||
  fail "the rows measured were not tabled: $(cat rep2/gpu-report.md)"
[ "$(grep -c '^| pytorch r18-bf16-' rep2/gpu-report.md)" = 2 ] || fail "two rows expected: $(cat rep2/gpu-report.md)"
pass "a stage cut in a hung run tables the rows it measured, and the run is gone"

# 3. the tests stage cut inside gpu_e2e.sh's lockstep run (a grandchild of the limit).
export GPU_REPORT_DIR=$WORK/rep3
rc=$(gpu_sh 8 tests)
[ "$rc" = 124 ] || fail "tests cut: exit $rc: $(cat out.txt)"
[ -z "$(left)" ] || fail "gpu_e2e's lockstep outlived the stage: $(left)"
grep -q "^Tests (cut at the stage's time limit): gpu_tests passed (2, 0 skipped)\.$" rep3/gpu-report.md ||
  fail "the cut tests stage's line: $(cat rep3/gpu-report.md)"
pass "a tests stage cut in gpu_e2e.sh leaves no lockstep run and writes its Tests line"

# 4. probe: gpu_probe.py's limit sits in a pipeline (| tee).
export GPU_REPORT_DIR=$WORK/rep4
rc=$(gpu_sh 5 probe)
[ "$rc" = 124 ] || fail "probe cut: exit $rc: $(cat out.txt)"
[ -z "$(left)" ] || fail "processes outlived a probe cut in its pipeline: $(left)"
pass "a probe stage cut inside its pipeline leaves no process"

# 5. a KILLed call's rows (no on_term ran): the next call tables them first.
export GPU_REPORT_DIR=$WORK/rep5
mkdir -p rep5
t=$(date +%s)
echo "{\"samples_per_s\": 5, \"flops_per_sample\": 1, \"t_start\": $t, \"t_end\": $t}" >a.json
"$REAL_PY" "$ROOT/bench/gpu_report.py" pytorch "pytorch leftover" a.json /dev/null fp32 cpu >rep5/gpu-report.md.rows
echo "- leftover: an operator profile" >rep5/gpu-report.md.ops
rc=$(FAKE_FLOPS_HANG=1 gpu_sh 5 anchors)
grep -q '^### Rows of an earlier call, killed before its table$' rep5/gpu-report.md &&
  grep -q '^| pytorch leftover |' rep5/gpu-report.md && grep -q '^- leftover: an operator profile$' rep5/gpu-report.md ||
  fail "a killed call's rows: $(cat rep5/gpu-report.md)"
pass "rows a killed call left become a table of their own in the next call"
echo "gpu.sh cut: all passed"
