#!/usr/bin/env bash
# Folders of images as input (images:DIR), against what PyTorch users load them with (PIL,
# torchvision), on real data where it matters:
# 1. Fashion-MNIST written as PNG class folders (DIR/train/CLASS, DIR/test/CLASS) imports to
#    exactly the IDX pixels and labels and trains at 2 ranks; the model scores the same test
#    images imported as JPEG (quality 90) within 3 points of the PNG ones (600 test images).
# 2. What PIL does, pixel for pixel: EXIF orientation 6 (JPEG), CMYK JPEG, RGBA, palette and
#    gray PNGs to RGB, 16-bit gray by its high byte (PIL clips it at 255); --image-size resizes the shorter side and crops the centre
#    like torchvision's Resize + CenterCrop (within 2 levels: PIL works in fixed point).
# 3. Bad input: a truncated JPEG is refused naming it; with --skip-bad it is named, skipped
#    and counted in the manifest; a non-image with an image's name is refused naming it;
#    other files are skipped with one line.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)  # before common.sh changes directory
source "$ROOT/tests/e2e/common.sh" "$@"
[ -d "$FMNIST" ] || fail "Fashion-MNIST not found at $FMNIST (apt-get install dataset-fashion-mnist)"

"$PYTHON" - "$FMNIST" <<'PY'
import gzip, os, sys, numpy as np
from PIL import Image
def idx(name, offset):
    with gzip.open(f"{sys.argv[1]}/{name}.gz") as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)
