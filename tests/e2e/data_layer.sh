#!/usr/bin/env bash
# End to end, the data layer through the CLI: validation split, streaming reader, wrap
# remainder, augmentation, the CSV (windowed) and HDF5 importers, and --verify.
source "$(dirname "$0")/common.sh" "$@"

[ -d "$FMNIST" ] || fail "Fashion-MNIST not found at $FMNIST"
expect_rc 0 "$LOCKSTEP" shard --input "idx:$FMNIST" --output data --limit 3000 --shards 3 --val-fraction 0.1 --name slice
# Stratified: round(10% of each class), so about 300 (per-class rounding).
train=$(grep -Eo 'train +[0-9]+' out.txt | grep -Eo '[0-9]+$')
val=$(grep -Eo 'val +[0-9]+' out.txt | grep -Eo '[0-9]+$')
[ $((train + val)) = 3000 ] && [ "$val" -ge 295 ] && [ "$val" -le 305 ] || fail "train $train + val $val"
expect_output "test +3000 samples in 3 shard"
expect_rc 0 "$LOCKSTEP" inspect data --verify
expect_output "verified: every shard matches the manifest"
pass "idx import with a stratified validation split"

COMMON=(--data data --data.val-split val --batch-size 32 --log-every 10 --max-steps 20)
expect_rc 0 run_mpi 2 train "${COMMON[@]}" --run-dir s --data.mode stream --data.block-samples 64
expect_output "reader stream"
expect_output "data wait [0-9.]+ ms/step"
python3 - s/metrics.jsonl <<'PY' || fail "metrics rows lack data_wait_s"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert all("data_wait_s" in r for r in rows if r["kind"] in ("train", "epoch", "end")), rows
assert rows[-1]["kind"] == "end" and rows[-1]["step"] == 20 and rows[-1]["val_acc"] > 0.3, rows[-1]
PY
pass "2-rank training from the streaming reader"

expect_rc 0 run_mpi 2 train "${COMMON[@]}" --run-dir w --data.remainder wrap --data.random-crop 2 --data.hflip true
expect_output "57 steps/epoch \(wrap remainder\)"
expect_output "shard\(s\), reader memory"
pass "wrap remainder (rank 0 owns 2 of 3 shards: ceil(~1800/32) = 57 steps) with crop + flip"

python3 - <<'PY'
import math
with open("har.csv", "w") as f:
    f.write("acc_x,acc_y,acc_z,activity\n")
    for i in range(400):
        act = ["walking", "sitting", "standing"][(i // 50) % 3]
        f.write(f"{math.sin(i/5):.4f},{math.cos(i/7):.4f},{(i % 13) / 13:.4f},{act}\n")
PY
expect_rc 0 "$LOCKSTEP" shard --input csv:har.csv --output har --window 32 --stride 16 --shards 2 --val-fraction 0.2
expect_rc 0 "$LOCKSTEP" inspect har --verify
expect_output "samples +3x32 float32"
expect_output "classes +3: sitting, standing, walking"
pass "windowed CSV time series"

expect_rc 0 "$LOCKSTEP" shard --input hdf5:data/train-00000-of-00003.h5 --output resharded --shards 4
expect_output "train +8[0-9][0-9] samples in 4 shard"
expect_rc 0 "$LOCKSTEP" inspect resharded --verify
pass "hdf5 file re-sharded"

cut -d, -f1-3 har.csv > features.csv
expect_rc 0 "$LOCKSTEP" shard --input csv:features.csv --label-column none --output unlabeled
expect_rc 0 "$LOCKSTEP" inspect unlabeled --verify
expect_output "classes +none \(unlabeled data\)"
expect_rc 2 run_mpi 2 train --data unlabeled --data.val-split none
expect_output "has no labels; lockstep trains classifiers"
pass "unlabeled data: sharded and verified; training refuses it in one line"

printf 'a,b,label\n1,2,0\n3,oops,1\n' > bad.csv
expect_rc 1 "$LOCKSTEP" shard --input csv:bad.csv --output badout
expect_output "bad.csv:3: column 'b' value 'oops' is not a finite number"
[ ! -e badout/manifest.json ] || fail "a failed import left a manifest"
expect_rc 1 "$LOCKSTEP" shard --input hdf5:data/manifest.json --output x2
expect_output "not an HDF5 file"
expect_rc 2 run_mpi 1 train --data data --data.mode sometimes
expect_output "data.mode must be auto, memory or stream"
pass "importer and reader errors"
echo "e2e data_layer: all passed"
