"""Reference .keras archives for ctflow's model.save and keras::load_model, from Keras 3 itself.

Each case builds the same small network as tests/keras/model_file_test.cpp (Dense 8 relu with an
L2 kernel regularizer, Dense 3, on 12 features), compiles it with an
optimizer whose variables Keras orders in its own way (RMSprop centered with momentum; Adam with
amsgrad and a learning-rate schedule), trains it three steps and saves it as a .keras archive;
then it trains one step more on a fixed batch and records that batch and the weights after it,
which ctflow must reach from the archive. Run from this directory with a Python that has
tensorflow-cpu:

    python generate_archives.py      # writes data/archives/<case>.keras and <case>.safetensors

check_archive.py (run by hand) loads an archive that ctflow wrote with Keras and continues
training it.
"""
import os

import numpy as np
import keras
from keras import layers, optimizers

from safetensors_np import write_safetensors

here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "data", "archives")
os.makedirs(out, exist_ok=True)

cases = {
    "rmsprop": lambda: optimizers.RMSprop(learning_rate=0.01, momentum=0.5, centered=True),
    "adam_schedule": lambda: optimizers.Adam(
        learning_rate=optimizers.schedules.ExponentialDecay(0.01, decay_steps=2, decay_rate=0.5), amsgrad=True),
}

for name, make in cases.items():
    keras.utils.set_random_seed(3)
    model = keras.Sequential([
        keras.Input((12,)),
        layers.Dense(8, activation="relu", kernel_regularizer=keras.regularizers.L2(1e-3)),
        layers.Dense(3),
    ])
    model.compile(make(), keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    rng = np.random.default_rng(11)
    for _ in range(3):
        model.train_on_batch(rng.uniform(size=(8, 12)).astype("float32"), rng.integers(0, 3, 8))
    model.save(os.path.join(out, name + ".keras"))
    x = rng.uniform(size=(8, 12)).astype("float32")
    y = rng.integers(0, 3, 8).astype("int32")
    logs = model.train_on_batch(x, y, return_dict=True)
    tensors = {"x": x, "y": y, "loss": np.array([logs["loss"]], "float32")}
    for i, w in enumerate(model.weights):
        tensors["w%d" % i] = np.asarray(w.numpy())
    write_safetensors(os.path.join(out, name + ".safetensors"), tensors, {"keras": keras.__version__, "weights": len(model.weights)})
    print(name, "loss after the step", logs["loss"])
