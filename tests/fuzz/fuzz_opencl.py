"""Fuzz category `opencl`: random elementwise, division and gather kernels built for OpenCL
(PoCL here) and for the CPU, run on random data (zeros, extremes, out-of-range indices); the CPU
build is the oracle: both give the same result (floats within 1e-5, integers exactly), or both
raise the same MiniTVMError class. Without an OpenCL device every case is a Skip naming why.
"""

from __future__ import annotations

import random

import numpy as np
from fuzz_harness import Skip, Wrong

SEED = 20261127
_DTYPES = ("int32", "int64", "int8", "uint8", "float32")
_BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "min": lambda a, b: _tir().min(a, b),
    "max": lambda a, b: _tir().max(a, b),
    "floordiv": lambda a, b: a // b,
    "floormod": lambda a, b: a % b,
    "truncdiv": lambda a, b: _tir().truncdiv(a, b),
    "truncmod": lambda a, b: _tir().truncmod(a, b),
    "div": lambda a, b: a / b,
}
_KINDS = ("binary", "binary", "gather", "scatter_add")


def _tir():
    from minitvm import tir

    return tir


def _builds(kind: str, op: str, dtype: str, factor: int) -> tuple:
    """(OpenCL module, CPU module) of one kernel, cached per worker."""
    key = (kind, op, dtype, factor)
    if key in _builds.cache:
        return _builds.cache[key]
    import minitvm as tvm
    from minitvm import te

    n = te.var("n")
    a = te.placeholder((n,), dtype, name="a")
    if kind == "binary":
        b = te.placeholder((n,), dtype, name="b")
        out = te.compute((n,), lambda i: _BINARY[op](a[i], b[i]), name="c")
    else:  # an index array into a: c[i] = a[idx[i]] (+ a[i] for scatter_add's read pattern)
        b = te.placeholder((n,), "int32", name="idx")
        if kind == "gather":
            out = te.compute((n,), lambda i: a[b[i]], name="c")
        else:
            out = te.compute((n,), lambda i: a[b[i]] + a[i], name="c")
    s = te.create_schedule(out.op)
    bx, tx = s[out].split(out.op.axis[0], factor=factor)
    s[out].bind(bx, te.thread_axis("blockIdx.x"))
    s[out].bind(tx, te.thread_axis("threadIdx.x"))
    gpu = tvm.build(s, [a, b, out], "opencl", name=f"{kind}_{op}")
    cpu = tvm.build(te.create_schedule(out.op), [a, b, out], "llvm", name=f"{kind}_{op}")
    _builds.cache[key] = (gpu, cpu, out.dtype)
    return _builds.cache[key]


_builds.cache = {}


def _data(dtype: str, n: int, rng: np.random.Generator, zeros: bool) -> np.ndarray:
    if dtype.startswith("float"):
        x = rng.standard_normal(n).astype(dtype) * 10
        if n and zeros:
            x[rng.integers(0, n)] = rng.choice([0.0, np.inf, -np.inf, np.nan])
        return x
    info = np.iinfo(dtype)
    x = rng.integers(max(info.min, -100), min(info.max, 100), n, endpoint=True).astype(dtype)
    if n and zeros:
        x[rng.integers(0, n)] = rng.choice([0, info.min, info.max, -1 if info.min else 1])
    return x


def _outcome(mod, dev, arrays: list, dtype: str) -> tuple:
    import minitvm as tvm
    from minitvm.error import MiniTVMError

    try:
        out = tvm.nd.empty(arrays[0].shape, dtype, dev)
        mod(*[tvm.nd.array(a, dev) for a in arrays], out)
        return ("ok", out.numpy())
    except MiniTVMError as err:
        return ("error", type(err).__name__, str(err))


def run_opencl(case: int, canary_dir: str) -> None:
    import minitvm as tvm

    reason = tvm.opencl(0).unavailable_reason()
    if reason is not None:
        raise Skip(f"no OpenCL device: {reason}")
    rng = random.Random(f"{SEED}:{case}")
    kind = rng.choice(_KINDS)
    op = rng.choice(sorted(_BINARY)) if kind == "binary" else "index"
    dtype = rng.choice(_DTYPES)
    if op == "div" and not dtype.startswith("float"):
        op = "truncdiv"
    factor = rng.choice((1, 4, 8, 32, 64))
    n = rng.choice((0, 1, 3, 8, 17, 64, 257))
    gpu, cpu, out_dtype = _builds(kind, op, dtype, factor)
    np_rng = np.random.default_rng(rng.randrange(2**32))
    a = _data(dtype, n, np_rng, rng.random() < 0.5)
    if kind == "binary":
        b = _data(dtype, n, np_rng, rng.random() < 0.6)
    else:
        b = np_rng.integers(0, max(n, 1), n).astype("int32")
        if n and rng.random() < 0.5:
            b[np_rng.integers(0, n)] = rng.choice((-1, n, n + 7, 2**31 - 1, -(2**31)))
    with np.errstate(all="ignore"):
        want = _outcome(cpu, tvm.cpu(0), [a, b], out_dtype)
        got = _outcome(gpu, tvm.opencl(0), [a, b], out_dtype)
    where = f"{kind} {op} {dtype} n={n} factor={factor} a={a.tolist()[:8]} b={b.tolist()[:8]}"
    if got[0] != want[0] or (got[0] == "error" and got[1] != want[1]):
        raise Wrong(
            f"{where}: OpenCL {got[:2]}, CPU {want[:2]}: {got[-1]!s:.300} / {want[-1]!s:.300}"
        )
    if got[0] == "ok":
        g, w = got[1], want[1]
        same = np.allclose(g, w, rtol=1e-5, atol=1e-5, equal_nan=True) if dtype.startswith(
            "float") else np.array_equal(g, w)  # fmt: skip
        if not same:
            raise Wrong(f"{where}: OpenCL gives {g.tolist()[:16]}, CPU {w.tolist()[:16]}")
    else:
        from minitvm.error import MiniTVMError

        raise MiniTVMError(f"both refused: {want[2][:200]}")  # counted clean
