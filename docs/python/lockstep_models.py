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

CTC models (`gru`, and `lmu` on speech: `tokens` in the metadata) return per-frame logits
[N, T', tokens + 1]; feed one sample at a time (its valid frames) or zero-pad after
normalising, as lockstep does. Tested in CI against `lockstep predict`
(tests/e2e/after_training.sh, video.sh, speech.sh).
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
    the last hidden state to FC. Equations: core/model/lmu.cpp.
    SEQUENCE (CTC, `tokens` in the metadata): every step's hidden state to FC (tokens +
    blank), one output per input frame; theta = min(L, 50), order = min(32, theta).
    Causal, so a sample alone (its valid frames only) gives what lockstep's padded batch does."""

    def __init__(self, shape, classes, w=128, sequence=False):
        super().__init__()
        self.one_channel = len(shape) == 1
        self.sequence = sequence
        c, length = (1, shape[0]) if self.one_channel else (shape[0], shape[1])
        theta = min(50, length) if sequence else length
        order = min(32, theta) if sequence else min(64, length)
        self.e_x = nn.Linear(c, 1, bias=False)
        self.e_h = nn.Linear(w, 1, bias=False)
        self.e_m = nn.Linear(order, 1, bias=False)
        self.w_x = nn.Linear(c, w)
        self.w_h = nn.Linear(w, w, bias=False)
        self.w_m = nn.Linear(order, w, bias=False)
        self.fc = nn.Linear(w, classes)
        i = torch.arange(order, dtype=torch.float64).view(-1, 1)
        j = torch.arange(order, dtype=torch.float64).view(1, -1)
        a = (2 * i + 1) / theta * torch.where(i < j, -1.0, (-1.0) ** (i - j + 1))
        b = (2 * i + 1) * (-1.0) ** i / theta
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
        hs = []
        for t in range(xs.shape[0]):
            u = ux[t] + self.e_h(h) + self.e_m(m)
            m = torch.addmm(u * self.bbar, m, self.abar_t)
            h = torch.tanh(hx[t] + self.w_h(h) + self.w_m(m))
            hs.append(h)
        return self.fc(torch.stack(hs, 1)) if self.sequence else self.fc(h)


