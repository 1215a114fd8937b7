#!/usr/bin/env bash
# Issue 11, end to end: right numbers in the rows, honest validation, and a run directory
# that survives hostile conditions — a second job, deletion mid-run, a crash and resume,
# planted links, non-UTF-8 paths, leftover temp files, incompatible resumes, bad values,
# and SIGTERM to mpirun. Every case here failed before the fix.
source "$(dirname "$0")/common.sh" "$@"
make_slice data 1024 2  # 922 train, 102 val, 1024 test: 14 steps/epoch at 2 x 32
COMMON=(--data data --batch-size 32 --lr 0.05)

# check_metrics FILE [FINAL_STEP]: every line is JSON, train rows strictly increase,
# at most one end row, the end row (if FINAL_STEP) at that step and numbers finite.
check_metrics() {
  python3 - "$@" <<'PY'
import json, math, sys
path = sys.argv[1]
rows = [json.loads(l) for l in open(path, encoding="utf-8", errors="strict")]
steps = [r["step"] for r in rows if r["kind"] == "train"]
assert steps == sorted(set(steps)), ("train rows repeat or go backwards", steps)
ends = [r for r in rows if r["kind"] == "end"]
if len(sys.argv) > 2:
    assert len(ends) == 1 and ends[0]["step"] == int(sys.argv[2]), ends
for r in rows:
    for k, v in r.items():
        assert v is not None and (not isinstance(v, float) or math.isfinite(v)), (k, r)
PY
}

# --- numbers ----------------------------------------------------------------------------
# 14 steps, a row every 7: the last window of the run is empty (the loss-nan bug).
expect_rc 0 run_mpi 2 train "${COMMON[@]}" --run-dir smoke --epochs 1 --max-steps 14 --log-every 7
check_metrics smoke/metrics.jsonl 14 || fail "NaN/null in rows when the step count is a multiple of log-every"
grep -q 'loss nan' out.txt && fail "a log line says loss nan"
pass "steps a multiple of --log-every: finite train_loss in epoch and end rows"

# A checkpoint every 3 steps must not change any number (it discarded the log window).
expect_rc 0 run_mpi 2 train "${COMMON[@]}" --run-dir plain --epochs 2 --log-every 5 --model.dropout 0
expect_rc 0 run_mpi 2 train "${COMMON[@]}" --run-dir ckpt3 --epochs 2 --log-every 5 --model.dropout 0 --ckpt-every 3 --keep-last 2
for kind in train epoch end; do
  a=$(json_rows plain/metrics.jsonl $kind train_loss | tr '\n' ' ')
  b=$(json_rows ckpt3/metrics.jsonl $kind train_loss | tr '\n' ' ')
  [ -n "$a" ] && [ "$a" = "$b" ] || fail "$kind rows differ with --ckpt-every: '$a' vs '$b'"
done
pass "--ckpt.every leaves train/epoch/end numbers unchanged"

# Validation on 'val', test once at the end with the best checkpoint's weights.
grep -q "validation at step 14 on 'val' (102 samples)" plain/train.log || fail "validation not on 'val'"
[ "$(json_rows plain/metrics.jsonl test step | wc -l)" = 1 ] || fail "not exactly one test row"
grep -Eq "test at step 28 on 'test' \(1024 samples, the best val_f1 checkpoint, step (14|28)\)" plain/train.log ||
  fail "no test line naming the chosen weights"
[ -n "$(json_rows plain/metrics.jsonl end test_acc)" ] || fail "end row lacks test_acc"
expect_rc 0 run_mpi 2 train "${COMMON[@]}" --run-dir ontest --max-steps 4 --data.val-split test
expect_output "warning: validating on the test split 'test'"
expect_rc 0 run_mpi 2 train "${COMMON[@]}" --run-dir onval --max-steps 4 --data.train-split val
expect_output "warning: --data.train-split and --data.val-split are both 'val': validation scores the samples it trains on"
"$LOCKSTEP" shard --input "idx:$FMNIST" --output noval --limit 512 --shards 2 --val-fraction 0 >/dev/null
expect_rc 0 run_mpi 2 train --data noval --batch-size 32 --run-dir noval-run --max-steps 4
expect_output "no 'val' split in noval: validation is skipped"
expect_output "finished at step 4: no validation split, test_acc"
grep -q 'val_acc 0.0000' out.txt && fail "val_acc 0.0000 printed without a validation split"
pass "validation on 'val', test once at the end; selecting on test is logged; no fake val_acc"

