#!/usr/bin/env python3
"""TensorFlow/Keras peer of examples/fashion_mnist.cpp: the same Sequential (Rescaling, Conv2D 32
3x3 relu, MaxPooling2D, Conv2D 64 3x3 relu, MaxPooling2D, Flatten, Dense 128 relu, Dense 10),
compiled with Adam, SparseCategoricalCrossentropy(from_logits=True) and "accuracy", fit on the
uint8 images with batch 64, a 10% validation split and the given epochs, on 2 threads; then
evaluate on the test set. Prints each epoch's time, the mean epoch time of the epochs after the
first (the steady epoch: the first traces the graph), the test accuracy and the peak RSS, in the
example's format. Needs TensorFlow from PyPI (pip install tensorflow-cpu)."""
import gzip
import os
import resource
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np
import tensorflow as tf
import keras
from keras import layers

tf.config.threading.set_intra_op_parallelism_threads(2)
tf.config.threading.set_inter_op_parallelism_threads(1)
keras.utils.set_random_seed(42)
DIR = "/usr/share/datasets/fashion-mnist"
EPOCHS = int(sys.argv[1]) if len(sys.argv) > 1 else 3


def idx(name, offset):
    with gzip.open("%s/%s.gz" % (DIR, name), "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


x_train = idx("train-images-idx3-ubyte", 16).reshape(-1, 28, 28, 1)
y_train = idx("train-labels-idx1-ubyte", 8)
x_test = idx("t10k-images-idx3-ubyte", 16).reshape(-1, 28, 28, 1)
y_test = idx("t10k-labels-idx1-ubyte", 8)

model = keras.Sequential([keras.Input((28, 28, 1)), layers.Rescaling(1.0 / 255),
                          layers.Conv2D(32, 3, activation="relu"), layers.MaxPooling2D(),
                          layers.Conv2D(64, 3, activation="relu"), layers.MaxPooling2D(), layers.Flatten(),
                          layers.Dense(128, activation="relu"), layers.Dense(10)])
model.compile(optimizer=keras.optimizers.Adam(), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])


class EpochTimes(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        seconds = time.perf_counter() - self.start
        times.append(seconds)
        print("epoch %d: loss %.4f, %.1f s" % (epoch + 1, logs["loss"], seconds))


times = []
model.fit(x_train, y_train, batch_size=64, epochs=EPOCHS, validation_split=0.1, verbose=0, callbacks=[EpochTimes()])
_, accuracy = model.evaluate(x_test, y_test, batch_size=64, verbose=0)
print("test accuracy: %.4f" % accuracy)
steady = times[1:] if len(times) > 1 else times
print("mean epoch time: %.2f s (first epoch %.2f s)" % (sum(steady) / len(steady), times[0]))
print("peak RSS: %d MB" % (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024))
