#!/usr/bin/python3
"""PyTorch peer of bench_io's checkpoint benchmarks: torch.save of 16 float32 tensors of 64 MiB
(1 GiB) to a file under /tmp followed by fsync of the file and its directory, and torch.load of
it, alone and followed by load into existing tensors (what restoring a model does). Prints the
median seconds and GB/s of each (3 saves, 5 loads), in the format of bench_io's median rows."""
import os

import torch

from timing import median_seconds

torch.set_num_threads(2)
DIR = "/tmp/ctflow_bench_ckpt"
PATH = DIR + "/torch.pt"
COUNT = 16
BYTES = COUNT * 4096 * 4096 * 4
os.makedirs(DIR, exist_ok=True)
weights = {"w/%d" % i: torch.full((4096, 4096), i + 0.5) for i in range(COUNT)}


def save():
    with open(PATH + ".tmp", "wb") as f:
        torch.save(weights, f)
        f.flush()
        os.fsync(f.fileno())
    os.rename(PATH + ".tmp", PATH)
    d = os.open(DIR, os.O_RDONLY)
    os.fsync(d)
    os.close(d)


def load():
    return torch.load(PATH)


def load_into():
    loaded = torch.load(PATH)
    with torch.no_grad():
        for k, v in weights.items():
            v.copy_(loaded[k])


for name, f, n in [("torch_save", save, 3), ("torch_load", load, 5), ("torch_load_into", load_into, 5)]:
    t = median_seconds(f, n)
    print("%s_median %.1f ms GB/s=%.3f/s" % (name, t * 1e3, BYTES / t / 1e9))
