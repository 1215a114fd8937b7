#!/usr/bin/env bash
# At scale, see every rank: the per-rank step breakdown and the straggler warning (one
# rank slowed on purpose), the flight recorder's cross-rank diagnosis when one rank stops
# answering (watchdog) and on SIGUSR2 (the job goes on).
source "$(dirname "$0")/common.sh" "$@"
make_slice fm 3000 2

# 1. Rank 1 sleeps 60 ms every step: named as the straggler, rows carry every rank's spread.
expect_rc 0 run_mpi 2 train --data fm --epochs 1 --batch-size 32 --log-every 5 --run-dir slow \
  --debug.fault slow --debug.fault-rank 1 --debug.slow-ms 60
expect_output "ranks: busy min/median/max [0-9.]+/[0-9.]+/[0-9.]+ ms/step, exposed comm [0-9./]+, slowest rank 1@"
expect_output "warning: straggler: rank 1 \(.*\) has been the slowest rank for 3 log windows: busy [0-9.]+ ms/step vs a median of"
[ "$(grep -c 'warning: straggler' out.txt)" = 1 ] || fail "the straggler warning should come once per streak"
"$PYTHON" - slow/metrics.jsonl <<'PY' || fail "per-rank fields of the train rows"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"kind":"train"' in l]
assert rows, "no train rows"
for r in rows:
    for p in ("data_wait", "forward", "backward", "exposed_comm", "optimizer", "busy"):
        assert r[f"{p}_ms_min"] <= r[f"{p}_ms_median"] <= r[f"{p}_ms_max"], (p, r)
assert sum(r["slowest_rank"] == 1 for r in rows) >= len(rows) - 1, [r["slowest_rank"] for r in rows]
assert all(r["busy_ms_max"] > 50 for r in rows[1:]), "the 60 ms sleep is not in rank 1's busy time"
PY
pass "every rank's breakdown in rows and log lines; the slowed rank is named as the straggler"

# 2. Rank 1 stops at step 10: rank 0's watchdog fires, its flight record and the diagnosis
# name the collective it waits in and the rank that left no record.
expect_rc nonzero run_mpi 2 train --data fm --epochs 1 --batch-size 32 --run-dir stall --dist.comm-timeout 6 \
  --debug.fault stall --debug.fault-rank 1 --debug.fault-step 10
expect_output "flight record written to stall/flight/rank-0.json"
expect_output "flight recorder: rank 0 \(.*\) is in collective [0-9]+ \(MPI_Allreduce of gradient bucket [0-9]+/[0-9]+ \([0-9]+ bytes\)\) for [0-9.]+ s"
expect_output "flight recorder: rank\(s\) 1 left no flight record: stopped, killed, or stuck"
"$PYTHON" - stall/flight/rank-0.json <<'PY' || fail "the flight record is not valid"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["rank"] == 0 and d["entries"], d
seqs = [e["seq"] for e in d["entries"]]
assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
assert d["entries"][-1]["state"] == "running", d["entries"][-1]
assert all(e["state"] == "done" for e in d["entries"][:-1])
PY
pass "a stopped rank: the flight recorder says which collective the others wait in and who is missing"

# 3. SIGUSR2 to every rank (what `scancel --signal=USR2 JOB` does): every rank writes its
# record, one diagnosis is logged, and the run goes on.
# mpiexec itself in the background (not run_mpi: $! would be a subshell whose kill leaves the
# job training on, slowing every later test)
# Rank 1's wall clock runs 90 s ahead (hosts whose clocks differ): the records are dated on the
# job's clock, so rank 0 still takes rank 1's as fresh (before: "only rank(s) 0 answered" from
# rank 0 and the same of rank 1 from rank 1, each judging the other's record by its own clock).
command -v faketime >/dev/null || fail "faketime is not installed (.ci/setup installs it)"
cat >skew1.sh <<'SH'
#!/usr/bin/env bash
if [ "${OMPI_COMM_WORLD_RANK:-0}" = 1 ]; then FAKETIME_DONT_FAKE_MONOTONIC=1 exec faketime -f '+90s' "$@"; fi
exec "$@"
SH
chmod +x skew1.sh
timeout 300 "$MPIEXEC" -n 2 ./skew1.sh "$LOCKSTEP" train --data fm --epochs 40 --batch-size 16 --log-every 100 --run-dir usr2 >usr2.txt 2>&1 &
LAUNCHER=$!
for _ in $(seq 1 100); do grep -q "epoch 2/40" usr2.txt 2>/dev/null && break; sleep 0.2; done
pkill -USR2 -f "^$LOCKSTEP train --data fm --epochs 40" || fail "no ranks to signal"
for _ in $(seq 1 50); do [ -f usr2/flight/rank-1.json ] && [ -f usr2/flight/rank-0.json ] && break; sleep 0.2; done
for _ in $(seq 1 100); do  # the diagnosis, and training going on after it
  grep -Eq "flight recorder: rank [01] \(.*\) is " usr2.txt && grep -Eq "epoch [3-9]/40|epoch [1-9][0-9]/40" usr2.txt && break
  sleep 0.2
