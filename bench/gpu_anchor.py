"""The PyTorch step lockstep is measured against on a GPU (bench/gpu.sh): the same model,
batch, optimizer and data, written the way a careful PyTorch user would, in four modes:

  eager          NCHW, the default
  channels_last  model and inputs channels_last (NVIDIA's advice for conv nets)
  graph          channels_last, the whole step (forward, backward, optimizer) captured once
                 in a CUDA graph and replayed (PyTorch's "whole network capture" recipe)
  compile        channels_last + torch.compile of the model (default mode)

Models: resnet18 (torchvision), the reference CNN (bench/ddp_cnn.py), c3d and r3d
(bench/ddp_video.py, as lockstep builds them; --width, --depth), cnn1d (docs/python's Cnn1d,
lockstep's HAR model, on float series N x C x L; no channels-last layout for 1-d data, so
channels_last and graph keep it contiguous). --optimizer adam: torch.optim.Adam, fused on CUDA.
Data: the HDF5 file bench/gpu.sh imports for lockstep (uint8 samples N x C x H x W, or clips
N x C x T x H x W; int labels), held in pinned host memory; each step copies its batch to the GPU non_blocking and
converts and normalises it there, as lockstep must. SGD with momentum 0.9, lr 0.05,
cross-entropy; --dtype bf16|fp16 under autocast (fp16 with a GradScaler; no graph mode).
Timed by CUDA events over --steps steps after --warmup. Prints one JSON line:
  {"who": "pytorch", "mode", "model", "dtype", "batch", "samples_per_s", "flops_per_sample", ...}

  python3 bench/gpu_anchor.py --h5 data.h5 --model resnet18 --batch 256 --dtype bf16 --mode compile
"""
import argparse, json, os, sys, time

import h5py
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ddp_cnn import ReferenceCnn  # noqa: E402  the reference CNN, as lockstep builds it


def make_model(name, shape, classes, width=0, depth=18):
    """NAME for samples of SHAPE ([C, H, W] or [C, T, H, W]); WIDTH 0: the model's default."""
    channels = shape[0]
    if name == "cnn":
        return ReferenceCnn(classes=classes)
    if name == "cnn1d":
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "python"))
        from lockstep_models import Cnn1d  # lockstep's cnn1d, as docs/python builds it
        return Cnn1d(list(shape), classes, width or 64)
    if name in ("c3d", "r3d"):
        from ddp_video import C3d, R3d  # the clip models, as lockstep builds them
        if name == "c3d":
            return C3d(channels, classes, width or 32)
        return R3d(channels, classes, tuple(shape[-2:]), depth, width or 16)
    import torchvision
    m = torchvision.models.resnet18(num_classes=classes)
    if channels != 3:
        m.conv1 = nn.Conv2d(channels, 64, 7, 2, 3, bias=False)
    return m