# --- the run directory ---------------------------------------------------------------
mkdir -p busy && (flock busy/lock sleep 30 &) && sleep 0.3
expect_rc 2 run_mpi 2 train "${COMMON[@]}" --run-dir busy --max-steps 2
expect_output "run directory busy is in use by another job"
pkill -f "flock busy/lock" || true
pass "a second job on a live run directory is refused"

# Issue 31 (2): a directory lockstep did not make is refused, not adopted: nothing in it is
# replaced, rewritten or deleted (before: config.ini replaced, metrics.jsonl rewritten,
# notes.tmp.123 deleted as "left by a killed writer").
mkdir -p proj && echo "[mine]" > proj/config.ini && echo '{"mine": 1}' > proj/metrics.jsonl && echo n > proj/notes.tmp.123
before=$(cd proj && md5sum * | md5sum)
expect_rc 2 run_mpi 2 train "${COMMON[@]}" --run-dir proj --max-steps 2
expect_output "proj is not empty and holds files that are not a lockstep run \(config.ini, metrics.jsonl, notes.tmp.123\)"
[ "$(cd proj && md5sum * | md5sum)" = "$before" ] && [ "$(ls proj | wc -l)" = 3 ] || fail "the user's directory changed"
expect_rc 2 run_mpi 2 train "${COMMON[@]}" --run-dir data --max-steps 2
expect_output "--run.dir data is a dataset directory"
pass "a directory lockstep did not make (a project, a dataset) is refused as a run directory, left as it was"
# A hostile finding (helper-46): a deleted lock file (the "stale lock" reflex) made a run
# "files that are not a lockstep run", and doctor said its resume was fine. Both name the
# missing lock now; recreated, the run resumes.
cp -r smoke nolock && rm nolock/lock
expect_rc 2 run_mpi 2 train "${COMMON[@]}" --run-dir nolock --epochs 1 --max-steps 20
expect_output "--run.dir nolock holds a lockstep run's files \(.*\) but no lock file.*touch nolock/lock"
expect_rc 1 run_mpi 2 doctor "${COMMON[@]}" --run-dir nolock --epochs 1 --max-steps 20
expect_output "doctor: run directory: --run.dir nolock holds a lockstep run's files"
touch nolock/lock
expect_rc 0 run_mpi 2 train "${COMMON[@]}" --run-dir nolock --epochs 1 --max-steps 20
expect_output "resumed from nolock/checkpoints/step-0+14.ckpt at step 14"
pass "a run whose lock file was deleted: train and doctor say so; recreated, it resumes"

# Hostile findings (helper-49): only rank 0 looked at the run directory, and every rank read
# the checkpoint it chose by itself. With node-local storage (here: each rank in its own
# working directory, the run dir and checkpoint given as relative paths) a rank that saw no
# checkpoint started afresh beside a resumed rank 0, and per-node copies that differed gave
# each rank other weights (training and evaluate blended two models), silently.
cat >per_rank_cwd.sh <<'SH'
#!/usr/bin/env bash
cd "node${OMPI_COMM_WORLD_RANK:-0}" && exec "$@"
SH
chmod +x per_rank_cwd.sh
mkdir -p node0 node1
cp -r plain node0/r && mkdir -p node1/r && touch node1/r/lock  # node 1 sees an empty run directory
DATA_ABS=(--data "$WORK/data" --batch-size 32)
expect_rc 2 timeout 120 "$MPIEXEC" -n 2 ./per_rank_cwd.sh "$LOCKSTEP" train "${DATA_ABS[@]}" --run-dir r --epochs 3
expect_output "the checkpoints each rank sees in r/checkpoints differs on rank\(s\) 1 from rank 0 .*node-local"
cp -r plain node1/r-other && cp node0/r/checkpoints/step-000000014.ckpt node1/r-other/checkpoints/step-000000028.ckpt
rm -rf node1/r && mv node1/r-other node1/r  # same names, other bytes in step 28
expect_rc 2 timeout 120 "$MPIEXEC" -n 2 ./per_rank_cwd.sh "$LOCKSTEP" train "${DATA_ABS[@]}" --run-dir r --epochs 3
expect_output "checkpoint r/checkpoints/step-000000028.ckpt as each rank reads it differs on rank\(s\) 1"
expect_rc 2 timeout 120 "$MPIEXEC" -n 2 ./per_rank_cwd.sh "$LOCKSTEP" evaluate --checkpoint r/checkpoints/step-000000028.ckpt \
  --data "$WORK/data"
