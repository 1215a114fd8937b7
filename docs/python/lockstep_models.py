"""Reference PyTorch modules for lockstep's built-in models, and a checkpoint reader.

`lockstep export` writes safetensors whose names load into these modules (and, for
`resnet`, into torchvision's resnet18/resnet34) with load_state_dict(strict=True):

    from safetensors import safe_open
    from safetensors.torch import load_file
    import lockstep_models
    weights = load_file("model.safetensors")
    with safe_open("model.safetensors", "pt") as f:
        meta = f.metadata()
    model = lockstep_models.build(meta)          # the architecture the metadata names
    model.load_state_dict(weights, strict=True)
    x = lockstep_models.normalise(raw, meta)     # raw samples as stored in the shards
    probs = model.eval()(x).softmax(1)

Tested in CI against `lockstep predict` (tests/e2e/after_training.sh).
"""
import io
import json
import struct
import zlib

import torch
from torch import nn
import torch.nn.functional as F


def read_checkpoint(path):
    """A lockstep .ckpt without lockstep: (metadata dict, state dict of the model)."""
    data = open(path, "rb").read()
    if data[:8] != b"LSCKPT01":
        raise ValueError(f"{path}: not a lockstep checkpoint")
    meta_len, payload_len, crc = struct.unpack("<QQI", data[8:28])
    body = data[28:28 + meta_len + payload_len]
    if len(body) != meta_len + payload_len or zlib.crc32(body) != crc:
        raise ValueError(f"{path}: truncated or corrupt")
    meta = json.loads(body[:meta_len])
    archive = torch.jit.load(io.BytesIO(body[meta_len:]), map_location="cpu")
    state = {k: v.detach().clone() for k, v in archive.model.named_parameters()}
    state.update({k: v.detach().clone() for k, v in archive.model.named_buffers()})
    return meta, state