done
# The same job submitted again while this one runs is refused, and leaves its records alone
# (before: the refused job's start-up removed each rank's record of the live job).
dup=0
timeout 120 "$MPIEXEC" -n 2 "$LOCKSTEP" train --data fm --epochs 40 --batch-size 16 --log-every 100 --run-dir usr2 >usr2dup.txt 2>&1 || dup=$?
[ "$dup" = 2 ] && grep -q "in use by another job" usr2dup.txt || { cat usr2dup.txt; fail "a second job in a live run's directory was not refused"; }
kill -TERM "$LAUNCHER" 2>/dev/null || true   # enough: stop it cleanly (checkpoint, exit)
wait "$LAUNCHER" || true
[ -f usr2/flight/rank-0.json ] && [ -f usr2/flight/rank-1.json ] || { cat usr2.txt usr2dup.txt; fail "SIGUSR2 did not make every rank dump, or the refused job removed the records"; }
grep -Eq "flight recorder: rank [01] \(.*\) is " usr2.txt || { cat usr2.txt; fail "no diagnosis after SIGUSR2"; }
grep -Eq "epoch [3-9]/40|epoch [1-9][0-9]/40" usr2.txt || { cat usr2.txt; fail "the run did not go on after SIGUSR2"; }
grep -q "answered the SIGUSR2 request" usr2.txt && { cat usr2.txt; fail "a rank's fresh record was taken as stale (its host's clock is ahead)"; }
pass "SIGUSR2: every rank's record, one diagnosis, the run goes on (one rank's clock 90 s ahead)"

# Issue 31 (15): SIGUSR2 to one rank only: its record, and no stall claimed (before: the
# healthy rank "in collective ... for 3.1 s" and the other "left no flight record").
timeout 300 "$MPIEXEC" -n 2 "$LOCKSTEP" train --data fm --epochs 40 --batch-size 16 --log-every 100 --run-dir usr2one >usr2one.txt 2>&1 &
LAUNCHER=$!
for _ in $(seq 1 100); do grep -q "epoch 2/40" usr2one.txt 2>/dev/null && break; sleep 0.2; done
pkill -USR2 -n -f "^$LOCKSTEP train --data fm --epochs 40" || fail "no rank to signal"
for _ in $(seq 1 50); do grep -q "answered the SIGUSR2 request" usr2one.txt && break; sleep 0.2; done
kill -TERM "$LAUNCHER" 2>/dev/null || true
wait "$LAUNCHER" || true
grep -Eq "only rank\(s\) [01] answered the SIGUSR2 request" usr2one.txt || { cat usr2one.txt; fail "no honest answer to a one-rank SIGUSR2"; }
grep -Eq "left no flight record|is behind" usr2one.txt && { cat usr2one.txt; fail "a one-rank SIGUSR2 claimed a stall"; }
for _ in $(seq 1 150); do  # the ranks end with their launcher (a few seconds for the stop protocol)
  pgrep -f "^$LOCKSTEP train --data fm --epochs 40" >/dev/null || break
  sleep 0.2
done
pgrep -f "^$LOCKSTEP train --data fm --epochs 40" >/dev/null && fail "a SIGTERM to mpiexec left ranks running 30 s on"
pass "SIGUSR2 to one rank: its record, no stall claimed"

# SIGUSR2 while the job is stuck in start-up (rank 1 stalls before the pre-flight check, as on
# a slow data load; rank 0 waits in the pre-flight collective): answered from each rank's own
# record, and the job lives on (before: the signal's default action killed it, so asking a
# stuck job where it is ended it). The run directory is not locked yet: nothing is written in it.
timeout 120 "$MPIEXEC" -n 2 "$LOCKSTEP" train --data fm --epochs 1 --batch-size 16 --run-dir stuck \
  --dist.comm-timeout 100 --debug.fault stall-start --debug.fault-rank 1 >stuck.txt 2>&1 &
