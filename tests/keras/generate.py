#!/usr/bin/env python3
"""Writes the Keras 3 reference data the Keras tests compare ctflow against.

Run with TensorFlow 2 / Keras 3 from PyPI (pip install tensorflow-cpu h5py), from the repository root:
    python3 tests/keras/generate.py
CI does not run it: the tests read the committed files in tests/keras/data.

For each layer case, data/layers/<case>.safetensors holds (float32, or int32 for indices):
  x (or x0, x1 for layers of two inputs), the layer's weights w0, w1, ... (in Keras's order),
  y = layer(x, training), dy (an upstream adjoint), and the gradients of sum(y * dy):
  dx (dx0, dx1), dw0, dw1, ...; for BatchNormalization in training, also m0, m1: the moving
  statistics after the call. Its __metadata__ holds the case's description.
Also written: data/summaries/<model>.txt (model.summary() at line_length 76, as in a pipe) and
data/weights/<model>.weights.h5 with <model>.safetensors (the same model's input, output, and for
the .h5 round trip the weights in order), data/weights/<model>.keras archives, and legacy tf.keras
files: <model>.h5 (model.save of a whole model: model_weights/...) and <model>_weights.h5 (the
legacy save_weights layout: layer_names at the root).
data/networks.json: the parameter counts (total, trainable, non-trainable) Keras gives the ready
networks of ctflow/keras/applications (LeNet-5, the VGG-style CIFAR net, ResNet-20, ResNet-18,
MobileNetV2), defined here as Keras defines them.

    python3 tests/keras/generate.py --check <dir>
reads what the test keras.write_models wrote into <dir> (ctflow's .weights.h5 files with the
inputs and outputs ctflow computed) and checks that Keras, loading each file into the same
network, reproduces ctflow's outputs.
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")
import numpy as np
import tensorflow as tf
import keras
from keras import layers

from safetensors_np import read_safetensors, write_safetensors

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")


def rng(seed):
    return np.random.default_rng(seed)


def layer_case(name, layer, inputs, training=False, seed=0, int_input=False, extra=None):
    """Builds layer on inputs (a list of arrays), gives its weights random values, and records its
    output and the gradients of sum(y * dy) with respect to the inputs and the weights."""
    r = rng(seed)
    xs = [tf.constant(x) for x in inputs]
    layer(xs if len(xs) > 1 else xs[0], training=training)  # builds it
    weights = []
    for w in layer.weights:
        v = r.uniform(-0.5, 0.5, size=w.shape).astype("float32")
        if "moving_variance" in w.path or "gamma" in w.path:
            v = np.abs(v) + 0.5
        w.assign(v)
        weights.append(v)
    moving_before = [w.numpy().copy() for w in layer.weights if not w.trainable]
    with tf.GradientTape(persistent=True) as tape:
        for x in xs:
            if x.dtype.is_floating:
                tape.watch(x)
        y = layer(xs if len(xs) > 1 else xs[0], training=training)
        dy = tf.constant(r.uniform(-1, 1, size=y.shape).astype("float32"))
        loss = tf.reduce_sum(y * dy)
    tensors = {"y": y.numpy(), "dy": dy.numpy()}
    float_inputs = [x for x in xs if x.dtype.is_floating]
    grads = tape.gradient(loss, float_inputs + list(layer.trainable_weights))
    for i, x in enumerate(xs):
        key = "x" if len(xs) == 1 else f"x{i}"
        tensors[key] = x.numpy()
    for i, x in enumerate(float_inputs):
        key = "dx" if len(xs) == 1 else f"dx{i}"
        tensors[key] = grads[i].numpy()
    trainable_index = 0
    for i, w in enumerate(layer.weights):
        tensors[f"w{i}"] = weights[i]
        if w.trainable:
            g = grads[len(float_inputs) + trainable_index]
            trainable_index += 1
            tensors[f"dw{i}"] = (tf.convert_to_tensor(g).numpy() if g is not None else np.zeros_like(weights[i]))
    k = 0
    for i, w in enumerate(layer.weights):
        if not w.trainable:
            tensors[f"m{k}"] = w.numpy()
            k += 1
    meta = {"layer": type(layer).__name__, "config": json.dumps(layer.get_config(), default=str), "training": training}
    if extra:
        meta.update(extra)
    write_safetensors(os.path.join(DATA, "layers", name + ".safetensors"), tensors, meta)


def f32(seed, *shape, lo=-1.0, hi=1.0):
    return rng(seed).uniform(lo, hi, size=shape).astype("float32")


def layer_cases():
    keras.utils.set_random_seed(1)
    layer_case("dense", layers.Dense(5, activation="relu"), [f32(1, 3, 4)])
    layer_case("dense_3d", layers.Dense(6), [f32(2, 2, 3, 4)])
    layer_case("dense_no_bias_softmax", layers.Dense(4, activation="softmax", use_bias=False), [f32(3, 3, 5)])
    layer_case("conv2d", layers.Conv2D(4, 3, activation="relu"), [f32(4, 2, 7, 7, 3)])
    layer_case("conv2d_same_strides", layers.Conv2D(4, (3, 2), strides=2, padding="same"), [f32(5, 2, 8, 7, 3)])
    layer_case("conv2d_dilated", layers.Conv2D(3, 3, dilation_rate=2, activation="tanh"), [f32(6, 2, 9, 9, 2)])
    layer_case("conv1d", layers.Conv1D(4, 3, padding="same"), [f32(7, 2, 9, 3)])
    layer_case("depthwise_conv2d", layers.DepthwiseConv2D(3, depth_multiplier=2), [f32(8, 2, 6, 6, 3)])
    layer_case("separable_conv2d", layers.SeparableConv2D(5, 3, padding="same"), [f32(9, 2, 6, 6, 3)])
    layer_case("conv2d_transpose", layers.Conv2DTranspose(4, 3, strides=2, padding="same"), [f32(10, 2, 4, 4, 3)])
    layer_case("conv2d_transpose_valid", layers.Conv2DTranspose(2, 3), [f32(11, 2, 4, 5, 3)])
    layer_case("max_pooling2d", layers.MaxPooling2D(), [f32(12, 2, 6, 6, 3)])
    layer_case("max_pooling2d_same", layers.MaxPooling2D(3, strides=2, padding="same"), [f32(13, 2, 7, 7, 2)])
    layer_case("average_pooling2d", layers.AveragePooling2D(2), [f32(14, 2, 6, 6, 3)])
    layer_case("average_pooling2d_same", layers.AveragePooling2D(3, strides=2, padding="same"), [f32(15, 2, 7, 7, 2)])
    layer_case("global_average_pooling2d", layers.GlobalAveragePooling2D(), [f32(16, 2, 5, 4, 3)])
    layer_case("global_max_pooling2d", layers.GlobalMaxPooling2D(), [f32(17, 2, 5, 4, 3)])
    layer_case("flatten", layers.Flatten(), [f32(18, 2, 3, 4, 2)])
    layer_case("reshape", layers.Reshape((6, -1)), [f32(19, 2, 3, 4, 2)])
    layer_case("permute", layers.Permute((2, 1)), [f32(20, 2, 3, 5)])
    layer_case("dropout_inference", layers.Dropout(0.5), [f32(21, 3, 8)], training=False)
    layer_case("batch_normalization", layers.BatchNormalization(), [f32(22, 4, 3, 3, 5)], training=True)
    layer_case("batch_normalization_inference", layers.BatchNormalization(), [f32(23, 4, 3, 3, 5)], training=False)
    layer_case("layer_normalization", layers.LayerNormalization(), [f32(24, 3, 4, 6)])
    layer_case("activation_tanh", layers.Activation("tanh"), [f32(25, 3, 5)])
    layer_case("relu", layers.ReLU(max_value=0.6, negative_slope=0.1, threshold=0.2), [f32(26, 3, 7)])
    layer_case("leaky_relu", layers.LeakyReLU(negative_slope=0.2), [f32(27, 3, 7)])
    layer_case("softmax", layers.Softmax(), [f32(28, 3, 7)])
    layer_case("embedding", layers.Embedding(10, 4), [rng(29).integers(0, 10, size=(3, 5)).astype("int32")])
    layer_case("add", layers.Add(), [f32(30, 2, 4), f32(31, 2, 4)])
    layer_case("multiply", layers.Multiply(), [f32(32, 2, 4), f32(33, 2, 4)])
    layer_case("concatenate", layers.Concatenate(), [f32(34, 2, 3), f32(35, 2, 4)])
    layer_case("up_sampling2d", layers.UpSampling2D(), [f32(36, 2, 3, 4, 2)])
    layer_case("up_sampling2d_bilinear", layers.UpSampling2D(3, interpolation="bilinear"), [f32(37, 2, 3, 4, 2)])
    layer_case("zero_padding2d", layers.ZeroPadding2D(((1, 2), (3, 0))), [f32(38, 2, 3, 4, 2)])
    layer_case("rescaling", layers.Rescaling(1.0 / 255, offset=-1.0), [f32(39, 2, 5, lo=0, hi=255)])
    layer_case("lstm", layers.LSTM(4), [f32(40, 2, 5, 3)])
    layer_case("lstm_sequences", layers.LSTM(3, return_sequences=True), [f32(41, 2, 4, 3)])
    layer_case("gru", layers.GRU(4), [f32(42, 2, 5, 3)])
    layer_case("gru_v1", layers.GRU(3, reset_after=False, return_sequences=True), [f32(43, 2, 4, 3)])
    layer_case("lstm_backwards", layers.LSTM(3, go_backwards=True, return_sequences=True, activation="relu",
                                             recurrent_activation="hard_sigmoid"), [f32(44, 3, 6, 2)])
    layer_case("gru_backwards", layers.GRU(2, go_backwards=True, use_bias=False), [f32(45, 2, 3, 4)])


def summary_text(model):
    lines = []
    model.summary(line_length=76, print_fn=lambda s, line_break=True: lines.append(s))
    return "".join(lines)


def save_summary(name, model):
    os.makedirs(os.path.join(DATA, "summaries"), exist_ok=True)
    with open(os.path.join(DATA, "summaries", name + ".txt"), "w") as f:
        f.write(summary_text(model))


def fashion_mnist_cnn():
    return keras.Sequential([
        keras.Input((28, 28, 1)),
        layers.Conv2D(32, 3, activation="relu"),
        layers.MaxPooling2D(),
        layers.Conv2D(64, 3, activation="relu"),
        layers.MaxPooling2D(),
        layers.Flatten(),
        layers.Dense(128, activation="relu"),
        layers.Dense(10),
    ])


def bn_model():
    return keras.Sequential([keras.Input((8,)), layers.Dense(16), layers.BatchNormalization(), layers.Dense(2)])


def model_files(name, model, x, archive=False, weights=False, gradients=False, legacy=False):
    """The model's .weights.h5 file (and .keras archive), its input(s) and output (and its weights in
    order; with gradients, dy and the gradients of sum(y * dy) in training for the trainable weights,
    dw<i> for weight i, and for the inputs, dx or dx<i>)."""
    os.makedirs(os.path.join(DATA, "weights"), exist_ok=True)
    r = rng(100)
    for w in model.weights:
        v = r.uniform(-0.3, 0.3, size=w.shape).astype("float32")
        if "moving_variance" in w.path or "gamma" in w.path:
            v = np.abs(v) + 0.5
        w.assign(v)
    y = model(x, training=False).numpy()
    model.save_weights(os.path.join(DATA, "weights", name + ".weights.h5"))
    if archive:
        model.save(os.path.join(DATA, "weights", name + ".keras"))
    if legacy:
        from keras.src.legacy.saving import legacy_h5_format
        import h5py
        legacy_h5_format.save_model_to_hdf5(model, os.path.join(DATA, "weights", name + ".h5"))
        with h5py.File(os.path.join(DATA, "weights", name + "_weights.h5"), "w") as f:
            legacy_h5_format.save_weights_to_hdf5_group(f, model)
    xs = x if isinstance(x, list) else [x]
    tensors = {"y": y}
    for i, xi in enumerate(xs):
        tensors["x" if len(xs) == 1 else f"x{i}"] = xi
    if weights:
        for i, w in enumerate(model.weights):
            tensors[f"w{i}"] = w.numpy()
    if gradients:
        dy = r.uniform(-1, 1, size=y.shape).astype("float32")
        inputs = [tf.constant(xi) for xi in xs]
        floats = [t for t in inputs if t.dtype.is_floating]  # (indices have no gradient)
        with tf.GradientTape() as tape:
            tape.watch(floats)
            yt = model(inputs if len(xs) > 1 else inputs[0], training=True)
            loss = tf.reduce_sum(yt * dy)
        grads = tape.gradient(loss, floats + list(model.trainable_weights))
        tensors["dy"] = dy
        for i, g in enumerate(grads[:len(floats)]):
            tensors["dx" if len(xs) == 1 else f"dx{i}"] = g.numpy()
        trainable_ids = [id(w) for w in model.trainable_weights]
        for i, w in enumerate(model.weights):
            if id(w) in trainable_ids:
                g = grads[len(floats) + trainable_ids.index(id(w))]
                tensors[f"dw{i}"] = tf.convert_to_tensor(g).numpy()
    write_safetensors(os.path.join(DATA, "weights", name + ".safetensors"), tensors, {"model": name})


def models():
    keras.backend.clear_session()
    cnn = fashion_mnist_cnn()
    save_summary("fashion_mnist_cnn", cnn)
    model_files("fashion_mnist_cnn", cnn, f32(200, 2, 28, 28, 1, lo=0, hi=1))
    keras.backend.clear_session()
    bn = bn_model()
    save_summary("batch_normalization", bn)
    model_files("batch_normalization", bn, f32(201, 3, 8), archive=True, weights=True, legacy=True)
    keras.backend.clear_session()
    frozen = keras.Sequential([keras.Input((8,)), layers.Dense(16), layers.Dense(4), layers.Dense(2)])
    frozen.layers[1].trainable = False
    save_summary("frozen", frozen)
    # A functional model: two inputs, a shared Dense, Add and Concatenate ("Connected to").
    keras.backend.clear_session()
    a = keras.Input((4,), name="a")
    b = keras.Input((4,), name="b")
    shared = layers.Dense(8, name="shared")
    sa, sb = shared(a), shared(b)
    s = layers.Add()([sa, sb])
    c = layers.Concatenate()([s, sa])
    out = layers.Dense(1)(c)
    functional = keras.Model([a, b], out)
    save_summary("functional", functional)
    model_files("functional", functional, [f32(202, 3, 4), f32(203, 3, 4)], weights=True, gradients=True)
    # A residual block (Conv2D, BatchNormalization, ReLU, Conv2D, Add) and a pooled Dense head.
    keras.backend.clear_session()
    inputs = keras.Input((6, 6, 3))
    x = layers.Conv2D(4, 3, padding="same")(inputs)
    y = layers.Conv2D(4, 3, padding="same")(layers.ReLU()(layers.BatchNormalization()(x)))
    out = layers.Dense(3)(layers.GlobalAveragePooling2D()(layers.Add()([x, y])))
    residual = keras.Model(inputs, out)
    save_summary("residual", residual)
    model_files("residual", residual, f32(204, 2, 6, 6, 3), weights=True, gradients=True, archive=True)
    # A MobileNet-style inverted residual block: 1x1 expansion, 3x3 depthwise, 1x1 projection, each
    # with BatchNormalization (ReLU6 after the first two), and the identity shortcut.
    keras.backend.clear_session()
    inputs = keras.Input((8, 8, 4))
    x = layers.Conv2D(8, 1, use_bias=False)(inputs)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU(6.0)(x)
    x = layers.DepthwiseConv2D(3, padding="same", use_bias=False)(x)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU(6.0)(x)
    x = layers.Conv2D(4, 1, use_bias=False)(x)
    x = layers.BatchNormalization()(x)
    x = layers.Add()([inputs, x])
    out = layers.Dense(3)(layers.GlobalAveragePooling2D()(x))
    mobile = keras.Model(inputs, out)
    save_summary("mobile_block", mobile)
    model_files("mobile_block", mobile, f32(206, 2, 8, 8, 4), weights=True, archive=True)
    # A functional model called as a layer of another.
    keras.backend.clear_session()
    ii = keras.Input((3,))
    inner = keras.Model(ii, layers.Dense(5)(layers.Dense(4, activation="tanh")(ii)), name="inner")
    oi = keras.Input((3,))
    nested = keras.Model(oi, layers.Dense(2)(inner(oi)), name="outer")
    save_summary("nested", nested)
    model_files("nested", nested, f32(205, 3, 3), weights=True, gradients=True)


def masked_models():
    """Masks: Embedding(mask_zero) and Masking in front of LSTM and GRU (padded sequences, a step
    masked in the middle, a sequence masked whole), the mask passed on by return_sequences and
    Dense; outputs and gradients in training."""
    tokens = np.array([[3, 4, 5, 0, 0, 0], [1, 0, 7, 2, 0, 0], [0, 0, 0, 0, 0, 0], [9, 11, 2, 6, 1, 8]], dtype="int32")
    keras.backend.clear_session()
    m = keras.Sequential([keras.Input((6,), dtype="int32"), layers.Embedding(12, 4, mask_zero=True), layers.LSTM(5), layers.Dense(3)])
    model_files("masked_lstm", m, tokens, weights=True, gradients=True)
    keras.backend.clear_session()
    m = keras.Sequential([keras.Input((6,), dtype="int32"), layers.Embedding(12, 4, mask_zero=True), layers.Dropout(0.0),
                          layers.GRU(3, return_sequences=True, go_backwards=True), layers.Dense(4, activation="tanh"),
                          layers.LSTM(2, return_sequences=True), layers.GRU(2, reset_after=False)])
    model_files("masked_gru_stack", m, tokens, weights=True, gradients=True)
    keras.backend.clear_session()
    x = f32(210, 3, 5, 3)
    x[0, 3:] = 0.0
    x[1, 1] = 0.5
    x[2, 0] = 0.5
    m = keras.Sequential([keras.Input((5, 3)), layers.Masking(0.5), layers.LSTM(4, return_sequences=True), layers.Dense(2)])
    model_files("masking_lstm", m, x, weights=True, gradients=True)
    keras.backend.clear_session()
    inputs = keras.Input((6,), dtype="int32")
    e = layers.Embedding(12, 3, mask_zero=True)(inputs)
    h = layers.LSTM(4, return_sequences=True)(e)
    out = layers.Dense(2)(layers.GRU(3)(layers.Dense(3)(h)))
    model_files("masked_functional", keras.Model(inputs, out), tokens, weights=True, gradients=True)
    # Merges join their inputs' masks (Add, Concatenate: the OR), and a nested model passes its
    # input's mask in and its output's out.
    keras.backend.clear_session()
    other = np.array([[5, 0, 0, 0, 0, 0], [1, 2, 3, 4, 5, 0], [0, 0, 0, 0, 0, 0], [7, 7, 7, 7, 0, 0]], dtype="int32")
    a = keras.Input((6,), dtype="int32")
    b = keras.Input((6,), dtype="int32")
    s = layers.Add()([layers.Embedding(12, 3, mask_zero=True)(a), layers.Embedding(12, 3, mask_zero=True)(b)])
    h = layers.LSTM(4, return_sequences=True)(s)
    c = layers.Concatenate()([h, layers.Embedding(12, 2, mask_zero=True)(b)])
    out = layers.Dense(2)(layers.GRU(3)(c))
    model_files("masked_merges", keras.Model([a, b], out), [tokens, other], weights=True, gradients=True)
    keras.backend.clear_session()
    ii = keras.Input((6,), dtype="int32")
    inner = keras.Model(ii, layers.LSTM(3, return_sequences=True)(layers.Embedding(12, 4, mask_zero=True)(ii)), name="inner")
    oi = keras.Input((6,), dtype="int32")
    model_files("masked_nested", keras.Model(oi, layers.Dense(2)(layers.GRU(2)(inner(oi))), name="outer"), tokens, weights=True, gradients=True)


# ---- the ready networks, as Keras defines them -----------------------------------------------


def lenet5():
    """LeCun's LeNet-5 on 32x32 grey images: tanh convolutions, average pooling."""
    return keras.Sequential([
        keras.Input((32, 32, 1)),
        layers.Conv2D(6, 5, activation="tanh"), layers.AveragePooling2D(2),
        layers.Conv2D(16, 5, activation="tanh"), layers.AveragePooling2D(2),
        layers.Flatten(), layers.Dense(120, activation="tanh"), layers.Dense(84, activation="tanh"),
        layers.Dense(10, activation="softmax"),
    ])


