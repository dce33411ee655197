#!/usr/bin/env python3
"""onnxruntime peer of bench_keras: the Fashion-MNIST CNN and the MLP 784-128-10 (bench_keras's
models, random weights) as ONNX graphs (Conv + Relu, MaxPool, Flatten, Gemm: the nodes PyTorch's
exporter writes; the CNN channels first, as ONNX takes it), run by onnxruntime's CPU provider at
batch 1 and 256 on 1 and 2 threads (intra_op_num_threads; all graph optimizations). Prints the
median microseconds per run. Needs onnx and onnxruntime from PyPI."""
import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

from timing import median_seconds

R = np.random.default_rng(1)


def graph(name, shape, body):
    nodes, inits = [], []

    def weight(*s):
        n = f"w{len(inits)}"
        inits.append(numpy_helper.from_array(R.uniform(-0.1, 0.1, s).astype("float32"), n))
        return n

    out = body(nodes, weight)
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", *shape])],
                          [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["n", 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def cnn(nodes, weight):
    nodes += [helper.make_node("Conv", ["x", weight(32, 1, 3, 3), weight(32)], ["c1"]), helper.make_node("Relu", ["c1"], ["r1"]),
              helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
              helper.make_node("Conv", ["p1", weight(64, 32, 3, 3), weight(64)], ["c2"]), helper.make_node("Relu", ["c2"], ["r2"]),
              helper.make_node("MaxPool", ["r2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]), helper.make_node("Flatten", ["p2"], ["f"]),
              helper.make_node("Gemm", ["f", weight(128, 1600), weight(128)], ["d1"], transB=1), helper.make_node("Relu", ["d1"], ["r3"]),
              helper.make_node("Gemm", ["r3", weight(10, 128), weight(10)], ["y"], transB=1)]
    return "y"


def mlp(nodes, weight):
    nodes += [helper.make_node("Gemm", ["x", weight(128, 784), weight(128)], ["d1"], transB=1), helper.make_node("Relu", ["d1"], ["r1"]),
              helper.make_node("Gemm", ["r1", weight(10, 128), weight(10)], ["y"], transB=1)]
    return "y"


for name, shape, body in (("cnn", (1, 28, 28), cnn), ("mlp", (784,), mlp)):
    model = graph(name, shape, body)
    for batch in (1, 256):
        x = R.uniform(0, 1, (batch, *shape)).astype("float32")
        for threads in (1, 2):
            o = onnxruntime.SessionOptions()
            o.intra_op_num_threads, o.inter_op_num_threads = threads, 1
            s = onnxruntime.InferenceSession(model, o, providers=["CPUExecutionProvider"])
            t = median_seconds(lambda: s.run(None, {"x": x}), 2000 if batch == 1 else 50, warmup=20)
            print(f"ort_{name}/{batch}/{threads} {t * 1e6:.2f} us")