LAUNCHER=$!
for _ in $(seq 1 150); do grep -q "injecting fault 'stall-start'" stuck.txt 2>/dev/null && break; sleep 0.2; done
grep -q "injecting fault 'stall-start'" stuck.txt || { cat stuck.txt; fail "rank 1 never reached its start-up stall"; }
pkill -USR2 -f "^$LOCKSTEP train --data fm --epochs 1 --batch-size 16 --run-dir stuck" || fail "no ranks to signal"
for _ in $(seq 1 50); do [ "$(grep -c "flight recorder: " stuck.txt)" -ge 2 ] && break; sleep 0.2; done
sleep 1
alive=$(pgrep -c -f "^$LOCKSTEP train --data fm --epochs 1 --batch-size 16 --run-dir stuck")
kill -TERM "$LAUNCHER" 2>/dev/null || true
wait "$LAUNCHER" || true
pkill -KILL -f "^$LOCKSTEP train --data fm --epochs 1 --batch-size 16 --run-dir stuck" 2>/dev/null || true
grep -q "flight recorder: " stuck.txt || { cat stuck.txt; fail "SIGUSR2 in start-up gave no diagnosis"; }
[ "$alive" = 2 ] || { cat stuck.txt; fail "SIGUSR2 in start-up ended $((2 - alive)) rank(s)"; }
[ -e stuck/flight ] && fail "a job that never locked its run directory wrote flight records into it"
pass "SIGUSR2 in start-up: answered, the job lives on; refused jobs leave the live job's records alone"

# 4. --trace.steps: a Chrome trace per rank of those steps (phases, every collective,
# checkpoints) and LibTorch's operator profile of them (--trace.ops, on by default), merged by
# `lockstep report --trace` into one timeline with a table. Rank 1's wall clock runs 90 s
# ahead (skew1.sh): its steps, collectives and operators still line up on the job's clock.
expect_rc 0 timeout 300 "$MPIEXEC" -n 2 ./skew1.sh "$LOCKSTEP" train --data fm --epochs 1 --batch-size 32 --run-dir traced \
  --trace.steps 5-8 --ckpt.every 6
expect_output "trace of steps 5-8 written to traced/trace/rank-\*.json"
expect_output "operator profile of steps 5-8 written to traced/trace/ops-rank-\*.json and .txt: 4 step\(s\) in [0-9.]+ ms"
expect_rc 0 "$LOCKSTEP" report --trace traced
expect_output "^\| 0( \(slowest\))? \| 4 \|"
expect_output "^\| 1( \(slowest\))? \| 4 \|"
expect_output "merged 2 rank\(s\) and [0-9]+ operator spans \(--trace.ops\) into traced/trace/merged.json"
"$PYTHON" - traced/trace <<'PY' || fail "the traces are not valid Chrome traces with every rank's spans"
import json, sys
for r in (0, 1):
    ev = json.load(open(f"{sys.argv[1]}/rank-{r}.json"))["traceEvents"]
    spans = [e for e in ev if e["ph"] == "X"]
    assert all(e["pid"] == r and e["dur"] >= 0 and e["ts"] > 1e15 for e in spans), "bad span"
    names = {e["name"] for e in spans if e["cat"] == "step"}
    assert names == {"data", "forward", "backward", "exposed comm", "optimizer"}, names
    steps = {e["args"]["step"] for e in spans if e["cat"] == "step"}
    assert steps == {5, 6, 7, 8}, steps
    assert any(e["cat"] == "collective" and "gradient bucket" in e["name"] for e in spans), "no bucket all-reduce"
    assert any(e["cat"] == "io" and e["name"] == "checkpoint" for e in spans), "no checkpoint span"
merged = json.load(open(f"{sys.argv[1]}/merged.json"))["traceEvents"]
assert {e["pid"] for e in merged} == {0, 1}
# The operator spans sit inside the traced steps' window, on the same (job clock) axis.
for r in (0, 1):
    steps = [e for e in merged if e["pid"] == r and e.get("cat") == "step"]
    ops = [e for e in merged if e["pid"] == r and e.get("cat") == "cpu_op"]
    assert any(e["name"] == "aten::convolution" for e in ops), "no operator spans for rank %d" % r
    lo, hi = min(e["ts"] for e in steps), max(e["ts"] + e["dur"] for e in steps)
    inside = [e for e in ops if lo - 5e4 <= e["ts"] <= hi + 5e4]
    assert len(inside) > 0.9 * len(ops), (r, lo, hi, len(inside), len(ops))
    summary = open(f"{sys.argv[1]}/ops-rank-{r}.txt").read()
    assert "operator profile of steps 5-8, rank %d" % r in summary and "aten::" in summary, summary