def vgg_cifar():
    """Three VGG blocks (two 3x3 convolutions and a max pooling each, 32-64-128 filters) and a
    128-unit Dense head, on 32x32x3 images."""
    ls = [keras.Input((32, 32, 3))]
    for f in (32, 64, 128):
        ls += [layers.Conv2D(f, 3, padding="same", activation="relu"), layers.Conv2D(f, 3, padding="same", activation="relu"),
               layers.MaxPooling2D(2)]
    ls += [layers.Flatten(), layers.Dense(128, activation="relu"), layers.Dense(10, activation="softmax")]
    return keras.Sequential(ls)


def resnet20(order=None):
    """keras.io's ResNet v1 for CIFAR-10 at depth 20: convolutions with biases, a 1x1 projection
    where a stack starts (strides 2). order, when given, receives the layers with weights in the
    order ctflow's ResNet20 lists them (each block's convolutions and normalizations, then its
    projection)."""
    order = [] if order is None else order

    def block(x, filters, kernel=3, strides=1, activation="relu", bn=True):
        conv = layers.Conv2D(filters, kernel, strides=strides, padding="same", kernel_initializer="he_normal")
        order.append(conv)
        x = conv(x)
        if bn:
            norm = layers.BatchNormalization()
            order.append(norm)
            x = norm(x)
        return layers.Activation(activation)(x) if activation else x
    inputs = keras.Input((32, 32, 3))
    x = block(inputs, 16)
    filters = 16
    for stack in range(3):
        for b in range(3):
            strides = 2 if stack > 0 and b == 0 else 1
            y = block(block(x, filters, strides=strides), filters, activation=None)
            if strides == 2:
                x = block(x, filters, kernel=1, strides=2, activation=None, bn=False)
            x = layers.Activation("relu")(layers.Add()([x, y]))
        filters *= 2
    x = layers.Flatten()(layers.AveragePooling2D(8)(x))
    head = layers.Dense(10, activation="softmax", kernel_initializer="he_normal")
    order.append(head)
    return keras.Model(inputs, head(x))