expect_output "weights of r/checkpoints/step-000000028.ckpt as each rank reads them differs on rank\(s\) 1"
rm node1/r/checkpoints/step-000000028.ckpt
expect_rc 2 timeout 120 "$MPIEXEC" -n 2 ./per_rank_cwd.sh "$LOCKSTEP" evaluate --checkpoint r/checkpoints/step-000000028.ckpt \
  --data "$WORK/data"
expect_output "rank 1's line 1: 'unreadable: .*does not exist"
# Options compared as training compares them: a rank told another split scored other samples
# into the one accuracy (evaluate) or wrote rows of another split (predict).
cat >rank1_val_split.sh <<'SH'
#!/usr/bin/env bash
if [ "${OMPI_COMM_WORLD_RANK:-0}" = 1 ]; then exec "$@" --split val; fi
exec "$@"
SH
chmod +x rank1_val_split.sh
for cmd in evaluate "predict --out preds.h5"; do
  # shellcheck disable=SC2086
  expect_rc 2 timeout 120 "$MPIEXEC" -n 2 ./rank1_val_split.sh "$LOCKSTEP" $cmd --checkpoint node0/r/checkpoints/step-000000028.ckpt \
    --data "$WORK/data"
  expect_output "resolved config differs on rank\(s\) 1 from rank 0.*split"
done
[ ! -e preds.h5 ] || fail "a refused predict wrote preds.h5"
# doctor too: a rank told another all-reduce size timed collectives that never met (a hang).
cat >rank1_bigger.sh <<'SH'
#!/usr/bin/env bash
if [ "${OMPI_COMM_WORLD_RANK:-0}" = 1 ]; then exec "$@" --doctor.allreduce-mb 2; fi
exec "$@"
SH
chmod +x rank1_bigger.sh
expect_rc 2 timeout 120 "$MPIEXEC" -n 2 ./rank1_bigger.sh "$LOCKSTEP" doctor --data "$WORK/data"
expect_output "resolved config differs on rank\(s\) 1 from rank 0.*allreduce-mb"
pass "ranks that see other checkpoints, or other bytes in one, or run with other options, stop naming the rank (train, evaluate, predict, doctor)"

"$MPIEXEC" -n 2 "$LOCKSTEP" train "${COMMON[@]}" --run-dir gone --epochs 200 --log-every 1 --ckpt-every 7 >gone.txt 2>&1 &
pid=$!
for _ in $(seq 1 200); do [ -f gone/metrics.jsonl ] && [ "$(wc -l <gone/metrics.jsonl)" -ge 5 ] && break; sleep 0.1; done
rm -rf gone
set +e; timeout 60 tail --pid=$pid -f /dev/null; wait $pid; rc=$?; set -e
[ "$rc" != 0 ] && [ "$rc" != 124 ] || { cat gone.txt; fail "deleting the run dir mid-run went unnoticed (rc $rc)"; }
# rm -rf empties the tree bottom-up: the rank's check can land after checkpoints/ is gone and
# before gone/ is, and then names the checkpoint directory. Both messages are right.
grep -Eq "(run directory gone|checkpoint directory gone/checkpoints) was deleted, moved or replaced" gone.txt ||
  { cat gone.txt; fail "no message about the deleted run dir"; }
[ ! -e gone ] || fail "the deleted run dir was half recreated: $(find gone)"
pass "a run directory deleted mid-run stops the job, nothing recreated"

# --- a crash and its resume: metrics.jsonl stays one valid log ---------------------------
expect_rc nonzero run_mpi 2 train "${COMMON[@]}" --run-dir crash --epochs 3 --log-every 2 --ckpt-every 10 \
  --debug.fault kill --debug.fault-step 25
printf '{"kind": "train", "step": 9' >> crash/metrics.jsonl  # a row cut short by the crash
# A killed writer's temp file (lockstep's mark, a pid that is gone); one whose writer runs
# (pid 1); a user's own temp file.
gone_pid=$(sh -c 'echo $$') host=$(hostname)
touch "crash/checkpoints/step-000000030.ckpt.lockstep-tmp.$gone_pid.$host" \
      "crash/checkpoints/step-000000040.ckpt.lockstep-tmp.1.$host" crash/notes.tmp.4242
