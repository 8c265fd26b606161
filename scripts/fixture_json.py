"""Typed tensors in `.ref.json` fixtures (numpy only, so both virtualenvs can import it).

Used by gen_quantized.py, gen_tflite.py, check_fixtures.py and tflm_compare.py. The f32 fixtures
of gen_models.py & co. predate it: their tensors have no "dtype" field and are float32.

A typed tensor entry is

    {"name": str, "shape": [int, ...], "dtype": "float32" | "int8" | "uint8" | "int16" | "int32",
     "data": [flat row-major values]}

plus optional fields (e.g. "quant": {"scale", "zero_point", "dtype"}). Integer data are JSON
integers; float32 data are the exact float32 values written as the shortest float64 repr (parse as
f64, cast to f32: the same bits). Files are written with sorted keys, no spaces, one newline.
"""

import hashlib
import json

import numpy as np

DTYPES = {
    "float32": np.float32,
    "int8": np.int8,
    "uint8": np.uint8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "bool": np.bool_,
}


def dtype_name(dt):
    name = np.dtype(dt).name
    if name not in DTYPES:
        raise ValueError(f"unsupported fixture dtype {name}")
    return name


def values(a):
    """A numpy array as the JSON list of its flat values (exact for float32 and integers)."""
    a = np.asarray(a)
    name = dtype_name(a.dtype)
    flat = a.reshape(-1)
    if name == "float32":
        if not np.all(np.isfinite(flat)):
            raise ValueError("non-finite value in fixture")
        return [float(v) for v in flat]
    if name == "bool":
        return [bool(v) for v in flat]
    return [int(v) for v in flat]


def tensor(name, a, **extra):
    """A typed tensor entry (see the module doc); `extra` fields are added as they are."""
    a = np.asarray(a)
    entry = {"name": name, "shape": [int(d) for d in a.shape], "dtype": dtype_name(a.dtype),
             "data": values(a)}
    entry.update(extra)
    return entry


def array(entry):
    """The numpy array of a tensor entry; entries without "dtype" are float32 (the f32 fixtures).
    Checks that the values are exactly representable in the dtype and that the count matches."""
    dt = entry.get("dtype", "float32")
    if dt not in DTYPES:
        raise ValueError(f"{entry.get('name')}: unknown dtype {dt!r}")
    raw = entry["data"]
    n = int(np.prod(entry["shape"])) if entry["shape"] else 1
    if len(raw) != n:
        raise ValueError(f"{entry.get('name')}: {len(raw)} values for shape {entry['shape']}")
    if dt == "float32":
        a = np.asarray(raw, dtype=np.float64)
        f = a.astype(np.float32)
        if not np.array_equal(f.astype(np.float64), a):
            raise ValueError(f"{entry.get('name')}: stored values are not exact float32")
        return f.reshape(entry["shape"])
    if dt == "bool":
        return np.asarray(raw, dtype=np.bool_).reshape(entry["shape"])
    if any(not isinstance(v, int) or isinstance(v, bool) for v in raw):
        raise ValueError(f"{entry.get('name')}: {dt} tensor holds non-integer values")
    info = np.iinfo(DTYPES[dt])
    if raw and (min(raw) < info.min or max(raw) > info.max):
        raise ValueError(f"{entry.get('name')}: values outside {dt}")
    return np.asarray(raw, dtype=DTYPES[dt]).reshape(entry["shape"])


def dump(obj, path):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, sort_keys=True, separators=(",", ":"), allow_nan=False)
        f.write("\n")


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def rounded(x, digits=6):
    """A float for a summary field (not a tensor value): rounded so reruns print the same text."""
    return float(f"{float(x):.{digits}g}")
