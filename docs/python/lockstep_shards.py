"""Reading a lockstep dataset's samples from Python (h5py + numpy), whatever its layout.

Shard format v1/v2 (docs/shard-format.md) stores the samples whole, in /samples. A v3 frame
table (video clips imported with `--video-storage frames`, the default) stores each distinct
frame once, /frames [F, C, H, W], and each clip as T rows of it, /clip_frames [N, T]: the
clips [N, C, T, H, W] are frames[clip_frames] with the time axis moved behind the channels.

    import lockstep_shards
    x = lockstep_shards.split_samples("data/mice", "test")   # uint8 [N, C, T, H, W]

Used by the tests and benchmarks that read shards (tests/e2e/video.sh, check_export.py,
bench/ddp_video.py).
"""
import json
import os

import numpy as np


def shard_samples(f, start=0, stop=None):
    """Samples [start, stop) of an open h5py shard file F, as stored (numpy)."""
    if "clip_frames" not in f:
        return f["samples"][start:stop]
    rows = f["clip_frames"][start:stop]  # [n, T] rows of /frames
    count, c, h, w = f["frames"].shape
    if rows.size == 0:
        return np.zeros((0, c, rows.shape[1], h, w), dtype=f["frames"].dtype)
    if rows.min() < 0 or rows.max() >= count:
        raise ValueError(f"{f.filename}: a clip names a frame row outside [0, {count})")
    needed, index = np.unique(rows, return_inverse=True)  # only the frames these clips use
    frames = f["frames"][needed]  # [k, C, H, W]
    return np.ascontiguousarray(frames[index.reshape(rows.shape)].transpose(0, 2, 1, 3, 4))


def split_samples(data_dir, split):
    """Every sample of SPLIT of the dataset in DATA_DIR, in sample order (its shards in turn)."""
    import h5py
    manifest = json.load(open(os.path.join(data_dir, "manifest.json")))
    out = []
    for s in manifest["splits"][split]["shards"]:
        with h5py.File(os.path.join(data_dir, s["file"]), "r") as f:
            out.append(shard_samples(f))
    return np.concatenate(out)
