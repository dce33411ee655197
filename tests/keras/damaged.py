#!/usr/bin/env python3
"""Writes Keras's own weight files with one weight made wrong, for the tests that check a failed
load changes nothing (models_test): the last weight of each file is the bad one, so a loader that
wrote weights as it went would have changed all the others first.

Run with h5py from the repository root, after generate.py (it starts from the files it wrote):
    python3 tests/keras/damaged.py
"""
import os
import shutil

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
WEIGHTS = os.path.join(HERE, "data", "weights")
OUT = os.path.join(WEIGHTS, "damaged")


def copy(src, name):
    dst = os.path.join(OUT, name)
    shutil.copy(os.path.join(WEIGHTS, src), dst)
    return dst


def replace(path, dataset, value):
    with h5py.File(path, "a") as f:
        del f[dataset]
        f[dataset] = value


def main():
    os.makedirs(OUT, exist_ok=True)
    # Keras 3's layout: the last Dense's bias stored as strings, then with another shape.
    replace(copy("batch_normalization.weights.h5", "bias_as_strings.weights.h5"), "layers/dense_1/vars/1", np.array([b"0.5", b"1.5"]))
    replace(copy("batch_normalization.weights.h5", "bias_shape.weights.h5"), "layers/dense_1/vars/1", np.zeros(3, dtype="f4"))
    # The legacy whole-model layout: the last bias with another shape, then missing.
    replace(copy("batch_normalization.h5", "legacy_bias_shape.h5"), "model_weights/dense_1/sequential/dense_1/bias", np.zeros(3, dtype="f4"))
    path = copy("batch_normalization.h5", "legacy_bias_missing.h5")
    with h5py.File(path, "a") as f:
        del f["model_weights/dense_1/sequential/dense_1/bias"]


if __name__ == "__main__":
    main()
