"""Synthetic image and clip data for the GPU report and the GPU tests (the GPU machines have
h5py and numpy but no datasets and no downloads): N uint8 images C x H x W (or, with FRAMES,
clips C x FRAMES x H x W) of CLASSES classes, each class a brightness pattern plus noise (a
clip: the pattern in every frame, fresh noise per frame), so a model learns it and losses
fall. Writes an HDF5 file with /samples and /labels for `lockstep shard --input hdf5:FILE`;
the PyTorch anchor (bench/gpu_anchor.py) reads the same file.

  python3 bench/gpu_data.py OUT.h5 N C H W CLASSES [SEED] [FRAMES]
"""
import sys

import h5py
import numpy as np


def main():
    out, n, c, h, w, classes = sys.argv[1], *map(int, sys.argv[2:7])
    seed = int(sys.argv[7]) if len(sys.argv) > 7 else 0
    frames = int(sys.argv[8]) if len(sys.argv) > 8 else 0
    rng = np.random.default_rng(seed)
    labels = (np.arange(n) % classes).astype(np.int64)
    rng.shuffle(labels)
    # One pattern per class (coarse 8x8 blocks, upsampled), then per-sample noise.
    patterns = rng.integers(0, 160, size=(classes, c, 8, 8), dtype=np.uint8)
    patterns = np.repeat(np.repeat(patterns, -(-h // 8), axis=2), -(-w // 8), axis=3)[:, :, :h, :w]
    if frames > 0:
        patterns = np.repeat(patterns[:, :, None], frames, axis=2)  # [classes, C, T, H, W]
    shape = patterns.shape[1:]
    with h5py.File(out, "w") as f:
        ds = f.create_dataset("samples", (n, *shape), dtype=np.uint8)
        chunk = max(1, min(1024, (64 << 20) // int(np.prod(shape))))
        for lo in range(0, n, chunk):
            hi = min(n, lo + chunk)
            noise = rng.integers(0, 96, size=(hi - lo, *shape), dtype=np.uint8)
            ds[lo:hi] = patterns[labels[lo:hi]] + noise
        f.create_dataset("labels", data=labels)
    print(f"{out}: {n} samples {'x'.join(map(str, shape))}, {classes} classes")


if __name__ == "__main__":
    main()
