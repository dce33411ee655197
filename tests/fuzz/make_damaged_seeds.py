#!/usr/bin/env python3
"""Writes the seed corpora of the fuzzers that read other programs' files (tests/fuzz/corpus/):
Keras's weight files, JPEG, gzip and checkpoint files, each intact and damaged in the ways that
once crashed, hung or exhausted a reader (make_seeds.cpp writes the seeds of ctflow's own formats).

    /work/venv/bin/python tests/fuzz/make_damaged_seeds.py      (TensorFlow from PyPI, for the JPEGs)

Damage kinds kept as seeds: in a legacy .h5, each reference to the global heap (the variable-length
strings of layer_names and weight_names) pointed at 0xfffffffffffffff0, and a byte flipped inside
one; a .keras archive whose deflated member's directory claims 2 GiB, and one with a bad CRC-32;
a progressive JPEG and a baseline one whose headers claim 32768 x 32768, a truncated one,
and an arithmetic-coded one of 210 megapixels in 96 bytes.
"""
import gzip
import io
import os
import shutil
import struct
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
WEIGHTS = os.path.join(HERE, "..", "keras", "data", "weights")


def put(kind, name, data):
    os.makedirs(os.path.join(CORPUS, kind), exist_ok=True)
    with open(os.path.join(CORPUS, kind, name), "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def keras_files():
    put("weights_h5", "seed", read(os.path.join(WEIGHTS, "batch_normalization.weights.h5")))
    put("weights_h5", "bias_as_strings", read(os.path.join(WEIGHTS, "damaged", "bias_as_strings.weights.h5")))
    legacy = read(os.path.join(WEIGHTS, "batch_normalization.h5"))
    put("legacy_h5", "seed", legacy)
    put("legacy_h5", "seed_weights", read(os.path.join(WEIGHTS, "batch_normalization_weights.h5")))
    # References to the global heap: 8-byte addresses of a GCOL collection in the file.
    wild = bytearray(legacy)
    at = legacy.find(b"GCOL")
    ref = struct.pack("<Q", at)
    i = legacy.find(ref)
    count = 0
    while i >= 0:
        wild[i:i + 8] = struct.pack("<Q", 0xfffffffffffffff0)
        count += 1
        i = legacy.find(ref, i + 8)
    assert count > 0
    put("legacy_h5", "heap_address_wild", bytes(wild))
    flipped = bytearray(legacy)
    first = legacy.find(ref)
    flipped[first - 4] ^= 0x40  # the length of the string the reference holds
    put("legacy_h5", "heap_length_flipped", bytes(flipped))
    archive = read(os.path.join(WEIGHTS, "batch_normalization.keras"))
    put("keras_archive", "seed", archive)
    # The same members deflated, then its weights member's size in the directory made 2 GiB.
    members = zipfile.ZipFile(io.BytesIO(archive))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for info in members.infolist():
            z.writestr(info.filename, members.read(info.filename))
    deflated = out.getvalue()
    put("keras_archive", "deflated", deflated)
    bomb = bytearray(deflated)
    entry = deflated.rfind(b"PK\x01\x02", 0, deflated.rfind(b"model.weights.h5"))
    bomb[entry + 24:entry + 28] = struct.pack("<I", 0x7fffffff)
    put("keras_archive", "size_2gib", bytes(bomb))
    crc = bytearray(archive)
    member = archive.rfind(b"model.weights.h5", 0, archive.find(b"PK\x01\x02"))
    for k in range(member + 4096, member + 4096 + 64):
        crc[k] ^= 0xFF
    put("keras_archive", "bad_crc", bytes(crc))


def latest_format_file():
    """An HDF5 file of libver="latest" structures, small: a dense group and dense attributes
    (fractal heaps, version 2 B-trees), chunks in a fixed array and a version 2 B-tree."""
    import h5py
    import numpy as np
    out = io.BytesIO()
    with h5py.File(out, "w", libver="latest") as f:
        g = f.create_group("g")
        for i in range(10):
            g.create_dataset(f"d{i}", data=np.arange(i + 1, dtype="f4"))
            g.attrs[f"a{i}"] = f"v{i}"
        f.create_dataset("fixed", data=np.arange(12, dtype="f4").reshape(3, 4), chunks=(2, 2), compression="gzip", shuffle=True, fletcher32=True)
        f.create_dataset("tree", data=np.arange(6, dtype="i2").reshape(2, 3), maxshape=(None, None), chunks=(1, 2))
        f["soft"] = h5py.SoftLink("/g/d3")
    put("weights_h5", "latest_format", out.getvalue())


def jpeg_files():
    import numpy as np
    import tensorflow as tf
    gray = np.add.outer(np.arange(48) * 5, np.arange(40) * 3).astype("uint8")[..., None]
    baseline = tf.io.encode_jpeg(gray).numpy()
    progressive = tf.io.encode_jpeg(gray, progressive=True).numpy()
    color = tf.io.encode_jpeg(np.repeat(gray, 3, axis=2)).numpy()
    put("jpeg", "seed", baseline)
    put("jpeg", "progressive", progressive)
    put("jpeg", "color", color)

    def claiming(data, h, w):
        data = bytearray(data)
        for i in range(2, len(data) - 9):
            if data[i] == 0xFF and data[i + 1] in (0xC0, 0xC2):
                data[i + 5:i + 9] = struct.pack(">HH", h, w)
                return bytes(data)
        raise ValueError("no frame header")

    put("jpeg", "progressive_32768", claiming(progressive, 32768, 32768))
    put("jpeg", "baseline_32768", claiming(baseline, 32768, 32768))
    put("jpeg", "truncated", baseline[: len(baseline) - 40])

    # An arithmetic-coded frame (SOF9) of 4657 x 45096 whose scan holds no data: legitimate (the
    # coder drops trailing zero bytes, so a plain image codes to next to nothing), 210 MB decoded.
    def segment(marker, body):
        return bytes([0xFF, marker]) + struct.pack(">H", len(body) + 2) + body
    put("jpeg", "arithmetic_blank", b"\xff\xd8" + segment(0xDB, bytes([0]) + bytes([1]) * 64) + segment(0xC9, struct.pack(">BHHB", 8, 4657, 45096, 1) + bytes([1, 0x11, 0]))
        + segment(0xDA, bytes([1, 1, 0, 0, 63, 0])) + b"\xff\xd9")


def gzip_files():
    put("gzip", "seed", gzip.compress(b"0123456789" * 50))
    put("gzip", "two_members", gzip.compress(b"first\n") + gzip.compress(b"second\n"))


def checkpoint_files():
    def safetensors(tensors):
        import json
        header, data = {}, b""
        for name, (dtype, shape, raw) in tensors.items():
            header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
            data += raw
        text = json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        return struct.pack("<Q", len(text)) + text + data
    put("checkpoint_restore", "seed", safetensors({"w": ("F32", [2, 3], struct.pack("<6f", *range(6))), "b": ("F32", [5], struct.pack("<5f", *range(5))),
                                                   "step": ("I64", [], struct.pack("<q", 3))}))


def main():
    keras_files()
    latest_format_file()
    jpeg_files()
    gzip_files()
    checkpoint_files()


if __name__ == "__main__":
    main()
