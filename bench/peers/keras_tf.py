#!/usr/bin/env python3
"""TensorFlow/Keras peer of bench_keras: model(x, training=False) of the Fashion-MNIST CNN and of
the MLP 784-128-10 at batch 1 and 256, on the threads given (TensorFlow fixes its thread pools
once per process: run once per thread count). Prints the median microseconds per call. Needs
TensorFlow from PyPI (pip install tensorflow-cpu)."""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf
import keras
from keras import layers

from timing import median_seconds

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
tf.config.threading.set_intra_op_parallelism_threads(threads)
tf.config.threading.set_inter_op_parallelism_threads(1)
cnn = keras.Sequential([keras.Input((28, 28, 1)), layers.Conv2D(32, 3, activation="relu"), layers.MaxPooling2D(),
                        layers.Conv2D(64, 3, activation="relu"), layers.MaxPooling2D(), layers.Flatten(),
                        layers.Dense(128, activation="relu"), layers.Dense(10)])
mlp = keras.Sequential([keras.Input((784,)), layers.Dense(128, activation="relu"), layers.Dense(10)])
for name, model, shape in (("cnn", cnn, (28, 28, 1)), ("mlp", mlp, (784,))):
    for batch in (1, 256):
        x = tf.random.uniform((batch, *shape))
        t = median_seconds(lambda: model(x, training=False), 500 if batch == 1 else 50, warmup=20)
        print(f"tf_{name}/{batch}/{threads} {t * 1e6:.2f} us")
