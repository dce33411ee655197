#!/usr/bin/python3
"""PyTorch peer of bench_data's fashion_mnist_pipeline: one epoch of a DataLoader over the
Fashion-MNIST training set (uint8 images and labels from Debian's dataset-fashion-mnist), each
example scaled to [0,1] float, shuffled, batch 64, with a background loader process (prefetch)
and without one; the faster is reported.

Prints the median examples per second for the thread counts given on the command line.
"""
import gzip
import statistics
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

DIR = "/usr/share/datasets/fashion-mnist"


def idx(name, offset):
    with gzip.open("%s/%s.gz" % (DIR, name), "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


x_train = torch.from_numpy(idx("train-images-idx3-ubyte", 16).reshape(-1, 28, 28).copy())
y_train = torch.from_numpy(idx("train-labels-idx1-ubyte", 8).copy())


class Scaled(Dataset):
    def __len__(self):
        return len(y_train)

    def __getitem__(self, i):
        return x_train[i].float() / 255.0, y_train[i].int()


def epoch(loader):
    n, check = 0, 0.0
    start = time.perf_counter()
    for x, y in loader:
        n += x.shape[0]
        check += float(x[0, 14, 14]) + float(y[0])
    return n / (time.perf_counter() - start)


def main():
    for threads in [int(t) for t in sys.argv[1:]]:
        torch.set_num_threads(threads)
        best = 0.0
        for workers in (0, 1):
            kw = {"num_workers": workers}
            if workers:
                kw["prefetch_factor"] = 2
            loader = DataLoader(Scaled(), batch_size=64, shuffle=True, **kw)
            best = max(best, statistics.median(epoch(loader) for _ in range(3)))
        print("torch_pipeline/%d %.0f examples/s" % (threads, best))


if __name__ == "__main__":
    main()
