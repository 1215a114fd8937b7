"""Video clip classification, the PyTorch DDP way: the script a lockstep user would
otherwise write for jobs/video_behaviour.ini (bench/video_vs_ddp.sh runs both and prints
the ratio).

Same data (lockstep's shards via h5py: uint8 clips [C, T, H, W], read by
docs/python/lockstep_shards.py from /samples or a v3 frame table, int64 /labels; normalised per batch with the manifest's per-channel mean/std, the clips staying
uint8 in memory), models (c3d, r3d-10/18: below), loss (cross-entropy, class weights "auto"
= N / (K * n_k) over the training split, optional label smoothing), Adam or AdamW (LR x 1,
world or sqrt(world) as --lr-scaling says), linear warm-up then cosine (or constant) per
step, batch per rank with the remainder dropped, one intra-op thread per rank, gloo,
DistributedSampler. No augmentation.
Validation after every epoch (outside the timed part) by macro-F1 over the classes that
occur, as lockstep computes it; the test split with the weights of the best validation
macro-F1, as lockstep's best.ckpt (the last weights without a validation split).

Models (every conv bias-free, then BatchNorm3d, then ReLU):
  c3d (width w=32): 4 blocks conv3x3x3 -> BN -> ReLU [-> max-pool], C->w pool (1,2,2),
    w->2w pool 2, 2w->4w pool 2, 4w->8w; mean over (T,H,W) -> dropout -> linear.
  r3d (depth 10|18, width w=16): stem conv3x3x3 (frames up to 64x64) or conv (3,7,7)
    stride (1,2,2) + max-pool (1,3,3)/(1,2,2); 4 stages of BasicBlock3d (w,2w,4w,8w; 1 or 2
    blocks each), stride 2 in T,H,W entering stages 2-4; mean -> dropout -> linear.

  torchrun --nproc_per_node 2 bench/ddp_video.py --data data/video-behaviour --epochs 3

Prints one line per epoch and then one JSON line (rank 0): training samples/s per epoch
(validation excluded), validation macro-F1 per epoch and at the end, test macro-F1 and
accuracy, wall seconds.
"""
import argparse, copy, json, math, os, sys, time

T0 = time.time()

import h5py
import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "python"))
import lockstep_shards  # noqa: E402


def load_split(root, manifest, split):
    if split not in manifest["splits"]:
        return None, None
    xs, ys = [], []
    for shard in manifest["splits"][split]["shards"]:
        with h5py.File(os.path.join(root, shard["file"]), "r") as f:
            xs.append(lockstep_shards.shard_samples(f))  # whole clips or a v3 frame table
            ys.append(f["labels"][...])
    return torch.from_numpy(np.concatenate(xs)), torch.from_numpy(np.concatenate(ys).astype(np.int64))


def conv_bn(cin, cout, kernel=3, stride=1, padding=1):
    return [nn.Conv3d(cin, cout, kernel, stride=stride, padding=padding, bias=False), nn.BatchNorm3d(cout)]


class Head(nn.Module):
    def __init__(self, features, classes, dropout):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(features, classes)

    def forward(self, x):
        return self.fc(self.drop(x.mean(dim=(2, 3, 4))))


class C3d(nn.Module):
    def __init__(self, channels, classes, width=32, dropout=0.25):
        super().__init__()
        w = width
        def block(cin, cout, pool):
            return [*conv_bn(cin, cout), nn.ReLU(inplace=True)] + ([nn.MaxPool3d(pool)] if pool else [])
        self.features = nn.Sequential(*block(channels, w, (1, 2, 2)), *block(w, 2 * w, (2, 2, 2)),
                                      *block(2 * w, 4 * w, (2, 2, 2)), *block(4 * w, 8 * w, None))
        self.head = Head(8 * w, classes, dropout)

    def forward(self, x):
        return self.head(self.features(x))


