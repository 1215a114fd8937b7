#!/usr/bin/env bash
# After training (issue 16): predict, export to PyTorch, fine-tune from weights, stop early.
# Round trips are checked numerically with the venv's torch, safetensors and torchvision:
#   train -> export -> PyTorch reference module (strict) == lockstep predict (|dp| < 1e-4)
#   export -> --init-from -> the same validation as the checkpoint
#   torchvision resnet18 -> safetensors -> lockstep predict == torchvision (|dp| < 1e-4)
source "$(dirname "$0")/common.sh" "$@"
DOCS=$(cd "$(dirname "$0")/../../docs/python" && pwd)
make_slice data 1024 2
COMMON=(--data data --batch-size 32 --lr 0.05 --log-every 7)

expect_rc 0 run_mpi 2 train "${COMMON[@]}" --run-dir run --epochs 2
ckpt=run/checkpoints/best.ckpt
expect_rc 0 run_mpi 2 predict --checkpoint "$ckpt" --data data --out pred.h5
expect_output "predict $ckpt \(step [0-9]+\) on data split 'test': 1024 samples by 2 rank\(s\)"
expect_rc 0 run_mpi 1 predict --checkpoint "$ckpt" --data data --out pred1.csv
expect_rc 0 run_mpi 2 predict --checkpoint "$ckpt" --data data --split val --out top.csv --top-k 3
head -1 top.csv | grep -q '^index,label,top1,p_top1,top2,p_top2,top3,p_top3$' || fail "top-k header: $(head -1 top.csv)"
expect_rc 0 "$LOCKSTEP" export --checkpoint "$ckpt" --out model.safetensors
expect_output "exported $ckpt \(model cnn, step [0-9]+, 16 tensors\) -> model.safetensors"
pass "predict (.h5, .csv, top-k, 1 and 2 ranks) and export"

