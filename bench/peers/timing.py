"""The timing the PyTorch peers share: the median wall time of repeated calls (these machines
are shared and noisy, so medians, not means)."""
import statistics
import time


def median_seconds(f, n, warmup=0):
    """Calls f warmup times untimed, then n times; returns the median seconds of one call."""
    for _ in range(warmup):
        f()
    times = []
    for _ in range(n):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
