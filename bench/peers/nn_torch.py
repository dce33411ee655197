#!/usr/bin/python3
"""PyTorch peer of bench_nn's sparse_xent: cross_entropy (mean) forward and backward over logits
[1024, 1000] float32, counted as 3 x 4 MB as ctflow's benchmark counts. Prints the median GB/s
for the thread counts given on the command line."""
import sys

import torch

from timing import median_seconds

torch.manual_seed(0)
logits = (torch.randn(1024, 1000) * 2).requires_grad_()
labels = torch.arange(1024) * 37 % 1000
for threads in (int(t) for t in sys.argv[1:] or ["1", "2"]):
    torch.set_num_threads(threads)

    def step():
        logits.grad = None
        torch.nn.functional.cross_entropy(logits, labels).backward()

    print(f"torch_sparse_xent/{threads} {3 * 1024 * 1000 * 4 / median_seconds(step, 200) / 1e9:.2f} GB/s")

# The convolutions of bench_nn's conv benchmarks (2 threads): forward, backward to the input,
# backward to the filter, in GFLOP/s (2 * output * 9 * c per pass).
torch.set_num_threads(2)
for name, n, h, w, c, o, pad in [("mnist1", 64, 28, 28, 1, 32, 0), ("mnist2", 64, 13, 13, 32, 64, 0), ("resnet", 32, 56, 56, 64, 64, 1)]:
    x = torch.randn(n, c, h, w)
    f = torch.randn(o, c, 3, 3) * 0.1
    y = torch.nn.functional.conv2d(x, f, padding=pad)
    dy = torch.randn_like(y)
    flops = 2.0 * y.numel() * 9 * c
    passes = [
        lambda: torch.nn.functional.conv2d(x, f, padding=pad),
        lambda: torch.nn.grad.conv2d_input(x.shape, f, dy, padding=pad),
        lambda: torch.nn.grad.conv2d_weight(x, f.shape, dy, padding=pad),
    ]
    for p, run in enumerate(passes):
        print(f"torch_conv/{name}/{p} {flops / median_seconds(run, 20) / 1e9:.1f} GFLOP/s")

# bench_nn's max_pool: max_pool2d forward and backward, counted as 3 |x| + 3 |y| bytes as ctflow's
# benchmark counts (PyTorch moves more: its int64 indices).
for name, n, h, w, c, k, st, pad in [("mnist", 64, 26, 26, 32, 2, 2, 0), ("resnet", 32, 112, 112, 64, 3, 2, 1)]:
    x = torch.randn(n, h, w, c).permute(0, 3, 1, 2).requires_grad_()  # NHWC memory, as ctflow's
    y = torch.nn.functional.max_pool2d(x, k, st, pad)
    dy = torch.randn_like(y)
    nbytes = 3.0 * (x.numel() + y.numel()) * 4

    def step():
        x.grad = None
        torch.nn.functional.max_pool2d(x, k, st, pad).backward(dy)

    for threads in (1, 2):
        torch.set_num_threads(threads)
        print(f"torch_max_pool/{name}/{threads} {nbytes / median_seconds(step, 20) / 1e9:.2f} GB/s")
