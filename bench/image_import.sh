#!/usr/bin/env bash
# Image-folder decoding: `lockstep shard --input images:DIR --image-size 224x224` against the
# PyTorch way of reading the same folder (torchvision ImageFolder: PIL decode + Resize(224) +
# CenterCrop(224) to uint8, a DataLoader with the same number of worker processes), on
# synthetic photos-like JPEGs (smooth gradients + noise, 500x375, quality 90, 10 classes).
# Prints images/s of each and the ratio. Nothing else may run on the machine meanwhile.
#   bash bench/image_import.sh [IMAGES] [THREADS]     after .ci/setup; default 2000, nproc
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N=${1:-2000}
THREADS=${2:-$(nproc)}
PY=${LOCKSTEP_PYTHON:-$HOME/.cache/lockstep/venv-torch2.11/bin/python}
LOCKSTEP=${LOCKSTEP:-$ROOT/build/lockstep}
WORK=${BENCH_WORK:-/tmp/lockstep-image-bench}
mkdir -p "$WORK"
cd "$WORK"
if [ ! -f "photos-$N/.done" ]; then
  "$PY" - "$N" <<'PY'
import os, sys, numpy as np
from PIL import Image
n, rng = int(sys.argv[1]), np.random.default_rng(0)
y, x = np.mgrid[0:375, 0:500]
for i in range(n):
    c = i % 10
    d = f"photos-{n}/class{c}"
    os.makedirs(d, exist_ok=True)
    img = np.stack([(x * (c + 1) / 5 + y / 3 + k * 40) % 256 for k in range(3)], -1) + rng.normal(0, 12, (375, 500, 3))
    Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(f"{d}/{i:06d}.jpg", quality=90)
open(f"photos-{n}/.done", "w").close()
PY
fi
rm -rf out
start=$(date +%s.%N)
"$LOCKSTEP" shard --input "images:photos-$N" --output out --image-size 224x224 --decode-threads "$THREADS" \
  --val-fraction 0 >/dev/null
ours=$("$PY" -c "print($N / ($(date +%s.%N) - $start))")
theirs=$("$PY" - "$N" "$THREADS" <<'PY'
import sys, time, numpy as np, torch
from torchvision import datasets, transforms
n, workers = int(sys.argv[1]), int(sys.argv[2])
tf = transforms.Compose([transforms.Resize(224), transforms.CenterCrop(224), transforms.PILToTensor()])
ds = datasets.ImageFolder(f"photos-{n}", transform=tf)
dl = torch.utils.data.DataLoader(ds, batch_size=64, num_workers=workers)
t = time.time()
for x, y in dl:
    pass
print(n / (time.time() - t))
PY
)
"$PY" -c "print(f'images:DIR import, $N JPEGs 500x375 -> 224x224, $THREADS threads: lockstep {float($ours):.0f} images/s (decode + resize + shard write), torchvision ImageFolder + DataLoader {float($theirs):.0f} images/s (decode + resize only); ratio {float($ours) / float($theirs):.2f}x')"
