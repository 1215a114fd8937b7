#!/usr/bin/env bash
# NumPy arrays as input (npy:/npz:), written by NumPy itself from real data (Fashion-MNIST):
# the Keras layout (mnist.npz: x_train [N,28,28] uint8, y_train; x_test, y_test) imported
# with --sample-shape 1,28,28 holds exactly the input's samples and labels and trains at 2
# ranks; the same arrays compressed (np.savez_compressed) import to the same shards; float64
# Fortran-order big-endian samples with int32 labels as two .npy files; an unlabelled .npy
# predicted on; a corrupt compressed member, a missing key and a pickled object array are
# each refused in one line naming the file; [N,H,W,3] images refused until --layout says
# they are channels-last, then stored channels first.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)  # before common.sh changes directory
source "$ROOT/tests/e2e/common.sh" "$@"
[ -d "$FMNIST" ] || fail "Fashion-MNIST not found at $FMNIST (apt-get install dataset-fashion-mnist)"

"$PYTHON" - "$FMNIST" <<'PY'
import gzip, sys, numpy as np
def idx(name, offset):
    with gzip.open(f"{sys.argv[1]}/{name}.gz") as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)
x = idx("train-images-idx3-ubyte", 16).reshape(-1, 28, 28)[:3000]
y = idx("train-labels-idx1-ubyte", 8)[:3000]
xt = idx("t10k-images-idx3-ubyte", 16).reshape(-1, 28, 28)[:1000]
yt = idx("t10k-labels-idx1-ubyte", 8)[:1000]
np.savez("fm.npz", x_train=x, y_train=y, x_test=xt, y_test=yt)
np.savez_compressed("fmc.npz", x_train=x, y_train=y, x_test=xt, y_test=yt)
xf = np.asfortranarray((x[:500].astype(np.float64) / 255.0).astype(">f8"))
np.save("xf.npy", xf)
np.save("y32.npy", y[:500].astype(np.int32))
np.save("unl.npy", xt[:64])
np.save("objects.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
PY

# 1. The Keras layout: every sample and label, exactly; trains at 2 ranks.
expect_rc 0 "$LOCKSTEP" shard --input npz:fm.npz:x_train,y_train --test-input npz:fm.npz:x_test,y_test \
  --sample-shape 1,28,28 --output fm --shards 2
expect_output "train +2700 samples"
expect_output "test +1000 samples"
expect_rc 0 "$LOCKSTEP" shard --input npz:fmc.npz:x_train,y_train --test-input npz:fmc.npz:x_test,y_test \
  --sample-shape 1x28x28 --output fmc --shards 2
same_data() {  # same_data NPZ SPLITS... DIR: every split's samples and labels, as a multiset
  "$PYTHON" - "$@" <<'PY'
import json, sys, h5py, numpy as np
src, dirs = np.load(sys.argv[1]), sys.argv[2:]
want = sorted((int(l), s.tobytes()) for s, l in zip(src["x_train"], src["y_train"]))
want_t = sorted((int(l), s.tobytes()) for s, l in zip(src["x_test"], src["y_test"]))
def split(d, m, name):
    out = []
    for shard in m["splits"].get(name, {"shards": []})["shards"]:
        with h5py.File(f"{d}/{shard['file']}") as h:
            labels = h["labels"][:]
            labels = labels[:, 0] if labels.ndim == 2 else labels
            out += [(int(l), s.reshape(28, 28).tobytes()) for s, l in zip(h["samples"][:], labels)]
    return out
for d in dirs:
    m = json.load(open(f"{d}/manifest.json"))
    assert m["sample_shape"] == [1, 28, 28] and m["dtype"] == "uint8" and m["num_classes"] == 10, m
    assert sorted(split(d, m, "train") + split(d, m, "val")) == want, (d, "train + val")
    assert sorted(split(d, m, "test")) == want_t, (d, "test")
print("every sample and label of", sys.argv[1], "in", dirs)
PY
}
same_data fm.npz fm fmc || fail "the npz imports do not hold the arrays' samples and labels"
pass "npz (stored and compressed, Keras layout, --sample-shape): exactly the arrays' samples and labels"

expect_rc 0 run_mpi 2 train --data fm --epochs 2 --batch-size 32 --lr 0.05 --log-every 20 --run-dir run
acc=$(json_rows run/metrics.jsonl end test_acc)
"$PYTHON" -c "import sys; sys.exit(0 if float('$acc') > 0.6 else 1)" || fail "test accuracy $acc after 2 epochs on the npz import"
pass "trains at 2 ranks on the npz import (test accuracy $acc)"

# 2. float64, Fortran order, big-endian samples + int32 labels as two .npy files.
expect_rc 0 "$LOCKSTEP" shard --input npy:xf.npy,y32.npy --output xf --shards 1 --val-fraction 0 --no-shuffle
"$PYTHON" - <<'PY' || fail "the Fortran-order float64 .npy import differs from the array"
import json, h5py, numpy as np
x, y = np.load("xf.npy"), np.load("y32.npy")
m = json.load(open("xf/manifest.json"))
assert m["sample_shape"] == [28, 28] and m["dtype"] == "float32", m
with h5py.File("xf/" + m["splits"]["train"]["shards"][0]["file"]) as h:
    s, l = h["samples"][:], h["labels"][:]
    l = l[:, 0] if l.ndim == 2 else l
got = sorted((int(a), b.tobytes()) for b, a in zip(s, l))
want = sorted((int(a), b.astype(np.float32).tobytes()) for b, a in zip(x, y))
assert got == want
PY
pass "float64 Fortran-order big-endian .npy + int32 labels: the same values as float32"

# 3. Unlabelled: imported, and predicted on with the model trained above.
expect_rc 0 "$LOCKSTEP" shard --input npy:unl.npy --sample-shape 1,28,28 --output unl --val-fraction 0
expect_rc 0 run_mpi 2 predict --checkpoint run/checkpoints/best.ckpt --data unl --split train --out unl.csv
[ "$(tail -n +2 unl.csv | wc -l)" = 64 ] || fail "predict on the unlabelled npy import: $(wc -l <unl.csv) lines"
pass "an unlabelled .npy: imported and predicted on (64 rows)"

# 4. Refused in one line naming the file: a corrupt compressed member, a missing key, a
# pickled object array, a wrong --sample-shape.
"$PYTHON" - <<'PY'
import zipfile
data = bytearray(open("fmc.npz", "rb").read())
info = zipfile.ZipFile("fmc.npz").getinfo("x_train.npy")
mid = info.header_offset + 30 + len(info.filename) + info.compress_size // 2
data[mid] ^= 0xFF
open("bad.npz", "wb").write(bytes(data))
PY
expect_rc nonzero "$LOCKSTEP" shard --input npz:bad.npz:x_train,y_train --output bad
expect_output "bad.npz:x_train"
[ ! -e bad/manifest.json ] || fail "a corrupt npz left a manifest"
expect_rc nonzero "$LOCKSTEP" shard --input npz:fm.npz --output bad
expect_output "fm.npz: no array 'samples' \(it holds: x_train, y_train, x_test, y_test\); name them as npz:fm.npz:SAMPLES_KEY,LABELS_KEY"
expect_rc nonzero "$LOCKSTEP" shard --input npy:objects.npy --output bad
expect_output "objects.npy: an object array \(pickled Python objects\), which lockstep never loads"
expect_rc 2 "$LOCKSTEP" shard --input npy:unl.npy --sample-shape 3,28,28 --output bad
expect_output "--sample-shape \[3,28,28\] has 2352 elements; the samples of unl.npy are \[28,28\] \(784\)"
pass "a corrupt member, a missing key, a pickle and a wrong --sample-shape: one line each"

# 5. Channels-last arrays (NumPy/Keras images [N,H,W,3]): refused without --layout, naming
# both shapes; --layout channels-last stores each sample as x.transpose(2,0,1).
"$PYTHON" - <<'PY'
import numpy as np
x = np.load("fm.npz")["x_train"][:300]
rgb = np.stack([x, 255 - x, x // 2], axis=-1)  # [300,28,28,3], three different channels
np.save("hwc.npy", rgb)
np.save("hwc_y.npy", np.load("fm.npz")["y_train"][:300])
PY
expect_rc 2 "$LOCKSTEP" shard --input npy:hwc.npy,hwc_y.npy --output hwc
expect_output "hwc.npy: samples of shape \[28,28,3\] look channels-last .* --layout channels-last to store them as \[3,28,28\]"
[ ! -e hwc/manifest.json ] || fail "a refused channels-last import left a manifest"
expect_rc 0 "$LOCKSTEP" shard --input npy:hwc.npy,hwc_y.npy --output hwc --layout channels-last --val-fraction 0 \
  --no-shuffle --shards 1
"$PYTHON" - <<'PY' || fail "--layout channels-last did not store x.transpose(2,0,1)"
import json, h5py, numpy as np
x = np.load("hwc.npy")
m = json.load(open("hwc/manifest.json"))
assert m["sample_shape"] == [3, 28, 28], m
with h5py.File("hwc/" + m["splits"]["train"]["shards"][0]["file"]) as h:
    assert (h["samples"][:] == x.transpose(0, 3, 1, 2)).all()
PY
pass "channels-last arrays: refused naming both shapes; --layout channels-last stores them channels first"
echo "arrays: all passed"
