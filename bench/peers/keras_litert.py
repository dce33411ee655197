#!/usr/bin/env python3
"""LiteRT peer of bench_keras: the Fashion-MNIST CNN and the MLP 784-128-10 (bench_keras's models,
random weights) converted by tf.lite.TFLiteConverter.from_keras_model, float32 and full-integer
int8 (optimizations DEFAULT, a representative dataset of 64 random images, int8 kernels, float
input and output as keras::quantize's network has), run by LiteRT's interpreter (XNNPack) at batch
1 and 256 on 1 and 2 threads. Prints the median microseconds per invoke. Needs tensorflow-cpu and
ai-edge-litert from PyPI (tf.lite.Interpreter where ai-edge-litert is missing)."""
import contextlib
import io
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np
import tensorflow as tf
import keras
from keras import layers

try:
    from ai_edge_litert.interpreter import Interpreter
except ImportError:  # TensorFlow's own copy
    Interpreter = tf.lite.Interpreter

from timing import median_seconds

keras.utils.set_random_seed(1)
cnn = keras.Sequential([keras.Input((28, 28, 1)), layers.Conv2D(32, 3, activation="relu"), layers.MaxPooling2D(),
                        layers.Conv2D(64, 3, activation="relu"), layers.MaxPooling2D(), layers.Flatten(),
                        layers.Dense(128, activation="relu"), layers.Dense(10)])
mlp = keras.Sequential([keras.Input((784,)), layers.Dense(128, activation="relu"), layers.Dense(10)])


def convert(model, shape, int8):
    with contextlib.redirect_stdout(io.StringIO()):  # the converter's log of the saved model
        return convert_quietly(model, shape, int8)


def convert_quietly(model, shape, int8):
    c = tf.lite.TFLiteConverter.from_keras_model(model)
    if int8:
        r = np.random.default_rng(2)
        c.optimizations = [tf.lite.Optimize.DEFAULT]
        c.representative_dataset = lambda: ([r.uniform(0, 1, (1, *shape)).astype("float32")] for _ in range(64))
        c.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    return c.convert()


for name, model, shape in (("cnn", cnn, (28, 28, 1)), ("mlp", mlp, (784,))):
    for int8 in (False, True):
        flat = convert(model, shape, int8)
        tag = name + ("_int8" if int8 else "")
        if not int8:
            print(f"litert_{tag}_bytes {len(flat)}")
        for batch in (1, 256):
            for threads in (1, 2):
                it = Interpreter(model_content=flat, num_threads=threads)
                inp = it.get_input_details()[0]["index"]
                it.resize_tensor_input(inp, [batch, *shape])
                it.allocate_tensors()
                it.set_tensor(inp, np.random.default_rng(3).uniform(0, 1, (batch, *shape)).astype("float32"))
                t = median_seconds(it.invoke, 2000 if batch == 1 else 50, warmup=20)
                print(f"litert_{tag}/{batch}/{threads} {t * 1e6:.2f} us")
