"""Time to accuracy, the PyTorch DDP way: the script a lockstep user would otherwise write
for jobs/fashion_mnist_long.ini's recipe, run to a validation target.

Same data (lockstep's shards, read with h5py: the same train/val/test split and the
manifest's normalisation), model (bench/ddp_cnn.py's ReferenceCnn, dropout 0.25), SGD
(momentum 0.9, weight decay 5e-4 on every parameter), linear warmup then cosine to 0 over
the planned epochs, batch per rank, one intra-op thread per rank, gloo, DistributedSampler.
On a GPU (--device auto finds one; what lockstep does): NCCL, one GPU per rank
(LOCAL_RANK), the model on the GPU, each augmented batch copied to it; --amp bf16 runs
forward and loss under torch.autocast, as lockstep's --train.amp bf16.
Like lockstep it validates at every epoch end (every rank its share, sums all-reduced),
keeps the weights with the best validation macro-F1, stops once validation accuracy
reaches --target, and evaluates the test split once with the kept weights.

  torchrun --nproc_per_node 2 bench/ddp_tta.py --data data/fashion-mnist --target 0.925 [--random-crop 2 --hflip --random-erase P]

Prints one JSON line (rank 0): seconds from start to the target, epochs, val/test accuracy.
"""
import argparse, copy, json, math, os, time

T0 = time.time()  # before torch is imported: the script's whole start-up counts

import h5py
import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

from ddp_cnn import ReferenceCnn


def load_split(root, manifest, split):
    xs, ys = [], []
    for shard in manifest["splits"][split]["shards"]:
        with h5py.File(os.path.join(root, shard["file"]), "r") as f:
            xs.append(f["samples"][...])
            ys.append(f["labels"][...])
    mean = torch.tensor(manifest["mean"], dtype=torch.float32).view(1, -1, 1, 1)
    std = torch.tensor(manifest["std"], dtype=torch.float32).view(1, -1, 1, 1)
    x = (torch.from_numpy(np.concatenate(xs)).float() - mean) / std
    return x, torch.from_numpy(np.concatenate(ys).astype(np.int64))


def erase_boxes(n, h, w, p, g):
    """lockstep's --data.random-erase P (torchvision's RandomErasing): per image, with
    probability P, a rectangle of 2-40% of the area, aspect ratio log-uniform in [0.3, 3.3],
    up to 10 tries to fit; returns [n, 4] (y0, y1, x0, x1), empty boxes where none."""
    boxes = torch.zeros(n, 4, dtype=torch.long)
    for i in range(n):
        if torch.rand(1, generator=g).item() >= p:
            continue
        for _ in range(10):
            target = h * w * (0.02 + 0.38 * torch.rand(1, generator=g).item())
            ratio = math.exp(math.log(0.3) + (math.log(3.3) - math.log(0.3)) * torch.rand(1, generator=g).item())
            eh, ew = round(math.sqrt(target * ratio)), round(math.sqrt(target / ratio))
            if 1 <= eh <= h and 1 <= ew <= w:
                y0 = int(torch.randint(0, h - eh + 1, (1,), generator=g))
                x0 = int(torch.randint(0, w - ew + 1, (1,), generator=g))
                boxes[i] = torch.tensor([y0, y0 + eh, x0, x0 + ew])
                break
    return boxes


def augment(x, pad, hflip, g, erase=0.0):
    """lockstep's --data.random-crop PAD (zero padding of the normalised images, a random
    crop back to size), --data.hflip (each image flipped with probability 1/2) and
    --data.random-erase (erased rectangles set to 0, the mean), batched."""
    n, _, h, w = x.shape
    if pad:
        xp = F.pad(x, (pad, pad, pad, pad))
        dy = torch.randint(0, 2 * pad + 1, (n,), generator=g)
        dx = torch.randint(0, 2 * pad + 1, (n,), generator=g)
        iy = (dy[:, None] + torch.arange(h))[:, :, None]
        ix = (dx[:, None] + torch.arange(w))[:, None, :]
        x = xp[torch.arange(n)[:, None, None], :, iy, ix].permute(0, 3, 1, 2)
    if hflip:
        x = torch.where((torch.rand(n, generator=g) < 0.5)[:, None, None, None], x.flip(3), x)
    if erase:
        b = erase_boxes(n, h, w, erase, g)
        r, c = torch.arange(h)[None], torch.arange(w)[None]
        rows = (r >= b[:, 0:1]) & (r < b[:, 1:2])
        cols = (c >= b[:, 2:3]) & (c < b[:, 3:4])
        x = x.masked_fill((rows[:, :, None] & cols[:, None, :])[:, None], 0.0)
    return x


