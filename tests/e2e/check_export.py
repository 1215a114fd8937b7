"""An exported model, loaded strictly into its reference module (docs/python), gives the
probabilities `lockstep predict` wrote for the same split — for a CTC model (the .h5 has
/log_prob), the per-frame log-probabilities, sample by sample (each sample alone, its valid
frames only: what lockstep's zero-padded batch gives).

usage: check_export.py DOCS_PYTHON_DIR MODEL.safetensors DATA_DIR SPLIT PRED.h5
"""
import json
import sys

import h5py
import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import load_file

docs, weights_file, data_dir, split, pred_file = sys.argv[1:6]
sys.path.insert(0, docs)
import lockstep_models as lm  # noqa: E402

weights = load_file(weights_file)
with safe_open(weights_file, "pt") as f:
    meta = f.metadata()
model = lm.build(meta).eval()
model.load_state_dict(weights, strict=True)
manifest = json.load(open(f"{data_dir}/manifest.json"))
ours = h5py.File(pred_file)
shards = manifest["splits"][split]["shards"]
import lockstep_shards  # docs/python: /samples, or a v3 frame table's clips
raw = lockstep_shards.split_samples(data_dir, split)
assert (ours["index"][:] == np.arange(len(raw))).all(), "rows are not in sample order"
if "log_prob" in ours:  # a CTC model: per-frame log-probabilities, rows one after another
    lengths = np.concatenate([h5py.File(f"{data_dir}/{s['file']}")["lengths"][:] for s in shards])
    offsets = np.concatenate([[0], np.cumsum(ours["frames"][:])])
    diff = 0.0
    with torch.no_grad():
        for i in range(len(raw)):
            x = lm.normalise(torch.from_numpy(raw[i:i + 1, ..., :lengths[i]]), meta)
            mine = torch.log_softmax(model(x), -1)[0].numpy()
            theirs = ours["log_prob"][offsets[i]:offsets[i + 1]]
            assert mine.shape == theirs.shape, (i, mine.shape, theirs.shape)
            diff = max(diff, float(np.abs(mine - theirs).max()))
    what = "log-probabilities, max |d log p|"
else:
    with torch.no_grad():
        probs = model(lm.normalise(torch.from_numpy(raw), meta)).softmax(1).numpy()
    diff = float(np.abs(ours["prob"][:] - probs).max())
    what = "probabilities, max |dp|"
assert diff < 1e-4, diff
print(f"{meta['lockstep_model']}: PyTorch reference module == lockstep predict's {what} {diff:.2e} over {len(raw)} samples")
