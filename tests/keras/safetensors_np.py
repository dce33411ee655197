"""safetensors files of numpy arrays, read and written without the safetensors package (the
generator scripts of the Keras tests run under interpreters that may lack it)."""
import json
import os
import struct

import numpy as np


def write_safetensors(path, tensors, metadata):
    """A safetensors file of numpy arrays (float32 or int32), written without the safetensors package."""
    codes = {np.dtype("float32"): "F32", np.dtype("int32"): "I32", np.dtype("int64"): "I64"}
    header = {"__metadata__": {k: str(v) for k, v in metadata.items()}}
    blobs, at = [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        b = a.tobytes()
        header[name] = {"dtype": codes[a.dtype], "shape": list(a.shape), "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - (len(text) + 8) % 8) % 8)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        body = f.read()
    codes = {"F32": "float32", "I32": "int32", "I64": "int64"}
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        a, b = h["data_offsets"]
        out[name] = np.frombuffer(body[a:b], dtype=codes[h["dtype"]]).reshape(h["shape"])
    return out
