"""Reference data for ctflow's Keras optimizers and learning-rate schedules, from Keras 3 itself.

Each case builds a Keras 3 optimizer, applies the same ten gradients to two variables (a
"kernel" [3, 4] and a "bias" [5]) and records the variables after every step; each schedule is
evaluated at steps 0..20. Run from this directory with a Python that has tensorflow-cpu:

    python generate_optimizers.py        # writes data/optimizers.safetensors
"""
import os

import numpy as np
import keras
from keras import optimizers
from keras.optimizers import schedules

from safetensors_np import write_safetensors

STEPS = 10
rng = np.random.default_rng(7)
init = {"kernel": rng.normal(size=(3, 4)).astype("float32"), "bias": rng.normal(size=(5,)).astype("float32")}
grads = [{k: rng.normal(size=v.shape).astype("float32") for k, v in init.items()} for _ in range(STEPS)]
grads[4]["bias"][:] = 0  # a step whose gradient is zero for one variable


def wd_excluding_bias(o):
    o.exclude_from_weight_decay(var_names=["bias"])
    return o


cases = {
    "sgd": lambda: optimizers.SGD(),
    "sgd_momentum": lambda: optimizers.SGD(learning_rate=0.05, momentum=0.9),
    "sgd_nesterov": lambda: optimizers.SGD(learning_rate=0.05, momentum=0.9, nesterov=True),
    "sgd_weight_decay": lambda: optimizers.SGD(learning_rate=0.1, weight_decay=0.1),
    "adam": lambda: optimizers.Adam(),
    "adam_amsgrad": lambda: optimizers.Adam(learning_rate=0.01, amsgrad=True),
    "adamw": lambda: wd_excluding_bias(optimizers.AdamW(learning_rate=0.01, weight_decay=0.1)),
    "rmsprop": lambda: optimizers.RMSprop(),
    "rmsprop_centered_momentum": lambda: optimizers.RMSprop(learning_rate=0.01, centered=True, momentum=0.9),
    "adagrad": lambda: optimizers.Adagrad(learning_rate=0.1),
    "adadelta": lambda: optimizers.Adadelta(learning_rate=1.0),
    "adamax": lambda: optimizers.Adamax(learning_rate=0.01),
    "nadam": lambda: optimizers.Nadam(learning_rate=0.01),
    "lion": lambda: optimizers.Lion(learning_rate=0.01),
    "ftrl": lambda: optimizers.Ftrl(learning_rate=0.1, l1_regularization_strength=0.01, l2_regularization_strength=0.01,
                                    l2_shrinkage_regularization_strength=0.01, beta=0.1),
    "adam_clipnorm": lambda: optimizers.Adam(learning_rate=0.01, clipnorm=0.5),
    "sgd_clipvalue": lambda: optimizers.SGD(learning_rate=0.1, clipvalue=0.3),
    "adam_global_clipnorm": lambda: optimizers.Adam(learning_rate=0.01, global_clipnorm=0.5),
    "adam_ema": lambda: optimizers.Adam(learning_rate=0.01, use_ema=True, ema_momentum=0.9, ema_overwrite_frequency=3),
    "adam_accumulation": lambda: optimizers.Adam(learning_rate=0.01, gradient_accumulation_steps=3),
    "sgd_momentum_accumulation": lambda: optimizers.SGD(learning_rate=0.05, momentum=0.9, gradient_accumulation_steps=2),
    "sgd_exponential_decay": lambda: optimizers.SGD(learning_rate=schedules.ExponentialDecay(0.1, 3, 0.5, staircase=True)),
    "adamw_cosine_warmup": lambda: optimizers.AdamW(learning_rate=schedules.CosineDecay(1e-2, 8, alpha=0.1, warmup_target=2e-2, warmup_steps=2)),
}

schedule_cases = {
    "exponential": schedules.ExponentialDecay(0.1, 3, 0.5),
    "exponential_staircase": schedules.ExponentialDecay(0.1, 3, 0.5, staircase=True),
    "piecewise": schedules.PiecewiseConstantDecay([3, 6], [0.1, 0.05, 0.01]),
    "polynomial": schedules.PolynomialDecay(0.1, 5, 0.01, power=2.0),
    "polynomial_cycle": schedules.PolynomialDecay(0.1, 5, 0.01, power=2.0, cycle=True),
    "inverse_time": schedules.InverseTimeDecay(0.1, 2, 0.5),
    "inverse_time_staircase": schedules.InverseTimeDecay(0.1, 2, 0.5, staircase=True),
    "cosine": schedules.CosineDecay(0.1, 8, alpha=0.1),
    "cosine_warmup": schedules.CosineDecay(1e-2, 8, alpha=0.1, warmup_target=2e-2, warmup_steps=4),
    "cosine_restarts": schedules.CosineDecayRestarts(0.1, 3, t_mul=2.0, m_mul=0.5, alpha=0.1),
    "cosine_restarts_constant": schedules.CosineDecayRestarts(0.1, 3, t_mul=1.0, m_mul=1.0),
}

out = {}
for k, v in init.items():
    out[f"init/{k}"] = v
for s, g in enumerate(grads):
    for k, v in g.items():
        out[f"grad/{s}/{k}"] = v
for name, make in cases.items():
    opt = make()
    variables = [keras.Variable(init[k], name=k) for k in init]
    for s in range(STEPS):
        opt.apply_gradients([(grads[s][v.name], v) for v in variables])
        for v in variables:
            out[f"{name}/{s}/{v.name}"] = np.asarray(v.numpy(), dtype="float32")
for name, schedule in schedule_cases.items():
    out[f"schedule/{name}"] = np.array([float(schedule(step)) for step in range(21)], dtype="float32")

here = os.path.dirname(os.path.abspath(__file__))
write_safetensors(os.path.join(here, "data", "optimizers.safetensors"), out, {"keras": keras.__version__, "steps": STEPS})
print(f"{len(cases)} optimizer cases, {len(schedule_cases)} schedules")