# No command writes over what it reads or a dataset's/run's own file, however spelled
# (issue 31): each is refused (exit 2) and every byte stays.
before=$(cat data/manifest.json data/*.h5 "$ckpt" run/metrics.jsonl | md5sum)
ln -s data data-link
shard=$(ls data | grep -m1 '^test-.*\.h5$')
expect_rc 2 run_mpi 2 evaluate --checkpoint "$ckpt" --data data --eval.out data/manifest.json
expect_output "--eval.out data/manifest.json is the manifest of dataset"
expect_rc 2 run_mpi 1 evaluate --checkpoint "$ckpt" --data data --eval.out data-link/../data/manifest.json
expect_rc 2 run_mpi 1 evaluate --checkpoint "$ckpt" --data data --eval.out "$ckpt"
expect_output "which this command reads"
expect_rc 2 run_mpi 2 predict --checkpoint "$ckpt" --data data --out "data-link/$shard"
expect_output "is shard $shard of dataset"
expect_rc 2 run_mpi 1 predict --checkpoint "$ckpt" --data data --out run/metrics.jsonl
expect_rc 2 "$LOCKSTEP" export --checkpoint "$ckpt" --out "run/checkpoints/best.safetensors"
expect_output "checkpoints/ folder of run"
[ "$(cat data/manifest.json data/*.h5 "$ckpt" run/metrics.jsonl | md5sum)" = "$before" ] || fail "an aliased output changed a file"
pass "outputs that alias inputs or a dataset's/run's own files are refused, nothing changed"

# A hostile round on these commands (2026-11-29), fixed as classes:
# (1) an existing file (the user's own, or the --config job file itself) was replaced by any
#     output: refused without --force (the job file even with it); a missing folder is refused
#     before the work, not after it (it named a temporary file).
echo precious >mine.csv
expect_rc 2 run_mpi 1 predict --checkpoint "$ckpt" --data data --out mine.csv
expect_output "--predict.out mine.csv is an existing file: pass --force to replace it"
[ "$(cat mine.csv)" = precious ] || fail "predict replaced an existing file without --force"
expect_rc 0 run_mpi 1 predict --checkpoint "$ckpt" --data data --out mine.csv --force
head -1 mine.csv | grep -q '^index,label,' || fail "--force did not replace it"
printf '[eval]\nsplit = val\n' >job.ini
expect_rc 2 run_mpi 1 evaluate --config job.ini --checkpoint "$ckpt" --data data --eval.out job.ini --force
expect_output "which this command reads"
expect_rc 2 "$LOCKSTEP" export --checkpoint "$ckpt" --out nodir/m.safetensors
expect_output "--export.out nodir/m.safetensors is in a folder that does not exist"
# (2) a word no option takes (a shell glob's second match) was dropped: the first file scored alone.
expect_rc 2 "$LOCKSTEP" evaluate --data data --checkpoint run/checkpoints/step-*.ckpt
expect_output "unexpected argument 'run/checkpoints/step-.*': each option takes one value"
# (3) a manifest edited by hand: a shard listed twice, shards reordered, a split pointing at
#     another's shards; each scored silently (inspect --verify passed them).
for edit in twice reorder other; do
  rm -rf edited && cp -r data edited
  "$PYTHON" - edited/manifest.json "$edit" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
t, tr = m["splits"]["test"], m["splits"]["train"]
if sys.argv[2] == "twice":
    t["shards"].append(t["shards"][0]); t["count"] += t["shards"][0]["count"]
elif sys.argv[2] == "reorder":
    t["shards"].reverse()
else:
    m["splits"]["test"] = json.loads(json.dumps(tr))
json.dump(m, open(sys.argv[1], "w"))
PY
  expect_rc nonzero run_mpi 1 evaluate --checkpoint "$ckpt" --data edited
  expect_output "listed twice|but the manifest lists it as shard"
done
# (4) labelled data whose classes the model names in another order: every label meant another
#     class (accuracy 0, exit 0).
#     export --data wrote any dataset's names and statistics into the file.
"$LOCKSTEP" shard --input "idx:$FMNIST" --output named --limit 300 --shards 1 --name named --class-names a,b,c,d,e,f,g,h,i,j >/dev/null
"$LOCKSTEP" shard --input "idx:$FMNIST" --output swapped --limit 300 --shards 1 --name swapped --class-names b,a,c,d,e,f,g,h,i,j >/dev/null
expect_rc 0 "$LOCKSTEP" train --data named --batch-size 16 --max-steps 3 --run-dir named-run
expect_rc 2 "$LOCKSTEP" evaluate --checkpoint named-run/checkpoints/best.ckpt --data swapped
expect_output "its model numbers the classes a,b,c,d,e,f,\.\.\., the data b,a,c,d,e,f,\.\.\.: the same classes in another order"
expect_rc 2 "$LOCKSTEP" predict --checkpoint named-run/checkpoints/best.ckpt --data swapped --out swapped.csv
[ ! -e swapped.csv ] || fail "predict wrote names of the wrong classes"
expect_rc 2 "$LOCKSTEP" export --checkpoint named-run/checkpoints/best.ckpt --data swapped --out swapped.safetensors
"$PYTHON" "$DOCS/../../bench/gpu_data.py" rgb.h5 32 3 16 16 2 >/dev/null
"$LOCKSTEP" shard --input hdf5:rgb.h5 --output rgb --name rgb --val-fraction 0 >/dev/null
expect_rc 2 "$LOCKSTEP" export --checkpoint "$ckpt" --data rgb --out rgb.safetensors
expect_output "$ckpt: its model takes samples \[1,28,28\], the data has \[3,16,16\]"
# (5) non-finite weights: every prediction NaN, its argmax class 0, exit 0.
"$PYTHON" - model.safetensors nan.safetensors <<'PY'
import json, struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
name = next(k for k, v in h.items() if k != "__metadata__" and v["dtype"] == "F32")
b[8 + n + h[name]["data_offsets"][0]:8 + n + h[name]["data_offsets"][0] + 4] = struct.pack("<f", float("nan"))
open(sys.argv[2], "wb").write(b)
PY
expect_rc 2 "$LOCKSTEP" predict --checkpoint nan.safetensors --data data --out nan.csv
expect_output "nan.safetensors: weight '.*' holds a NaN or an infinity"
# (6) a batch far above the split's samples sized the buffers by the batch (std::bad_alloc);
#     --train.threads had no bound (100000 threads ran for minutes).
expect_rc 0 "$LOCKSTEP" evaluate --checkpoint "$ckpt" --data data --split val --batch-size 2000000000
expect_rc 2 "$LOCKSTEP" evaluate --checkpoint "$ckpt" --data data --threads 100000
expect_output "--train.threads must be at most 1024"
# (7) the same images stored as floats in [0, 1] for a model of 0-255 pixels: normalised with the
#     model's statistics (mean 73, std 90) every input was wrong (accuracy 0.098, exit 0). Refused
#     by the data's spread (its std) against the model's; the error names the stored dtypes the
#     checkpoint records. A model without statistics normalises with the data's own: it scores.
"$PYTHON" - <<'PY'
import json
import h5py, numpy as np
m = json.load(open("data/manifest.json"))
x = np.concatenate([h5py.File("data/" + s["file"])["samples"][:] for s in m["splits"]["test"]["shards"]])
y = np.concatenate([h5py.File("data/" + s["file"])["labels"][:] for s in m["splits"]["test"]["shards"]])
for name, scale in (("unit", 1 / 255), ("same", 1.0)):
    with h5py.File(name + ".h5", "w") as f:
        f["samples"] = (x.astype(np.float32) * scale).astype(np.float32)
        f["labels"] = y
PY
for name in unit same; do
  "$LOCKSTEP" shard --input "hdf5:$name.h5" --output "$name" --name "$name" --val-fraction 0 --shards 1 >/dev/null
done
expect_rc 2 run_mpi 1 evaluate --checkpoint "$ckpt" --data unit --split train
expect_output "$ckpt: the data's samples spread 0\.3[0-9]* \(std of channel 0\) where its model's training data spread [0-9.]+, 2[0-9.]+x narrower in every channel that varies, means scaled alike \(it trained on uint8 samples, the data stores float32\): samples in other units \(pixels 0-1 for 0-255\?\)"
expect_rc 2 run_mpi 1 predict --checkpoint model.safetensors --data unit --split train --out unit.csv
[ ! -e unit.csv ] || fail "predict wrote predictions of wrongly normalised inputs"
expect_rc 0 run_mpi 1 evaluate --checkpoint "$ckpt" --data same --split train  # same units, stored as floats
expect_rc 2 "$LOCKSTEP" export --checkpoint "$ckpt" --data unit --out unit.safetensors
#     A test input in other units than the training input was imported and scored at chance.
expect_rc 2 "$LOCKSTEP" shard --input hdf5:same.h5 --test-input hdf5:unit.h5 --output mixed --name mixed
expect_output "unit.h5: its samples spread 0\.3[0-9]* \(std of channel 0\) where the training input's \(mixed\) spread [0-9.]+, 2[0-9.]+x narrower in every channel that varies, means scaled alike"
[ ! -e mixed/manifest.json ] || fail "shard wrote a dataset whose test split is in other units"
"$PYTHON" - model.safetensors nostats.safetensors <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
assert h["__metadata__"]["data_dtype"] == "uint8", h["__metadata__"]
for k in ("mean", "std"):
    h["__metadata__"][k] = "[]"
head = json.dumps(h).encode()
head += b" " * (-len(head) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(head)) + head + b[8 + n:])
PY
expect_rc 0 run_mpi 1 evaluate --checkpoint nostats.safetensors --data unit --split train
# (8) inspect's words: an HDF5 file lockstep did not write was "missing attribute 'name'" with
#     no file named; a checkpoint with bytes appended was "truncated", and exit 1 where
#     evaluate says 2 of the same file.
expect_rc 2 "$LOCKSTEP" inspect unit.h5
expect_output "unit.h5: missing attribute 'name' \(not a file lockstep wrote"
cp "$ckpt" appended.ckpt && echo extra >>appended.ckpt
expect_rc 2 "$LOCKSTEP" inspect appended.ckpt
expect_output "appended.ckpt: corrupt checkpoint: longer than its header says"
expect_rc 2 run_mpi 1 evaluate --checkpoint appended.ckpt --data data
#     A shard is checked against the manifest beside it, as a checkpoint against its checksum.
expect_rc 0 "$LOCKSTEP" inspect "data/$shard"
expect_output "^verified     no \(--verify checks it against the manifest beside it\)"
expect_rc 0 "$LOCKSTEP" inspect "data/$shard" --verify
expect_output "^verified     $shard +[0-9]+ samples  crc32 [0-9a-f]+, as the manifest beside it lists it"
rm -rf flipped && cp -r data flipped
"$PYTHON" - "flipped/$shard" <<'PY'
import sys
import h5py
with h5py.File(sys.argv[1], "r") as f:  # a byte of the samples themselves, not HDF5's metadata
    ds = f["samples"]
    at = ds.id.get_offset() if ds.chunks is None else ds.id.get_chunk_info(0).byte_offset
with open(sys.argv[1], "r+b") as f:
    f.seek(at + 10)
    b = f.read(1)
    f.seek(-1, 1)
    f.write(bytes([b[0] ^ 0xFF]))
PY
expect_rc 2 "$LOCKSTEP" inspect "flipped/$shard" --verify
expect_output "flipped/$shard: checksum mismatch"
pass "a hostile round: an existing output needs --force, the job file never; a missing folder before the work; an extra argument; a hand-edited manifest; data in other units than the model's"

"$PYTHON" - "$DOCS" "$ckpt" <<'PY' || fail "PyTorch disagrees with lockstep predict"
import csv, json, sys
import h5py, numpy as np, torch
from safetensors import safe_open
from safetensors.torch import load_file
sys.path.insert(0, sys.argv[1])
import lockstep_models as lm
weights = load_file("model.safetensors")
with safe_open("model.safetensors", "pt") as f:
    meta = f.metadata()
model = lm.build(meta).eval()
model.load_state_dict(weights, strict=True)
# The checkpoint reader of docs/checkpoints.md gives the same tensors.
cmeta, state = lm.read_checkpoint(sys.argv[2])
assert cmeta["model"] == "cnn" and set(state) == set(weights), (set(state) ^ set(weights))
assert all(torch.equal(state[k], weights[k]) for k in weights)
# The test split, in manifest order, as lockstep reads it.
manifest = json.load(open("data/manifest.json"))
raw = np.concatenate([h5py.File("data/" + s["file"])["samples"][:] for s in manifest["splits"]["test"]["shards"]])
with torch.no_grad():
    probs = model(lm.normalise(torch.from_numpy(raw), meta)).softmax(1).numpy()
ours = h5py.File("pred.h5")
assert (ours["index"][:] == np.arange(len(raw))).all()
diff = np.abs(ours["prob"][:] - probs).max()
assert diff < 1e-4, diff
rows = list(csv.DictReader(open("pred1.csv")))
assert [int(r["pred"]) for r in rows] == list(ours["pred"][:]), "1-rank csv and 2-rank h5 predictions differ"
acc = (ours["pred"][:] == ours["label"][:]).mean()
print(f"PyTorch reference == lockstep predict: max |dp| {diff:.2e} over {len(raw)} samples, accuracy {acc:.4f}")
PY
acc_pred=$("$PYTHON" -c "import h5py; f=h5py.File('pred.h5'); print(f'{(f[\"pred\"][:] == f[\"label\"][:]).mean():.4f}')")
expect_rc 0 run_mpi 2 evaluate --checkpoint model.safetensors --data data
expect_output "evaluate model.safetensors \(step [0-9]+\) on data split 'test': accuracy $acc_pred"
pass "export loads strict into the reference module; PyTorch == predict; evaluate of the export == predict ($acc_pred)"

# Mirror test-time augmentation (--eval.hflip): predict == PyTorch's averaged probabilities
# of each image and its mirror; evaluate agrees with it; training's test pass is evaluate's.
expect_rc 0 run_mpi 2 predict --checkpoint "$ckpt" --data data --out mirror.h5 --eval.hflip
expect_output "predict $ckpt .* -> mirror.h5 \(every class's probability\), averaged with mirrors \(--eval.hflip\)"
acc_mirror=$("$PYTHON" - "$DOCS" <<'PY'
import json, sys
import h5py, numpy as np, torch
from safetensors import safe_open
from safetensors.torch import load_file
sys.path.insert(0, sys.argv[1])
import lockstep_models as lm
with safe_open("model.safetensors", "pt") as f:
    meta = f.metadata()
model = lm.build(meta).eval()
model.load_state_dict(load_file("model.safetensors"), strict=True)
manifest = json.load(open("data/manifest.json"))
raw = np.concatenate([h5py.File("data/" + s["file"])["samples"][:] for s in manifest["splits"]["test"]["shards"]])
with torch.no_grad():
    x = lm.normalise(torch.from_numpy(raw), meta)
    probs = ((model(x).softmax(1) + model(x.flip(-1)).softmax(1)) / 2).numpy()
ours, plain = h5py.File("mirror.h5"), h5py.File("pred.h5")
flag = lambda f: np.asarray(f.attrs["eval_hflip"]).item()
assert flag(ours) == 1 and flag(plain) == 0, (flag(ours), flag(plain))
# class_names as docs/after-training.md reads it: one string, the names joined by newlines
names = plain.attrs["class_names"].decode()
assert (names.split("\n") if names else []) == manifest.get("class_names", []), names
diff = np.abs(ours["prob"][:] - probs).max()
assert diff < 1e-4, diff
assert np.abs(ours["prob"][:] - plain["prob"][:]).max() > 1e-3, "mirroring changed nothing"
print(f"{(ours['pred'][:] == ours['label'][:]).mean():.4f}")
PY
) || fail "lockstep predict --eval.hflip disagrees with PyTorch's mirror average"
expect_rc 0 run_mpi 2 evaluate --checkpoint "$ckpt" --data data --eval.hflip
expect_output "on data split 'test' averaged with mirrors \(--eval.hflip\): accuracy $acc_mirror"
expect_rc 0 run_mpi 2 train "${COMMON[@]}" --run-dir mirror --epochs 1 --eval.hflip
expect_output "evaluation averages each sample's class probabilities with its mirror's \(--eval.hflip\)"
[ "$(json_rows mirror/metrics.jsonl test eval_hflip)" = True ] || fail "the test row does not record --eval.hflip"
# Validation (which chooses best.ckpt) and the test pass are both evaluate --eval.hflip's.
for split in val test; do
  expect_rc 0 run_mpi 1 evaluate --checkpoint mirror/checkpoints/best.ckpt --data data --split $split --eval.hflip \
    --eval.out mirror-$split.json
done
"$PYTHON" - <<'PY' || fail "training's mirrored validation or test differs from lockstep evaluate --eval.hflip"
import json
rows = [json.loads(l) for l in open("mirror/metrics.jsonl")]
val = [r for r in rows if r.get("kind") == "epoch" and "val_acc" in r][-1]  # 1 epoch: best.ckpt's validation
test = [r for r in rows if r.get("kind") == "test"][-1]
for split, acc in (("val", val["val_acc"]), ("test", test["test_acc"])):
    ev = json.load(open(f"mirror-{split}.json"))
    assert ev["eval_hflip"] is True and abs(ev["accuracy"] - acc) < 1e-9, (split, ev["accuracy"], acc)
PY
# Scores with and without the mirror do not compare: a resume that changes it says so.
expect_rc 0 run_mpi 2 train "${COMMON[@]}" --run-dir mirror --epochs 2
expect_output "warning: .*best.ckpt \(step [0-9]+\) was validated with --eval.hflip, this run without --eval.hflip"
[ "$(json_rows mirror/metrics.jsonl test eval_hflip | tail -1)" = False ] || fail "the resumed test row claims --eval.hflip"
pass "--eval.hflip: predict == PyTorch's mirror average ($acc_mirror), evaluate agrees; training's validation and test == evaluate's; a resume that drops it is warned"

expect_rc 0 run_mpi 2 evaluate --checkpoint "$ckpt" --data data --split val
val_acc=$(grep -Eo "accuracy [0-9.]+" out.txt | head -1)
expect_rc 0 run_mpi 2 train "${COMMON[@]}" --run-dir warm --epochs 1 --init-from model.safetensors
expect_output "init from model.safetensors \(model cnn, step [0-9]+\): weights only"
expect_output "loaded +16"
expect_output "validation of the initial weights \(--init-from\) at step 0 on 'val' \(102 samples\): loss [0-9.]+ $val_acc"
expect_rc 0 run_mpi 2 train "${COMMON[@]}" --run-dir head --epochs 1 --init-from "$ckpt" --init-exclude fc2. --freeze conv1.,bn1.
expect_output "loaded +14"
expect_output "excluded +2 +fc2.weight, fc2.bias"
expect_output "frozen: 3 parameter tensor\(s\) under conv1.,bn1."
# A hostile finding (helper-48): a prefix that excluded nothing (fc. on the cnn, whose head is
# fc1./fc2.) loaded the head the user meant to drop, silently.
expect_rc 2 run_mpi 2 train "${COMMON[@]}" --run-dir head2 --epochs 1 --init-from "$ckpt" --init-exclude fc.
expect_output "--model.init-exclude fc.: no tensor of .* starts with it, so nothing was left out \(its names: conv1"
pass "--init-from (export and checkpoint): the same validation ($val_acc), partial loading with a table, --freeze"

"$PYTHON" - <<'PY'
import h5py, numpy as np
rng = np.random.default_rng(0)
x = rng.integers(0, 255, size=(96, 3, 72, 72), dtype=np.uint8)
y = rng.integers(0, 10, size=96)
with h5py.File("rgb.h5", "w") as f:
    f["samples"] = x
    f["labels"] = y
PY
"$LOCKSTEP" shard --input hdf5:rgb.h5 --output rgb --name rgb --val-fraction 0 >/dev/null
"$PYTHON" - <<'PY'
import torch, torchvision
from safetensors.torch import save_file
torch.manual_seed(0)
m = torchvision.models.resnet18(num_classes=10)
with torch.no_grad():  # non-trivial BatchNorm statistics
    m.train()(torch.randn(8, 3, 72, 72))
save_file({k: v.contiguous() for k, v in m.state_dict().items()}, "tv.safetensors")
PY
expect_rc 0 run_mpi 2 predict --checkpoint tv.safetensors --model resnet --data rgb --split train --out tv.h5
"$PYTHON" - <<'PY' || fail "lockstep's resnet18 disagrees with torchvision's on torchvision's weights"
import json, h5py, numpy as np, torch, torchvision
from safetensors.torch import load_file
m = torchvision.models.resnet18(num_classes=10)
m.load_state_dict(load_file("tv.safetensors"), strict=True)
manifest = json.load(open("rgb/manifest.json"))
raw = np.concatenate([h5py.File("rgb/" + s["file"])["samples"][:] for s in manifest["splits"]["train"]["shards"]])
mean = torch.tensor(manifest["mean"]).view(1, -1, 1, 1)
std = torch.tensor(manifest["std"]).view(1, -1, 1, 1)
with torch.no_grad():
    p = m.eval()((torch.from_numpy(raw).float() - mean) / std).softmax(1).numpy()
diff = np.abs(h5py.File("tv.h5")["prob"][:] - p).max()
assert diff < 1e-4, diff
print(f"torchvision resnet18 == lockstep resnet on its weights: max |dp| {diff:.2e}")
PY
expect_rc 0 run_mpi 2 train --data rgb --batch-size 16 --run-dir tvft --model resnet --max-steps 2 --init-from tv.safetensors --init-exclude fc.
expect_output "init from tv.safetensors \(foreign safetensors\)"
expect_output "loaded +120"
pass "torchvision resnet18 weights -> lockstep predict (same probabilities) and fine-tuning with a new head"

# The other built-in models' reference modules, and unlabelled data.
expect_rc 0 run_mpi 2 train "${COMMON[@]}" --run-dir mlp --model mlp --max-steps 6
expect_rc 0 "$LOCKSTEP" export --checkpoint mlp/checkpoints/step-000000006.ckpt --out mlp.safetensors
expect_rc 0 run_mpi 2 predict --checkpoint mlp.safetensors --data data --out mlp.h5
"$PYTHON" "$(dirname "$0")/check_export.py" "$DOCS" mlp.safetensors data test mlp.h5 || fail "mlp reference module"
"$PYTHON" - <<'PY'
import math, random
random.seed(2)
with open("series.csv", "w") as f:
    f.write("ax,ay,az,activity\n")
    for block in range(48):
        label = block % 3
        for t in range(32):
            v = [math.sin((label + 1) * t / 4.0 + k) + random.gauss(0, 0.3) for k in range(3)]
            f.write(",".join(f"{x:.4f}" for x in v) + f",{['walk', 'sit', 'run'][label]}\n")
PY
"$LOCKSTEP" shard --input csv:series.csv --window 32 --output series --shards 2 >/dev/null
expect_rc 0 run_mpi 2 train --data series --batch-size 8 --run-dir c1d --model cnn1d --width 8 --epochs 3 --max-steps 4
expect_rc 0 "$LOCKSTEP" export --checkpoint c1d/checkpoints/step-000000004.ckpt --out c1d.safetensors
expect_rc 0 run_mpi 2 predict --checkpoint c1d.safetensors --data series --split train --out c1d.h5
"$PYTHON" "$(dirname "$0")/check_export.py" "$DOCS" c1d.safetensors series train c1d.h5 || fail "cnn1d reference module"
expect_rc 2 run_mpi 2 predict --checkpoint c1d.safetensors --data series --split train --out x.csv --eval.hflip
expect_output "error: --eval.hflip mirrors images \[C,H,W\] and clips \[C,T,H,W\]; series has samples of shape \[3,32\]$"
expect_rc 2 run_mpi 2 train --data series --batch-size 8 --run-dir c1dm --model cnn1d --width 8 --max-steps 1 --eval.hflip
expect_output "--eval.hflip mirrors images .*; series has samples of shape \[3,32\]"
[ ! -e c1dm/checkpoints ] || fail "a refused --eval.hflip run wrote checkpoints"
expect_rc 0 run_mpi 2 train --data series --batch-size 8 --run-dir lmu --model lmu --width 16 --epochs 3 --max-steps 4
expect_rc 0 "$LOCKSTEP" export --checkpoint lmu/checkpoints/step-000000004.ckpt --out lmu.safetensors
expect_rc 0 run_mpi 2 predict --checkpoint lmu.safetensors --data series --split train --out lmu.h5
"$PYTHON" "$(dirname "$0")/check_export.py" "$DOCS" lmu.safetensors series train lmu.h5 || fail "lmu reference module"
pass "lmu: exported weights (with the Legendre buffers) load into the reference module and match predict"
"$PYTHON" - <<'PY'
import json, h5py, numpy as np
m = json.load(open("data/manifest.json"))
raw = np.concatenate([h5py.File("data/" + s["file"])["samples"][:] for s in m["splits"]["test"]["shards"]])
with h5py.File("unlabelled.h5", "w") as f:
    f["samples"] = raw[:200]
PY
"$LOCKSTEP" shard --input hdf5:unlabelled.h5 --labels-dataset none --output unl --no-shuffle --val-fraction 0 >/dev/null
expect_rc 0 run_mpi 2 predict --checkpoint "$ckpt" --data unl --split train --out unl.csv
expect_output "inputs normalised with the statistics the model was trained with"
"$PYTHON" - <<'PY' || fail "unlabelled predictions differ from the labelled ones on the same samples"
import csv, h5py
rows = list(csv.DictReader(open("unl.csv")))
assert "label" not in rows[0] and len(rows) == 200, rows[0]
same = h5py.File("pred.h5")["pred"][:200]
assert [int(r["pred"]) for r in rows] == list(same)
PY
pass "mlp and cnn1d exports load into their reference modules; predict on unlabelled data (the model's normalisation)"

# Bad input: one line, exit 2.
head -c 100 model.safetensors > short.safetensors
expect_rc 2 run_mpi 2 predict --checkpoint short.safetensors --data data --out x.csv
expect_output "short.safetensors: not a safetensors file \(header length [0-9]+ exceeds the file's 100 bytes\)"
"$PYTHON" - <<'PY'
import torch
from safetensors.torch import load_file, save_file
w = load_file("model.safetensors")
w["fc2.weight"] = w["fc2.weight"].to(torch.int32)
save_file(w, "int.safetensors")
w = load_file("model.safetensors")
w["fc2.weight"] = w["fc2.weight"][:5]
save_file(w, "shape.safetensors")
PY
for f in int shape; do
  expect_rc 2 run_mpi 2 predict --checkpoint $f.safetensors --data data --out x.csv
  expect_output "$f.safetensors: its weights do not fit model 'cnn' .*1 of another shape"
done
expect_rc 2 run_mpi 2 predict --checkpoint tv.safetensors --data data --out x.csv
expect_output "tv.safetensors: its weights do not fit model 'cnn'"
expect_rc 2 "$LOCKSTEP" export --checkpoint "$ckpt" --out model.pt
expect_output "must end in .safetensors"
[ ! -e x.csv ] || fail "a failed predict left its output"
pass "bad safetensors header, wrong dtype, wrong shape, another model family: one line, exit 2"

# Stopping on validation: early stopping and a target, agreed by all ranks.
expect_rc 0 run_mpi 2 train "${COMMON[@]}" --run-dir early --epochs 20 --lr 1e-9 \
  --train.early-stop-metric val_loss --train.early-stop-patience 2 --train.early-stop-min-delta 0.01
expect_output "stopping at step 42: val_loss did not improve by more than 0.01 for 2 evaluation\(s\)"
[ "$(json_rows early/metrics.jsonl end step)" = 42 ] || fail "no end row at the early stop"
[ -n "$(json_rows early/metrics.jsonl end stopped_early)" ] || fail "the end row does not say why it stopped"
expect_rc 0 run_mpi 2 train "${COMMON[@]}" --run-dir early --epochs 20 --lr 1e-9 \
  --train.early-stop-metric val_loss --train.early-stop-patience 2 --train.early-stop-min-delta 0.01
expect_output "nothing to do: the run stopped at step 42"
expect_rc 0 run_mpi 2 train "${COMMON[@]}" --run-dir target --epochs 20 --eval-every 7 --train.stop-at 'val_acc>=0.5'
expect_output "stopping at step [0-9]+: val_acc 0\.[5-9][0-9]* reached the target >=0.5 at step [0-9]+ after [0-9.]+ s"
expect_rc 2 run_mpi 2 train "${COMMON[@]}" --run-dir bad --train.stop-at 'accuracy>0.5'
expect_output "--train.stop-at must be val_acc>=X or val_f1>=X \(X in \[0, 1\]\), or val_loss<=X"
# A target validation can never reach would never stop the run (issue 31): refused.
expect_rc 2 run_mpi 1 train "${COMMON[@]}" --run-dir bad --train.stop-at 'val_acc>=1.5'
expect_output "not 'val_acc>=1.5'"
pass "early stopping (patience 2, min delta 0.01) and --train.stop-at: logged, end row, stays stopped"
echo "e2e after_training: all passed"