expect_rc 0 run_mpi 2 train "${COMMON[@]}" --run-dir crash --epochs 3 --log-every 2 --ckpt-every 10
expect_output "resumed from crash/checkpoints/step-000000020.ckpt at step 20"
expect_output "dropped [0-9]+ row\(s\) past step 20"
expect_output "removed crash/checkpoints/step-000000030.ckpt.lockstep-tmp.$gone_pid.$host"
expect_output "kept crash/checkpoints/step-000000040.ckpt.lockstep-tmp.1.$host: its writer"
[ -e crash/notes.tmp.4242 ] && [ -e "crash/checkpoints/step-000000040.ckpt.lockstep-tmp.1.$host" ] ||
  fail "a file whose writer may live, or a user's, was removed"
check_metrics crash/metrics.jsonl 42 || fail "metrics.jsonl is not one valid log after crash + resume"
"$PYTHON" - crash/tb <<'PY' || fail "TensorBoard keeps the crashed run's steps past the checkpoint"
import sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1]); acc.Reload()
steps = [e.step for e in acc.Scalars("train/loss")]
assert steps == sorted(set(steps)), steps
PY
pass "crash + resume: no partial, duplicated or backward rows, one end row; temp files cleaned"

# --- links, bytes, compatibility ---------------------------------------------------------
# A run directory (its lock mark) where a link was planted.
mkdir -p linked && : > linked/lock && echo precious > victim && ln -s "$WORK/victim" linked/metrics.jsonl
expect_rc 1 run_mpi 2 train "${COMMON[@]}" --run-dir linked --max-steps 2
expect_output "linked/metrics.jsonl is a symbolic link"
[ "$(cat victim)" = precious ] || fail "wrote through a planted link"
pass "a link planted in the run dir is refused, its target untouched"

bad_data=$'data-\xff' bad_run=$'run-caf\xe9'
cp -r data "$bad_data"
expect_rc 0 run_mpi 2 train --data "$bad_data" --batch-size 32 --run-dir "$bad_run" --max-steps 6
expect_rc 0 run_mpi 2 train --data "$bad_data" --batch-size 32 --run-dir "$bad_run" --max-steps 12
LC_ALL=C expect_output "resumed from .*step-000000006.ckpt at step 6"  # . matches any byte
expect_rc 0 "$LOCKSTEP" inspect "$bad_run/checkpoints/step-000000012.ckpt"
pass "non-UTF-8 data and run paths checkpoint and resume"

expect_rc 2 run_mpi 2 train "${COMMON[@]}" --run-dir smoke --epochs 2 --max-steps 20 --width 64
expect_output "cannot continue this run from a checkpoint of --model.width 0 \(this run: 64\)"
[ "$(grep -c 'error:' out.txt)" -le 2 ] && ! grep -q 'LibTorch' out.txt || fail "not one line per rank"
expect_rc 2 run_mpi 2 train "${COMMON[@]}" --run-dir smoke --epochs 2 --max-steps 20 --optimizer adam
expect_output "--train.optimizer sgd \(this run: adam\)"
pass "resuming with another width or optimizer: one line, exit 2"
# doctor checks the checkpoint a job would resume as train's resume does: a job resubmitted
# with another width waited in the queue, then refused to resume.
expect_rc 1 run_mpi 2 doctor "${COMMON[@]}" --run-dir smoke --epochs 2 --max-steps 20 --width 64
expect_output "doctor: resume: .*cannot continue this run from a checkpoint of --model.width 0 \(this run: 64\)"
expect_output 'doctor: 1 problem\(s\)'
expect_rc 1 run_mpi 2 doctor "${COMMON[@]}" --run-dir smoke --epochs 2 --max-steps 20 --model.freeze conv1
expect_output "doctor: resume: .*its optimizer state does not fit this run's trainable parameters"
expect_rc 0 run_mpi 2 doctor "${COMMON[@]}" --run-dir smoke --epochs 2 --max-steps 20
expect_output "doctor: resume: .*smoke/checkpoints/step-0+14.ckpt at step 14 \(epoch 2 of 2\): ok$"
expect_rc 0 run_mpi 2 doctor "${COMMON[@]}" --run-dir smoke --epochs 1
expect_output "doctor: resume: .* at step 14 \(epoch 1 of 1\): ok; training is complete there"
expect_rc 0 run_mpi 1 doctor "${COMMON[@]}" --run-dir nosuch-run
expect_output "doctor: resume: no checkpoint in nosuch-run/checkpoints: the job starts afresh"
[ ! -e nosuch-run ] || fail "doctor made the run directory it checked"
pass "doctor: the checkpoint a job would resume, checked as train checks it (model, optimizer state, the end)"

