#!/usr/bin/env python3
"""Writes the ONNX models the import tests convert with ctflow-import (tests/embedded/data/).

Run with onnx and onnxruntime from PyPI (pip install onnx onnxruntime numpy), from the repository
root:
    python3 tests/embedded/generate_onnx.py [onnx_reverse_gru]   (that one alone, or every file)
CI does not run it: the tests read the committed files.

The graphs are built node by node as PyTorch 2's exporter writes a torch.nn.Sequential of the same
modules (Conv with explicit pads, Gemm with transB for Linear, MatMul and Add for a Linear on
an unflattened input, Flatten, Reshape to [N, -1] from a Constant, Clip with its bounds as
inputs, BatchNormalization in inference, Dropout in inference), opset 17. For each model:
<name>.onnx and <name>.safetensors: x (the test inputs, channels first) and y (onnxruntime's
outputs for them).
  onnx_cnn   [N, 1, 28, 28]: (x - 0.5) / 0.25, Conv (pads 1) + BatchNormalization + Relu, MaxPool,
             Pad (H and W, unequal), a strided Conv of asymmetric pads without bias, Clip [0, 6],
             a depthwise Conv (group 16, multiplier 2), Sigmoid, AveragePool, Flatten, Gemm
             (transB, alpha 0.5, beta 2), Tanh, Dropout, MatMul + Add, Softmax;
  onnx_gap   [N, 3, 9, 9]: a strided Conv of auto_pad SAME_UPPER, Elu, a 1x1 Conv, MaxPool of
             TensorFlow's SAME pads, GlobalAveragePool, BatchNormalization, Flatten, Gemm, LogSoftmax;
  onnx_mlp   [N, 2, 3, 4]: Reshape to [N, -1], MatMul + Add, Relu, Gemm (transB), Softmax;
  onnx_transpose [N, 2, 7, 5]: Conv, Transpose of H and W, a Conv of a 3x2 kernel, Transpose to
             [N, H, W, C] (read as channels first after it), Relu, Flatten, Gemm, Softmax;
  onnx_reverse_gru [N, 5, 3]: Transpose to [T, N, F], a GRU of direction reverse (its own random
             weights: the other models' stay as they were drawn), its last state Y_h squeezed,
             Gemm, Softmax.
And the graphs ctflow-import refuses: refused_lstm.onnx (an LSTM node reading the
graph's input [N, T, F] as its [T, N, F], with no Transpose before it), refused_extents.onnx (an
Add of two branches of different extents), refused_opset9.onnx (opset 9), refused_truncated.onnx (onnx_cnn's first
half) and refused_bidirectional.onnx (a bidirectional LSTM).
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "keras"))
from safetensors_np import write_safetensors  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
R = np.random.default_rng(11)


class Graph:
    def __init__(self, name, shape, rng=None):
        self.name, self.nodes, self.inits, self.shape = name, [], [], shape
        self.current, self.count, self.rng = "input", 0, rng or R

    def init(self, value, dtype=np.float32):
        self.count += 1
        name = f"{self.name}_w{self.count}"
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def weight(self, *shape, positive=False):
        v = self.rng.uniform(-0.5, 0.5, size=shape)
        return self.init(np.abs(v) + 0.5 if positive else v)

    def node(self, op, *inputs, outputs=1, **attrs):
        self.count += 1
        out = f"{op.lower()}_{self.count}"
        names = [out] + [f"{out}_extra{i}" for i in range(1, outputs)]
        self.nodes.append(helper.make_node(op, [self.current, *inputs], names, name=out, **attrs))
        self.current = out
        return out

    def model(self, out, opset=17):
        g = helper.make_graph(self.nodes, self.name, [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", *self.shape])],
                              [helper.make_tensor_value_info(self.current, TensorProto.FLOAT, out)], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="ctflow tests")
        m.ir_version = 8
        return m


def onnx_cnn():
    g = Graph("onnx_cnn", [1, 28, 28])
    g.node("Sub", g.init(0.5))
    g.node("Div", g.init(0.25))
    g.node("Conv", g.weight(8, 1, 3, 3), g.weight(8), pads=[1, 1, 1, 1], kernel_shape=[3, 3])
    g.node("BatchNormalization", g.weight(8, positive=True), g.weight(8), g.weight(8), g.weight(8, positive=True), epsilon=1e-5)
    g.node("Relu")
    g.node("MaxPool", kernel_shape=[2, 2], strides=[2, 2])
    g.node("Pad", g.init([0, 0, 0, 1, 0, 0, 1, 0], np.int64))
    g.node("Conv", g.weight(16, 8, 3, 3), strides=[2, 2], pads=[0, 0, 1, 1])
    g.node("Clip", g.init(0.0), g.init(6.0))
    g.node("Conv", g.weight(32, 1, 3, 3), g.weight(32), group=16, pads=[1, 1, 1, 1])
    g.node("Sigmoid")
    g.node("AveragePool", kernel_shape=[2, 2], strides=[2, 2])
    g.node("Flatten", axis=1)
    g.node("Gemm", g.weight(24, 288), g.weight(24), transB=1, alpha=0.5, beta=2.0)
    g.node("Tanh")
    g.node("Dropout")
    g.node("MatMul", g.weight(24, 10))
    g.node("Add", g.weight(10))
    g.node("Softmax", axis=-1)
    return g.model(["batch", 10])


def onnx_gap():
    g = Graph("onnx_gap", [3, 9, 9])
    g.node("Conv", g.weight(6, 3, 3, 3), g.weight(6), strides=[2, 2], auto_pad="SAME_UPPER")
    g.node("Elu")
    g.node("Conv", g.weight(4, 6, 1, 1), g.weight(4))
    g.node("MaxPool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    g.node("GlobalAveragePool")
    g.node("BatchNormalization", g.weight(4, positive=True), g.weight(4), g.weight(4), g.weight(4, positive=True), epsilon=1e-3)
    g.node("Flatten")
    g.node("Gemm", g.weight(4, 5), g.weight(5))
    g.node("LogSoftmax", axis=1)
    return g.model(["batch", 5])


def onnx_mlp():
    g = Graph("onnx_mlp", [2, 3, 4])
    shape = "shape"
    g.nodes.append(helper.make_node("Constant", [], [shape], name="shape", value=numpy_helper.from_array(np.array([0, -1], np.int64))))
    g.node("Reshape", shape)
    g.node("MatMul", g.weight(24, 16))
    g.node("Add", g.weight(16))
    g.node("Relu")
    g.node("Gemm", g.weight(6, 16), g.weight(6), transB=1)
    g.node("Softmax", axis=1)
    return g.model(["batch", 6])


def onnx_transpose():
    g = Graph("onnx_transpose", [2, 7, 5])
    g.node("Conv", g.weight(3, 2, 3, 3), g.weight(3), pads=[1, 1, 1, 1])
    g.node("Transpose", perm=[0, 1, 3, 2])
    g.node("Conv", g.weight(4, 3, 3, 2), g.weight(4))
    g.node("Transpose", perm=[0, 2, 3, 1])
    g.node("Relu")
    g.node("Flatten")
    g.node("Gemm", g.weight(5, 72), g.weight(5), transB=1)
    g.node("Softmax", axis=1)
    return g.model(["batch", 5])


def onnx_reverse_gru():
    g = Graph("onnx_reverse_gru", [5, 3], np.random.default_rng(13))
    g.node("Transpose", perm=[1, 0, 2])
    y = g.node("GRU", g.weight(1, 12, 3), g.weight(1, 12, 4), g.weight(1, 24), hidden_size=4, direction="reverse", linear_before_reset=1, outputs=2)
    g.current = y + "_extra1"  # Y_h [1, N, 4]
    g.node("Squeeze", g.init([0], np.int64))
    g.node("Gemm", g.weight(3, 4), g.weight(3), transB=1)
    g.node("Softmax", axis=1)
    return g.model(["batch", 3])


def refused():
    g = Graph("refused_lstm", [5, 3])
    g.node("LSTM", g.weight(1, 8, 3), g.weight(1, 8, 2), hidden_size=2)
    yield "refused_lstm", g.model(["s", 1, "b", 2])
    g = Graph("refused_extents", [2, 4, 4])
    g.node("Conv", g.weight(2, 2, 1, 1), strides=[2, 2])
    g.node("Relu")
    g.node("Add", "input")
    yield "refused_extents", g.model(["batch", 2, 2, 2])
    g = Graph("refused_opset9", [4])
    g.node("Gemm", g.weight(4, 2), g.weight(2))
    yield "refused_opset9", g.model(["batch", 2], opset=9)
    g = Graph("refused_bidirectional", [5, 3])
    g.node("Transpose", perm=[1, 0, 2])
    g.node("LSTM", g.weight(2, 8, 3), g.weight(2, 8, 2), hidden_size=2, direction="bidirectional")
    yield "refused_bidirectional", g.model([5, 2, "batch", 2])


def write(name, model, x):
    onnx.checker.check_model(model)
    os.makedirs(DATA, exist_ok=True)
    path = os.path.join(DATA, name + ".onnx")
    onnx.save(model, path)
    y = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    write_safetensors(os.path.join(DATA, name + ".safetensors"), {"x": x, "y": y},
                      {"model": name, "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__})
    return path


def main():
    names = sys.argv[1:]
    if names == ["onnx_reverse_gru"]:  # alone: the other files as they are
        write("onnx_reverse_gru", onnx_reverse_gru(), np.random.default_rng(17).uniform(-1, 1, size=(4, 5, 3)).astype("float32"))
        return
    r = np.random.default_rng(5)
    cnn = write("onnx_cnn", onnx_cnn(), r.uniform(0, 1, size=(3, 1, 28, 28)).astype("float32"))
    write("onnx_gap", onnx_gap(), r.uniform(-1, 1, size=(4, 3, 9, 9)).astype("float32"))
    write("onnx_mlp", onnx_mlp(), r.uniform(-1, 1, size=(5, 2, 3, 4)).astype("float32"))
    for name, model in refused():
        onnx.save(model, os.path.join(DATA, name + ".onnx"))
    write("onnx_transpose", onnx_transpose(), r.uniform(-1, 1, size=(4, 2, 7, 5)).astype("float32"))
    with open(cnn, "rb") as f:
        data = f.read()
    with open(os.path.join(DATA, "refused_truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])
    write("onnx_reverse_gru", onnx_reverse_gru(), np.random.default_rng(17).uniform(-1, 1, size=(4, 5, 3)).astype("float32"))


if __name__ == "__main__":
    main()
