"""Writes TorchScript classifiers for the trainer tests: `torchscript:PATH` models.

usage: make_script_model.py OUT.pt CLASSES [VARIANT]
A small CNN for [1, 28, 28] images (conv, BatchNorm, ReLU, max-pool, linear), scripted
with the torch wheel lockstep builds against. VARIANT makes a model a user could write
that lockstep must train as written or refuse with one line:
  frozen    conv's parameters requires_grad False (frozen in Python: stay as they are)
  raises    forward raises in train mode (the user's own check)
  detached  forward returns logits cut from the graph (nothing would train)
  batch2    forward returns two rows whatever the batch
  double    float64 parameters
"""
import sys

import torch


class SmallCnn(torch.nn.Module):
    def __init__(self, classes: int, variant: str):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8 * 14 * 14, classes)
        self.variant = variant
        if variant == "frozen":
            for p in self.conv.parameters():
                p.requires_grad_(False)

    def forward(self, x):
        if self.variant == "raises" and self.training:
            raise RuntimeError("my model refuses to train today")
        if self.variant == "double":
            x = x.double()
        y = self.fc(torch.nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2).flatten(1))
        if self.variant == "detached":
            y = y.detach()
        if self.variant == "batch2":
            y = y[:2]
        return y


if __name__ == "__main__":
    variant = sys.argv[3] if len(sys.argv) > 3 else ""
    model = SmallCnn(int(sys.argv[2]), variant)
    if variant == "double":
        model = model.double()
    torch.jit.script(model).save(sys.argv[1])
