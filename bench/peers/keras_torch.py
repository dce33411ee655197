#!/usr/bin/python3
"""PyTorch peer of bench_keras: inference (torch.no_grad) of the Fashion-MNIST CNN and of the MLP
784-128-10 at batch 1 and 256 on 1 and 2 threads, eager (torch_...) and through torch.compile
(Inductor's generated C++, torchc_...; compiled once per shape before the timing). Prints the
median microseconds per call."""
import torch

from timing import median_seconds

torch.manual_seed(0)
cnn = torch.nn.Sequential(
    torch.nn.Conv2d(1, 32, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Conv2d(32, 64, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Flatten(), torch.nn.Linear(1600, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)).eval()
mlp = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)).eval()
compiled = {}
for threads in (1, 2):
    torch.set_num_threads(threads)
    for name, model, shape in (("cnn", cnn, (1, 28, 28)), ("mlp", mlp, (784,))):
        for batch in (1, 256):
            x = torch.rand(batch, *shape)
            with torch.no_grad():
                t = median_seconds(lambda: model(x), 2000 if batch == 1 else 100, warmup=20)
            print(f"torch_{name}/{batch}/{threads} {t * 1e6:.2f} us", flush=True)
            try:
                fast = compiled.setdefault((name, batch), torch.compile(model, dynamic=False))
                with torch.no_grad():
                    fast(x)
                    t = median_seconds(lambda: fast(x), 2000 if batch == 1 else 100, warmup=20)
                print(f"torchc_{name}/{batch}/{threads} {t * 1e6:.2f} us", flush=True)
            except Exception as e:  # (Inductor needs a C++ compiler and Python's headers)
                print(f"torch.compile failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)