names = ["T-shirt", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Boot"]
sets = {"train": (idx("train-images-idx3-ubyte", 16).reshape(-1, 28, 28)[:2000], idx("train-labels-idx1-ubyte", 8)[:2000]),
        "test": (idx("t10k-images-idx3-ubyte", 16).reshape(-1, 28, 28)[:600], idx("t10k-labels-idx1-ubyte", 8)[:600])}
np.savez("fm.npz", **{f"x_{s}": x for s, (x, y) in sets.items()}, **{f"y_{s}": y for s, (x, y) in sets.items()})
for fmt, ext in (("PNG", "png"), ("JPEG", "jpg")):
    for split, (x, y) in sets.items():
        for i, (img, label) in enumerate(zip(x, y)):
            d = f"fm-{ext}/{split}/{label}-{names[label]}"
            os.makedirs(d, exist_ok=True)
            Image.fromarray(img).save(f"{d}/{i:05d}.{ext}", fmt, **({"quality": 90} if fmt == "JPEG" else {}))
open("fm-png/train/0-T-shirt/notes.txt", "w").write("not an image\n")

# 2. Kinds of files, each in its own class folder kinds/KIND/, with what PIL + torchvision
# make of it (ref-KIND.npy, RGB HWC). 16-bit gray: the high byte (PIL's convert("RGB")
# clips 16-bit gray at 255, which makes most such images white; lockstep scales).
import torchvision.transforms as T
from PIL import ImageOps
rng = np.random.default_rng(1)
base = (rng.integers(0, 256, (24, 40, 3))).astype(np.uint8)
base[:, :8] = 255  # asymmetric, so a wrong rotation shows
def save(kind, img, fmt, **kw):
    os.makedirs(f"kinds/{kind}", exist_ok=True)
    path = f"kinds/{kind}/{kind}.{'jpg' if fmt == 'JPEG' else 'png'}"
    img.save(path, fmt, **kw)
    ref = ImageOps.exif_transpose(Image.open(path))
    ref = np.asarray(ref.convert("RGB")) if ref.mode != "I;16" else np.repeat((np.asarray(ref) >> 8).astype(np.uint8)[:, :, None], 3, 2)
    np.save(f"ref-{kind}.npy", ref)
    np.save(f"ref16-{kind}.npy", np.asarray(T.CenterCrop(16)(T.Resize(16)(Image.fromarray(ref)))))
exif = Image.Exif(); exif[0x0112] = 6
save("exif6", Image.fromarray(base), "JPEG", quality=95, exif=exif.tobytes())
import struct  # orientation 8 as a big-endian ("MM") LONG, as some cameras write it: one IFD0 entry
be = b"Exif\0\0MM\0\x2a" + struct.pack(">IH", 8, 1) + struct.pack(">HHII", 0x0112, 4, 1, 8) + struct.pack(">I", 0)
save("exif8be", Image.fromarray(base), "JPEG", quality=95, exif=be)
save("cmyk", Image.fromarray(base).convert("CMYK"), "JPEG", quality=95)
save("rgba", Image.fromarray(np.dstack([base, rng.integers(0, 256, (24, 40), dtype=np.uint8)])), "PNG")
save("gray16", Image.fromarray(base[:, :, 0].astype(np.uint16) * 257), "PNG")
save("palette", Image.fromarray(base).convert("P"), "PNG")
save("paltrns", Image.fromarray(base).quantize(64), "PNG", transparency=0)  # a palette with a transparent entry
save("gray", Image.fromarray(base[:, :, 1]), "PNG")
save("wide", Image.fromarray(np.repeat(base, 2, axis=1)), "PNG")

# 3. A truncated JPEG among good ones.
os.makedirs("bad/a", exist_ok=True); os.makedirs("bad/b", exist_ok=True)
for i in range(3):
    Image.fromarray(base).save(f"bad/a/{i}.jpg", "JPEG"); Image.fromarray(base[::-1]).save(f"bad/b/{i}.jpg", "JPEG")
data = open("bad/a/1.jpg", "rb").read()
open("bad/a/1.jpg", "wb").write(data[: len(data) // 2])
PY

# 1. PNG folders: the IDX pixels exactly; JPEG folders: the PNG's accuracy within 3 points.
expect_rc 0 "$LOCKSTEP" shard --input images:fm-png --output png --shards 2
expect_output "fm-png/train: skipped 1 file\(s\) that are not .jpg/.jpeg/.png images \(first: fm-png/train/0-T-shirt/notes.txt\)"
expect_output "test +600 samples"
"$PYTHON" - <<'PY' || fail "the PNG import differs from the IDX pixels and labels"
import json, h5py, numpy as np
src, m = np.load("fm.npz"), json.load(open("png/manifest.json"))
assert m["sample_shape"] == [1, 28, 28] and m["dtype"] == "uint8", m
assert m["class_names"][0] == "0-T-shirt" and m["class_names"][9] == "9-Boot", m["class_names"]
def stored(*splits):
    out = []
    for s in splits:
        for shard in m["splits"][s]["shards"]:
            with h5py.File("png/" + shard["file"]) as h:
                l = h["labels"][:]
                l = l[:, 0] if l.ndim == 2 else l
                out += [(int(a), b.tobytes()) for b, a in zip(h["samples"][:, 0], l)]
    return sorted(out)
for split, parts in (("train", ("train", "val")), ("test", ("test",))):
    want = sorted((int(a), b.tobytes()) for b, a in zip(src[f"x_{split}"], src[f"y_{split}"]))
    assert stored(*parts) == want, split
print("PNG import == IDX pixels and labels")
PY
expect_rc 0 "$LOCKSTEP" shard --input images:fm-jpg --output jpg --shards 2 --decode-threads 2
expect_rc 0 run_mpi 2 train --data png --epochs 2 --batch-size 32 --lr 0.05 --log-every 50 --seed 3 --run-dir run-png
for d in png jpg; do
  expect_rc 0 run_mpi 2 evaluate --checkpoint run-png/checkpoints/best.ckpt --data $d --split test --eval.out eval-$d.json
done
"$PYTHON" - <<'PY' || fail "JPEG accuracy is not within 3 points of PNG's"
import json
acc = {d: json.load(open(f"eval-{d}.json"))["accuracy"] for d in ("png", "jpg")}
print(f"the PNG-trained model on the test images: PNG {acc['png']:.3f}, JPEG q90 {acc['jpg']:.3f}")
assert acc["png"] > 0.6 and abs(acc["png"] - acc["jpg"]) <= 0.03, acc
PY
pass "Fashion-MNIST as PNG folders == the IDX pixels; as JPEG q90 the same model scores within 3 points"

# 2. Every kind as PIL sees it, at its own size (alone) and at 16x16 (all, one class each).
for kind in exif6 exif8be cmyk rgba gray16 palette paltrns gray; do
  rm -rf one && mkdir -p one/a && cp kinds/$kind/* one/a/
  expect_rc 0 "$LOCKSTEP" shard --input images:one --output "k-$kind" --color rgb --val-fraction 0
done
expect_rc 0 "$LOCKSTEP" shard --input images:kinds --output k16 --color rgb --image-size 16x16 --val-fraction 0
"$PYTHON" - <<'PY' || fail "an image differs from PIL's / torchvision's"
import json, h5py, numpy as np
def samples(d):
    m = json.load(open(f"{d}/manifest.json"))
    with h5py.File(f"{d}/" + m["splits"]["train"]["shards"][0]["file"]) as h:
        l = h["labels"][:]
        return h["samples"][:].transpose(0, 2, 3, 1), (l[:, 0] if l.ndim == 2 else l), m["class_names"]
for kind in ("exif6", "exif8be", "cmyk", "rgba", "gray16", "palette", "paltrns", "gray"):
    got, ref = samples(f"k-{kind}")[0][0].astype(int), np.load(f"ref-{kind}.npy").astype(int)
    assert got.shape == ref.shape, (kind, got.shape, ref.shape)
    worst = np.abs(got - ref).max()
    assert worst <= (1 if kind in ("exif6", "exif8be", "cmyk") else 0), (kind, worst)
x, labels, names = samples("k16")
assert sorted(names) == names and len(x) == 9, names
for img, label in zip(x, labels):
    diff = np.abs(img.astype(int) - np.load(f"ref16-{names[label]}.npy").astype(int))
    assert diff.max() <= 2 and diff.mean() <= 0.5, (names[label], diff.max(), diff.mean())
print("every kind equals PIL's decode; --image-size 16x16 within 2 levels of torchvision's Resize + CenterCrop")
PY
pass "EXIF, CMYK, RGBA, 16-bit, palette (transparent too) and gray as PIL sees them; --image-size as torchvision"

# Layouts (helper-43): a folder beside train/ (validation/) made the split folders classes and
# mixed the test images into training, silently; a hidden folder (.cache) became a class.
mkdir -p layout/train/a layout/train/b layout/validation/a layout/.cache/a
for d in layout/train/a layout/train/b layout/validation/a layout/.cache/a; do cp kinds/gray/gray.png "$d/"; done
cp kinds/gray/gray.png layout/train/a/g2.png && cp kinds/gray/gray.png layout/train/b/g2.png
expect_rc 1 "$LOCKSTEP" shard --input images:layout --output layout-out --val-fraction 0
expect_output "layout holds train/ and also validation/: a split layout is train/, val/ and test/"
mv layout/validation layout/val
expect_rc 0 "$LOCKSTEP" shard --input images:layout --output layout-out --val-fraction 0
"$PYTHON" -c "import json,sys; m=json.load(open('layout-out/manifest.json')); assert m['class_names']==['a','b'], m['class_names']; assert sorted(s for s in m['splits'])==['train','val'], list(m['splits'])" ||
  fail "the split layout beside a hidden folder did not import as train/val of classes a, b"
pass "a folder beside train/ is refused naming it; hidden folders are no class"

# 3. Bad files.
expect_rc nonzero "$LOCKSTEP" shard --input images:bad --output bad-out --val-fraction 0
expect_output "bad/a/1.jpg: not a readable JPEG: .* \(--skip-bad skips files that do not decode\)"
[ ! -e bad-out/manifest.json ] || fail "a failed image import left a manifest"
expect_rc 0 "$LOCKSTEP" shard --input images:bad --output bad-out --skip-bad --val-fraction 0
expect_output "skipped \(--skip-bad\): bad/a/1.jpg: not a readable JPEG"
"$PYTHON" -c "import json; m = json.load(open('bad-out/manifest.json')); assert m['skipped_inputs'] == 1 and m['splits']['train']['count'] == 5, m" ||
  fail "the manifest does not count the skipped file"
rm bad/a/1.jpg
echo "just text" >bad/b/fake.png
expect_rc nonzero "$LOCKSTEP" shard --input images:bad --output bad-out2 --force --val-fraction 0
expect_output "bad/b/fake.png: neither a JPEG nor a PNG"
expect_rc 2 "$LOCKSTEP" shard --input images:bad --output bad-out2 --image-size 16
expect_output "--image-size must be HxW \(e.g. 224x224\), not '16'"
pass "a truncated JPEG refused or (--skip-bad) skipped, named and counted; a fake PNG refused"
echo "images: all passed"
