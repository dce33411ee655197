#!/usr/bin/env python3
"""Writes the HDF5 files the tests of ctflow's HDF5 reader (io_test's hdf5 cases) read: the same
objects written by h5py with libhdf5's default format ("earliest": symbol-table groups, version 1
object headers, v1 B-trees of chunks) and with libver="latest" (version 2 object headers with
checksums, compact and dense groups and attributes in fractal heaps and version 2 B-trees, fixed
arrays and version 2 B-trees of chunks). Every value is a formula the test computes again.

Run with h5py and NumPy (pip install h5py), from the repository root:
    python3 tests/unit/io/hdf5_variants.py
"""
import os

import h5py
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "hdf5")


def write(path, libver):
    with h5py.File(path, "w", libver=libver) as f:
        # A group of 20 datasets and 12 attributes: dense storage under "latest".
        g = f.create_group("many")
        for i in range(20):
            g.create_dataset(f"d{i:02d}", data=np.arange(i + 1, dtype="f4") * 0.5)
        for i in range(12):
            g.attrs[f"a{i:02d}"] = f"value {i}"
        f.create_dataset("chunked", data=np.arange(70, dtype="f8").reshape(10, 7), chunks=(3, 4), compression="gzip", shuffle=True,
                         fletcher32=True)
        f.create_dataset("chunked_plain", data=np.arange(45, dtype="i4").reshape(5, 9), chunks=(2, 4))
        f.create_dataset("single_chunk", data=np.arange(12, dtype="f4").reshape(3, 4), chunks=(3, 4), compression="gzip")
        f.create_dataset("paged", data=np.arange(1100, dtype="f4"), chunks=(1,))  # a fixed array of 1100 chunks: paged
        f.create_dataset("partial", shape=(6, 5), dtype="f4", chunks=(4, 2), fillvalue=-1.0)
        f["partial"][0:4, 0:2] = np.arange(8, dtype="f4").reshape(4, 2) + 100
        f.create_dataset("two_unlimited", data=np.arange(12, dtype="f4").reshape(3, 4), maxshape=(None, None), chunks=(2, 2))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        space = h5py.h5s.create_simple((6,))
        h5py.h5d.create(f.id, b"compact", h5py.h5t.STD_I16LE, space, dcpl).write(h5py.h5s.ALL, h5py.h5s.ALL, np.arange(6, dtype="<i2"))
        # Fletcher-32 first in the pipeline (as older h5py put it), then shuffle and deflate.
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((4,))
        dcpl.set_fletcher32()
        dcpl.set_shuffle()
        dcpl.set_deflate(4)
        space = h5py.h5s.create_simple((10,))
        h5py.h5d.create(f.id, b"fletcher_first", h5py.h5t.IEEE_F32LE, space, dcpl).write(h5py.h5s.ALL, h5py.h5s.ALL, np.arange(10, dtype="<f4"))
        # Chunks allocated at creation over a maximum shape larger than the shape: libver="latest"
        # indexes them implicitly, by their place in the grid of the maximum shape.
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((2, 2))
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        space = h5py.h5s.create_simple((3, 4), (6, 8))
        h5py.h5d.create(f.id, b"early", h5py.h5t.IEEE_F32LE, space, dcpl).write(h5py.h5s.ALL, h5py.h5s.ALL, np.arange(12, dtype="<f4").reshape(3, 4))
        # One chunk never written: its fill value.
        f.create_dataset("unallocated", shape=(2, 2), chunks=(2, 2), dtype="f4", fillvalue=3.0)
        f.create_dataset("big_endian", data=np.arange(5, dtype=">f8") / 4)
        f.create_dataset("half", data=np.array([0.5, -2.0, 65504, 2.0 ** -24], dtype="f2"))
        f.create_dataset("uint8", data=np.array([0, 200, 255], dtype="u1"))
        f.create_dataset("int64", data=np.array([-5, 1 << 40], dtype="i8"))
        f.create_dataset("scalar", data=np.float32(3.25))
        f.create_dataset("empty", shape=(0, 3), dtype="f4")
        f.create_dataset("unwritten", shape=(4,), dtype="f4", fillvalue=7.5)
        f.create_dataset("text", data=np.array([b"ab", b"c"], dtype="S2"))
        f.attrs["fixed"] = np.array([b"abc", b"de"], dtype="S5")
        f.attrs["vlen"] = ["x", "yy", ""]
        f.attrs["number"] = 42
        f.attrs["big"] = ["n" * 100] * 800  # 80 KB: past an object header's 64 KB, dense storage
        f["soft"] = h5py.SoftLink("/many/d03")
        f.create_group("deep/a/b/c").create_dataset("leaf", data=np.ones(2, dtype="f4"))
        f["deep/a/relative"] = h5py.SoftLink("b/c/leaf")
        f["external"] = h5py.ExternalLink("other.h5", "/x")
        ordered = f.create_group("ordered", track_order=True)
        for name in ["z", "y", "x"]:
            ordered.create_dataset(name, data=np.array([ord(name)], dtype="i4"))
    if libver == "latest":
        # One unlimited extent: an extensible array of chunks, which the reader declines.
        with h5py.File(path, "a", libver=libver) as f:
            f.create_dataset("one_unlimited", data=np.arange(4, dtype="f4"), maxshape=(None,), chunks=(2,))


def links(path):
    """A root group linked to itself (s0), and soft links each naming the one before eight times
    over (s2 -> "s1/s1/.../s1"): resolving s10 naively walks 8^10 links."""
    with h5py.File(path, "w") as f:
        f["s0"] = f["/"]
        f.create_dataset("leaf", data=np.arange(3, dtype="f4"))
        for i in range(1, 11):
            f[f"s{i}"] = h5py.SoftLink("/".join([f"s{i - 1}"] * 8))


def main():
    os.makedirs(OUT, exist_ok=True)
    for libver in ("earliest", "latest"):
        write(os.path.join(OUT, f"variants_{libver}.h5"), libver)
    links(os.path.join(OUT, "links.h5"))


if __name__ == "__main__":
    main()
