#!/usr/bin/env bash
# End to end: shard a slice, train 2 ranks, loss goes down, only rank 0 writes, resume
# continues at the saved step (same and different world size), a corrupt newest
# checkpoint is skipped, evaluate agrees at 1 and 2 ranks.
source "$(dirname "$0")/common.sh" "$@"

make_slice data 2048 2
COMMON=(--data data --epochs 10 --batch-size 32 --log-every 5 --lr 0.05 --run-dir run)

expect_rc 0 run_mpi 2 train "${COMMON[@]}" --max-steps 40
[ "$(grep -c 'finished at step 40' out.txt)" = 1 ] || fail "the summary line should appear once (rank 0 only)"
grep -q '\[rank 1@' out.txt && fail "rank 1 printed on a clean run"
pass "2-rank training ran 40 steps"

losses=$(json_rows run/metrics.jsonl train train_loss)
[ "$(echo "$losses" | wc -l)" = 8 ] || fail "expected 8 train rows (not doubled by rank 1), got: $losses"
python3 - "$losses" <<'PY' || fail "loss did not go down"
import sys
v = [float(x) for x in sys.argv[1].split()]
assert v[-1] < 0.8 * v[0], v
PY
[ "$(json_rows run/metrics.jsonl end step)" = 40 ] || fail "no end row at step 40"
[ -n "$(json_rows run/metrics.jsonl end val_acc)" ] || fail "end row lacks val_acc"
pass "loss went down: $(echo $losses | cut -d' ' -f1) -> $(echo $losses | awk '{print $NF}')"

[ "$(ls run | tr '\n' ' ')" = "checkpoints command.txt config.ini lock metrics.jsonl tb train.log " ] || fail "unexpected run dir: $(ls run)"
# 28 steps/epoch (1842 train samples: a stratified tenth of the slice is 'val'): the
# epoch-end checkpoint and the one where --max-steps stopped the run, and the best
# evaluation so far (--ckpt.best-metric val_f1).
[ "$(ls run/checkpoints | tr '\n' ' ')" = "best.ckpt step-000000028.ckpt step-000000040.ckpt " ] || fail "checkpoints: $(ls run/checkpoints)"
grep -q '^\[train\]' run/config.ini || fail "config.ini is not the resolved config"
grep -q -- '--max-steps 40' run/command.txt || fail "command.txt lacks the command line"
pass "run dir holds exactly rank 0's files"

expect_rc 0 run_mpi 2 train "${COMMON[@]}" --max-steps 60
expect_output 'resumed from run/checkpoints/step-000000040.ckpt at step 40'
[ "$(json_rows run/metrics.jsonl train step | sed -n 9p)" = 45 ] || fail "first resumed row is not step 45"
[ "$(json_rows run/metrics.jsonl end step | tail -1)" = 60 ] || fail "resumed run did not end at 60"
pass "resume at the same world size continued at step 40"

expect_rc 0 run_mpi 1 train "${COMMON[@]}" --max-steps 70
expect_output 'with another data order \(2 ranks x batch 32 -> 1 x 32\)'
[ "$(json_rows run/metrics.jsonl end step | tail -1)" = 70 ] || fail "1-rank resume did not end at 70"
pass "resume on a different world size"

head -c 1000 run/checkpoints/step-000000070.ckpt > tmp && mv tmp run/checkpoints/step-000000070.ckpt
expect_rc 0 run_mpi 2 train "${COMMON[@]}" --max-steps 75
expect_output 'skipping unusable checkpoint: .*step-000000070.ckpt: truncated'
# The 1-rank run (57 steps/epoch) stopped mid-epoch at 70: the one before is step 60's.
expect_output 'resumed from run/checkpoints/step-000000060.ckpt at step 60'
expect_output 'metrics.jsonl: dropped [0-9]+ row\(s\) past step 60'
pass "corrupt newest checkpoint skipped, previous one used"

