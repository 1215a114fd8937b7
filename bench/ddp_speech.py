"""The sequence path, the PyTorch DDP way: the script a lockstep user would otherwise write
for jobs/speech_digits.ini (bench/speech_vs_ddp.sh runs both and prints the ratio).

Same data (lockstep's v2 shards via h5py: log-mel [40, T] padded, /lengths, /targets; the
manifest's per-band normalisation), model (conv1d k5 stride 2 + BatchNorm + ReLU, 2
bidirectional GRU layers over packed sequences, FC to tokens + blank), CTC loss (mean over
target lengths), Adam (LR x sqrt(world)), 1 warmup epoch then cosine, gradient clipping,
batch per rank, one intra-op thread per rank, gloo, and a distributed length-bucketing
sampler like lockstep's (each rank's DistributedSampler share permuted per epoch, windows
of 50 batches sorted by length, batch order shuffled; every rank the same step count).
Batches are cut to their longest sample and padding zeroed, as lockstep does.
--model lmu (jobs/speech_digits_lmu.ini): docs/python's reference `Lmu(sequence=True)`, the
cell written step by step as a PyTorch user would, with dropout before its FC as lockstep's.

  torchrun --nproc_per_node 2 bench/ddp_speech.py --data data/speech-digits --epochs 3

Prints one JSON line (rank 0): training samples/s per epoch (validation excluded), wall
seconds, and test CER/WER with the last weights.
"""
import argparse, json, math, os, random, sys, time

T0 = time.time()

import h5py
import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def load_split(root, manifest, split):
    xs, ls, ts = [], [], []
    for shard in manifest["splits"][split]["shards"]:
        with h5py.File(os.path.join(root, shard["file"]), "r") as f:
            xs.append(f["samples"][...])
            ls.append(f["lengths"][...])
            ts.append(f["targets"][...])
    mean = torch.tensor(manifest["mean"], dtype=torch.float32).view(1, -1, 1)
    std = torch.tensor(manifest["std"], dtype=torch.float32).view(1, -1, 1)
    x = (torch.from_numpy(np.concatenate(xs)) - mean) / std
    lengths = torch.from_numpy(np.concatenate(ls).astype(np.int64))
    mask = torch.arange(x.shape[-1])[None, :] < lengths[:, None]
    return x * mask[:, None, :], lengths, torch.from_numpy(np.concatenate(ts).astype(np.int64))


class Gru(nn.Module):
    def __init__(self, features, classes, hidden=160, dropout=0.1):
        super().__init__()
        self.conv = nn.Conv1d(features, hidden, 5, stride=2, padding=2, bias=False)
        self.bn = nn.BatchNorm1d(hidden)
        self.gru = nn.GRU(hidden, hidden, num_layers=2, bidirectional=True, batch_first=True, dropout=dropout)
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, x, lengths):
        x = F.relu(self.bn(self.conv(x))).transpose(1, 2)
        out_len = torch.clamp((lengths - 1) // 2 + 1, min=1)
        packed = nn.utils.rnn.pack_padded_sequence(x, out_len, batch_first=True, enforce_sorted=False)
        y, _ = nn.utils.rnn.pad_packed_sequence(self.gru(packed)[0], batch_first=True, total_length=x.shape[1])
        return self.fc(self.drop(y)), out_len


class LmuCtc(nn.Module):
    """lockstep's `lmu` on CTC targets: the reference module (docs/python/lockstep_models.py),
    theta and order from the padded length as lockstep's, dropout before the FC."""

    def __init__(self, shape, classes, hidden, dropout=0.1):
        super().__init__()
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "python"))
        from lockstep_models import Lmu
        self.lmu = Lmu(shape, classes, w=hidden, sequence=True)
        with torch.no_grad():  # lockstep's initialisation: the feedback into u starts at zero
            self.lmu.e_h.weight.zero_()
            self.lmu.e_m.weight.zero_()
        self.lmu.fc = nn.Sequential(nn.Dropout(dropout), self.lmu.fc)

    def forward(self, x, lengths):
        return self.lmu(x), lengths


def bucketed(share, lengths, batch, window, rng):
    ids = share[:]
    rng.shuffle(ids)
    span = batch * window
    for w in range(0, len(ids), span):
        ids[w:w + span] = sorted(ids[w:w + span], key=lambda i: lengths[i])
    batches = [ids[b:b + batch] for b in range(0, len(ids) - batch + 1, batch)]
    rng.shuffle(batches)
    return batches


def to_device(t, dev):
    """A host tensor to DEV without a host sync (through pinned memory, as a careful script does)."""
    return t if dev.type == "cpu" else t.pin_memory().to(dev, non_blocking=True)


def ctc(logits, out_len, targets, blank):
    """TARGETS and the lengths on the host: only the flat targets go to the device (no sync)."""
    tl = (targets >= 0).sum(1)
    flat = to_device(targets[targets >= 0], logits.device)
    return F.ctc_loss(logits.log_softmax(-1).transpose(0, 1), flat, out_len, tl, blank=blank, reduction="mean",
                      zero_infinity=True)


