"""Reference data for ctflow's Keras losses, from Keras 3 itself: for each loss, its value
(sum_over_batch_size), with sample weights, reduced by sum, per sample (reduction "none"), and the
gradients of the first two with respect to y_pred (tf.GradientTape). Run from this directory
with a Python that has tensorflow-cpu:

    python generate_losses.py        # writes data/losses.safetensors
"""
import os

import numpy as np
import tensorflow as tf
import keras
from keras import losses

from safetensors_np import write_safetensors

rng = np.random.default_rng(11)
N, C = 6, 4
data = {
    "regression/y_true": rng.normal(size=(N, C)).astype("float32"),
    "regression/y_pred": rng.normal(size=(N, C)).astype("float32"),
    "positive/y_true": rng.uniform(0.1, 3, size=(N, C)).astype("float32"),
    "positive/y_pred": rng.uniform(0.1, 3, size=(N, C)).astype("float32"),
    "binary/y_true": rng.integers(0, 2, size=(N, C)).astype("float32"),
    "binary/logits": rng.normal(size=(N, C)).astype("float32"),
    "categorical/logits": rng.normal(size=(N, C)).astype("float32"),
    "sparse/labels": np.array([0, 3, 1, 2, 3, 1], dtype="int32"),
    "sample_weight": rng.uniform(0, 2, size=(N,)).astype("float32"),
}
data["binary/probs"] = (1 / (1 + np.exp(-data["binary/logits"]))).astype("float32")
data["categorical/y_true"] = np.eye(C, dtype="float32")[data["sparse/labels"]]
e = np.exp(data["categorical/logits"] - data["categorical/logits"].max(-1, keepdims=True))
data["categorical/probs"] = (e / e.sum(-1, keepdims=True)).astype("float32")
data["distribution/y_true"] = data["categorical/probs"][::-1].copy()

# name: (constructor, y_true key, y_pred key)
cases = {
    "mse": (lambda **k: losses.MeanSquaredError(**k), "regression/y_true", "regression/y_pred"),
    "mae": (lambda **k: losses.MeanAbsoluteError(**k), "regression/y_true", "regression/y_pred"),
    "mape": (lambda **k: losses.MeanAbsolutePercentageError(**k), "regression/y_true", "regression/y_pred"),
    "msle": (lambda **k: losses.MeanSquaredLogarithmicError(**k), "positive/y_true", "positive/y_pred"),
    "huber": (lambda **k: losses.Huber(delta=0.7, **k), "regression/y_true", "regression/y_pred"),
    "log_cosh": (lambda **k: losses.LogCosh(**k), "regression/y_true", "regression/y_pred"),
    "kld": (lambda **k: losses.KLDivergence(**k), "distribution/y_true", "categorical/probs"),
    "poisson": (lambda **k: losses.Poisson(**k), "positive/y_true", "positive/y_pred"),
    "hinge": (lambda **k: losses.Hinge(**k), "binary/y_true", "binary/logits"),
    "squared_hinge": (lambda **k: losses.SquaredHinge(**k), "binary/y_true", "binary/logits"),
    "categorical_hinge": (lambda **k: losses.CategoricalHinge(**k), "categorical/y_true", "categorical/logits"),
    "cosine_similarity": (lambda **k: losses.CosineSimilarity(**k), "regression/y_true", "regression/y_pred"),
    "bce": (lambda **k: losses.BinaryCrossentropy(**k), "binary/y_true", "binary/probs"),
    "bce_logits_smoothing": (lambda **k: losses.BinaryCrossentropy(from_logits=True, label_smoothing=0.2, **k), "binary/y_true", "binary/logits"),
    "cce": (lambda **k: losses.CategoricalCrossentropy(**k), "categorical/y_true", "categorical/probs"),
    "cce_logits_smoothing": (lambda **k: losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1, **k), "categorical/y_true", "categorical/logits"),
    "bfce": (lambda **k: losses.BinaryFocalCrossentropy(**k), "binary/y_true", "binary/probs"),
    "bfce_logits_balanced": (lambda **k: losses.BinaryFocalCrossentropy(apply_class_balancing=True, alpha=0.3, gamma=1.5, from_logits=True,
                                                                          label_smoothing=0.1, **k), "binary/y_true", "binary/logits"),
    "cfce": (lambda **k: losses.CategoricalFocalCrossentropy(**k), "categorical/y_true", "categorical/probs"),
    "cfce_logits_smoothing": (lambda **k: losses.CategoricalFocalCrossentropy(alpha=0.5, gamma=3.0, from_logits=True, label_smoothing=0.1, **k),
                              "categorical/y_true", "categorical/logits"),
    "scce": (lambda **k: losses.SparseCategoricalCrossentropy(**k), "sparse/labels", "categorical/probs"),
    "scce_logits": (lambda **k: losses.SparseCategoricalCrossentropy(from_logits=True, **k), "sparse/labels", "categorical/logits"),
    "scce_logits_ignore": (lambda **k: losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=3, **k), "sparse/labels", "categorical/logits"),
    "scce_ignore": (lambda **k: losses.SparseCategoricalCrossentropy(ignore_class=3, **k), "sparse/labels", "categorical/probs"),
}

out = dict(data)
for name, (make, yk, pk) in cases.items():
    y_true = tf.constant(data[yk])
    y_pred = tf.Variable(data[pk])
    sw = tf.constant(data["sample_weight"])
    with tf.GradientTape(persistent=True) as tape:
        value = make()(y_true, y_pred)
        weighted = make()(y_true, y_pred, sample_weight=sw)
    out[f"{name}/value"] = np.array(value.numpy(), dtype="float32")
    out[f"{name}/weighted"] = np.array(weighted.numpy(), dtype="float32")
    out[f"{name}/gradient"] = tape.gradient(value, y_pred).numpy().astype("float32")
    out[f"{name}/weighted_gradient"] = tape.gradient(weighted, y_pred).numpy().astype("float32")
    out[f"{name}/sum"] = np.array(make(reduction="sum")(y_true, y_pred).numpy(), dtype="float32")
    out[f"{name}/none"] = make(reduction=None)(y_true, y_pred).numpy().astype("float32")

here = os.path.dirname(os.path.abspath(__file__))
write_safetensors(os.path.join(here, "data", "losses.safetensors"), out, {"keras": keras.__version__})
print(f"{len(cases)} loss cases")