def resnet20_case():
    """ResNet-20's weights in ctflow's order (w<i>), its output on two images in inference (y) and,
    in training, the gradients of sum(y * dy) (dx, dw<i> for the trainable weights)."""
    keras.backend.clear_session()
    order = []
    model = resnet20(order)
    r = rng(300)
    weights = [w for l in order for w in l.weights]
    assert len(weights) == len(model.weights)
    tensors = {}
    for i, w in enumerate(weights):
        v = r.uniform(-0.3, 0.3, size=w.shape).astype("float32")
        if "moving_variance" in w.path or "gamma" in w.path:
            v = np.abs(v) + 0.5
        w.assign(v)
        tensors[f"w{i}"] = v
    x = f32(301, 2, 32, 32, 3)
    tensors["x"] = x
    tensors["y"] = model(x, training=False).numpy()
    dy = r.uniform(-1, 1, size=tensors["y"].shape).astype("float32")
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        loss = tf.reduce_sum(model(xt, training=True) * dy)
    trainable = [w for w in weights if w.trainable]
    grads = tape.gradient(loss, [xt] + trainable)
    tensors["dy"] = dy
    tensors["dx"] = grads[0].numpy()
    for i, w in enumerate(weights):
        if w.trainable:
            tensors[f"dw{i}"] = grads[1 + [id(t) for t in trainable].index(id(w))].numpy()
    write_safetensors(os.path.join(DATA, "weights", "resnet20.safetensors"), tensors, {"model": "resnet20"})


