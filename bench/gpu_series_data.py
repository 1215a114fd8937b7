"""Synthetic sensor windows for the GPU report's HAR rows (the GPU machines have h5py and numpy
but no datasets and no downloads): N float32 windows of C channels x L steps, CLASSES classes,
each class a sine of its own frequency and phase per channel plus noise, as wearable sensors
give (jobs/har_basicmotions.ini: 6 channels x 100 steps). Writes an HDF5 file with /samples
and /labels for `lockstep shard --input hdf5:FILE`.

  python3 bench/gpu_series_data.py OUT.h5 N C L CLASSES [SEED]
"""
import sys

import h5py
import numpy as np


def main():
    out, n, c, length, classes = sys.argv[1], *map(int, sys.argv[2:6])
    seed = int(sys.argv[6]) if len(sys.argv) > 6 else 0
    rng = np.random.default_rng(seed)
    labels = (np.arange(n) % classes).astype(np.int64)
    rng.shuffle(labels)
    freq = rng.uniform(0.5, 4.0, size=(classes, c))
    phase = rng.uniform(0, 2 * np.pi, size=(classes, c))
    t = np.linspace(0, 2 * np.pi, length, dtype=np.float64)
    clean = np.sin(freq[:, :, None] * t[None, None, :] + phase[:, :, None])  # [classes, C, L]
    samples = clean[labels] + 0.3 * rng.standard_normal((n, c, length))
    with h5py.File(out, "w") as f:
        f.create_dataset("samples", data=samples.astype(np.float32))
        f.create_dataset("labels", data=labels)


if __name__ == "__main__":
    main()