class GruCtc(nn.Module):
    """lockstep's `gru` (CTC): conv1d k5 stride 2 (no bias) + BatchNorm + ReLU, 2 bidirectional
    GRU layers over the valid frames only (packed), FC to tokens + 1 (blank last). Input
    [N, C, T] normalised, padding zero; returns logits [N, T', tokens + 1] with
    T' = floor((T - 1) / 2) + 1 per sample. core/model/gru.cpp."""

    def __init__(self, features, classes, hidden=160):
        super().__init__()
        self.conv = nn.Conv1d(features, hidden, 5, stride=2, padding=2, bias=False)
        self.bn = nn.BatchNorm1d(hidden)
        self.gru = nn.GRU(hidden, hidden, num_layers=2, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, x, lengths=None):
        if lengths is None:
            lengths = torch.full((x.shape[0],), x.shape[-1], dtype=torch.long)
        x = F.relu(self.bn(self.conv(x))).transpose(1, 2)
        out_lengths = torch.clamp((lengths - 1) // 2 + 1, min=1)
        packed = nn.utils.rnn.pack_padded_sequence(x, out_lengths.cpu(), batch_first=True, enforce_sorted=False)
        out = nn.utils.rnn.pad_packed_sequence(self.gru(packed)[0], batch_first=True, total_length=x.shape[1])[0]
        return self.fc(out)


class _ConvBlock3d(nn.Module):
    """conv 3x3x3 (no bias), BatchNorm, ReLU, then max-pool POOL (None: none)."""

    def __init__(self, cin, cout, pool):
        super().__init__()
        self.conv = nn.Conv3d(cin, cout, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm3d(cout)
        self.pool = pool

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        return x if self.pool is None else F.max_pool3d(x, self.pool)


class C3d(nn.Module):
    """lockstep's `c3d`: clips [C, T, H, W]; 4 blocks of widths w, 2w, 4w, 8w, pooled
    (1,2,2), (2,2,2), (2,2,2), none; global average pool, FC. core/model/c3d.cpp."""

    def __init__(self, channels, classes, w=32):
        super().__init__()
        c = channels
        for i, pool in enumerate([(1, 2, 2), (2, 2, 2), (2, 2, 2), None], 1):
            setattr(self, f"block{i}", _ConvBlock3d(c, w << (i - 1), pool))
            c = w << (i - 1)
        self.fc = nn.Linear(c, classes)

    def forward(self, x):
        for i in (1, 2, 3, 4):
            x = getattr(self, f"block{i}")(x)
        return self.fc(x.mean((2, 3, 4)))


class _Block3d(nn.Module):
    """Two 3x3x3 convolutions and a shortcut (1x1x1 conv + BatchNorm when the shape changes)."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv3d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm3d(cout)
        self.conv2 = nn.Conv3d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm3d(cout)
        self.down_conv = self.down_bn = None
        if stride != 1 or cin != cout:
            self.down_conv = nn.Conv3d(cin, cout, 1, stride=stride, bias=False)
            self.down_bn = nn.BatchNorm3d(cout)

    def forward(self, x):
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + (self.down_bn(self.down_conv(x)) if self.down_conv is not None else x))


class R3d(nn.Module):
    """lockstep's `r3d`: 3-D ResNet-10/18 on clips [C, T, H, W]; frames up to 64 px get a
    3x3x3 stem and no pool, larger a (3,7,7) stem of stride (1,2,2) and a (1,3,3) max-pool;
    4 stages of widths w..8w, stride 2 from the second; global average pool, FC.
    core/model/r3d.cpp."""

    def __init__(self, shape, classes, depth=18, w=16):
        super().__init__()
        self.small = shape[2] <= 64 and shape[3] <= 64
        self.stem = (nn.Conv3d(shape[0], w, 3, padding=1, bias=False) if self.small else
                     nn.Conv3d(shape[0], w, (3, 7, 7), stride=(1, 2, 2), padding=(1, 3, 3), bias=False))
        self.stem_bn = nn.BatchNorm3d(w)
        self.blocks = []
        c = w
        for stage in range(4):
            for b in range(1 if depth == 10 else 2):
                name = f"layer{stage + 1}_{b}"
                setattr(self, name, _Block3d(c, w << stage, 2 if stage > 0 and b == 0 else 1))
                self.blocks.append(name)
                c = w << stage
        self.fc = nn.Linear(c, classes)

    def forward(self, x):
        x = F.relu(self.stem_bn(self.stem(x)))
        if not self.small:
            x = F.max_pool3d(x, (1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1))
        for name in self.blocks:
            x = getattr(self, name)(x)
        return self.fc(x.mean((2, 3, 4)))


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
    tokens = meta.get("tokens")
    if tokens is not None and isinstance(tokens, str):
        tokens = json.loads(tokens)
    if tokens:  # a CTC model: tokens + blank outputs per frame
        classes = len(tokens) + 1
    if name == "lmu":
        return Lmu(shape, classes, width or 128, sequence=bool(tokens))
    if name == "gru":
        return GruCtc(shape[0] if len(shape) == 2 else 1, classes, width or 160)
    if name == "c3d":
        return C3d(shape[0], classes, width or 32)
    if name == "r3d":
        return R3d(shape, classes, depth, width or 16)
    raise ValueError(f"no reference module for model {name!r}")


def normalise(raw, meta):
    """Raw samples [N, C, ...] (any dtype, as in the shards; a tensor or a NumPy array) -> the
    float inputs lockstep feeds."""
    raw = torch.as_tensor(raw)
    mean = torch.tensor(json.loads(meta["mean"]) if isinstance(meta["mean"], str) else meta["mean"])
    std = torch.tensor(json.loads(meta["std"]) if isinstance(meta["std"], str) else meta["std"])
    shape = [1, -1] + [1] * (raw.dim() - 2)
    return (raw.float() - mean.float().view(shape)) / std.float().view(shape)
