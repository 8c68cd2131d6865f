#!/usr/bin/env python3
"""Recurrent models for the `.pt2` and TorchScript interop tests (random init, eval mode):

- `crnn`: a CRNN-like text recogniser on `(N, 1, 16, 32)` images: two conv blocks, the
  height folded into the channels to make a width-wise sequence `(N, 8, 64)`, a 2-layer
  bidirectional `nn.LSTM(batch_first=True)` and a per-step `nn.Linear` to 11 classes.
- `gru`: a GRU tagger on float features `(N, 12, 16)`: a single-direction 2-layer
  `nn.GRU(batch_first=True)` and a per-step `nn.Linear`.
- `lstm-time-major`: `nn.LSTM(batch_first=False)` fed `x.permute(1, 0, 2)` of a
  batch-first `(N, 9, 6)` input, bidirectional, without biases, its output permuted back.
- `lstm-last-state`: a single-direction 2-layer `nn.LSTM(batch_first=True)` classifier
  reading the last layer's final hidden state `h_n[-1]` on `(N, 9, 6)`.
- `rnn-tanh`: a 2-layer bidirectional `nn.RNN(batch_first=True)` (tanh) tagger on
  `(N, 10, 7)`, weights drawn wide enough that the recurrence saturates.
- `rnn-tanh-last-state`: a single-direction `nn.RNN` without biases, time-major fed
  `x.permute(1, 0, 2)`, classifying from its final hidden state.
- `rnn-relu`: `rnn-tanh` with `nonlinearity="relu"` (weights at their initial scale).
- `rnn-relu-last-state`: `rnn-tanh-last-state` with `nonlinearity="relu"`, time-major as
  torchaudio's DeepSpeech feeds its `nn.RNN`.

torch.export records `aten.lstm.input`/`aten.gru.input` with the initial state
`zeros(layers * directions, N, hidden)` sized by the batch; a trace records
`torch.lstm`/`torch.gru` the same way.

    python rnn.py OUT.pt2 [crnn|gru|lstm-time-major|lstm-last-state] [--static] [--seed N]
"""
import torch
from torch import nn

from common import cli

SHAPES = {
    "crnn": (1, 16, 32),
    "gru": (12, 16),
    "lstm-time-major": (9, 6),
    "lstm-last-state": (9, 6),
    "rnn-tanh": (10, 7),
    "rnn-tanh-last-state": (10, 7),
    "rnn-relu": (10, 7),
    "rnn-relu-last-state": (10, 7),
}


class Crnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.rnn = nn.LSTM(64, 24, num_layers=2, bidirectional=True, batch_first=True)
        self.classifier = nn.Linear(48, 11)

    def forward(self, x):
        f = self.features(x)  # (N, 16, 4, 8)
        f = f.permute(0, 3, 1, 2).flatten(2)  # (N, 8 steps, 64)
        y, _ = self.rnn(f)
        return self.classifier(y)


class GruTagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(16, 20, num_layers=2, batch_first=True)
        self.tagger = nn.Linear(20, 5)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.tagger(y)


class TimeMajorLstm(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(6, 10, bidirectional=True, bias=False)

    def forward(self, x):
        y, _ = self.rnn(x.permute(1, 0, 2))
        return y.permute(1, 0, 2)


class LastStateLstm(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(6, 10, num_layers=2, batch_first=True)
        self.head = nn.Linear(10, 3)

    def forward(self, x):
        _, (h, _) = self.rnn(x)
        return self.head(h[-1])


class TanhTagger(nn.Module):
    def __init__(self, nonlinearity="tanh", scale=3.0):
        super().__init__()
        self.rnn = nn.RNN(7, 12, num_layers=2, bidirectional=True, batch_first=True,
                          nonlinearity=nonlinearity)
        with torch.no_grad():
            for w in self.rnn.parameters():
                w.mul_(scale)
        self.tagger = nn.Linear(24, 4)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.tagger(y)


class TanhLastState(nn.Module):
    def __init__(self, nonlinearity="tanh"):
        super().__init__()
        self.rnn = nn.RNN(7, 9, bias=False, nonlinearity=nonlinearity)
        self.head = nn.Linear(9, 3)

    def forward(self, x):
        _, h = self.rnn(x.permute(1, 0, 2))
        return self.head(h[-1])


KINDS = {
    "crnn": Crnn,
    "gru": GruTagger,
    "lstm-time-major": TimeMajorLstm,
    "lstm-last-state": LastStateLstm,
    "rnn-tanh": TanhTagger,
    "rnn-tanh-last-state": TanhLastState,
    "rnn-relu": lambda: TanhTagger("relu", 1.0),
    "rnn-relu-last-state": lambda: TanhLastState("relu"),
}


def build(kind="crnn", seed=0):
    torch.manual_seed(seed)
    model = KINDS[kind]()
    with torch.no_grad():  # non-trivial BatchNorm statistics, folded into the convolutions
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.normal_(0, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    return model.eval()


if __name__ == "__main__":
    import sys

    kind = next((a for a in sys.argv[2:] if not a.startswith("-")), "crnn")
    cli(build, SHAPES[kind])