def resnet18():
    """ResNet-18 on 224x224x3: a 7x7/2 stem, max pooling, four stages of two basic blocks
    (convolutions without biases, each followed by BatchNormalization; a 1x1 projection with
    BatchNormalization where the shape changes), global average pooling, 1000 classes."""
    def conv_bn(x, filters, kernel, strides=1):
        x = layers.Conv2D(filters, kernel, strides=strides, padding="same", use_bias=False)(x)
        return layers.BatchNormalization(epsilon=1e-5)(x)
    inputs = keras.Input((224, 224, 3))
    x = layers.ReLU()(conv_bn(inputs, 64, 7, 2))
    x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
    for stage, filters in enumerate((64, 128, 256, 512)):
        for b in range(2):
            strides = 2 if stage > 0 and b == 0 else 1
            y = conv_bn(layers.ReLU()(conv_bn(x, filters, 3, strides)), filters, 3)
            if strides == 2:
                x = conv_bn(x, filters, 1, 2)
            x = layers.ReLU()(layers.Add()([x, y]))
    x = layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, layers.Dense(1000, activation="softmax")(x))


def networks():
    out = {}
    for name, make in (("lenet5", lenet5), ("vgg_cifar", vgg_cifar), ("resnet20", resnet20), ("resnet18", resnet18),
                       ("mobilenet_v2", lambda: keras.applications.MobileNetV2(weights=None))):
        keras.backend.clear_session()
        m = make()
        trainable = int(sum(np.prod(w.shape) for w in m.trainable_weights))
        non_trainable = int(sum(np.prod(w.shape) for w in m.non_trainable_weights))
        out[name] = {"total": trainable + non_trainable, "trainable": trainable, "non_trainable": non_trainable}
    with open(os.path.join(DATA, "networks.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


# ---- Keras reads ctflow's files -------------------------------------------------------------


def check(directory):
    """Each <model>.weights.h5 ctflow wrote in directory, loaded by Keras into the same network,
    gives the outputs ctflow gave (<model>.safetensors: x or x0, x1, ..., and y)."""
    makers = {"fashion_mnist_cnn": fashion_mnist_cnn, "batch_normalization": bn_model}
    checked = 0
    for name, make in makers.items():
        path = os.path.join(directory, name + ".weights.h5")
        if not os.path.exists(path):
            sys.exit(f"{path}: not written (run ctest -R keras.write_models with CTFLOW_KERAS_OUT={directory})")
        keras.backend.clear_session()
        model = make()
        model.load_weights(path)
        t = read_safetensors(os.path.join(directory, name + ".safetensors"))
        y = model(t["x"], training=False).numpy()
        err = float(np.max(np.abs(y - t["y"])) / max(1.0, float(np.max(np.abs(t["y"])))))
        print(f"{name}: Keras reproduces ctflow's outputs from ctflow's file, relative difference {err:.2e}")
        if not err <= 2e-5:
            sys.exit(f"{name}: Keras's outputs differ from ctflow's by {err}")
        checked += 1
    print(f"checked {checked} files")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        check(sys.argv[2])
    elif len(sys.argv) == 2 and sys.argv[1] == "--masking":
        masked_models()
    else:
        layer_cases()
        models()
        masked_models()
        networks()
        resnet20_case()
        print("wrote", DATA)
