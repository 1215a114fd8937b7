"""An exported model, loaded strictly into its reference module (docs/python), gives the
probabilities `lockstep predict` wrote for the same split.

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
raw = np.concatenate([h5py.File(f"{data_dir}/{s['file']}")["samples"][:] for s in manifest["splits"][split]["shards"]])
with torch.no_grad():
    probs = model(lm.normalise(torch.from_numpy(raw), meta)).softmax(1).numpy()
ours = h5py.File(pred_file)
assert (ours["index"][:] == np.arange(len(raw))).all(), "rows are not in sample order"
diff = float(np.abs(ours["prob"][:] - probs).max())
assert diff < 1e-4, diff
print(f"{meta['lockstep_model']}: PyTorch reference module == lockstep predict, max |dp| {diff:.2e} over {len(raw)} samples")
