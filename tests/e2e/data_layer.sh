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
expect_output "43 steps/epoch \(wrap remainder\)"
expect_output "shard\(s\), reader memory, a new share each epoch"
pass "wrap remainder (equal dealt shares of ~2700 / 2 ranks: ceil(~1350/32) = 43 steps; whole shards gave rank 0 2 of 3 shards and 57) with crop + flip"

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

# Subjects (--group-column): windows stay within one subject and one activity; validation
# takes whole subjects. Feature 0 carries the subject number, so the splits can be checked.
python3 - <<'PY'
with open("subjects.csv", "w") as f:
    f.write("subject,sid,acc,activity\n")
    for sub in range(10):
        for i in range(96):
            f.write(f"p{sub},{sub},{(i % 7) / 7:.3f},{['walk', 'sit', 'run'][(i // 32 + sub) % 3]}\n")
PY
expect_rc 0 "$LOCKSTEP" shard --input csv:subjects.csv --output subjects --window 16 --stride 8 --group-column subject \
  --val-fraction 0.2 --shards 2
expect_output "val +[0-9]+ samples"
"$PYTHON" - <<'PY' || fail "a subject is in two splits, or a window crosses a subject or activity"
import glob, h5py, numpy as np
sids = {}
for split in ("train", "val"):
    s = set()
    for path in glob.glob(f"subjects/{split}-*.h5"):
        with h5py.File(path) as f:
            x = f["samples"][...]  # [N, 2, 16]: channel 0 is the subject number
            assert (x[:, 0, :] == x[:, 0, :1]).all(), "a window spans two subjects"
            s |= set(np.unique(x[:, 0, 0]).tolist())
    sids[split] = s
assert sids["train"] and sids["val"] and not (sids["train"] & sids["val"]), sids
assert len(sids["val"]) == 2, sids  # 20% of 10 subjects
PY
# 10 subjects x 3 activity runs of 32 rows: (32 - 16) / 8 + 1 = 3 windows a run, none across a change.
"$LOCKSTEP" inspect subjects >"$WORK/out.txt" 2>&1
total=$(grep -Eo '^split (train|val): [0-9]+' "$WORK/out.txt" | awk '{s += $3} END {print s}')
[ "$total" = 90 ] || { cat "$WORK/out.txt"; fail "expected 90 windows (3 per activity run), got $total"; }
pass "--group-column: windows within one subject and activity, validation by whole subjects"

expect_rc 0 "$LOCKSTEP" shard --input hdf5:data/train-00000-of-00003.h5 --output resharded --shards 4
expect_output "train +8[0-9][0-9] samples in 4 shard"
expect_rc 0 "$LOCKSTEP" inspect resharded --verify
pass "hdf5 file re-sharded"

cut -d, -f1-3 har.csv > features.csv
expect_rc 0 "$LOCKSTEP" shard --input csv:features.csv --label-column none --output unlabeled
expect_rc 0 "$LOCKSTEP" inspect unlabeled --verify
expect_output "classes +none \(unlabeled data\)"
expect_rc 2 run_mpi 2 train --data unlabeled --data.val-split none
expect_output "has neither class labels nor sequence targets: nothing to train on"
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