@torch.no_grad()
def error_rates(model, x, lengths, targets, blank, space, rank, world):
    model.eval()
    lo, hi = len(x) * rank // world, len(x) * (rank + 1) // world
    sums = torch.zeros(4, dtype=torch.float64)  # char edits, chars, word edits, words
    def edits(a, b):
        row = list(range(len(b) + 1))
        for i in range(1, len(a) + 1):
            prev, row[0] = row[0], i
            for j in range(1, len(b) + 1):
                cur = min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] != b[j - 1]))
                prev, row[j] = row[j], cur
        return row[len(b)]
    def words(s):
        return tuple(" ".join(map(str, s)).split(str(space))) if space >= 0 else (tuple(s),)
    for b in range(lo, hi, 64):
        e = min(b + 64, hi)
        m = int(lengths[b:e].max())
        logits, out_len = model(x[b:e, :, :m], lengths[b:e])
        best = logits.argmax(-1)
        for i in range(e - b):
            hyp, prev = [], -1
            for c in best[i, :out_len[i]].tolist():
                if c != prev and c != blank:
                    hyp.append(c)
                prev = c
            ref = [t for t in targets[b + i].tolist() if t >= 0]
            hw = [w.split() for w in " ".join(map(str, hyp)).split(str(space))] if space >= 0 else [hyp]
            rw = [w.split() for w in " ".join(map(str, ref)).split(str(space))] if space >= 0 else [ref]
            hw, rw = [tuple(w) for w in hw if w], [tuple(w) for w in rw if w]
            sums += torch.tensor([edits(hyp, ref), len(ref), edits(hw, rw), len(rw)], dtype=torch.float64)
    sums = sums.to(x.device)
    dist.all_reduce(sums)
    sums = sums.cpu()
    model.train()
    return (sums[0] / sums[1]).item(), (sums[2] / sums[3]).item()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="data/speech-digits")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=0.002)
    p.add_argument("--model", choices=["gru", "lmu"], default="gru")
    p.add_argument("--width", type=int, default=160)
    p.add_argument("--bucket-batches", type=int, default=50)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32", help="bf16: autocast (cuda)")
    p.add_argument("--eval-split", default="test", help="'none': no error rates at the end")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    if a.device == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl" if a.device == "cuda" else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch.device(a.device, torch.cuda.current_device()) if a.device == "cuda" else torch.device("cpu")
    manifest = json.load(open(os.path.join(a.data, "manifest.json")))
    tokens = manifest["tokens"]
    blank, space = len(tokens), tokens.index(" ") if " " in tokens else -1
    x, lengths, targets = load_split(a.data, manifest, "train")
    x = x.to(dev)  # lengths and targets stay on the host (packing, batch cuts, CTC's lengths)
    torch.manual_seed(a.seed)
    net = Gru(x.shape[1], blank + 1, a.width) if a.model == "gru" else LmuCtc(tuple(x.shape[1:]), blank + 1, a.width)
    model = nn.parallel.DistributedDataParallel(net.to(dev))
    opt = torch.optim.Adam(model.parameters(), lr=a.lr * math.sqrt(world))
    share = list(range(rank, len(x) - len(x) % world, world))  # DistributedSampler's share, no padding
    steps = len(share) // a.batch_size
    total, warm = a.epochs * steps, steps
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warm if s < warm else 0.5 * (1 + math.cos(math.pi * min(1.0, (s - warm) / max(1, total - warm)))))
    rng = random.Random(a.seed * 1000 + rank)
    lens = lengths.tolist()
    per_epoch, spans = [], []
    for epoch in range(a.epochs):
        t = time.time()
        for sel in bucketed(share, lens, a.batch_size, a.bucket_batches, rng)[:steps]:
            sel = torch.tensor(sel)
            m = int(lengths[sel].max())
            opt.zero_grad(set_to_none=True)
            with torch.autocast(a.device, dtype=torch.bfloat16, enabled=a.dtype == "bf16"):
                logits, out_len = model(x[to_device(sel, dev), :, :m], lengths[sel])
                loss = ctc(logits.float(), out_len, targets[sel], blank)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            sched.step()
        if a.device == "cuda":
            torch.cuda.synchronize()
        spans.append((t, time.time()))
        per_epoch.append(steps * a.batch_size * world / (time.time() - t))
        if rank == 0:
            print(f"epoch {epoch + 1}: {per_epoch[-1]:.1f} samples/s", flush=True)
    cer = wer = None
    if a.eval_split != "none":
        xt, lt, tt = load_split(a.data, manifest, a.eval_split)
        cer, wer = error_rates(model.module, xt.to(dev), lt, tt, blank, space, rank, world)
    if rank == 0:
        print(json.dumps({"impl": "ddp", "model": a.model, "world": world, "epochs": a.epochs, "samples_per_s": per_epoch,
                          "epoch_spans": spans, "test_cer": cer, "test_wer": wer, "seconds": time.time() - T0}),
              flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
