#!/usr/bin/python3
"""Writes the PyTorch reference data the parity tests compare ctflow against.

Run with Debian's python3-torch: /usr/bin/python3 tests/parity/generate.py
Each line of data/reference.txt: name, then 'x' values, then the expected 'y' values, all in
float64 text. Shapes are fixed by the test that reads the line.
"""
import math
import os
import torch

torch.manual_seed(0)
x = torch.linspace(-3.0, 3.0, 61, dtype=torch.float64)
pos = torch.linspace(0.05, 4.0, 40, dtype=torch.float64)
rounding = torch.tensor([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49, -0.51], dtype=torch.float64)

cases = {
    "exp": (x, torch.exp(x)),
    "log": (pos, torch.log(pos)),
    "log1p": (pos, torch.log1p(pos)),
    "expm1": (x, torch.expm1(x)),
    "sqrt": (pos, torch.sqrt(pos)),
    "rsqrt": (pos, torch.rsqrt(pos)),
    "sin": (x, torch.sin(x)),
    "cos": (x, torch.cos(x)),
    "tanh": (x, torch.tanh(x)),
    "sigmoid": (x, torch.sigmoid(x)),
    "relu": (x, torch.relu(x)),
    "relu6": (x * 3, torch.nn.functional.relu6(x * 3)),
    "leaky_relu": (x, torch.nn.functional.leaky_relu(x, 0.2)),
    "elu": (x, torch.nn.functional.elu(x)),
    "selu": (x, torch.selu(x)),
    "gelu": (x, torch.nn.functional.gelu(x)),
    "softplus": (x, torch.nn.functional.softplus(x)),
    "softsign": (x, torch.nn.functional.softsign(x)),
    "swish": (x, torch.nn.functional.silu(x)),
    "abs": (x, torch.abs(x)),
    "sign": (x, torch.sign(x)),
    "square": (x, torch.square(x)),
    "floor": (x * 1.3, torch.floor(x * 1.3)),
    "ceil": (x * 1.3, torch.ceil(x * 1.3)),
    "round": (rounding, torch.round(rounding)),
}

a = torch.randn(6, 5, dtype=torch.float64)
b = torch.randn(5, 7, dtype=torch.float64)
m = torch.randn(4, 6, dtype=torch.float64)
cases["matmul"] = (torch.cat([a.flatten(), b.flatten()]), (a @ b).flatten())
cases["reduce_sum_1"] = (m.flatten(), m.sum(1))
cases["reduce_mean_0"] = (m.flatten(), m.mean(0))
cases["reduce_max_1"] = (m.flatten(), m.amax(1))
cases["reduce_prod_0"] = (m.flatten(), m.prod(0))
cases["cumsum_1"] = (m.flatten(), m.cumsum(1).flatten())
cases["argmax_1"] = (m.flatten(), m.argmax(1).to(torch.float64))
cases["softmax_1"] = (m.flatten(), torch.softmax(m, 1).flatten())

# Gradients from autograd: d sum(f(x)) / dx for every element-wise function (kinks avoided)...
smooth = torch.linspace(-2.95, 2.95, 60, dtype=torch.float64)
for name, f in {
    "exp": torch.exp, "expm1": torch.expm1, "sin": torch.sin, "cos": torch.cos, "tanh": torch.tanh,
    "sigmoid": torch.sigmoid, "relu": torch.relu, "leaky_relu": lambda v: torch.nn.functional.leaky_relu(v, 0.2),
    "elu": torch.nn.functional.elu, "selu": torch.selu, "gelu": torch.nn.functional.gelu,
    "softplus": torch.nn.functional.softplus, "softsign": torch.nn.functional.softsign,
    "swish": torch.nn.functional.silu, "abs": torch.abs, "square": torch.square, "erf": torch.erf,
}.items():
    v = smooth.clone().requires_grad_()
    f(v).sum().backward()
    cases["grad_" + name] = (smooth, v.grad)
for name, f in {"log": torch.log, "log1p": torch.log1p, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt}.items():
    v = pos.clone().requires_grad_()
    f(v).sum().backward()
    cases["grad_" + name] = (pos, v.grad)

# ... and of a two-layer perceptron's softmax cross-entropy: inputs x[8,6], w1[6,5], b1[5],
# w2[5,4], b2[4], labels[8]; gradients of w1, b1, w2, b2 in that order.
xs = torch.randn(8, 6, dtype=torch.float64)
params = [torch.randn(6, 5, dtype=torch.float64), torch.randn(5, dtype=torch.float64),
          torch.randn(5, 4, dtype=torch.float64), torch.randn(4, dtype=torch.float64)]
