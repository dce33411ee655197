#!/usr/bin/env python3
"""Writes the Keras files the import tests convert with ctflow-import (tests/embedded/data/).

Run with TensorFlow 2 / Keras 3 from PyPI (pip install tensorflow-cpu h5py), from the repository
root:
    python3 tests/embedded/generate_imports.py [name ...]     (none given: every model)
CI does not run it: the tests read the committed files.

For each model: <name>.keras (model.save), <name>.h5 (Keras's legacy HDF5 format, model config and
weights) and <name>.safetensors: x (the test inputs) and y (the model's outputs for them,
model(x, training=False)). The weights are drawn at random (seeded), the moving variances and
gammas positive, so that every weight shows in the outputs.
  conv_zoo     a Sequential model of every layer ctflow-import takes: Rescaling, ZeroPadding2D,
               Conv2D (same, strided, dilated), BatchNormalization without its scale,
               DepthwiseConv2D, the poolings, ReLU, Activation, Dropout, Reshape, Softmax, Dense;
  chain        a functional model whose layers form a chain (Input, Conv2D, BatchNormalization
               without its center, Activation, GlobalAveragePooling2D, Dense with softmax);
  branches     a functional model of branches: a residual sum (Add) over a Conv2D's output,
               two branches joined by Concatenate, Multiply, Subtract, Maximum, Minimum and
               Average of them, both global poolings concatenated, Dropout, Dense with softmax;
  recurrent    a Sequential model of the recurrent layers: an LSTM of every step, a GRU backwards
               with its reset gate before its product, a GRU of every step (reset after), an LSTM
               without bias of relu and hard_sigmoid, Dense with softmax.
And what ctflow-import refuses: refused_stateful.keras, a stateful LSTM (the embedded layers start
each call from zero states); refused_concat_axis.keras, a Concatenate whose config was edited to
join axis 3 of its rank-2 inputs (Keras itself builds no such layer: a damaged or hand-made file).
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "keras"))
from safetensors_np import write_safetensors  # noqa: E402

import keras  # noqa: E402
from keras import layers  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def conv_zoo():
    return keras.Sequential([
        keras.Input((12, 10, 3)),
        layers.Rescaling(1.0 / 4, offset=-0.5),
        layers.ZeroPadding2D(((1, 0), (2, 1))),
        layers.Conv2D(6, 3, strides=2, padding="same", activation="tanh"),
        layers.BatchNormalization(scale=False, epsilon=1e-2),
        layers.DepthwiseConv2D(3, depth_multiplier=2, padding="same", activation="relu6"),
        layers.Conv2D(5, (3, 2), dilation_rate=(1, 2), use_bias=False),
        layers.ReLU(),
        layers.MaxPooling2D(2, padding="same"),
        layers.Activation("swish"),
        layers.Dropout(0.3),
        layers.AveragePooling2D((2, 1), strides=1),
        layers.Reshape((6, 5)),
        layers.Dense(4, activation="sigmoid"),
        layers.Softmax(),
        layers.Flatten(),
        layers.Dense(3, activation="log_softmax"),
    ])


def chain():
    inputs = keras.Input((8, 8, 2))
    x = layers.Conv2D(4, 3, activation="elu")(inputs)
    x = layers.BatchNormalization(center=False)(x)
    x = layers.Activation("gelu")(x)
    x = layers.GlobalAveragePooling2D()(x)
    outputs = layers.Dense(3, activation="softmax")(x)
    return keras.Model(inputs, outputs)


def branches():
    inputs = keras.Input((8, 8, 3))
    x = layers.Conv2D(6, 3, padding="same", activation="relu")(inputs)
    y = layers.Conv2D(6, 3, padding="same")(x)
    y = layers.BatchNormalization()(y)
    s = layers.ReLU()(layers.Add()([x, y]))
    a = layers.Conv2D(4, 1, activation="sigmoid")(s)
    b = layers.Conv2D(4, 1)(layers.DepthwiseConv2D(3, padding="same")(s))
    p = layers.Multiply()([a, b])
    q = layers.Subtract()([b, p])
    r = layers.Minimum()([layers.Maximum()([p, q]), a])
    c = layers.Concatenate()([a, layers.Average()([p, q, r])])
    pooled = layers.Concatenate(axis=1)([layers.GlobalAveragePooling2D()(c), layers.GlobalMaxPooling2D()(c)])
    outputs = layers.Dense(3, activation="softmax")(layers.Dropout(0.2)(pooled))
    return keras.Model(inputs, outputs)


def recurrent():
    return keras.Sequential([
        keras.Input((7, 5)),
        layers.LSTM(6, return_sequences=True),
        layers.GRU(5, return_sequences=True, go_backwards=True, reset_after=False),
        layers.GRU(4, return_sequences=True),
        layers.LSTM(5, use_bias=False, activation="relu", recurrent_activation="hard_sigmoid"),
        layers.Dense(3, activation="softmax"),
    ])


def refused_stateful():
    return keras.Sequential([keras.Input(batch_shape=(2, 7, 5)), layers.LSTM(4, stateful=True), layers.Dense(2)])


def refused_concat_axis(path):
    """A model joining two Dense outputs, its Concatenate's axis then made 3 in config.json."""
    import json
    import zipfile
    x = keras.Input(shape=(6,))
    joined = layers.Concatenate()([layers.Dense(4)(x), layers.Dense(2)(x)])
    keras.Model(x, layers.Dense(1)(joined)).save(path)
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    config = json.loads(members["config.json"])
    for layer in config["config"]["layers"]:
        if layer["class_name"] == "Concatenate":
            layer["config"]["axis"] = 3
    members["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(path, "w") as z:
        for n, data in members.items():
            z.writestr(n, data)


def write(name, model, x):
    r = np.random.default_rng(7)
    for w in model.weights:
        v = r.uniform(-0.5, 0.5, size=w.shape).astype("float32")
        if "moving_variance" in w.path or "gamma" in w.path:
            v = np.abs(v) + 0.5
        w.assign(v)
    os.makedirs(DATA, exist_ok=True)
    model.save(os.path.join(DATA, name + ".keras"))
    from keras.src.legacy.saving import legacy_h5_format
    legacy_h5_format.save_model_to_hdf5(model, os.path.join(DATA, name + ".h5"))
    y = model(x, training=False).numpy()
    write_safetensors(os.path.join(DATA, name + ".safetensors"), {"x": x, "y": y}, {"model": name, "keras": keras.__version__})


def main(names):
    r = np.random.default_rng(3)
    models = [("conv_zoo", conv_zoo, r.uniform(0, 4, size=(4, 12, 10, 3))), ("chain", chain, r.uniform(-1, 1, size=(3, 8, 8, 2))),
              ("branches", branches, r.uniform(-1, 1, size=(3, 8, 8, 3))), ("recurrent", recurrent, r.uniform(-2, 2, size=(4, 7, 5)))]
    for name, model, x in models:
        if not names or name in names:
            write(name, model(), x.astype("float32"))
    if not names or "refused_stateful" in names:
        refused_stateful().save(os.path.join(DATA, "refused_stateful.keras"))
    if not names or "refused_concat_axis" in names:
        refused_concat_axis(os.path.join(DATA, "refused_concat_axis.keras"))


if __name__ == "__main__":
    main(sys.argv[1:])
