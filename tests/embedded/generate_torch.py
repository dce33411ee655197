#!/usr/bin/env python3
"""Writes ONNX models exported by PyTorch itself (torch.onnx.export, the TorchScript exporter,
opset 17), which the import tests convert with ctflow-import (tests/embedded/data/).

Run with torch, onnx and numpy from PyPI, from the repository root:
    python3 tests/embedded/generate_torch.py
CI does not run it: the tests read the committed files. <name>.onnx and
<name>.safetensors: x (the test inputs, channels first) and y (PyTorch's outputs for them, in
eval mode):
  torch_cnn  [N, 1, 28, 28]: Conv2d (padding 1) + BatchNorm2d (the exporter folds it into the
             Conv) + ReLU, MaxPool2d, a depthwise Conv2d (groups 8, multiplier 2) + ReLU6 (Clip with
             Constant bounds), AvgPool2d, a strided Conv2d without bias + Hardtanh(0, 6), Flatten,
             Linear + Sigmoid, Dropout, Linear, Softmax;
  torch_resnet  [N, 1, 16, 16]: a ResNet's stem (Conv2d + BatchNorm2d + ReLU, MaxPool2d), a basic
             block (two Conv2d + BatchNorm2d, the sum with its input: Add, ReLU), a downsampling
             block (a strided Conv2d and a strided 1x1 shortcut, Add), two branches joined by
             torch.cat over the channels (Concat), SiLU (Sigmoid and a Mul of two tensors), the
             difference of two branches (Sub), AdaptiveAvgPool2d(1), Flatten, Linear;
  torch_unet [N, 2, 12, 12]: a U-Net's step: a strided Conv2d down, ConvTranspose2d(2, stride 2)
             up, concatenated with the skip (Concat), ConvTranspose2d(3, padding 1) (TensorFlow's
             SAME), ConvTranspose2d(3, stride 2) without bias (VALID) + Tanh, MaxPool2d, Flatten,
             Linear;
  torch_rnn  [N, 7, 5]: a two-layer LSTM (batch_first; the exporter writes an LSTM node a layer,
             time first, between a Transpose and a Squeeze, their zero initial states a
             ConstantOfShape of the input's Shape and its Slices), a GRU, the last step
             (y[:, -1]: a Gather), Linear;
  torch_gru  [N, 6, 4]: a GRU of every step, an LSTM, its last state (h[-1]: a Gather of Y_h),
             Linear, ReLU, Linear, Softmax;
  torch_cnn_dynamo  torch_cnn's network exported by PyTorch's default exporter (torch.export,
             dynamo=True, opset 20), which keeps the weights in an external file beside the model
             (torch_cnn_dynamo.onnx.data) and flattens by a Reshape;
  torch_rnn_dynamo, torch_gru_dynamo  torch_rnn's and torch_gru's networks by the same exporter
             (opset 20): each recurrent node's Y transposed to [T, N, 1, F] and reshaped to
             [T, N, F] by a shape computed from its Shape (Slice, Mul, Concat) or by a constant,
             its zero states an Expand of 0;
  torch_resnet_dynamo  torch_resnet's network by the same exporter: its AdaptiveAvgPool2d(1) a
             ReduceMean over H and W.
"""
import os
import sys

import numpy as np
import onnx
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "keras"))
from safetensors_np import write_safetensors  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def cnn():
    bn = torch.nn.BatchNorm2d(8)
    with torch.no_grad():
        bn.running_mean.uniform_(-0.2, 0.2)
        bn.running_var.uniform_(0.5, 1.5)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.1, 0.1)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 8, 3, padding=1), bn, torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 16, 3, groups=8), torch.nn.ReLU6(), torch.nn.AvgPool2d(2),
        torch.nn.Conv2d(16, 12, 3, stride=2, bias=False), torch.nn.Hardtanh(0.0, 6.0),
        torch.nn.Flatten(), torch.nn.Linear(12 * 2 * 2, 32), torch.nn.Sigmoid(), torch.nn.Dropout(0.25),
        torch.nn.Linear(32, 10), torch.nn.Softmax(dim=1))


def conv_bn(cin, cout, k, stride=1):
    bn = torch.nn.BatchNorm2d(cout)
    with torch.no_grad():
        bn.running_mean.uniform_(-0.2, 0.2)
        bn.running_var.uniform_(0.5, 1.5)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.1, 0.1)
    return torch.nn.Sequential(torch.nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, bias=False), bn)


class ResNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(conv_bn(1, 8, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2))
        self.block1 = torch.nn.Sequential(conv_bn(8, 8, 3), torch.nn.ReLU(), conv_bn(8, 8, 3))
        self.block2 = torch.nn.Sequential(conv_bn(8, 16, 3, stride=2), torch.nn.ReLU(), conv_bn(16, 16, 3))
        self.shortcut = conv_bn(8, 16, 1, stride=2)
        self.narrow = torch.nn.Conv2d(16, 6, 1)
        self.wide = torch.nn.Conv2d(16, 10, 3, padding=1)
        self.head = torch.nn.Linear(16, 10)

    def forward(self, x):
        x = self.stem(x)
        x = torch.relu(self.block1(x) + x)
        x = torch.relu(self.block2(x) + self.shortcut(x))
        x = torch.cat([self.narrow(x), self.wide(x)], dim=1)
        x = torch.nn.functional.silu(x) - x * 0.25
        x = torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1)
        return self.head(x)


class UNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.down = torch.nn.Conv2d(2, 6, 3, stride=2, padding=1)
        self.up = torch.nn.ConvTranspose2d(6, 4, 2, stride=2)
        self.same = torch.nn.ConvTranspose2d(6, 5, 3, padding=1)
        self.valid = torch.nn.ConvTranspose2d(5, 3, 3, stride=2, bias=False)
        self.head = torch.nn.Linear(3 * 12 * 12, 4)

    def forward(self, x):
        skip = x
        x = torch.relu(self.up(torch.relu(self.down(x))))
        x = torch.relu(self.same(torch.cat([x, skip], dim=1)))
        x = torch.nn.functional.max_pool2d(torch.tanh(self.valid(x)), 2)
        return self.head(torch.flatten(x, 1))


class RNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(5, 8, num_layers=2, batch_first=True)
        self.gru = torch.nn.GRU(8, 6, batch_first=True)
        self.head = torch.nn.Linear(6, 3)

    def forward(self, x):
        y, _ = self.lstm(x)
        y, _ = self.gru(y)
        return self.head(y[:, -1])


class GRU(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = torch.nn.GRU(4, 7, batch_first=True)
        self.lstm = torch.nn.LSTM(7, 5, batch_first=True)
        self.head = torch.nn.Sequential(torch.nn.Linear(5, 6), torch.nn.ReLU(), torch.nn.Linear(6, 4), torch.nn.Softmax(dim=1))

    def forward(self, x):
        y, _ = self.gru(x)
        _, (h, _) = self.lstm(y)
        return self.head(h[-1])


def write(name, model, x, dynamo=False):
    model.eval()
    path = os.path.join(DATA, name + ".onnx")
    if dynamo:
        torch.onnx.export(model, (torch.from_numpy(x),), path, dynamo=True, input_names=["input"], output_names=["output"],
                          dynamic_shapes=({0: torch.export.Dim("n")},))
    else:
        torch.onnx.export(model, (torch.from_numpy(x),), path, dynamo=False, opset_version=17, input_names=["input"],
                          output_names=["output"], dynamic_axes={"input": {0: "n"}, "output": {0: "n"}})
    onnx.checker.check_model(onnx.load(path))
    with torch.no_grad():
        y = model(torch.from_numpy(x)).numpy()
    write_safetensors(os.path.join(DATA, name + ".safetensors"), {"x": x, "y": y},
                      {"model": name, "torch": torch.__version__, "onnx": onnx.__version__})


def main():
    torch.manual_seed(7)
    r = np.random.default_rng(9)
    write("torch_cnn", cnn(), r.uniform(0, 1, size=(4, 1, 28, 28)).astype("float32"))
    write("torch_resnet", ResNet(), r.uniform(0, 1, size=(3, 1, 16, 16)).astype("float32"))
    write("torch_unet", UNet(), r.uniform(-1, 1, size=(3, 2, 12, 12)).astype("float32"))
    write("torch_rnn", RNN(), r.uniform(-1, 1, size=(4, 7, 5)).astype("float32"))
    write("torch_gru", GRU(), r.uniform(-1, 1, size=(3, 6, 4)).astype("float32"))
    write("torch_cnn_dynamo", cnn(), r.uniform(0, 1, size=(3, 1, 28, 28)).astype("float32"), dynamo=True)
    write("torch_rnn_dynamo", RNN(), r.uniform(-1, 1, size=(4, 7, 5)).astype("float32"), dynamo=True)
    write("torch_gru_dynamo", GRU(), r.uniform(-1, 1, size=(3, 6, 4)).astype("float32"), dynamo=True)
    write("torch_resnet_dynamo", ResNet(), r.uniform(0, 1, size=(3, 1, 16, 16)).astype("float32"), dynamo=True)


if __name__ == "__main__":
    main()
