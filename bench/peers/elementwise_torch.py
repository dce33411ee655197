#!/usr/bin/python3
"""PyTorch peer of bench_elementwise's fused3: out = a + 0.5 * b * sigmoid(c) over 2^24 floats,
and of its softmax_rows: softmax over rows of 10 and of 64 classes, 2^20 floats on one thread.

Prints the median GB/s (4 streams of 4 bytes per element for fused3, 2 for softmax, as ctflow's
benchmark counts) for the thread counts given on the command line.
"""
import sys

import torch

from timing import median_seconds

n = 1 << 24
a, b, c = (torch.rand(n) * 2 - 1 for _ in range(3))
out = torch.empty(n)
for threads in (int(t) for t in sys.argv[1:] or ["1", "2"]):
    torch.set_num_threads(threads)
    seconds = median_seconds(lambda: torch.add(a, 0.5 * b * torch.sigmoid(c), out=out), 15)
    print(f"torch_fused3/{threads} {4 * n * 4 / seconds / 1e9:.2f} GB/s")

torch.set_num_threads(1)
for classes in (10, 64):
    x = torch.rand((1 << 20) // classes, classes) * 8 - 4
    y = torch.empty_like(x)
    seconds = median_seconds(lambda: torch.softmax(x, dim=1, out=y), 31, warmup=3)
    print(f"torch_softmax/{classes} {2 * x.numel() * 4 / seconds / 1e9:.2f} GB/s")