class BasicBlock3d(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.body = nn.Sequential(*conv_bn(cin, cout, stride=stride), nn.ReLU(inplace=True), *conv_bn(cout, cout))
        self.shortcut = (nn.Sequential(*conv_bn(cin, cout, kernel=1, stride=stride, padding=0))
                         if stride != 1 or cin != cout else nn.Identity())

    def forward(self, x):
        return F.relu(self.body(x) + self.shortcut(x))


class R3d(nn.Module):
    def __init__(self, channels, classes, size, depth=18, width=16, dropout=0.25):
        super().__init__()
        if depth not in (10, 18):
            raise ValueError(f"r3d depth {depth}: 10 or 18")
        w, per_stage = width, 1 if depth == 10 else 2
        if size[0] <= 64 and size[1] <= 64:
            stem = [*conv_bn(channels, w), nn.ReLU(inplace=True)]
        else:
            stem = [*conv_bn(channels, w, (3, 7, 7), (1, 2, 2), (1, 3, 3)), nn.ReLU(inplace=True),
                    nn.MaxPool3d((1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1))]
        blocks, cin = [], w
        for s, cout in enumerate([w, 2 * w, 4 * w, 8 * w]):
            for b in range(per_stage):
                blocks.append(BasicBlock3d(cin, cout, 2 if s > 0 and b == 0 else 1))
                cin = cout
        self.features = nn.Sequential(*stem, *blocks)
        self.head = Head(8 * w, classes, dropout)

    def forward(self, x):
        return self.head(self.features(x))


def make_model(a, sample_shape, classes):
    c, _, h, w = sample_shape
    if a.model == "c3d":
        return C3d(c, classes, a.width or 32, a.dropout)
    return R3d(c, classes, (h, w), a.depth, a.width or 16, a.dropout)


def class_weights(spec, labels, classes):
    if spec == "none":
        return None
    if spec != "auto":
        return torch.tensor([float(v) for v in spec.split(",")])
    n = torch.bincount(labels, minlength=classes).double()
    w = torch.where(n > 0, n.sum() / (classes * n.clamp(min=1)), torch.zeros_like(n))
    return w.float()


@torch.no_grad()
def evaluate(model, x, y, classes, batch, norm, rank, world):
    """Accuracy and macro-F1 (over classes that occur as truth or prediction) of the
    confusion matrix summed over ranks, each rank scoring its contiguous share."""
    model.eval()
    lo, hi = len(x) * rank // world, len(x) * (rank + 1) // world
    confusion = torch.zeros(classes * classes, dtype=torch.int64)
    for b in range(lo, hi, batch):
        pred = model(norm(x[b:min(b + batch, hi)])).argmax(1)
        confusion += torch.bincount(y[b:min(b + batch, hi)] * classes + pred, minlength=classes * classes)
    dist.all_reduce(confusion)
    model.train()
    m = confusion.view(classes, classes).double()
    tp, actual, predicted = m.diag(), m.sum(1), m.sum(0)
    seen = (actual + predicted) > 0
    f1 = 2 * tp[seen] / (actual + predicted)[seen]
    return (tp.sum() / m.sum().clamp(min=1)).item(), (f1.mean().item() if seen.any() else 0.0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="data/video-behaviour")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--model", choices=["c3d", "r3d"], default="c3d")
    p.add_argument("--depth", type=int, choices=[10, 18], default=18)
    p.add_argument("--width", type=int, default=0, help="0: the model's default (c3d 32, r3d 16)")
    p.add_argument("--dropout", type=float, default=0.25)
    p.add_argument("--batch-size", type=int, default=16, help="per rank")
    p.add_argument("--optimizer", choices=["adam", "adamw"], default="adam")
    p.add_argument("--lr", type=float, default=0.001)
    p.add_argument("--lr-scaling", choices=["none", "linear", "sqrt"], default="none")
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.999)
    p.add_argument("--schedule", choices=["cosine", "constant"], default="cosine")
    p.add_argument("--warmup-epochs", type=float, default=1.0)
    p.add_argument("--warmup-steps", type=int, default=0, help="added to --warmup-epochs, as lockstep does")
    p.add_argument("--min-lr-fraction", type=float, default=0.0)
    p.add_argument("--clip-norm", type=float, default=0.0, help="0: off")
    p.add_argument("--class-weights", default="auto", help="auto | none | w0,w1,...")
    p.add_argument("--label-smoothing", type=float, default=0.0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=42)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    manifest = json.load(open(os.path.join(a.data, "manifest.json")))
    classes, shape = manifest["num_classes"], manifest["sample_shape"]
    if len(shape) != 4:
        raise SystemExit(f"{a.data}: sample_shape {shape} is not [C, T, H, W]")
    mean = torch.tensor(manifest["mean"], dtype=torch.float32).view(1, -1, 1, 1, 1)
    std = torch.tensor(manifest["std"], dtype=torch.float32).view(1, -1, 1, 1, 1)
    norm = lambda u8: (u8.float() - mean) / std
    x, y = load_split(a.data, manifest, "train")
    xv, yv = load_split(a.data, manifest, "val")
    weights = class_weights(a.class_weights, y, classes)
    torch.manual_seed(a.seed)
    model = nn.parallel.DistributedDataParallel(make_model(a, shape, classes))
    lr = a.lr * {"none": 1.0, "linear": world, "sqrt": math.sqrt(world)}[a.lr_scaling]
    Opt = torch.optim.Adam if a.optimizer == "adam" else torch.optim.AdamW
    opt = Opt(model.parameters(), lr=lr, betas=(a.beta1, a.beta2), weight_decay=a.weight_decay)
    sampler = torch.utils.data.DistributedSampler(range(len(x)), num_replicas=world, rank=rank, seed=a.seed,
                                                  drop_last=True)
    steps = len(sampler) // a.batch_size
    total, warm = a.epochs * steps, a.warmup_steps + int(round(a.warmup_epochs * steps))
    def factor(s):
        if s < warm:
            return (s + 1) / warm
        if a.schedule == "constant":
            return 1.0
        t = min(1.0, (s - warm) / max(1, total - warm))
        return a.min_lr_fraction + (1 - a.min_lr_fraction) * 0.5 * (1 + math.cos(math.pi * t))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    per_epoch, val_f1s, best = [], [], (-1.0, None, 0)
    val_acc = val_f1 = None
    for epoch in range(a.epochs):
        sampler.set_epoch(epoch)
        order = torch.tensor(list(iter(sampler)))
        dist.barrier()
        t = time.time()
        for b in range(steps):
            sel = order[b * a.batch_size:(b + 1) * a.batch_size]
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(norm(x[sel])), y[sel], weight=weights, label_smoothing=a.label_smoothing)
            loss.backward()
            if a.clip_norm > 0:
                nn.utils.clip_grad_norm_(model.parameters(), a.clip_norm)
            opt.step()
            sched.step()
        per_epoch.append(steps * a.batch_size * world / (time.time() - t))
        note = ""
        if xv is not None:
            val_acc, val_f1 = evaluate(model.module, xv, yv, classes, a.batch_size, norm, rank, world)
            val_f1s.append(val_f1)
            if val_f1 > best[0]:
                best = (val_f1, copy.deepcopy(model.module.state_dict()), epoch + 1)
            note = f", val_acc {val_acc:.4f} val_f1 {val_f1:.4f}"
        if rank == 0:
            print(f"epoch {epoch + 1}: loss {loss.item():.4f} {per_epoch[-1]:.1f} samples/s{note}", flush=True)
    test_acc = test_f1 = None
    xt, yt = load_split(a.data, manifest, "test")
    if xt is not None:
        if best[1] is not None:
            model.module.load_state_dict(best[1])
        test_acc, test_f1 = evaluate(model.module, xt, yt, classes, a.batch_size, norm, rank, world)
    if rank == 0:
        print(json.dumps({"impl": "ddp", "world": world, "epochs": a.epochs, "model": a.model,
                          "samples_per_s": per_epoch, "val_f1_per_epoch": val_f1s, "val_acc": val_acc,
                          "val_f1": val_f1, "test_acc": test_acc, "test_f1": test_f1,
                          "test_weights_epoch": best[2] or a.epochs, "seconds": time.time() - T0}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