labels = torch.tensor([0, 3, 1, 2, 2, 0, 1, 3])
for p in params:
    p.requires_grad_()
logits = torch.relu(xs @ params[0] + params[1]) @ params[2] + params[3]
torch.nn.functional.cross_entropy(logits, labels).backward()
cases["grad_mlp"] = (torch.cat([xs.flatten()] + [p.detach().flatten() for p in params] + [labels.to(torch.float64)]),
                     torch.cat([p.grad.flatten() for p in params]))

# tf.nn's softmax family and losses over logits z[5,7] (z[0,0] = 0: the kink of the sigmoid loss),
# class labels k[5], dense targets t[5,7] (rows sum to 1), binary targets zb[5,7] and example
# weights w[5], ww[5,7]: values, then gradients of the weighted sums.
F = torch.nn.functional
z = torch.randn(5, 7, dtype=torch.float64) * 3
z[0, 0] = 0.0
k = torch.tensor([0, 6, 3, 3, 1])
t = torch.softmax(torch.randn(5, 7, dtype=torch.float64), 1)
zb = (torch.rand(5, 7, dtype=torch.float64) > 0.5).to(torch.float64)
w = torch.rand(5, dtype=torch.float64) + 0.5
ww = torch.randn(5, 7, dtype=torch.float64)
cases["nn_inputs"] = (torch.cat([z.flatten(), k.to(torch.float64), t.flatten(), zb.flatten(), w, ww.flatten()]), torch.zeros(1))
cases["log_softmax"] = (z.flatten(), torch.log_softmax(z, 1).flatten())
cases["softmax"] = (z.flatten(), torch.softmax(z, 1).flatten())
cases["sparse_xent"] = (z.flatten(), F.cross_entropy(z, k, reduction="none"))
cases["dense_xent"] = (z.flatten(), -(t * torch.log_softmax(z, 1)).sum(1))
cases["sigmoid_xent"] = (z.flatten(), F.binary_cross_entropy_with_logits(z, zb, reduction="none").flatten())
cases["l2_loss"] = (z.flatten(), (z * z).sum().reshape(1) / 2)
for name, f in {
    "sparse_xent": lambda v, u: (w * F.cross_entropy(v, k, reduction="none")).sum(),
    "dense_xent": lambda v, u: (w * -(u * torch.log_softmax(v, 1)).sum(1)).sum(),
    "sigmoid_xent": lambda v, u: (ww * F.binary_cross_entropy_with_logits(v, zb, reduction="none")).sum(),
    "log_softmax": lambda v, u: (ww * torch.log_softmax(v, 1)).sum(),
    "softmax": lambda v, u: (ww * torch.softmax(v, 1)).sum(),
}.items():
    v = z.clone().requires_grad_()
    u = t.clone().requires_grad_()
    f(v, u).backward()
    cases["grad_" + name] = (z.flatten(), torch.cat([v.grad.flatten()] + ([u.grad.flatten()] if u.grad is not None else [])))

# tf.image.resize's gradients (TensorFlow 2's half-pixel centers are PyTorch's bilinear with
# align_corners=False and its "nearest-exact"): x[i] = sin(0.37 i + 0.1) in NHWC [2, 3, 4, 2],
# resized to [5, 7]; the gradient of sum(y * w), w[i] = (i % 7 - 3) / 4 in NHWC order.
rx = torch.tensor([math.sin(0.37 * i + 0.1) for i in range(48)], dtype=torch.float64).reshape(2, 3, 4, 2)
for name, mode in {"resize_bilinear": "bilinear", "resize_nearest": "nearest-exact"}.items():
    v = rx.permute(0, 3, 1, 2).clone().requires_grad_()
    kw = {"align_corners": False} if mode == "bilinear" else {}
    y = F.interpolate(v, size=(5, 7), mode=mode, **kw).permute(0, 2, 3, 1)
    rw = torch.tensor([((i % 7) - 3) / 4 for i in range(y.numel())], dtype=torch.float64).reshape(y.shape)
    (y * rw).sum().backward()
    cases["grad_" + name] = (rx.flatten(), v.grad.permute(0, 2, 3, 1).flatten())

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "reference.txt")
with open(out + ".tmp", "w") as f:
    for name, (inp, ref) in cases.items():
        f.write(f"{name} x {' '.join(repr(float(v)) for v in inp)} y {' '.join(repr(float(v)) for v in ref)}\n")
os.replace(out + ".tmp", out)
