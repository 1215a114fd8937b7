#!/usr/bin/env bash
# Slurm-style preemption: SIGUSR1 to ONE rank mid-epoch -> all ranks agree at the next
# step, rank 0 checkpoints, every rank exits 3; --resume auto then finishes with the same
# final step count as an uninterrupted run.
source "$(dirname "$0")/common.sh" "$@"
make_slice data 2048 2
ARGS=(--data data --epochs 5 --batch-size 16 --log-every 1 --max-steps 150 --run-dir run)

# signal_run SIG READY RUN_DIR ARGS...: a 2-rank train in the background; once the shell
# condition READY holds, SIG goes to one rank (not the launcher: a rank's argv[0] is the
# lockstep binary itself); sets rc to the launcher's exit code. Output in out.txt.
signal_run() {
  local sig=$1 ready=$2 dir=$3; shift 3
  "$MPIEXEC" -n 2 "$LOCKSTEP" train "$@" >out.txt 2>&1 &
  local launcher=$!
  for _ in $(seq 1 300); do
    eval "$ready" && break
    sleep 0.1
  done
  local rank_pid
  rank_pid=$(pgrep -f "^$LOCKSTEP train .*--run-dir $dir" | tail -1)
  [ -n "$rank_pid" ] || fail "no rank process found"
  kill "-$sig" "$rank_pid"
  set +e
  timeout 60 tail --pid="$launcher" -f /dev/null
  wait "$launcher"
  rc=$?
  set -e
}

# Wait until training is under way (step >= 10).
signal_run USR1 '[ -f run/metrics.jsonl ] && [ "$(wc -l <run/metrics.jsonl)" -ge 10 ]' run "${ARGS[@]}"
[ "$rc" = 3 ] || { cat out.txt; fail "signalled run exited $rc, expected 3"; }
expect_output_file() { grep -Eq -- "$1" out.txt || { cat out.txt; fail "output lacks /$1/"; }; }
expect_output_file "signal 10 received: checkpointing at step [0-9]+ and exiting with code 3"
stopped=$(grep -Eo 'checkpointing at step [0-9]+' out.txt | grep -Eo '[0-9]+$')
[ "$stopped" -lt 150 ] || fail "the signal arrived too late to test anything (step $stopped)"
ls run/checkpoints | grep -q "step-$(printf '%09d' "$stopped").ckpt" || fail "no checkpoint at step $stopped"
pass "SIGUSR1 to one rank: all stopped at step $stopped, checkpointed, exit 3"

expect_rc 0 run_mpi 2 train "${ARGS[@]}"
expect_output "resumed from run/checkpoints/step-$(printf '%09d' "$stopped").ckpt at step $stopped"
[ "$(json_rows run/metrics.jsonl end step | tail -1)" = 150 ] || fail "resumed run did not end at step 150"
pass "resume finished at step 150"

# Issue 31 (3): a run is complete only once its end row is written, and every phase honours
# a stop. (a) A kill during the final evaluation (its test and end rows never written):
# the re-run evaluates now instead of calling the run complete.
python3 - <<'PY'
import json
rows = [json.loads(l) for l in open("run/metrics.jsonl")]
keep = [r for r in rows if not (r["kind"] in ("test", "end") and r["step"] == 150)]
assert len(keep) < len(rows)
open("run/metrics.jsonl", "w").write("".join(json.dumps(r) + "\n" for r in keep))
PY
expect_rc 0 run_mpi 2 train "${ARGS[@]}"
expect_output "training is complete at step 150, but the run's final evaluation never finished"
[ "$(json_rows run/metrics.jsonl end step | tail -1)" = 150 ] && [ -n "$(json_rows run/metrics.jsonl test step)" ] ||
  fail "the re-run wrote no test and end rows"
expect_rc 0 run_mpi 2 train "${ARGS[@]}"
expect_output "nothing to do: the run is complete at step 150"
pass "a final evaluation cut short is done by the next run; then the run is complete"

# (b) A signal during the last step or the final validation (rank 1 sleeps 3 s in step 5,
# the last): exit 3 with the checkpoint kept; the resumed job does the final evaluation.
FINAL=(--data data --epochs 5 --batch-size 16 --log-every 1 --max-steps 5 --run-dir final
       --debug.fault slow --debug.fault-step 4 --debug.slow-ms 3000 --debug.fault-rank 1)
# Step 4's row, then half a second (past step 4's own signal check): step 5, the last, is
# under way, well inside rank 1's 3 s.
signal_run TERM "[ -f final/metrics.jsonl ] && grep -q '\"step\":4' final/metrics.jsonl && sleep 0.5" final "${FINAL[@]}"
[ "$rc" = 3 ] || { cat out.txt; fail "a signal during the last step exited $rc, expected 3"; }
expect_output_file "signal 15 received after the last step \(5\): its checkpoint is kept"
[ -f final/resumable ] || fail "no resumable mark"
[ -z "$(json_rows final/metrics.jsonl end step)" ] || fail "an end row was written by the stopped run"
expect_rc 0 run_mpi 2 train "${FINAL[@]}"
expect_output "training is complete at step 5, but the run's final evaluation never finished"
[ "$(json_rows final/metrics.jsonl end step)" = 5 ] || fail "no end row after the resume"
pass "a stop during the last step or final validation: exit 3, then the final evaluation on resume"

# A hostile finding (helper-47): a SIGUSR1 in start-up (data load, pre-flight, resume: Slurm's
# lead time lands there in a short job) killed the rank by the signal's default action, exit
# 138 and no requeue. Held from the start now: the job stops before its first step, exit 3.
START=(--data data --epochs 5 --batch-size 16 --max-steps 5 --run-dir early
       --debug.fault slow-start --debug.slow-ms 3000 --debug.fault-rank 1)
signal_run USR1 "grep -q \"injecting fault 'slow-start'\" out.txt" early "${START[@]}"
[ "$rc" = 3 ] || { cat out.txt; fail "a signal in start-up exited $rc, expected 3"; }
expect_output_file "signal 10 received: checkpointing at step 0 and exiting with code 3"
expect_rc 0 run_mpi 2 train "${START[@]}"
expect_output "resumed from early/checkpoints/step-000000000.ckpt at step 0"
[ "$(json_rows early/metrics.jsonl end step)" = 5 ] || fail "the resumed job did not finish at step 5"
pass "SIGUSR1 in start-up: held, the job stops before step 1 with exit 3 and resumes"
echo "e2e signals: all passed"
