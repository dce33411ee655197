#!/usr/bin/python3
"""PyTorch peer of bench_elementwise's fused3: out = a + 0.5 * b * sigmoid(c) over 2^24 floats.

Prints the median GB/s (4 streams of 4 bytes per element, as ctflow's benchmark counts) for the
thread counts given on the command line.
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