class ReferenceCnn(nn.Module):
    """lockstep's `cnn`: 2 x [conv3x3 (no bias), BatchNorm, ReLU, max-pool 2], FC 128, FC."""

    def __init__(self, channels, height, width, classes, w=32):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, w, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(w)
        self.conv2 = nn.Conv2d(w, 2 * w, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(2 * w)
        self.fc1 = nn.Linear(2 * w * (height // 4) * (width // 4), 128)
        self.fc2 = nn.Linear(128, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


class Mlp(nn.Module):
    """lockstep's `mlp`: any sample shape, flattened; 2 hidden layers of WIDTH, ReLU."""

    def __init__(self, features, classes, w=256):
        super().__init__()
        self.fc1, self.fc2, self.out = nn.Linear(features, w), nn.Linear(w, w), nn.Linear(w, classes)

    def forward(self, x):
        return self.out(F.relu(self.fc2(F.relu(self.fc1(x.flatten(1))))))


class Cnn1d(nn.Module):
    """lockstep's `cnn1d`: time series [C, L] (or [L]); 3 x [conv1d k5, BatchNorm, ReLU,
    max-pool 2 after the first two when L >= 8], global average pool, FC."""

    def __init__(self, shape, classes, w=64):
        super().__init__()
        self.one_channel = len(shape) == 1
        c, length = (1, shape[0]) if self.one_channel else (shape[0], shape[1])
        widths = [w, 2 * w, 2 * w]
        for i, out in enumerate(widths, 1):
            setattr(self, f"conv{i}", nn.Conv1d(c, out, 5, padding=2, bias=False))
            setattr(self, f"bn{i}", nn.BatchNorm1d(out))
            c = out
        self.pool = length >= 8
        self.fc = nn.Linear(c, classes)

    def forward(self, x):
        if self.one_channel:
            x = x.unsqueeze(1)
        for i in (1, 2, 3):
            x = F.relu(getattr(self, f"bn{i}")(getattr(self, f"conv{i}")(x)))
            if self.pool and i < 3:
                x = F.max_pool1d(x, 2)
        return self.fc(x.mean(2))


class Lmu(nn.Module):
    """lockstep's `lmu`: a Legendre Memory Unit over time series [C, L] (or [L]); memory of
    order min(64, L) spanning theta = L steps (zero-order hold, dt = 1), w hidden units,
    the last hidden state to FC. Equations: core/model/lmu.cpp."""

    def __init__(self, shape, classes, w=128):
        super().__init__()
        self.one_channel = len(shape) == 1
        c, length = (1, shape[0]) if self.one_channel else (shape[0], shape[1])
        order = min(64, length)
        self.e_x = nn.Linear(c, 1, bias=False)
        self.e_h = nn.Linear(w, 1, bias=False)
        self.e_m = nn.Linear(order, 1, bias=False)
        self.w_x = nn.Linear(c, w)
        self.w_h = nn.Linear(w, w, bias=False)
        self.w_m = nn.Linear(order, w, bias=False)
        self.fc = nn.Linear(w, classes)
        i = torch.arange(order, dtype=torch.float64).view(-1, 1)
        j = torch.arange(order, dtype=torch.float64).view(1, -1)
        a = (2 * i + 1) / length * torch.where(i < j, -1.0, (-1.0) ** (i - j + 1))
        b = (2 * i + 1) * (-1.0) ** i / length
        m = torch.zeros(order + 1, order + 1, dtype=torch.float64)
        m[:order, :order], m[:order, order:] = a, b
        e = torch.linalg.matrix_exp(m)
        self.register_buffer("abar_t", e[:order, :order].t().float().contiguous())
        self.register_buffer("bbar", e[:order, order].float().unsqueeze(0))

    def forward(self, x):
        if self.one_channel:
            x = x.unsqueeze(1)
        xs = x.permute(2, 0, 1)
        ux, hx = self.e_x(xs), self.w_x(xs)
        h = x.new_zeros(x.shape[0], self.w_h.in_features)
        m = x.new_zeros(x.shape[0], self.abar_t.shape[0])
        for t in range(xs.shape[0]):
            u = ux[t] + self.e_h(h) + self.e_m(m)
            m = torch.addmm(u * self.bbar, m, self.abar_t)
            h = torch.tanh(hx[t] + self.w_h(h) + self.w_m(m))
        return self.fc(h)


def resnet(shape, classes, depth=18, w=64):
    """lockstep's `resnet` is torchvision's; images up to 64 px use a 3x3 stem, no max-pool."""
    import torchvision
    if w != 64:
        raise ValueError("torchvision's ResNets have width 64; a narrower lockstep resnet has no torchvision twin")
    m = getattr(torchvision.models, f"resnet{depth}")(num_classes=classes)
    if shape[0] != 3 or (shape[1] <= 64 and shape[2] <= 64):
        small = shape[1] <= 64 and shape[2] <= 64
        m.conv1 = nn.Conv2d(shape[0], 64, 3 if small else 7, stride=1 if small else 2, padding=1 if small else 3,
                            bias=False)
        if small:
            m.maxpool = nn.Identity()
    return m


def build(meta):
    """The module the safetensors metadata (or a checkpoint's meta) describes."""
    name = meta.get("lockstep_model") or meta.get("model")
    shape = json.loads(meta["sample_shape"]) if isinstance(meta["sample_shape"], str) else meta["sample_shape"]
    classes = int(meta["num_classes"])
    width = int(meta.get("lockstep_width", meta.get("model_width", 0)))
    depth = int(meta.get("lockstep_depth", meta.get("model_depth", 18)))
    if name == "cnn":
        return ReferenceCnn(shape[0], shape[1], shape[2], classes, width or 32)
    if name == "mlp":
        n = 1
        for d in shape:
            n *= d
        return Mlp(n, classes, width or 256)
    if name == "cnn1d":
        return Cnn1d(shape, classes, width or 64)
    if name == "resnet":
        return resnet(shape, classes, depth, width or 64)
    if name == "lmu":
        return Lmu(shape, classes, width or 128)
    raise ValueError(f"no reference module for model {name!r}")


def normalise(raw, meta):
    """Raw samples [N, C, ...] (any dtype, as in the shards) -> the float inputs lockstep feeds."""
    mean = torch.tensor(json.loads(meta["mean"]) if isinstance(meta["mean"], str) else meta["mean"])
    std = torch.tensor(json.loads(meta["std"]) if isinstance(meta["std"], str) else meta["std"])
    shape = [1, -1] + [1] * (raw.dim() - 2)
    return (raw.float() - mean.float().view(shape)) / std.float().view(shape)
