"""Writes TorchScript classifiers for the trainer tests: `torchscript:PATH` models.

usage: make_script_model.py OUT.pt CLASSES
A small CNN for [1, 28, 28] images (conv, BatchNorm, ReLU, max-pool, linear), scripted
with the torch wheel lockstep builds against.
"""
import sys

import torch


class SmallCnn(torch.nn.Module):
    def __init__(self, classes: int):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8 * 14 * 14, classes)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        return self.fc(x.flatten(1))


if __name__ == "__main__":
    torch.jit.script(SmallCnn(int(sys.argv[2]))).save(sys.argv[1])
