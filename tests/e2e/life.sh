#!/usr/bin/env bash
# One normal life of a job, short, for the leak checker (.ci/sanitize.sh asan runs it with
# LeakSanitizer's slow unwinder, ~12 s a process): import, train 2 ranks with checkpoints,
# the newest checkpoint truncated, resume on 1 rank (the unusable one skipped), evaluate at
# 2 ranks, inspect. Every process exits normally, so each one's leak check runs.
# e2e_train_resume asserts the same behaviours at length (without the leak check).
source "$(dirname "$0")/common.sh" "$@"

make_slice data 512 2
COMMON=(--data data --epochs 4 --batch-size 32 --log-every 5 --lr 0.05 --ckpt-every 5 --run-dir run)

expect_rc 0 run_mpi 2 train "${COMMON[@]}" --max-steps 15
[ "$(json_rows run/metrics.jsonl end step)" = 15 ] || fail "no end row at step 15"
pass "2-rank training to step 15"

head -c 1000 run/checkpoints/step-000000015.ckpt > tmp && mv tmp run/checkpoints/step-000000015.ckpt
expect_rc 0 run_mpi 1 train "${COMMON[@]}" --max-steps 25
expect_output 'skipping unusable checkpoint: .*step-000000015.ckpt: truncated'
# 7 steps an epoch at 2 ranks: the epoch-end checkpoint of step 14 is the newest usable one.
expect_output 'resumed from run/checkpoints/step-000000014.ckpt at step 14'
[ "$(json_rows run/metrics.jsonl end step | tail -1)" = 25 ] || fail "the resumed run did not end at 25"
pass "truncated checkpoint skipped; resumed on 1 rank at step 14, ended at 25"

expect_rc 0 run_mpi 2 evaluate --data data --checkpoint run/checkpoints/step-000000025.ckpt
expect_output 'accuracy [0-9.]+ macro-F1'
expect_rc 0 "$LOCKSTEP" inspect run/checkpoints/step-000000025.ckpt
expect_output '^step +25$'
pass "evaluate at 2 ranks and inspect read the final checkpoint"
echo "e2e life: all passed"
