#!/usr/bin/env bash
# Slurm-style preemption: SIGUSR1 to ONE rank mid-epoch -> all ranks agree at the next
# step, rank 0 checkpoints, every rank exits 3; --resume auto then finishes with the same
# final step count as an uninterrupted run.
source "$(dirname "$0")/common.sh" "$@"
make_slice data 2048 2
ARGS=(--data data --epochs 5 --batch-size 16 --log-every 1 --max-steps 150 --run-dir run)

"$MPIEXEC" -n 2 "$LOCKSTEP" train "${ARGS[@]}" >out.txt 2>&1 &
launcher=$!
for _ in $(seq 1 300); do  # wait until training is under way (step >= 10)
  [ -f run/metrics.jsonl ] && [ "$(wc -l <run/metrics.jsonl)" -ge 10 ] && break
  sleep 0.1
done
# A rank, not the launcher: its argv[0] is the lockstep binary itself.
rank_pid=$(pgrep -f "^$LOCKSTEP train .*--run-dir run" | tail -1)
[ -n "$rank_pid" ] || fail "no rank process found"
kill -USR1 "$rank_pid"
set +e
timeout 60 tail --pid="$launcher" -f /dev/null
wait "$launcher"
rc=$?
set -e
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
echo "e2e signals: all passed"
