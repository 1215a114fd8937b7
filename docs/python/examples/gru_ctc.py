"""A user's own CTC acoustic model, as someone coming from a PyTorch script would write it:
a conv front end and a bidirectional GRU over log-mel frames [N, 40, T], returning per-frame
logits and each sample's valid frame count. `docs/python/script_model.py` scripts it for
`lockstep train --model torchscript:gru_ctc.pt` (tested in CI: tests/e2e/speech.sh).
"""
from typing import Tuple

import torch
from torch import nn
import torch.nn.functional as F


class MyGruCtc(nn.Module):
    def __init__(self, features: int = 40, tokens: int = 27, hidden: int = 64):
        super().__init__()
        self.conv = nn.Conv1d(features, hidden, 5, stride=2, padding=2, bias=False)
        self.bn = nn.BatchNorm1d(hidden)
        self.gru = nn.GRU(hidden, hidden, num_layers=2, bidirectional=True, batch_first=True)
        self.out = nn.Linear(2 * hidden, tokens + 1)  # blank last

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        x = F.relu(self.bn(self.conv(x))).transpose(1, 2)  # [N, T', H]
        out_lengths = torch.clamp(torch.div(lengths - 1, 2, rounding_mode="floor") + 1, min=1)
        packed = nn.utils.rnn.pack_padded_sequence(x, out_lengths.cpu(), batch_first=True, enforce_sorted=False)
        y, _ = self.gru(packed)
        y, _ = nn.utils.rnn.pad_packed_sequence(y, batch_first=True, total_length=x.shape[1])
        return self.out(y), out_lengths
