"""Reference data for ctflow's Keras metrics, from Keras 3 itself: each metric updated with three
batches (with sample weights where given), its result after each. Run from this directory with a
Python that has tensorflow-cpu:

    python generate_metrics.py        # writes data/metrics.safetensors
"""
import os

import numpy as np
import keras
from keras import metrics

from safetensors_np import write_safetensors

rng = np.random.default_rng(5)
N, C, B = 6, 4, 3
out = {}
for b in range(B):
    logits = rng.normal(size=(N, C)).astype("float32")
    out[f"{b}/values"] = rng.normal(size=(N,)).astype("float32")
    out[f"{b}/weights"] = rng.uniform(0, 2, size=(N,)).astype("float32")
    out[f"{b}/labels"] = rng.integers(0, C, size=(N,)).astype("int32")
    out[f"{b}/one_hot"] = np.eye(C, dtype="float32")[out[f"{b}/labels"]]
    out[f"{b}/logits"] = logits
    out[f"{b}/binary"] = rng.integers(0, 2, size=(N, C)).astype("float32")
    out[f"{b}/probs"] = rng.uniform(0, 1, size=(N, C)).astype("float32")
    out[f"{b}/y"] = rng.normal(size=(N, C)).astype("float32")
    out[f"{b}/p"] = rng.normal(size=(N, C)).astype("float32")
    out[f"{b}/predicted"] = rng.integers(0, C, size=(N,)).astype("int32")

cases = {
    "mean": (metrics.Mean, lambda b: ([out[f"{b}/values"]], out[f"{b}/weights"])),
    "sum": (metrics.Sum, lambda b: ([out[f"{b}/values"]], out[f"{b}/weights"])),
    "accuracy": (metrics.Accuracy, lambda b: ([out[f"{b}/labels"], out[f"{b}/predicted"]], None)),
    "binary_accuracy": (lambda: metrics.BinaryAccuracy(threshold=0.4), lambda b: ([out[f"{b}/binary"], out[f"{b}/probs"]], out[f"{b}/weights"])),
    "categorical_accuracy": (metrics.CategoricalAccuracy, lambda b: ([out[f"{b}/one_hot"], out[f"{b}/logits"]], out[f"{b}/weights"])),
    "sparse_categorical_accuracy": (metrics.SparseCategoricalAccuracy, lambda b: ([out[f"{b}/labels"], out[f"{b}/logits"]], out[f"{b}/weights"])),
    "mse": (metrics.MeanSquaredError, lambda b: ([out[f"{b}/y"], out[f"{b}/p"]], out[f"{b}/weights"])),
    "rmse": (metrics.RootMeanSquaredError, lambda b: ([out[f"{b}/y"], out[f"{b}/p"]], out[f"{b}/weights"])),
    "mae": (metrics.MeanAbsoluteError, lambda b: ([out[f"{b}/y"], out[f"{b}/p"]], out[f"{b}/weights"])),
    "wrapped_huber": (lambda: metrics.MeanMetricWrapper(fn=keras.losses.huber), lambda b: ([out[f"{b}/y"], out[f"{b}/p"]], out[f"{b}/weights"])),
    "top_k": (lambda: metrics.TopKCategoricalAccuracy(k=2), lambda b: ([out[f"{b}/one_hot"], out[f"{b}/logits"]], out[f"{b}/weights"])),
    "sparse_top_k": (lambda: metrics.SparseTopKCategoricalAccuracy(k=2), lambda b: ([out[f"{b}/labels"], out[f"{b}/logits"]], out[f"{b}/weights"])),
    "precision": (lambda: metrics.Precision(thresholds=0.4), lambda b: ([out[f"{b}/binary"], out[f"{b}/probs"]], out[f"{b}/weights"])),
    "precision_class": (lambda: metrics.Precision(class_id=1), lambda b: ([out[f"{b}/binary"], out[f"{b}/probs"]], None)),
    "recall": (lambda: metrics.Recall(thresholds=0.4), lambda b: ([out[f"{b}/binary"], out[f"{b}/probs"]], out[f"{b}/weights"])),
    "auc_roc": (lambda: metrics.AUC(num_thresholds=50), lambda b: ([out[f"{b}/binary"], out[f"{b}/probs"]], out[f"{b}/weights"])),
    "auc_pr": (lambda: metrics.AUC(curve="PR"), lambda b: ([out[f"{b}/binary"], out[f"{b}/probs"]], out[f"{b}/weights"])),
    "auc_pr_minoring": (lambda: metrics.AUC(num_thresholds=20, curve="PR", summation_method="minoring"), lambda b: ([out[f"{b}/binary"], out[f"{b}/probs"]], None)),
    "auc_logits": (lambda: metrics.AUC(from_logits=True), lambda b: ([out[f"{b}/binary"], out[f"{b}/y"]], None)),
    "mean_iou": (lambda: metrics.MeanIoU(num_classes=4), lambda b: ([out[f"{b}/labels"], out[f"{b}/predicted"]], out[f"{b}/weights"])),
    "mean_iou_ignore": (lambda: metrics.MeanIoU(num_classes=4, ignore_class=0, sparse_y_pred=False), lambda b: ([out[f"{b}/labels"], out[f"{b}/logits"]], None)),
    "f1_per_class": (metrics.F1Score, lambda b: ([out[f"{b}/one_hot"], out[f"{b}/logits"]], out[f"{b}/weights"])),
    "f1_micro": (lambda: metrics.F1Score(average="micro", threshold=0.5), lambda b: ([out[f"{b}/binary"], out[f"{b}/probs"]], out[f"{b}/weights"])),
    "f1_macro": (lambda: metrics.F1Score(average="macro"), lambda b: ([out[f"{b}/one_hot"], out[f"{b}/probs"]], None)),
    "f1_weighted": (lambda: metrics.F1Score(average="weighted", threshold=0.4), lambda b: ([out[f"{b}/binary"], out[f"{b}/probs"]], out[f"{b}/weights"])),
    "fbeta_macro": (lambda: metrics.FBetaScore(average="macro", beta=2.0, threshold=0.5), lambda b: ([out[f"{b}/binary"], out[f"{b}/probs"]], None)),
}
results = {}
for name, (make, args) in cases.items():
    m = make()
    for b in range(B):
        a, w = args(b)
        if w is None:
            m.update_state(*a)
        else:
            m.update_state(*a, sample_weight=w)
        results[f"{name}/{b}"] = np.array(m.result(), dtype="float32")  # F1Score(average=None): one per class
    m.reset_state()
    results[f"{name}/reset"] = np.array(m.result(), dtype="float32")
out.update(results)

here = os.path.dirname(os.path.abspath(__file__))
write_safetensors(os.path.join(here, "data", "metrics.safetensors"), out, {"keras": keras.__version__})
print(f"{len(cases)} metric cases")
