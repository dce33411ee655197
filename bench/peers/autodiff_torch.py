#!/usr/bin/python3
"""PyTorch peer of bench_autodiff: loss and all gradients of an MLP 784-256-256-10 (relu,
softmax cross-entropy) at batch 64 with autograd.

Prints the median microseconds per step for the thread counts given on the command line.
"""
import sys

import torch

from timing import median_seconds

B, I, H, O = 64, 784, 256, 10
torch.manual_seed(0)
x = torch.rand(B, I)
y = torch.arange(B) % O
params = [torch.randn(I, H) * 0.05, torch.zeros(H), torch.randn(H, H) * 0.06, torch.zeros(H),
          torch.randn(H, O) * 0.06, torch.zeros(O)]
for p in params:
    p.requires_grad_()
w1, b1, w2, b2, w3, b3 = params


def step():
    for p in params:
        p.grad = None
    logits = torch.relu(torch.relu(x @ w1 + b1) @ w2 + b2) @ w3 + b3
    loss = torch.nn.functional.cross_entropy(logits, y)
    loss.backward()
    return loss.item()


for threads in (int(t) for t in sys.argv[1:] or ["1", "2"]):
    torch.set_num_threads(threads)
    print(f"torch_mlp/{threads} {median_seconds(step, 200, warmup=20) * 1e6:.1f} us")
