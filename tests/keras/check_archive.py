"""Loads .keras archives that ctflow's model.save wrote with Keras 3 and continues training them.

Run by hand with a Python that has tensorflow-cpu, on archives the tests leave in their scratch
directory (tests/keras/model_file_test.cpp: trained.keras, functional.keras; kept with
CTFLOW_KEEP_TEST_FILES=1 in the environment) or that the demo writes (fashion_mnist.keras):

    python check_archive.py /tmp/ctflow_keras_test_XXXXXX/trained.keras ...

For each archive it checks that Keras rebuilds the model and its optimizer from config.json, that
every weight and optimizer variable Keras loaded equals the file's, and that one more training
step runs; it prints the model's summary and the step's logs.
"""
import io
import sys
import zipfile

import h5py
import numpy as np
import keras

for path in sys.argv[1:]:
    model = keras.models.load_model(path)
    model.summary()
    weights = h5py.File(io.BytesIO(zipfile.ZipFile(path).read("model.weights.h5")), "r")
    stored = weights["optimizer/vars"]
    variables = model.optimizer.variables
    assert len(variables) == len(stored), (len(variables), len(stored))
    for i, v in enumerate(variables):
        assert np.array_equal(np.asarray(v.numpy()), stored[str(i)][()]), (path, i, v.path)
    print(path, ":", type(model.optimizer).__name__, "iterations", int(model.optimizer.iterations.numpy()),
          "with", len(variables), "variables as stored")
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(4,) + tuple(model.input_shape[1:])).astype("float32")
    y = model.predict(x, verbose=0)
    loss = model.compiled_loss if hasattr(model, "compiled_loss") else None
    target = np.zeros(y.shape[:-1], "int32") if "Sparse" in str(model.loss) or "sparse" in str(model.loss) else np.zeros_like(y)
    print("one more step:", model.train_on_batch(x, target, return_dict=True))