PY
# A file an earlier job left in trace/ (a 4-rank job's rank-3, other steps) was merged as a
# rank of this job's timeline; now report merges the newest job's files and names the rest.
"$PYTHON" - traced/trace <<'PY'
import json, sys
t = json.load(open(f"{sys.argv[1]}/rank-1.json"))
t["lockstep"].update(rank=3, world=4, first_step=1, last_step=2, unix_time=t["lockstep"]["unix_time"] - 3600)
for e in t["traceEvents"]:
    e["pid"] = 3
json.dump(t, open(f"{sys.argv[1]}/rank-3.json", "w"))
PY
expect_rc 0 "$LOCKSTEP" report --trace traced
expect_output "merged 2 rank\(s\) and [0-9]+ operator spans"
expect_output "skipped in traced/trace: rank-3.json \(the job of 4 rank\(s\) that traced steps 1-2 from step 1 on\)"
cp traced/trace/rank-0.json traced/trace/rank-0.bak.json  # a copy was merged twice: rank 0's times doubled
expect_rc 0 "$LOCKSTEP" report --trace traced
expect_output "rank-0.bak.json \(not a rank's trace file name: a copy\?\)"
expect_output "merged 2 rank\(s\)"
rm traced/trace/rank-1.json
expect_rc 0 "$LOCKSTEP" report --trace traced
expect_output "only 1 of the job's 2 ranks left a trace"
echo '{"traceEvents": [' >traced/trace/ops-rank-0.json  # a profile cut short: its spans go, the timeline stays
expect_rc 0 "$LOCKSTEP" report --trace traced
expect_output "skipped in traced/trace: .*ops-rank-0.json \("
expect_output "merged 1 rank\(s\) into"
expect_rc 1 "$LOCKSTEP" report --trace nosuchrun
expect_output "nosuchrun: no such run directory"
expect_rc 2 "$LOCKSTEP" train --data fm --epochs 1 --run-dir bad --trace.steps 9-3
expect_output "--trace.steps 9-3: steps count from 1 and A must not exceed B"
pass "--trace.steps: valid Chrome traces of every rank's phases, bucket all-reduces, checkpoints and operators (--trace.ops), merged by report, one job's files only"

# 5. --dist.compress: gradients all-reduced in 16 bits (half the bytes on the wire), the
# run trains like the float32 one, and a bad value is refused naming the option.
# What is behaviour and what is noise: the first 20 steps (one log window) stay within
# rounding of float32 (measured: mean train loss 1.455-1.464 across none/bf16/fp16 and both
# memory formats); after 126 chaotic early steps on this slice the end numbers are noise
# (float32 alone, NCHW vs channels-last: val acc 0.79 / 0.83; the 16-bit runs 0.72-0.82),
# so the end is only checked for "it trained". Accuracy against float32 is measured on the
# full job instead (docs/accuracy.md: within 0.2 pp).
for c in none bf16 fp16; do
  expect_rc 0 run_mpi 2 train --data fm --epochs 3 --batch-size 32 --log-every 20 --run-dir "wire-$c" --dist.compress "$c"
done
expect_output "reduced during backward in float16: [0-9.]+ MB per step"
"$PYTHON" - wire-none wire-bf16 wire-fp16 <<'PY' || fail "compressed runs: wire bytes and training"
import json, sys
end, first = {}, {}
for d in sys.argv[1:]:
    rows = [json.loads(l) for l in open(f"{d}/metrics.jsonl")]
    end[d] = [r for r in rows if r["kind"] == "end"][-1]
    first[d] = [r for r in rows if r["kind"] == "train"][0]
full = end["wire-none"]
assert full["grad_wire_bytes"] == 4 * full["params"], full
for d in ("wire-bf16", "wire-fp16"):
    e = end[d]
    assert 2 * e["grad_wire_bytes"] == full["grad_wire_bytes"], (d, e["grad_wire_bytes"])
    assert first[d]["step"] == first["wire-none"]["step"] == 20, (d, first[d]["step"])
    f16, f32 = first[d]["train_loss"], first["wire-none"]["train_loss"]
    assert abs(f16 - f32) < 0.03 * f32, (d, "first 20 steps", f16, f32)
    assert e["train_loss"] < 0.7 * first[d]["train_loss"], (d, "did not train", e["train_loss"])
    assert e["val_acc"] > 0.6 and e["test_acc"] > 0.6, (d, e["val_acc"], e["test_acc"])
PY
expect_rc 2 "$LOCKSTEP" train --data fm --epochs 1 --run-dir bad --dist.compress int8
expect_output "dist.compress"
pass "--dist.compress bf16|fp16: half the bytes per step, training as with float32; bad values refused"