def flops_per_sample(model, x, y):
    """Forward + backward FLOPs of one training step / batch, counted by PyTorch."""
    from torch.utils.flop_counter import FlopCounterMode
    counter = FlopCounterMode(display=False)
    with counter:
        F.cross_entropy(model(x), y).backward()
    model.zero_grad(set_to_none=True)
    return counter.get_total_flops() / x.shape[0]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--h5", required=True)
    p.add_argument("--model", choices=["resnet18", "cnn", "c3d", "r3d", "cnn1d"], default="resnet18")
    p.add_argument("--width", type=int, default=0, help="c3d, r3d, cnn1d: lockstep's --model.width (0: default)")
    p.add_argument("--depth", type=int, default=18, help="r3d: 10 | 18")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--dtype", choices=["fp32", "bf16", "fp16"], default="bf16")
    p.add_argument("--mode", choices=["eager", "channels_last", "graph", "compile"], default="eager")
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd",
                   help="sgd: momentum 0.9; adam: fused on CUDA (capturable in graph mode), as a PyTorch user picks it")
    p.add_argument("--device", default="cuda", help="cpu: a smoke run of the script itself (CI), not a measurement")
    a = p.parse_args()
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    skip = ("fp16 loss scaling is not captured" if a.mode == "graph" and a.dtype == "fp16" else
            "CUDA graphs need a GPU" if a.mode == "graph" and not cuda else None)
    if skip:
        print(json.dumps({"who": "pytorch", "mode": a.mode, "dtype": a.dtype, "skipped": skip}))
        return
    torch.backends.cudnn.benchmark = True
    with h5py.File(a.h5, "r") as f:
        samples = torch.from_numpy(np.ascontiguousarray(f["samples"][:]))
        labels = torch.from_numpy(f["labels"][:].astype(np.int64))
    if cuda:
        samples, labels = samples.pin_memory(), labels.pin_memory()
    n, c = samples.shape[0], samples.shape[1]
    classes = int(labels.max()) + 1
    dims = [0] + list(range(2, samples.dim()))  # per channel
    view = [1, c] + [1] * (samples.dim() - 2)
    mean = samples[:1024].float().mean(dim=dims).view(view).to(dev)
    std = samples[:1024].float().std(dim=dims).view(view).to(dev)
    cl = a.mode != "eager" and samples.dim() > 3  # series have no channels-last layout
    fmt = (torch.channels_last_3d if samples.dim() == 5 else torch.channels_last) if cl else torch.contiguous_format
    model = make_model(a.model, list(samples.shape[1:]), classes, a.width, a.depth).to(dev, memory_format=fmt)
    if a.optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=a.lr, fused=cuda, capturable=cuda and a.mode == "graph")
    else:
        opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
    amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(a.dtype)
    scaler = torch.amp.GradScaler(dev.type, enabled=a.dtype == "fp16")

    def batch(i):  # the i-th batch: pinned slice -> device, converted and normalised there
        lo = (i * a.batch) % (n - a.batch + 1)
        x = samples[lo:lo + a.batch].to(dev, non_blocking=True)
        y = labels[lo:lo + a.batch].to(dev, non_blocking=True)
        return ((x.float() - mean) / std).contiguous(memory_format=fmt), y

    x0, y0 = batch(0)
    flops = flops_per_sample(model, x0, y0)
    net = torch.compile(model) if a.mode == "compile" else model

    def step(x, y):
        with torch.autocast(dev.type, dtype=amp_dtype, enabled=amp_dtype is not None, cache_enabled=a.mode != "graph"):
            loss = F.cross_entropy(net(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    if a.mode == "graph":
        static_x, static_y = batch(0)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up on a side stream, as the recipe requires
            for i in range(3):
                opt.zero_grad(set_to_none=True)
                step(static_x, static_y)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            static_loss = step(static_x, static_y)

        def run(i):
            x, y = batch(i)
            static_x.copy_(x)
            static_y.copy_(y)
            graph.replay()
            return static_loss
    else:
        def run(i):
            x, y = batch(i)
            opt.zero_grad(set_to_none=True)
            return step(x, y)

    sync = torch.cuda.synchronize if cuda else (lambda: None)
    t_compile = time.time()
    for i in range(a.warmup):
        loss = run(i)
    sync()
    warm_s = time.time() - t_compile
    t_start = time.time()
    if cuda:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
    for i in range(a.warmup, a.warmup + a.steps):
        loss = run(i)
    if cuda:
        end.record()
        end.synchronize()
    t_end = time.time()
    secs = start.elapsed_time(end) / 1000.0 if cuda else t_end - t_start
    sps = a.steps * a.batch / secs
    print(json.dumps({"who": "pytorch", "mode": a.mode, "model": a.model, "dtype": a.dtype, "batch": a.batch,
                      "optimizer": a.optimizer,
                      "samples_per_s": round(sps, 1), "flops_per_sample": flops, "steps": a.steps,
                      "warmup_s": round(warm_s, 1), "final_loss": float(loss.detach()), "gpu": torch.cuda.get_device_name() if cuda else "cpu", "t_start": t_start, "t_end": t_end,
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
