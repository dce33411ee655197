#!/usr/bin/python3
"""Writes the PyTorch reference data of the test that loads PyTorch weights into Keras models.

Run with PyTorch (Debian's python3-torch), from the repository root:
    /usr/bin/python3 tests/keras/generate_torch.py
CI does not run it: the test reads the committed files in tests/keras/data/torch.

For each network, data/torch/<net>.safetensors is its state_dict as PyTorch saves it
(safetensors.torch.save_file(net.state_dict(), path): PyTorch's names and layouts), and
data/torch/<net>_io.safetensors holds an input x and the network's output y in eval mode, in
Keras's layout (channels last). The test defines the same networks as Keras models, loads the
state_dict through keras::load_pytorch_weights and compares its outputs with y.
"""
import os

import numpy as np
import torch
from torch import nn

from safetensors_np import write_safetensors

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "data", "torch")


class Cnn(nn.Module):
    """Conv2D, BatchNormalization, depthwise, separable (two modules, a bias on both), transposed
    convolution, and a Dense after a Flatten of channels and a Dropout (PyTorch flattens C, H, W;
    Keras H, W, C)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3)  # 9x9x2 -> 7x7x4
        self.bn = nn.BatchNorm2d(4)
        self.dw = nn.Conv2d(4, 8, 3, padding=1, groups=4)  # depth_multiplier 2, same
        self.sep_dw = nn.Conv2d(8, 8, 3, groups=8)  # -> 5x5x8; its bias folds into sep_pw's
        self.sep_pw = nn.Conv2d(8, 6, 1)  # -> 5x5x6
        self.up = nn.ConvTranspose2d(6, 3, 2, stride=2)  # -> 10x10x3
        self.pool = nn.MaxPool2d(2)  # -> 5x5x3
        self.drop = nn.Dropout(0.5)
        self.fc = nn.Linear(75, 10)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        x = self.sep_pw(self.sep_dw(self.dw(x)))
        x = self.pool(self.up(x))
        return self.fc(self.drop(torch.flatten(x, 1)))


class Rnn(nn.Module):
    """Embedding, Conv1D, LayerNormalization, LSTM (its two biases), GRU (gates r, z, n)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(12, 5)
        self.conv = nn.Conv1d(5, 6, 2)  # 7 steps -> 6
        self.norm = nn.LayerNorm(6)
        self.lstm = nn.LSTM(6, 4, batch_first=True)
        self.gru = nn.GRU(4, 3, batch_first=True)

    def forward(self, ids):
        x = self.conv(self.emb(ids).transpose(1, 2)).transpose(1, 2)
        x, _ = self.lstm(self.norm(x))
        x, _ = self.gru(x)
        return x[:, -1]


def state(net):
    return {k: v.detach().numpy() for k, v in net.state_dict().items()}


def main():
    torch.manual_seed(0)
    cnn = Cnn()
    with torch.no_grad():  # moving statistics other than the initial ones
        cnn.bn.running_mean.uniform_(-0.5, 0.5)
        cnn.bn.running_var.uniform_(0.5, 1.5)
        cnn.bn.weight.uniform_(0.5, 1.5)
        cnn.bn.bias.uniform_(-0.5, 0.5)
    cnn.eval()
    x = torch.rand(3, 2, 9, 9) * 2 - 1
    with torch.no_grad():
        y = cnn(x)
    write_safetensors(os.path.join(OUT, "cnn.safetensors"), state(cnn), {"format": "pt"})
    write_safetensors(os.path.join(OUT, "cnn_io.safetensors"), {"x": x.permute(0, 2, 3, 1).numpy(), "y": y.numpy()}, {})

    rnn = Rnn().eval()
    ids = torch.randint(0, 12, (2, 7))
    with torch.no_grad():
        y = rnn(ids)
    write_safetensors(os.path.join(OUT, "rnn.safetensors"), state(rnn), {"format": "pt"})
    write_safetensors(os.path.join(OUT, "rnn_io.safetensors"), {"x": ids.numpy().astype(np.int32), "y": y.numpy()}, {})


if __name__ == "__main__":
    main()
