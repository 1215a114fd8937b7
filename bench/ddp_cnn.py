"""The PyTorch DDP program a lockstep user would otherwise write: the same reference CNN,
the same Fashion-MNIST data and normalisation, DistributedSampler, SGD with momentum,
gloo backend, launched by torchrun. Written to be fair and idiomatic, not a strawman:
data in memory as one tensor (no DataLoader worker overhead), one intra-op thread per
rank unless --threads says otherwise.

  torchrun --nproc_per_node 2 bench/ddp_cnn.py --steps 300 --batch-size 64

Prints one JSON line (rank 0): samples/s over the steps after --warmup.
"""
import argparse, gzip, json, os, time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


class ReferenceCnn(nn.Module):
    def __init__(self, classes=10, dropout=0.25):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(64)
        self.fc1 = nn.Linear(64 * 7 * 7, 128)
        self.drop = nn.Dropout(dropout)
        self.fc2 = nn.Linear(128, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc2(self.drop(F.relu(self.fc1(x.flatten(1)))))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--lr", type=float, default=0.05)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    images = torch.from_numpy(read_idx(os.path.join(a.data, "train-images-idx3-ubyte.gz")).copy())
    labels = torch.from_numpy(read_idx(os.path.join(a.data, "train-labels-idx1-ubyte.gz")).astype(np.int64))
    x_all = images.unsqueeze(1).float().sub_(72.94).div_(90.02)  # the manifest's mean/std
    sampler = torch.utils.data.DistributedSampler(torch.utils.data.TensorDataset(x_all, labels), seed=42)
    torch.manual_seed(42)
    model = nn.parallel.DistributedDataParallel(ReferenceCnn())
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
    step, t0, epoch, first_step_unix = 0, None, 0, None
    if a.steps == a.warmup:  # launch-time runs: no timed window
        t0 = time.perf_counter()
    while step < a.steps:
        sampler.set_epoch(epoch)
        idx = torch.tensor(list(iter(sampler)))
        for b in range(len(idx) // a.batch_size):
            if step == a.warmup:
                dist.barrier()
                t0 = time.perf_counter()
            sel = idx[b * a.batch_size:(b + 1) * a.batch_size]
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x_all[sel]), labels[sel])
            loss.backward()
            opt.step()
            step += 1
            if first_step_unix is None:
                first_step_unix = time.time()  # launch -> first step, measured by bench/run.sh
            if step >= a.steps:
                break
        epoch += 1
    dist.barrier()
    secs = time.perf_counter() - t0
    if rank == 0:
        n = (a.steps - a.warmup) * a.batch_size * world
        print(json.dumps({"impl": "ddp", "world": world, "samples_per_s": n / secs, "loss": loss.item(),
                          "first_step_unix": first_step_unix}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
