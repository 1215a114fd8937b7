# The time-series jobs end to end on real UEA data (jobs/data/uea.sh reads the .ts files
# of the aeon wheel that .ci/setup fetched): import, 2-rank training with the job files as
# shipped, their accuracy targets on the test split, resume, and .ts import errors.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$(dirname "$0")/common.sh" "$@"
export LOCKSTEP

end_field() { json_rows "$1/metrics.jsonl" end "$2"; }
meets() { python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)" "$1" "$2"; }

for job in har_basicmotions:basicmotions:0.975 japanese_vowels:japanese-vowels:0.97; do
  IFS=: read -r name set target <<<"$job"
  expect_rc 0 bash "$ROOT/jobs/data/uea.sh" "$set" "$WORK/data/$set"
  expect_rc 0 run_mpi 2 train --config "$ROOT/jobs/$name.ini" --data "$WORK/data/$set" --run.dir "$WORK/runs/$name"
  acc=$(end_field "runs/$name" test_acc)
  meets "$acc" "$target" || fail "$name: test accuracy $acc below its target $target"
  pass "$name: test accuracy $acc (target >= $target)"
  expect_rc 0 run_mpi 2 train --config "$ROOT/jobs/$name.ini" --data "$WORK/data/$set" --run.dir "$WORK/runs/$name"
  expect_output "nothing to do"
done
# Data order: BasicMotions' .ts files are sorted by class. Imported as a new user would
# (the default single shard) and trained on 2 ranks, every rank must still see a fair
# sample: the importer stores each shard in a seeded random order and training deals a
# new share every epoch. Before, rank 0 trained on two classes only and the test accuracy
# was 75%.
BM=data/basicmotions.ts
expect_rc 0 "$LOCKSTEP" shard --input "ts:$BM/BasicMotions_TRAIN.ts" --test-input "ts:$BM/BasicMotions_TEST.ts" \
  --val-fraction 0.1 --output data/bm-one
grep -q '"sample_order":"shuffled"' data/bm-one/manifest.json || fail "the manifest does not record the shuffled order"
expect_rc 0 run_mpi 2 train --config "$ROOT/jobs/har_basicmotions.ini" --data data/bm-one --run.dir runs/bm-one
! grep -q "trains on .* samples with" "$WORK/out.txt" || { cat "$WORK/out.txt"; fail "a shuffled import was warned as biased"; }
acc=$(end_field runs/bm-one test_acc)
meets "$acc" 0.975 || fail "class-sorted input in one shard at 2 ranks: test accuracy $acc below 0.975"
pass "class-sorted .ts in one shard at 2 ranks: test accuracy $acc, as the 2-shard import"
# The same input kept in source order (--no-shuffle): read as a fixed share per rank, the
# start-up check names each biased rank and the remedy; dealt a new share every epoch
# (memory mode's default), it trains as well as the shuffled import.
expect_rc 0 "$LOCKSTEP" shard --input "ts:$BM/BasicMotions_TRAIN.ts" --test-input "ts:$BM/BasicMotions_TEST.ts" \
  --val-fraction 0.1 --no-shuffle --output data/bm-sorted
grep -q '"sample_order":"source"' data/bm-sorted/manifest.json || fail "the manifest does not record the source order"
expect_rc 0 run_mpi 2 train --config "$ROOT/jobs/har_basicmotions.ini" --data data/bm-sorted --run.dir runs/bm-fixed \
  --data.mode memory --data.memory-budget-mb 0 --train.epochs 1
expect_output "rank 0 trains on 18 samples with no sample of class '(Walking|Badminton)'"
expect_output "rank 1 trains on 18 samples with no sample of class '(Standing|Running)'"
expect_output "without --no-shuffle"
expect_output "the same share each epoch"
expect_rc 0 run_mpi 2 train --config "$ROOT/jobs/har_basicmotions.ini" --data data/bm-sorted --run.dir runs/bm-sorted
! grep -q "trains on .* samples with" "$WORK/out.txt" || { cat "$WORK/out.txt"; fail "a uniform deal was warned as biased"; }
expect_output "a new share each epoch"
acc=$(end_field runs/bm-sorted test_acc)
meets "$acc" 0.975 || fail "source-order import dealt per epoch: test accuracy $acc below 0.975"
pass "source-order import: fixed shares warned naming both ranks; dealt per epoch: test accuracy $acc"

# BasicMotions is 6 channels x 100 steps, 4 named classes in declared order.
"$LOCKSTEP" inspect data/basicmotions >"$WORK/out.txt" 2>&1
expect_output "6x100 float32"
expect_output "Standing, Running, Walking, Badminton"
pass "BasicMotions shards: [6, 100], class names from @classLabel"

# JapaneseVowels' original utterances (7-29 frames) import as ragged samples and train
# with padding masked (cnn1d: every layer, average over valid steps).
expect_rc 0 bash "$ROOT/jobs/data/uea.sh" japanese-vowels-ragged "$WORK/data/jv-ragged"
"$LOCKSTEP" inspect data/jv-ragged >"$WORK/out.txt" 2>&1
expect_output "12x29 float32 \(ragged: the last axis is time"
expect_rc 0 run_mpi 2 train --config "$ROOT/jobs/japanese_vowels.ini" --data "$WORK/data/jv-ragged" --run.dir "$WORK/runs/jvr"
acc=$(end_field runs/jvr test_acc)
meets "$acc" 0.95 || fail "JapaneseVowels (ragged): test accuracy $acc below 0.95"
expect_rc nonzero "$LOCKSTEP" train --data data/jv-ragged --model mlp --run-dir bad-mlp
expect_output "needs fixed-length samples, but dataset 'japanese-vowels-ragged' is ragged"
pass "JapaneseVowels as ragged sequences: test accuracy $acc; fixed-length models refused"

# Bad .ts input: one line naming the file and line, exit 1, nothing written.
TS=data/basicmotions.ts/BasicMotions_TRAIN.ts
head -n 14 "$TS" >ragged.ts
sed -n 15p "$TS" | sed 's/,[^,:]*:/:/' >>ragged.ts  # one value short in dimension 0
expect_rc 1 "$LOCKSTEP" shard --input ts:ragged.ts --output bad-out
expect_output "ragged.ts:15: series of length 99, @seriesLength says 100"
[ ! -e bad-out/manifest.json ] || fail "a failed import wrote a manifest"
head -n 13 "$TS" >nolabel.ts && sed -n 14p "$TS" | sed 's/:[A-Za-z]*$/:Swimming/' >>nolabel.ts
expect_rc 1 "$LOCKSTEP" shard --input ts:nolabel.ts --output bad-out
expect_output "nolabel.ts:14: class label 'Swimming' is not one @classLabel declares"
printf '@classLabel true a b\n@data\n1,2,?:a\n' >missing.ts
expect_rc 1 "$LOCKSTEP" shard --input ts:missing.ts --output bad-out
expect_output "missing.ts:3: dimension 0 has a missing value"
pass "ragged, undeclared-label and missing-value .ts files: one line naming file:line"