before=$(md5sum run/checkpoints/*.ckpt | md5sum)
expect_rc 2 run_mpi 2 train "${COMMON[@]}" --max-steps 80 --resume none
expect_output 'already holds checkpoints'
[ "$(md5sum run/checkpoints/*.ckpt | md5sum)" = "$before" ] || fail "--resume none changed checkpoints"
pass "--resume none refuses to overwrite"

ckpt=run/checkpoints/step-000000075.ckpt
expect_rc 0 run_mpi 2 evaluate --data data --checkpoint "$ckpt"
acc2=$(grep -Eo 'accuracy [0-9.]+ macro-F1 [0-9.]+ loss [0-9.]+ over [0-9]+' out.txt)
expect_output 'confusion matrix'
cm2=$(sed -n '/true.pred/,+10p' out.txt | sed 's/^.*Z //')
expect_rc 0 run_mpi 1 evaluate --data data --checkpoint "$ckpt"
acc1=$(grep -Eo 'accuracy [0-9.]+ macro-F1 [0-9.]+ loss [0-9.]+ over [0-9]+' out.txt)
cm1=$(sed -n '/true.pred/,+10p' out.txt | sed 's/^.*Z //')
[ -n "$acc1" ] && [ "$acc1" = "$acc2" ] || fail "evaluate differs: 1 rank '$acc1' vs 2 ranks '$acc2'"
[ -n "$cm1" ] && [ "$cm1" = "$cm2" ] || fail "confusion matrices differ between 1 and 2 ranks"
pass "evaluate: $acc2 at 1 and 2 ranks"

expect_rc 0 "$LOCKSTEP" inspect "$ckpt"
expect_output '^step +75$'
expect_output '^position +2 epoch\(s\) done, [0-9]+ samples into epoch 3 \(as the rows and the log number it\)$'
expect_rc 2 "$LOCKSTEP" inspect run
expect_output 'run is a run directory, not a dataset: inspect one of its checkpoints \(run/checkpoints/step-0+[0-9]+\.ckpt\), or see the run with lockstep report run'
pass "inspect reads the checkpoint, and names one for a run directory"
# Exact continuation: checkpoints carry every rank's RNG state (dropout), so a run
# interrupted at step 20 and resumed ends bit-identical to one that never stopped.
STRAIGHT=(--data data --epochs 2 --batch-size 32 --log-every 10 --lr 0.05 --model.dropout 0.5)
expect_rc 0 run_mpi 2 train "${STRAIGHT[@]}" --run-dir straight --max-steps 40
expect_rc 0 run_mpi 2 train "${STRAIGHT[@]}" --run-dir split --max-steps 20
expect_rc 0 run_mpi 2 train "${STRAIGHT[@]}" --run-dir split --max-steps 40
a=$(json_rows straight/metrics.jsonl end val_loss); b=$(json_rows split/metrics.jsonl end val_loss | tail -1)
[ -n "$a" ] && [ "$a" = "$b" ] || fail "resumed run diverged: val_loss $a straight vs $b resumed"
pass "interrupted + resumed run equals the uninterrupted one (val_loss $a)"

# A checkpoint that had consumed its epoch before the epoch's end work ran resumes at that
# work. It rolled over to the next epoch instead: that epoch got no validation, no row and no
# best.ckpt, and a 1-epoch run said its "final evaluation never finished" (a hostile
# finding). Here 1 rank x 8 stops after the samples of a whole epoch of 2 ranks x 32.
n=$("$PYTHON" -c "import json, sys; print(json.load(open(sys.argv[1]))['splits']['train']['count'])" data/manifest.json)
k=$((8 * (n / 64)))
[ "$k" -lt $((n / 8)) ] || fail "the slice's $n samples make no partial epoch at batch 8"
EDGE=(--data data --epochs 1 --log-every 5 --lr 0.05 --run-dir edge)
expect_rc 0 "$LOCKSTEP" train "${EDGE[@]}" --batch-size 8 --max-steps "$k"
[ -z "$(json_rows edge/metrics.jsonl epoch step)" ] || fail "a cut epoch has no row"
pending=$(ls edge/checkpoints/step-*"$k".ckpt)
cp "$pending" pending.ckpt
# Resumed with --max-steps at that step, the epoch's end work runs first (a complete epoch: its
# row), then the final test; a requeue has nothing to do. It went straight to the final
# evaluation (no epoch row, no rollover), and every requeue did that again (a hostile finding).
cp -r edge edge-max
expect_rc 0 run_mpi 2 train "${EDGE[@]/edge/edge-max}" --batch-size 32 --max-steps "$k"
[ "$(json_rows edge-max/metrics.jsonl epoch step)" = "$k" ] || fail "epoch rows at: $(json_rows edge-max/metrics.jsonl epoch step)"
tb_before=$(ls edge-max/tb)
expect_rc 0 run_mpi 2 train "${EDGE[@]/edge/edge-max}" --batch-size 32 --max-steps "$k"
expect_output "nothing to do: the run is complete at step $k"
# ... and adds no TensorBoard event file (one per re-run, each an HParams session never ended).
[ "$(ls edge-max/tb)" = "$tb_before" ] || fail "a run with nothing to do wrote TensorBoard files: $(ls edge-max/tb)"
# A re-run of a finished run with other options (a resubmitted sweep): nothing to do, and its
# config.ini stays the one it trained with (it was rewritten: report named it by lr 0.3).
cp edge-max/config.ini config.before
expect_rc 0 run_mpi 2 train "${EDGE[@]/edge/edge-max}" --batch-size 32 --max-steps "$k" --lr 0.3
expect_output "nothing to do: the run is complete at step $k"
cmp -s edge-max/config.ini config.before || fail "a run with nothing to do rewrote config.ini"
pass "a checkpoint at its epoch's last samples resumed at --max-steps there: end work, then nothing to do (config.ini kept)"
expect_rc 0 run_mpi 2 train "${EDGE[@]}" --batch-size 32
expect_output "resumed from edge/checkpoints/step-0+$k.ckpt at step $k \(epoch 1\)"
expect_output "epoch 1/1 done: .* val_acc"
! grep -q "never finished" "$WORK/out.txt" || fail "a resume at the epoch's end is no unfinished evaluation"
[ "$(json_rows edge/metrics.jsonl epoch step)" = "$k" ] || fail "epoch rows at steps: $(json_rows edge/metrics.jsonl epoch step)"
[ "$(json_rows edge/metrics.jsonl end step | tr '\n' ' ')" = "$k $k " ] || fail "end rows at $(json_rows edge/metrics.jsonl end step)"
pass "a checkpoint at its epoch's last samples resumes at the epoch's end work (validation, row, best)"
# Killed after that end work's rows and before its checkpoint replaced the one it resumed
# (the old file put back): the next resume drops its 3 rows (epoch, test, end) and does the
# work again, its rows once; the first run's own end row (--max-steps, at its batch) stays.
cp pending.ckpt "$pending"
expect_rc 0 run_mpi 2 train "${EDGE[@]}" --batch-size 32
expect_output "dropped 3 row\(s\) past step $k or of an end work its checkpoint did not record"
[ "$(json_rows edge/metrics.jsonl epoch step)" = "$k" ] || fail "epoch rows at steps: $(json_rows edge/metrics.jsonl epoch step)"
[ "$(json_rows edge/metrics.jsonl end step | tr '\n' ' ')" = "$k $k " ] || fail "end rows at $(json_rows edge/metrics.jsonl end step)"
pass "end work redone after a kill before its checkpoint: its rows once"
# The same kill, then a requeue on the first world (1 x 8), where that checkpoint is mid-epoch:
# the killed end work's rows go too (they were kept: an epoch row and an end row at step k
# for an epoch that went on; a hostile finding), and the epoch ends where 1 x 8's does.
cp pending.ckpt "$pending"
expect_rc 0 "$LOCKSTEP" train "${EDGE[@]}" --batch-size 8
[ "$(json_rows edge/metrics.jsonl epoch step)" = "$((n / 8))" ] || fail "epoch rows at: $(json_rows edge/metrics.jsonl epoch step)"
[ "$(json_rows edge/metrics.jsonl end step | tr '\n' ' ')" = "$k $((n / 8)) " ] || fail "end rows at $(json_rows edge/metrics.jsonl end step)"
pass "a killed end work's rows go when the requeue's world trains on"

# Every checkpoint corrupt (a storage fault): refused, nothing touched. It started afresh,
# dropping the run's rows and overwriting its checkpoints (a hostile finding).
cp -r edge-max allbad
for f in allbad/checkpoints/*.ckpt; do head -c 2000 "$f" >tmp && mv tmp "$f"; done
cp allbad/metrics.jsonl metrics.before
expect_rc 2 run_mpi 2 train "${EDGE[@]/edge/allbad}" --batch-size 32 --max-steps "$((k + 2))"
expect_output "--resume auto: none of the [0-9]+ checkpoint\(s\) in allbad/checkpoints verifies"
cmp -s allbad/metrics.jsonl metrics.before || fail "metrics.jsonl changed"
pass "checkpoints none of which verifies: refused, nothing touched"

# --ckpt.every at the --max-steps step, mid-epoch: the checkpoint is written once, after the
# final validation, so it holds the stop rule's decision (it was written before it and the
# validation's save was skipped as the same position: a resume trained on; a hostile finding).
SA=(--data data --epochs 2 --batch-size 32 --log-every 5 --lr 0.05 --run-dir sa --ckpt.every 6 --train.stop-at 'val_acc>=0.01')
expect_rc 0 "$LOCKSTEP" train "${SA[@]}" --max-steps 6
expect_rc 0 "$LOCKSTEP" train "${SA[@]}"
expect_output "nothing to do: the run stopped at step 6"
pass "a checkpoint at --max-steps holds the stop rule's decision"

# Killed between the final test row and the end row (the end row's line never written): the
# resume does the final work again, its test row once (the cut one was kept: two test rows);
# the first run's own test and end rows (--max-steps, 1 x 8) stay.
cp -r edge-max cut
"$PYTHON" - cut/metrics.jsonl <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines(keepends=True)
kinds = [json.loads(l)["kind"] for l in lines]
last_end = len(kinds) - 1 - kinds[::-1].index("end")
assert kinds[last_end - 1] == "test", kinds
open(sys.argv[1], "w").writelines(lines[:last_end])  # the rows up to that test row, as the kill left them
PY
expect_rc 0 run_mpi 2 train "${EDGE[@]/edge/cut}" --batch-size 32 --max-steps "$k"
expect_output "dropped 1 row"
expect_output "test at step $k on 'test'"
expect_output "finished at step $k: .*, no step trained by this job, [0-9.]+ s wall$"
[ "$(json_rows cut/metrics.jsonl test step | tr '\n' ' ')" = "$k $k " ] || fail "test rows at $(json_rows cut/metrics.jsonl test step)"
[ "$(json_rows cut/metrics.jsonl end step | tr '\n' ' ')" = "$k $k " ] || fail "end rows at $(json_rows cut/metrics.jsonl end step)"
# TensorBoard shows what metrics.jsonl holds: the cut test row's point goes too (earlier event
# files' points at the resumed step are dropped, the rows kept there given again).
"$PYTHON" - cut/tb cut/metrics.jsonl <<'PY' || fail "TensorBoard's points differ from metrics.jsonl's rows"
import json, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1]); acc.Reload()
rows = [json.loads(l) for l in open(sys.argv[2])]
for tag, field, kinds in (("test/acc", "test_acc", ("test",)), ("val/acc", "val_acc", ("eval", "epoch", "test")),
                          ("train/loss", "train_loss", ("train",)), ("epoch/train_loss", "train_loss", ("epoch",))):
    want = [r["step"] for r in rows if r["kind"] in kinds and r.get(field) is not None]
    got = [e.step for e in acc.Scalars(tag)]
    assert sorted(got) == sorted(want), (tag, got, want)
PY
pass "a final work cut between its test and end rows is redone, its test row once, in TensorBoard too"
# Extended past its end and killed there: report says so (it said "completed" at the old end).
cp -r edge-max ext
expect_rc nonzero run_mpi 1 train "${EDGE[@]/edge/ext}" --batch-size 8 --epochs 3 --max-steps $((k + 20)) \
  --debug.fault kill --debug.fault-rank 0 --debug.fault-step $((k + 12))
expect_rc 0 "$LOCKSTEP" report ext
expect_output "no end row: running, or killed, at step"
! grep -q "completed at step" "$WORK/out.txt" || fail "report says completed for a run killed after its extension"
# A split named on purpose that the data lacks is an error (a misspelt one turned validation off).
expect_rc 2 "$LOCKSTEP" train --data data --batch-size 32 --max-steps 2 --run-dir misspelt --data.val-split validation
expect_output "--data.val-split validation: data has no such split \(it has train, val, test; none: no validation\)"
pass "report of a run killed after it was extended; a missing split named on purpose is refused"

best=run/checkpoints/best.ckpt
expect_rc 0 "$LOCKSTEP" inspect "$best"
expect_output 'best_metric +val_f1'
pass "best.ckpt is a readable checkpoint"

# A checkpoint taken after a resume and before the next validation records the last
# validation's scores (it wrote val_acc -1: issue 30).
expect_rc 0 run_mpi 2 train "${COMMON[@]}" --max-steps 77 --ckpt.every 2
meta_val() { "$LOCKSTEP" inspect "$1" | awk '$1 == "val_acc" {print $2}'; }
[ "$(meta_val run/checkpoints/step-000000076.ckpt)" = "$(meta_val run/checkpoints/step-000000075.ckpt)" ] &&
  [ "$(meta_val run/checkpoints/step-000000076.ckpt)" != -1.0 ] ||
  fail "step 76 recorded val_acc $(meta_val run/checkpoints/step-000000076.ckpt), step 75 $(meta_val run/checkpoints/step-000000075.ckpt)"
pass "a checkpoint after a resume keeps the last validation's scores"
echo "e2e train_resume: all passed"