# --- bad values ------------------------------------------------------------------------
expect_rc 2 run_mpi 2 train "${COMMON[@]}" --run-dir v --lr nan
expect_output "--train.lr must be a finite number, not 'nan'"
expect_rc 2 run_mpi 2 train --config "$WORK" --data data
expect_output "is a directory, not an INI job file"
"$PYTHON" "$(dirname "$0")/make_script_model.py" bn.pt 10
expect_rc 2 run_mpi 2 train "${COMMON[@]}" --run-dir sbn --model "torchscript:$WORK/bn.pt" --sync-bn --max-steps 2
expect_output "has 1 BatchNorm layer\(s\) lockstep cannot synchronise"
expect_rc 1 run_mpi 2 doctor "${COMMON[@]}" --run-dir sbn --model "torchscript:$WORK/bn.pt" --sync-bn
expect_output "doctor: training plan: --model.sync-bn: .*has 1 BatchNorm layer\(s\) lockstep cannot synchronise"
pass "NaN, a directory as --config, sync-BN on a TorchScript BatchNorm: exit 2 (a doctor problem too)"
# doctor checks the plan on every rank, as train does: a file one node cannot read (here a
# relative --model.init-from, each rank in a folder of its own) is named with its rank, once.
mkdir -p node0 node1 && cp smoke/checkpoints/step-*14.ckpt node0/w.ckpt
set +e
timeout 300 "$MPIEXEC" -n 1 -wdir "$WORK/node0" "$LOCKSTEP" doctor --data "$WORK/data" --model.init-from w.ckpt : \
  -n 1 -wdir "$WORK/node1" "$LOCKSTEP" doctor --data "$WORK/data" --model.init-from w.ckpt >out.txt 2>&1
rc=$?
set -e
[ "$rc" = 1 ] || { cat out.txt; fail "doctor passed an --init-from one rank cannot read (rc $rc)"; }
expect_output "\\[rank 1@[^]]*\\] error: doctor: training plan: w.ckpt: checkpoint does not exist"
[ "$(grep -c 'training plan' out.txt)" = 1 ] || { cat out.txt; fail "the plan's problem not named once"; }
pass "doctor: a file one rank cannot read is that rank's problem"

# --- SIGTERM to mpirun -----------------------------------------------------------------
# mpirun stops reading the ranks' output at once, then passes SIGTERM on and SIGKILLs them
# odls_base_sigkill_timeout seconds later (1 by default). Rank 0, logging every step, used
# to block in write(2) on the full pipe and never checkpoint, however long the window
# (core/base/console_writer.hpp). The window itself is timing, not behaviour: the test
# gives the ranks 5 s (Open MPI also waits that long before passing SIGTERM on; the Slurm
# templates give 10, slurm/job_common.sh).
OMPI_MCA_odls_base_sigkill_timeout=5 "$MPIEXEC" -n 2 "$LOCKSTEP" train "${COMMON[@]}" --run-dir term --epochs 200 --log-every 1 >term.txt 2>&1 &
pid=$!
for _ in $(seq 1 200); do [ -f term/metrics.jsonl ] && [ "$(wc -l <term/metrics.jsonl)" -ge 5 ] && break; sleep 0.1; done
kill -TERM $pid
set +e; timeout 60 tail --pid=$pid -f /dev/null; wait $pid; set -e
[ -f term/resumable ] || { cat term.txt; fail "no durable stop checkpoint after SIGTERM to mpirun"; }
stopped=$(grep -Eo '[0-9]+' term/resumable)
[ -f "term/checkpoints/step-$(printf '%09d' "$stopped").ckpt" ] || fail "resumable names step $stopped, no such checkpoint"
expect_rc 0 run_mpi 2 train "${COMMON[@]}" --run-dir term --epochs 200 --max-steps $((stopped + 4)) --log-every 1
expect_output "resumed from term/checkpoints/step-$(printf '%09d' "$stopped").ckpt at step $stopped"
[ ! -e term/resumable ] || fail "a new run left the old resumable marker"
pass "kill -TERM mpirun: ranks checkpoint at step $stopped, RUN_DIR/resumable, resume continues"
echo "e2e run_safety: all passed"