@torch.no_grad()
def evaluate(model, x, y, classes, rank, world, batch, device, amp):
    """Accuracy and macro-F1 over the whole split: each rank a contiguous slice, sums reduced."""
    model.eval()
    lo, hi = len(x) * rank // world, len(x) * (rank + 1) // world
    confusion = torch.zeros(classes, classes, dtype=torch.float64, device=device)
    for b in range(lo, hi, batch):
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
            pred = model(x[b:min(b + batch, hi)].to(device)).argmax(1)
        confusion.index_put_((y[b:min(b + batch, hi)].to(device), pred),
                             torch.ones(len(pred), dtype=torch.float64, device=device), accumulate=True)
    dist.all_reduce(confusion)
    model.train()
    tp = confusion.diag()
    f1 = 2 * tp / (confusion.sum(0) + confusion.sum(1)).clamp(min=1)
    return (tp.sum() / confusion.sum()).item(), f1.mean().item()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="data/fashion-mnist")
    p.add_argument("--target", type=float, default=0.925, help="validation accuracy to stop at")
    p.add_argument("--val-split", choices=("val", "test"), default="val",
                   help="the split evaluated at every epoch end and stopped on (test: time to a test accuracy, as "
                        "DAWNBench and MLPerf measure it)")
    p.add_argument("--epochs", type=int, default=15, help="planned epochs (the cosine schedule's length)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--warmup-steps", type=int, default=200)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--random-crop", type=int, default=0, help="zero padding of random crops (0: off)")
    p.add_argument("--hflip", action="store_true", help="random horizontal flips")
    p.add_argument("--random-erase", type=float, default=0.0, help="random erasing probability (0: off)")
    p.add_argument("--channels-last", action="store_true",
                   help="model and batches in channels-last memory format (what lockstep's --model.memory-format "
                        "auto does on CPU; a PyTorch user has to ask for it)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="auto: the GPU LOCAL_RANK names when torch sees one (NCCL), else the CPU (gloo)")
    p.add_argument("--amp", choices=("none", "bf16"), default="none", help="bf16 autocast (forward and loss)")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    use_cuda = a.device == "cuda" or (a.device == "auto" and torch.cuda.is_available())
    if use_cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    device = torch.device("cuda", torch.cuda.current_device()) if use_cuda else torch.device("cpu")
    amp = a.amp == "bf16"
    dist.init_process_group("nccl" if use_cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    manifest = json.load(open(os.path.join(a.data, "manifest.json")))
    classes = manifest["num_classes"]
    x_train, y_train = load_split(a.data, manifest, "train")
    x_val, y_val = load_split(a.data, manifest, a.val_split)
    x_test, y_test = load_split(a.data, manifest, "test")

    torch.manual_seed(a.seed)
    fmt = torch.channels_last if a.channels_last else torch.contiguous_format
    model = torch.nn.parallel.DistributedDataParallel(ReferenceCnn(classes).to(device, memory_format=fmt),
                                                      device_ids=[device.index] if use_cuda else None)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9, weight_decay=a.weight_decay)
    sampler = torch.utils.data.DistributedSampler(torch.utils.data.TensorDataset(x_train, y_train), seed=a.seed)
    steps_per_epoch = len(sampler) // a.batch_size
    total = a.epochs * steps_per_epoch

    def lr_factor(step):
        if step < a.warmup_steps:
            return (step + 1) / a.warmup_steps
        t = min(1.0, (step - a.warmup_steps) / max(1, total - a.warmup_steps))
        return 0.5 * (1 + math.cos(math.pi * t))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)
    g = torch.Generator().manual_seed(a.seed * 1000 + rank)
    best_f1, best_state, reached, epoch, val_acc = -1.0, None, None, 0, 0.0
    for epoch in range(1, a.epochs + 1):
        sampler.set_epoch(epoch - 1)
        idx = torch.tensor(list(iter(sampler)))
        for b in range(steps_per_epoch):
            sel = idx[b * a.batch_size:(b + 1) * a.batch_size]
            opt.zero_grad(set_to_none=True)
            x = x_train[sel]
            if a.random_crop or a.hflip or a.random_erase:
                x = augment(x, a.random_crop, a.hflip, g, a.random_erase)
            x = x.to(device, non_blocking=True).contiguous(memory_format=fmt)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
                loss = F.cross_entropy(model(x), y_train[sel].to(device, non_blocking=True))
            loss.backward()
            opt.step()
            sched.step()
        val_acc, val_f1 = evaluate(model, x_val, y_val, classes, rank, world, 1024, device, amp)
        if rank == 0:
            print(f"epoch {epoch}: val accuracy {val_acc:.4f} macro-F1 {val_f1:.4f} at {time.time() - T0:.1f} s",
                  flush=True)
        if val_f1 > best_f1:
            best_f1, best_state = val_f1, copy.deepcopy(model.module.state_dict())
        if val_acc >= a.target:  # identical on every rank: the confusion matrix was all-reduced
            reached = time.time() - T0
            break
    model.module.load_state_dict(best_state)
    test_acc, test_f1 = evaluate(model, x_test, y_test, classes, rank, world, 1024, device, amp)
    if rank == 0:
        print(json.dumps({"impl": "ddp-channels-last" if a.channels_last else "ddp", "world": world,
                          "device": device.type, "amp": a.amp, "target": a.target, "reached": reached is not None,
                          "seconds_to_target": reached, "epochs": epoch, "val_acc": val_acc,
                          "test_acc": test_acc, "test_f1": test_f1, "seconds": time.time() - T0}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
