#!/usr/bin/env python3
"""Probes for the GPU step's next levers (bench/gpu.sh probe; issue 32), on ResNet-18's shapes.

Measures, with CUDA events, forward + backward of one BatchNorm + ReLU on channels-last bf16
activations (ResNet-18 224x224 at batch 256: the four stages' shapes):
  native    F.batch_norm + F.relu: what eager PyTorch and lockstep run today (ATen's
            channels-last kernels: statistics, transform, backward reduce, backward elementwise)
  cudnn     torch.cudnn_batch_norm + relu: cuDNN's NHWC kernels, where it takes bf16 input with
            float32 weights (an error is printed otherwise)
  compile   torch.compile of the same function: the fused kernels torch.compile wins by
and the host-to-device copy bandwidth of one uint8 batch from pinned memory (38.5 MB).
Prints one JSON line per measurement. A probe, not a benchmark: no target is judged here.
"""
import json
import sys

import torch
import torch.nn.functional as F


def timed(fn, reps=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / reps


def main():
    if not torch.cuda.is_available():
        print(json.dumps({"probe": "skipped", "why": "no GPU"}))
        return
    dev = torch.device("cuda")
    shapes = [(256, 64, 112, 112), (256, 64, 56, 56), (256, 128, 28, 28), (256, 256, 14, 14), (256, 512, 7, 7)]
    for n, c, h, w in shapes:
        x = torch.randn(n, c, h, w, device=dev, dtype=torch.bfloat16).contiguous(memory_format=torch.channels_last)
        x.requires_grad_(True)
        g = torch.randn_like(x)
        weight = torch.ones(c, device=dev, requires_grad=True)
        bias = torch.zeros(c, device=dev, requires_grad=True)
        rm, rv = torch.zeros(c, device=dev), torch.ones(c, device=dev)

        def native():
            y = F.relu(F.batch_norm(x, rm, rv, weight, bias, True, 0.1, 1e-5))
            y.backward(g)

        def cudnn():
            y = torch.cudnn_batch_norm(x, weight, bias, rm, rv, True, 0.1, 1e-5)[0]
            F.relu(y).backward(g)

        fused = torch.compile(lambda t: F.relu(F.batch_norm(t, rm, rv, weight, bias, True, 0.1, 1e-5)))

        def compiled():
            fused(x).backward(g)

        row = {"probe": "bn_relu_fwd_bwd_bf16_cl", "shape": [n, c, h, w]}
        for name, fn in (("native", native), ("cudnn", cudnn), ("compile", compiled)):
            try:
                row[name + "_ms"] = round(timed(fn), 4)
            except Exception as e:  # noqa: BLE001 - a probe reports what fails
                row[name + "_error"] = str(e).splitlines()[0][:200]
        print(json.dumps(row), flush=True)
    host = torch.randint(0, 256, (256, 3, 224, 224), dtype=torch.uint8).pin_memory()
    dst = torch.empty(host.shape, dtype=torch.uint8, device=dev)
    ms = timed(lambda: dst.copy_(host, non_blocking=True))
    print(json.dumps({"probe": "h2d_pinned_uint8", "bytes": host.numel(), "ms": round(ms, 4),
                      "gb_per_s": round(host.numel() / ms / 1e6, 1)}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
