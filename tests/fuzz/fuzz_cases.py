"""Fuzz case strategies and runners, one pair per category (run inside worker subprocesses).

A case is a JSON-able dict drawn by hypothesis; its runner builds and runs it and returns
normally when the result is correct, raises a MiniTVMError for a clean rejection, `Wrong` for a
silent wrong result and `Skip` when no oracle can judge it. The oracle is numpy or the reference
interpreter `minitvm.testing.run_prim_func`.
"""

from __future__ import annotations

import json
import os
import re
import signal
import tempfile
import zipfile
from contextlib import contextmanager

import numpy as np
from fuzz_harness import Skip, Wrong
from hypothesis import strategies as st

import minitvm as tvm
from minitvm import te, tir
from minitvm.error import MiniTVMError
from minitvm.testing import InterpreterError, run_prim_func

INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOAT_DTYPES = ("float16", "float32", "float64")
DTYPES = INT_DTYPES + FLOAT_DTYPES + ("bool",)
SEEDS = st.integers(0, 2**16)


# ----------------------------------------------------------------------------- shared helpers


def _data(dtype: str, shape, rng: np.random.Generator, special: bool) -> np.ndarray:
    """Random data; `special` mixes in edge values (0, -1, INT_MIN, inf, nan, ...)."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if not special:
            return rng.integers(max(info.min, -20), min(info.max, 20) + 1, shape).astype(dt)
        pool = [v for v in (0, 1, -1, 2, -2, 7, info.min, info.max) if info.min <= v <= info.max]
        wide = rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
        pick = np.array(pool, dtype=dt)[rng.integers(0, len(pool), shape)]
        return np.where(rng.random(shape) < 0.5, pick, wide).astype(dt)
    values = rng.standard_normal(shape) * 4
    if special:
        pool = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e4, -1e-3, 65504.0, 3.5])
        values = np.where(rng.random(shape) < 0.4, pool[rng.integers(0, len(pool), shape)], values)
    return values.astype(dt)


def _compare(got: np.ndarray, want: np.ndarray, what: str, rtol: float = 1e-5) -> None:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        raise Wrong(f"{what}: shape {got.shape}, expected {want.shape}")
    if want.dtype.kind == "f":
        tol = {2: 1e-2, 4: max(rtol, 1e-5), 8: max(rtol * 1e-3, 1e-11)}[want.dtype.itemsize]
        ok = np.isclose(got, want, rtol=tol, atol=tol, equal_nan=True)
    else:
        ok = got == want
    if not np.all(ok):
        bad = np.argwhere(~np.asarray(ok))[:3].tolist()
        raise Wrong(
            f"{what}: {int((~np.asarray(ok)).sum())} of {want.size} elements differ, e.g. at "
            f"{bad}: got {[got[tuple(b)] for b in bad]}, expected {[want[tuple(b)] for b in bad]}"
        )


@contextmanager
def _time_limit(seconds: float):
    """Raise Skip when the block runs longer than `seconds` (guards the slow oracle)."""

    def expire(signum, frame):
        raise Skip(f"oracle took more than {seconds}s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _oracle(func, arrays: list) -> tuple[list | None, str | None]:
    """The interpreter's outputs, or (None, reason) when the program is undefined there."""
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in arrays]
    try:
        with _time_limit(10), np.errstate(all="ignore"):
            run_prim_func(func, *copies)
    except InterpreterError as err:
        if "cannot interpret" in str(err):
            raise Skip(str(err)) from err
        return None, str(err)
    except RecursionError as err:
        raise Skip("expression too deep for the interpreter") from err
    return copies, None


def _run_compiled(f, arrays: list) -> list:
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in arrays]
    with np.errstate(all="ignore"):
        f(*copies)
    return copies


# ----------------------------------------------------------------------------- 1. dtype x op x lanes


def _intrin(name):
    return lambda a, b, c: tir.call_intrin(a.dtype, name, a, b)


# op -> (arity, builder(a, b, case)); b is ignored by unary ops.
OPS = {
    "add": (2, lambda a, b, c: a + b),
    "sub": (2, lambda a, b, c: a - b),
    "mul": (2, lambda a, b, c: a * b),
    "div": (2, lambda a, b, c: a / b),
    "floordiv": (2, lambda a, b, c: a // b),
    "floormod": (2, lambda a, b, c: a % b),
    "truncdiv": (2, lambda a, b, c: tir.truncdiv(a, b)),
    "truncmod": (2, lambda a, b, c: tir.truncmod(a, b)),
    "min": (2, lambda a, b, c: tir.min(a, b)),
    "max": (2, lambda a, b, c: tir.max(a, b)),
    "pow": (2, lambda a, b, c: te.power(a, b)),
    "and": (2, lambda a, b, c: a & b),
    "or": (2, lambda a, b, c: a | b),
    "xor": (2, _intrin("tir.bitwise_xor")),
    "shl": (2, _intrin("tir.shift_left")),
    "shr": (2, _intrin("tir.shift_right")),
    "eq": (2, lambda a, b, c: tir.equal(a, b)),
    "ne": (2, lambda a, b, c: tir.NE(a, b)),
    "lt": (2, lambda a, b, c: a < b),
    "le": (2, lambda a, b, c: a <= b),
    "gt": (2, lambda a, b, c: a > b),
    "ge": (2, lambda a, b, c: a >= b),
    "select": (2, lambda a, b, c: tir.Select(a > b, a, b)),
    "if_then_else": (2, lambda a, b, c: tir.if_then_else(a < b, b, a)),
    "neg": (1, lambda a, b, c: -a),
    "abs": (1, lambda a, b, c: tir.abs(a)),
    "exp": (1, lambda a, b, c: te.exp(a)),
    "log": (1, lambda a, b, c: te.log(a)),
    "sqrt": (1, lambda a, b, c: te.sqrt(a)),
    "tanh": (1, lambda a, b, c: te.tanh(a)),
    "sigmoid": (1, lambda a, b, c: te.sigmoid(a)),
    "floor": (1, lambda a, b, c: tir.floor(a)),
    "ceil": (1, lambda a, b, c: tir.ceil(a)),
    "round": (1, lambda a, b, c: tir.round(a)),
    "trunc": (1, lambda a, b, c: tir.trunc(a)),
    "sin": (1, lambda a, b, c: tir.sin(a)),
    "erf": (1, lambda a, b, c: tir.erf(a)),
    "isnan": (1, lambda a, b, c: tir.isnan(a)),
    "not": (1, lambda a, b, c: ~a),
    "bitnot": (1, lambda a, b, c: tir.call_intrin(a.dtype, "tir.bitwise_not", a)),
    "cast": (1, lambda a, b, c: a.astype(c["dtype2"])),
}
_DIVISIONS = ("div", "floordiv", "floormod", "truncdiv", "truncmod")
_TRANSCENDENTAL = ("pow", "exp", "log", "sqrt", "tanh", "sigmoid", "sin", "erf")
# numpy references for ops whose numpy semantics are the compiler's (cross-checks the oracle)
NUMPY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "min": np.minimum,
    "max": np.maximum, "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal, "select": lambda a, b: np.where(a > b, a, b),
}

# mostly the host; other CPUs must either run correctly or refuse cleanly (never SIGILL)
TARGETS = ("llvm",) * 6 + (
    "llvm -mcpu=x86-64", "llvm -mcpu=x86-64-v3", "llvm -mcpu=skylake-avx512",
    "llvm -mcpu=znver4", "llvm -mcpu=sapphirerapids", "llvm -mcpu=pentium99",
    "llvm -mtriple=aarch64-linux-gnu",
)
OPS_CASES = st.fixed_dictionaries({
    "op": st.sampled_from(sorted(OPS)),
    "dtype": st.sampled_from(DTYPES),
    "dtype2": st.sampled_from(DTYPES),
    "lanes": st.sampled_from([1, 2, 3, 4, 8, 16, 32]),
    "tiles": st.integers(1, 3),
    "tail": st.integers(0, 3),
    "symbolic": st.booleans(),
    "special": st.booleans(),
    "target": st.sampled_from(TARGETS),
    "scalar_b": st.booleans(),
    "seed": SEEDS,
})


def run_ops(case: dict, canary_dir: str) -> None:
    n = case["lanes"] * case["tiles"] + case["tail"]
    dim = te.var("n") if case["symbolic"] else n
    arity, build = OPS[case["op"]]
    A = te.placeholder((dim,), case["dtype"], name="A")
    if case.get("scalar_b"):  # B as a scalar parameter (a float16 one once crashed)
        B = te.var("b", case["dtype"])
        C = te.compute((dim,), lambda i: build(A[i], B, case), name="C")
    else:
        B = te.placeholder((dim,), case["dtype"], name="B")
        C = te.compute((dim,), lambda i: build(A[i], B[i], case), name="C")
    s = te.create_schedule(C.op)
    if case["lanes"] > 1:
        _, inner = s[C].split(C.op.axis[0], factor=case["lanes"])
        s[C].vectorize(inner)
    f = tvm.build(s, [A, B, C], case.get("target", "llvm"))
    rng = np.random.default_rng(case["seed"])
    a, b = (_data(case["dtype"], n, rng, case["special"]) for _ in range(2))
    a, b = _keep_defined(case, a, b)
    if case.get("scalar_b"):
        b = b[:1].reshape(()).item()  # a Python number
    out = np.zeros(n, C.dtype)
    expected, undefined = _oracle(te.create_prim_func([A, B, C]), [a, b, out])
    try:
        got = _run_compiled(f, [a, b, out])
    except MiniTVMError as err:
        if undefined is not None or case["op"] in _DIVISIONS or case.get("target", "llvm") != "llvm":
            raise  # a clean error for x // 0 (or INT_MIN // -1) is the defined behaviour
        raise Wrong(f"a call on defined inputs was rejected: {type(err).__name__}: {err}") from None
    if undefined is not None:
        raise Wrong(f"the interpreter says {undefined!r}; the compiled code returned normally")
    rtol = 1e-4 if case["op"] in _TRANSCENDENTAL else 1e-5
    _compare(got[2], expected[2], f"{case['op']} on {case['dtype']}x{case['lanes']}", rtol)
    if case["op"] in NUMPY and C.dtype != "float16":
        with np.errstate(all="ignore"):
            _compare(expected[2], NUMPY[case["op"]](a, b), "oracle vs numpy", rtol)


def _keep_defined(case: dict, a: np.ndarray, b: np.ndarray) -> tuple:
    """Avoid inputs whose result is undefined in LLVM itself (no defined rule exists)."""
    dt = np.dtype(case["dtype"])
    if case["op"] in ("shl", "shr") and dt.kind in "iu":
        b = (b.astype(np.int64) % (8 * dt.itemsize)).astype(dt)  # shift >= width is poison
    if case["op"] == "cast" and dt.kind == "f" and np.dtype(case["dtype2"]).kind in "iu":
        info = np.iinfo(case["dtype2"])  # float -> int out of range is poison
        a = np.nan_to_num(a, nan=0.0, posinf=0.0, neginf=0.0)
        a = np.clip(a, max(info.min, -100), min(info.max, 100)).astype(dt)
    if case["op"] in _DIVISIONS and not case["special"] and dt.kind in "iu":
        b = np.where(b == 0, np.ones_like(b), b)
    return a, b


# ----------------------------------------------------------------------------- 2. argument lists


def _kernels() -> dict:
    """name -> (module, input count, numpy reference, (shape of each arg given n), dtype)."""
    if _kernels.cache:
        return _kernels.cache
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    add = te.compute((n,), lambda i: A[i] + B[i], name="C")
    G = te.placeholder((n,), name="G")
    sgd = te.compute((n,), lambda i: A[i] - 0.5 * G[i], name="X1")
    R = te.placeholder((8,), name="R")
    rev = te.compute((8,), lambda i: R[7 - i], name="Rr")
    M = te.placeholder((3, 5), "float64", name="M")
    m2 = te.compute((3, 5), lambda i, j: M[i, j] * 2 + 1, name="M2")
    na, nb = te.var("n"), te.var("n")  # two distinct variables with one name
    P = te.placeholder((na,), name="P")
    Q = te.placeholder((nb,), name="Q")
    two_n = te.compute((na,), lambda i: P[i] * 2.0 + Q[0], name="PQ")
    V = te.placeholder((8,), name="V")
    I = te.placeholder((n,), "int32", name="I")
    gather = te.compute((n,), lambda i: V[I[i]], name="VI")
    build = lambda out, args: tvm.build(te.create_schedule(out.op), args, "llvm")  # noqa: E731
    _kernels.cache = {
        "add": (build(add, [A, B, add]), 2, np.add, lambda k: [(k,), (k,), (k,)], "float32"),
        "sgd": (build(sgd, [A, G, sgd]), 2, lambda x, g: x - np.float32(0.5) * g,
                lambda k: [(k,), (k,), (k,)], "float32"),
        "rev": (build(rev, [R, rev]), 1, lambda r: r[::-1], lambda k: [(8,), (8,)], "float32"),
        "m2": (build(m2, [M, m2]), 1, lambda m: m * 2 + 1, lambda k: [(3, 5), (3, 5)], "float64"),
        "two_n": (build(two_n, [P, Q, two_n]), 2, lambda p, q: p * 2 + q[0],
                  lambda k: [(k,), (k + 2,), (k,)], "float32"),
        "gather": (build(gather, [V, I, gather]), 2, lambda v, i: v[i],
                   lambda k: [(8,), (k,), (k,)], ("float32", "int32", "float32")),
    }
    return _kernels.cache


_kernels.cache = {}
MUTATIONS = (
    "none", "ndarray", "dlpack", "torch", "dtype", "ndim", "shape", "strided", "fortran",
    "readonly", "frombuffer", "memmap", "alias_same", "alias_overlap", "fewer", "more",
    "scalar", "none_arg", "list", "zero_size", "other_n", "bad_index",
)
VALID = ("none", "ndarray", "dlpack", "torch", "zero_size")
ARGS_CASES = st.fixed_dictionaries({
    "kernel": st.sampled_from(["add", "sgd", "rev", "m2", "two_n", "gather"]),
    "mutation": st.sampled_from(MUTATIONS),
    "position": st.integers(0, 2),
    "n": st.integers(1, 40),
    "seed": SEEDS,
})


def run_args(case: dict, canary_dir: str) -> None:
    f, n_in, ref, shapes, dtype = _kernels()[case["kernel"]]
    mutation = case["mutation"]
    n = 0 if mutation == "zero_size" and case["kernel"] in ("add", "sgd", "gather") else case["n"]
    rng = np.random.default_rng(case["seed"])
    dtypes = dtype if isinstance(dtype, tuple) else (dtype,) * len(shapes(n))
    args = [rng.standard_normal(s).astype(d) for s, d in zip(shapes(n), dtypes)]
    if case["kernel"] == "gather":  # indices in range, unless the mutation breaks one
        args[1] = rng.integers(0, 8, args[1].shape).astype("int32")
        if mutation == "bad_index" and args[1].size:
            args[1][case["seed"] % args[1].size] = (8, -1, 2**31 - 1, -(2**31))[case["seed"] % 4]
    args[-1][...] = 0
    pos = case["position"] % len(args)
    pristine = [a.copy() for a in args[:n_in]]
    bad_gather = mutation == "bad_index" and case["kernel"] == "gather" and n > 0
    expected = None if bad_gather else ref(*pristine)
    args, out_index = _mutate(mutation, args, pos, n_in, canary_dir)
    # what the inputs hold now: a mutation may pass other (valid) data, e.g. another length
    # for a dim of its own; the result must then match the reference on that data
    actual = [np.array(x, copy=True) if isinstance(x, np.ndarray) else x for x in args[:n_in]]
    valid = mutation in VALID or (mutation == "alias_same" and case["kernel"] == "sgd" and pos == 0)
    valid = valid or (mutation == "bad_index" and not bad_gather)
    try:
        with np.errstate(all="ignore"):
            f(*args)
    except MiniTVMError:
        if valid:
            raise Wrong(f"a valid call ({mutation}) was rejected") from None
        raise
    if mutation in ("readonly", "frombuffer", "memmap") and pos == len(args) - 1:
        raise Wrong(f"a read-only output ({mutation}) was accepted")
    if bad_gather:
        raise Wrong(f"gather index {args[1].tolist()} out of range of 8 elements was accepted")
    out = args[out_index] if out_index is not None else None
    if out is None:
        return
    got = out.numpy() if hasattr(out, "numpy") and not isinstance(out, np.ndarray) else np.asarray(out)
    if mutation in ("shape", "other_n", "dtype", "ndim"):
        try:
            with np.errstate(all="ignore"):
                expected = ref(*[np.asarray(x).astype(dtype if isinstance(dtype, str) else x.dtype)
                                 for x in actual])
        except (ValueError, IndexError) as err:
            raise Wrong(f"a call with {mutation} at {pos} was accepted ({err})") from err
    _compare(got.reshape(np.shape(expected)) if got.size == np.size(expected) else got,
             expected, f"{case['kernel']} called with {mutation} at {pos}")
    for i, before in enumerate(pristine):
        arg = args[i]
        if isinstance(arg, np.ndarray) and arg.shape == before.shape and i != out_index:
            if not np.shares_memory(arg, got) and not np.array_equal(arg, before, equal_nan=True):
                raise Wrong(f"input {i} was modified by the call")


def _mutate(mutation: str, args: list, pos: int, n_in: int, canary_dir: str) -> tuple[list, int | None]:
    """Apply `mutation` to argument `pos`; returns (args, index of the output to check)."""
    out = len(args) - 1
    a = args[pos]
    if mutation in ("none", "zero_size", "bad_index"):
        return args, out
    if mutation == "ndarray":
        return [tvm.nd.array(x) for x in args], out
    if mutation == "dlpack":
        return [tvm.nd.from_dlpack(x) for x in args], out
    if mutation == "torch":
        try:
            import torch
        except ImportError:
            raise Skip("torch is not installed") from None
        return [torch.from_numpy(x) for x in args], out
    if mutation == "dtype":
        args[pos] = a.astype("float16" if a.dtype != np.float16 else "float32")
    elif mutation == "ndim":
        args[pos] = a.reshape(a.shape + (1,))
    elif mutation == "shape":
        args[pos] = np.zeros(tuple(d + 1 for d in a.shape), a.dtype)
    elif mutation == "strided":
        big = np.zeros(tuple(d * 2 for d in a.shape), a.dtype)
        view = big[tuple(slice(None, None, 2) for _ in a.shape)]
        view[...] = a
        args[pos] = view
    elif mutation == "fortran":
        args[pos] = np.asfortranarray(a)
    elif mutation == "readonly":
        a.setflags(write=False)
    elif mutation == "frombuffer":
        args[pos] = np.frombuffer(a.tobytes(), a.dtype).reshape(a.shape)
    elif mutation == "memmap":
        path = os.path.join(tempfile.mkdtemp(), "ro.bin")
        a.tofile(path)
        args[pos] = np.memmap(path, a.dtype, mode="r", shape=a.shape)
    elif mutation == "alias_same":
        args[out] = args[pos] if pos != out else args[0]
    elif mutation == "alias_overlap":  # input and output share memory, one element apart
        o = args[out]
        raw = bytearray(max(a.nbytes, o.nbytes) + 2 * o.itemsize)
        view_in = np.ndarray(a.shape, a.dtype, buffer=raw)
        view_in[...] = a
        args[out] = np.ndarray(o.shape, o.dtype, buffer=raw, offset=o.itemsize)
        args[pos] = view_in
    elif mutation == "fewer":
        return args[:-1], None
    elif mutation == "more":
        return args + [args[0]], out
    elif mutation == "scalar":
        args[pos] = 1.5
        return args, (out if pos != out else None)
    elif mutation == "none_arg":
        args[pos] = None
        return args, (out if pos != out else None)
    elif mutation == "list":
        args[pos] = a.tolist()
        return args, (out if pos != out else None)
    elif mutation == "other_n":
        args[pos] = np.zeros(tuple(d + 3 for d in a.shape), a.dtype)
    return args, out


# ----------------------------------------------------------------------------- 3. schedules

PRIMITIVES = (
    "split", "nparts", "reorder", "fuse", "vectorize", "parallel", "unroll", "tile",
    "compute_at", "compute_inline", "cache_read", "cache_write",
)
SCHEDULE_CASES = st.fixed_dictionaries({
    "program": st.sampled_from(["matmul", "chain", "rowsum"]),
    "sizes": st.lists(st.integers(0, 12), min_size=3, max_size=3),  # 0: empty axes
    "steps": st.lists(
        st.tuples(st.sampled_from(PRIMITIVES), st.integers(0, 7), st.integers(0, 9), st.integers(0, 7)),
        min_size=1, max_size=6,
    ),
    "seed": SEEDS,
})


def _program(name: str, sizes: list) -> tuple[list, list, callable]:
    """(inputs, compute tensors in producer order, numpy reference)."""
    m, n, k = sizes
    if name == "matmul":
        A = te.placeholder((m, k), name="A")
        B = te.placeholder((k, n), name="B")
        r = te.reduce_axis((0, k), "r")
        C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
        return [A, B], [C], lambda a, b: a @ b
    A = te.placeholder((m, n), name="A")
    B = te.compute((m, n), lambda i, j: A[i, j] * 2.0, name="B")
    if name == "chain":
        C = te.compute((m, n), lambda i, j: B[i, j] + 1.0, name="C")
        return [A], [B, C], lambda a: a * 2 + 1
    r = te.reduce_axis((0, n), "r")
    C = te.compute((m,), lambda i: te.sum(B[i, r], axis=r), name="C")
    return [A], [B, C], lambda a: (a * 2).sum(axis=1)


def run_schedule(case: dict, canary_dir: str) -> None:
    inputs, computes, ref = _program(case["program"], case["sizes"])
    out = computes[-1]
    s = te.create_schedule(out.op)
    tensors = list(computes)
    for prim, x, y, z in case["steps"]:
        _apply(s, tensors, inputs, prim, x, y, z)
    f = tvm.build(s, inputs + [out], "llvm")
    rng = np.random.default_rng(case["seed"])
    arrays = [rng.standard_normal([int(d) for d in t.shape]).astype("float32") for t in inputs]
    got = np.zeros([int(d) for d in out.shape], "float32")
    f(*arrays, got)
    want = ref(*arrays)
    _compare(got, want, f"schedule {case['steps']}", rtol=1e-4)
    # the lowered loop nest, run by the bounds-checked interpreter: lowering alone is right
    # and touches no element outside its buffers (compiled code could do so unnoticed)
    lowered, undefined = _oracle(tvm.lower(s, inputs + [out])["main"], arrays + [got * 0])
    if undefined is not None:
        raise Wrong(f"the lowered schedule is undefined: {undefined}")
    _compare(lowered[-1], want, f"interpreted lowering of {case['steps']}", rtol=1e-4)


def _apply(s, tensors: list, inputs: list, prim: str, x: int, y: int, z: int) -> None:
    """One schedule primitive with parameters picked from the stage's current loops."""
    t = tensors[x % len(tensors)]
    stage = s[t]
    leaves = list(stage.leaf_iter_vars)
    ax = leaves[y % len(leaves)]
    if prim == "split":
        stage.split(ax, factor=z)  # factor 0 must be a ScheduleError
    elif prim == "nparts":
        stage.split(ax, nparts=z + 1)
    elif prim == "reorder":
        order = list(np.random.default_rng(x * 100 + y).permutation(len(leaves)))
        stage.reorder(*[leaves[i] for i in order])
    elif prim == "fuse" and len(leaves) > 1:
        i = y % (len(leaves) - 1)
        stage.fuse(leaves[i], leaves[i + 1])
    elif prim == "vectorize":
        stage.vectorize(leaves[-1] if z % 2 else ax)
    elif prim == "parallel":
        stage.parallel(leaves[0] if z % 2 else ax)
    elif prim == "unroll":
        stage.unroll(ax)
    elif prim == "tile" and len(leaves) > 1:
        i = y % (len(leaves) - 1)
        stage.tile(leaves[i], leaves[i + 1], z + 1, (y % 4) + 1)
    elif prim == "compute_at":
        consumer = tensors[(x + 1) % len(tensors)]
        spots = list(s[consumer].leaf_iter_vars)
        stage.compute_at(s[consumer], spots[z % len(spots)])
    elif prim == "compute_inline":
        stage.compute_inline()
    elif prim == "cache_read":
        source = inputs[z % len(inputs)]
        readers = [c for c in tensors if source in getattr(c.op, "input_tensors", [])]
        tensors.insert(0, s.cache_read(source, "local", readers or [tensors[-1]]))
    elif prim == "cache_write":
        tensors.append(s.cache_write(t, "local"))


# ----------------------------------------------------------------------------- 4. TVMScript mutations

BASE_SCRIPTS = (
    '''
@T.prim_func
def add(a: T.handle, b: T.handle, c: T.handle):
    A = T.match_buffer(a, (4, 8), "float32")
    B = T.match_buffer(b, (4, 8), "float32")
    C = T.match_buffer(c, (4, 8), "float32")
    for i, j in T.grid(4, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] + B[vi, vj]
''',
    '''
@T.prim_func
def mm(a: T.handle, b: T.handle, c: T.handle):
    A = T.match_buffer(a, (8, 6), "float32")
    B = T.match_buffer(b, (6, 4), "float32")
    C = T.match_buffer(c, (8, 4), "float32")
    for i, j, k in T.grid(8, 4, 6):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
''',
    '''
@T.prim_func
def two(a: T.handle, c: T.handle):
    A = T.match_buffer(a, (16,), "int32")
    C = T.match_buffer(c, (16,), "int32")
    B = T.alloc_buffer((16,), "int32")
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[vi] * 3 // 2
    for i in range(16):
        with T.block("C"):
            vi = T.axis.spatial(16, i)
            C[vi] = B[vi] % 5 - A[vi]
''',
    '''
@T.prim_func
def flat(a: T.handle, c: T.handle):
    A = T.match_buffer(a, (20,), "float32")
    C = T.match_buffer(c, (20,), "float32")
    for io in T.parallel(3):
        for ii in T.vectorized(8):
            if io * 8 + ii < 20:
                C[io * 8 + ii] = T.max(A[io * 8 + ii], T.float32(0)) * T.float32(2)
''',
    '''
@T.prim_func
def rowsum(a: T.handle, c: T.handle):
    A = T.match_buffer(a, (6, 10), "float32")
    C = T.match_buffer(c, (6,), "float32")
    for i in range(6):
        for k in T.parallel(10):
            with T.block("C"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    C[vi] = T.float32(0)
                C[vi] = C[vi] + A[vi, vk]
''',
    '''
@T.prim_func
def square(a: T.handle, b: T.handle):
    A = T.match_buffer(a, (28,), "float32")
    B = T.match_buffer(b, (14,), "float32")
    for v0, v1 in T.grid(5, 4):  # v0 * v0 + v1 reaches 19, outside the domain 14
        with T.block("B"):
            vi = T.axis.spatial(14, v0 * v0 + v1)
            B[vi] = A[vi] + T.float32(1)
''',
)
_MUTATION_KINDS = ("num", "drop", "dup", "dtype", "var", "op", "dedent")
SCRIPT_CASES = st.fixed_dictionaries({
    "base": st.integers(0, len(BASE_SCRIPTS) - 1),
    "mutations": st.lists(
        st.tuples(st.sampled_from(_MUTATION_KINDS), st.integers(0, 10**6), st.integers(0, 100)),
        min_size=1, max_size=3,
    ),
    "seed": SEEDS,
})
_NUMBERS = ("0", "1", "2", "3", "7", "64", "128", "1000", "-1", "2147483648", "1.5", "100000")
_DTYPE_NAMES = ("float32", "float16", "float64", "int32", "int8", "int64", "uint8", "bool", "handle")
_VARS = ("i", "j", "k", "vi", "vj", "vk", "io", "ii", "A", "B", "C")
_OPERATORS = (" + ", " - ", " * ", " // ", " % ", " / ")


def mutate_script(text: str, mutations: list) -> str:
    """Apply text mutations: each picks an occurrence by `pos` and a replacement by `pick`."""
    for kind, pos, pick in mutations:
        lines = text.split("\n")
        if kind in ("drop", "dup", "dedent"):
            i = pos % len(lines)
            if kind == "drop":
                del lines[i]
            elif kind == "dup":
                lines.insert(i, lines[i])
            else:
                lines[i] = lines[i][4:] if lines[i].startswith("    ") else lines[i]
            text = "\n".join(lines)
            continue
        pattern, choices = {
            "num": (r"(?<![\w.])\d+(\.\d+)?(?![\w.])", _NUMBERS),
            "dtype": (r"(float|int|uint)\d+|bool", _DTYPE_NAMES),
            "var": (r"\b(" + "|".join(_VARS) + r")\b", _VARS),
            "op": (r" (\+|-|\*|//|%|/) ", _OPERATORS),
        }[kind]
        found = list(re.finditer(pattern, text))
        if found:
            m = found[pos % len(found)]
            text = text[: m.start()] + choices[pick % len(choices)] + text[m.end():]
    return text


def run_script(case: dict, canary_dir: str) -> None:
    text = mutate_script(BASE_SCRIPTS[case["base"]], case["mutations"])
    parsed = tvm.script.from_source("from minitvm.script import tir as T\n" + text)
    funcs = [parsed] if isinstance(parsed, tir.PrimFunc) else [
        g for _, g in parsed.functions_items() if isinstance(g, tir.PrimFunc)]
    if len(funcs) != 1:
        raise Skip("not one PrimFunc")
    func = funcs[0]
    rng = np.random.default_rng(case["seed"])
    arrays = []
    if any(isinstance(d, tir.IntImm) and d.value < 0 for b in func.buffer_params() for d in b.shape):
        tvm.build(func, target="llvm")  # must refuse the negative dimension
        raise Wrong("a buffer with a negative dimension was built")
    for buf in func.buffer_params():
        shape = [int(d) if isinstance(d, tir.IntImm) else 8 for d in buf.shape]
        if np.prod(shape, dtype=np.float64) > 1e5 or buf.dtype.is_handle:
            raise Skip(f"buffer {buf.name} {shape} {buf.dtype} too large or untyped")
        arrays.append(_data(str(buf.dtype), shape, rng, special=False))
    if len(arrays) != len(func.params):
        raise Skip("scalar parameters")
    for a in arrays[1:]:
        a[...] = 0
    expected, undefined = _oracle(func, arrays)
    f = tvm.build(func, target="llvm")
    got = _run_compiled(f, arrays)
    if undefined is not None and "division by zero" in undefined:
        # x // 0 is undefined in TVM, so the simplifier may fold it (0 // x -> 0) before it runs
        raise Skip(f"compiled code ran where the interpreter says {undefined!r}")
    if undefined is not None:
        raise Wrong(f"the interpreter says {undefined!r}; the compiled code ran without error")
    if func.body is not None and "alloc_buffer" in text and any(
        a.dtype.kind in "iu" for a in arrays
    ) and not all(np.array_equal(g, e) for g, e in zip(got, expected)):
        raise Skip("integer program reading scratch memory: uninitialised reads are not judged")
    for i, (g, e) in enumerate(zip(got, expected)):
        _compare(g, e, f"mutated script argument {i}", rtol=1e-4)


# ----------------------------------------------------------------------------- 5. tampered exports

_INJECTIONS = (
    "__import__('pathlib').Path({canary!r}).touch()",
    "n'); __import__('pathlib').Path({canary!r}).touch(); ('",
    'n"); __import__("pathlib").Path({canary!r}).touch(); ("',
    "n\n__import__('pathlib').Path({canary!r}).touch()\n",
    "open({canary!r}, 'w')",
    "(lambda: __import__('os').system('touch {canary}'))()",
    "{{0.__class__}}",
)
_VALUES = (None, True, 0, -1, 1, 2**31, 2**64, 1.5, "", "x" * 5000, [], {}, "float32",
           "int8", "n", "m", "main", "../../etc/passwd", "float32x100000")
_CODE_TAMPERS = ("flip_object", "truncate_object", "random_object", "swap_members")
TAMPERS = ("none", "flip_object", "truncate_object", "random_object", "flip_meta",
           "truncate_file", "meta_field", "inject", "drop_member", "swap_members", "foreign")
EXPORT_CASES = st.fixed_dictionaries({
    "module": st.sampled_from(["add", "m2"]),
    "tamper": st.sampled_from(TAMPERS),
    "pos": st.integers(0, 10**6),
    "value": st.integers(0, 10**3),
    "bits": st.integers(1, 8),
    "resign": st.booleans(),
})


def _exports() -> dict:
    """name -> (zip path of the export, kernel record from _kernels())."""
    if _exports.cache:
        return _exports.cache
    root = tempfile.mkdtemp(prefix="minitvm_fuzz_exports_")
    for name, record in _kernels().items():
        path = os.path.join(root, f"{name}.so")
        record[0].export_library(path)
        _exports.cache[name] = (path, record)
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] + 1.0, name="C")
    path = os.path.join(root, "foreign.so")
    tvm.build(te.create_schedule(C.op), [A, C], "llvm -mtriple=aarch64-linux-gnu").export_library(path)
    _exports.cache["foreign"] = (path, None)
    return _exports.cache


_exports.cache = {}


def run_export(case: dict, canary_dir: str) -> None:
    canary = os.path.join(canary_dir, "PWNED")
    name = "foreign" if case["tamper"] == "foreign" else case["module"]
    source, record = _exports()[name]
    with zipfile.ZipFile(source) as zf:
        members = {m: zf.read(m) for m in zf.namelist()}
    raw = None
    meta = json.loads(members["meta.json"])
    tamper, pos, value = case["tamper"], case["pos"], case["value"]
    obj = bytearray(members["object.o"])
    if tamper == "flip_object":
        for i in range(case["bits"]):
            bit = (pos * 7919 + i * 104729) % (len(obj) * 8)
            obj[bit // 8] ^= 1 << (bit % 8)
        members["object.o"] = bytes(obj)
    elif tamper == "truncate_object":
        members["object.o"] = bytes(obj[: pos % len(obj)])
    elif tamper == "random_object":
        members["object.o"] = np.random.default_rng(pos).bytes(value + 1)
    elif tamper == "swap_members":
        members["object.o"], members["module.ll"] = members["module.ll"], members["object.o"]
    elif tamper == "drop_member":
        del members[sorted(members)[pos % len(members)]]
    elif tamper in ("meta_field", "inject"):
        paths = _leaf_paths(meta)
        path = paths[pos % len(paths)]
        if tamper == "inject":
            new = _INJECTIONS[value % len(_INJECTIONS)].format(canary=canary)
        else:
            new = _VALUES[value % len(_VALUES)]
        _set_path(meta, path, new)
    if case["resign"]:
        _resign(meta, members)
    members["meta.json"] = json.dumps(meta).encode() if "meta.json" in members else None
    if tamper == "flip_meta":
        data = bytearray(members["meta.json"])
        data[pos % len(data)] ^= 1 << (value % 8)
        members["meta.json"] = bytes(data)
    path = os.path.join(tempfile.gettempdir(), "tampered.so")  # the worker's scratch dir
    with zipfile.ZipFile(path, "w") as zf:
        for m, data in members.items():
            if data is not None:
                zf.writestr(m, data)
    if tamper == "truncate_file":
        raw = open(path, "rb").read()
        open(path, "wb").write(raw[: pos % len(raw)])
    try:
        mod = tvm.runtime.load_module(path)
        if record is None:
            raise Wrong("a module for another architecture loaded")
        if case["resign"] and tamper in _CODE_TAMPERS:
            return  # re-signed machine code is simply other code: only loading must be safe
        _call_loaded(mod, record)
    finally:
        os.unlink(path)


def _leaf_paths(value, prefix=()) -> list:
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return [prefix]
    out = [prefix + (k,) for k, _ in items] if prefix else []
    for k, v in (value.items() if isinstance(value, dict) else enumerate(value)):
        out.extend(_leaf_paths(v, prefix + (k,)))
    return out or [prefix]


def _set_path(meta, path: tuple, new) -> None:
    target = meta
    for key in path[:-1]:
        target = target[key]
    if path:
        target[path[-1]] = new


def _resign(meta: dict, members: dict) -> None:
    """Recompute the checksums, as an attacker who edits the file would."""
    from minitvm.runtime.meta import meta_digest, sha256

    sums = {m: sha256(d) for m, d in members.items() if m != "meta.json"}
    meta["checksums"] = sums
    meta["checksums"]["meta.json"] = meta_digest(meta)


def _call_loaded(mod, record) -> None:
    _, n_in, ref, shapes, dtype = record
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(dtype) for s in shapes(5)]
    args[-1][...] = 0
    with np.errstate(all="ignore"):
        mod(*args)
    _compare(args[-1], ref(*args[:n_in]), "loaded module")


# ----------------------------------------------------------------------------- harness self-test

# a fixed list instead of a strategy: every outcome exactly once, in this order
SELFTEST_CASES = [
    {"behaviour": b}
    for b in ("ok", "crash", "clean", "bug", "hang", "wrong", "skip", "codeexec", "ok")
]


def run_selftest(case: dict, canary_dir: str) -> None:
    """Each outcome on purpose, so the harness's classification is itself tested."""
    behaviour = case["behaviour"]
    if behaviour == "clean":
        raise MiniTVMError("a clean error")
    if behaviour == "bug":
        raise KeyError("not a MiniTVMError")
    if behaviour == "wrong":
        raise Wrong("a wrong result")
    if behaviour == "skip":
        raise Skip("no oracle")
    if behaviour == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if behaviour == "hang":
        signal.pause()
    if behaviour == "codeexec":
        open(os.path.join(canary_dir, "PWNED"), "w").close()


CATEGORIES = {
    "selftest": (SELFTEST_CASES, run_selftest),
    "ops": (OPS_CASES, run_ops),
    "args": (ARGS_CASES, run_args),
    "schedules": (SCHEDULE_CASES, run_schedule),
    "script": (SCRIPT_CASES, run_script),
    "exports": (EXPORT_CASES, run_export),
}

# tampered relax Executables (program.json and members): cases of their own module
from fuzz_executables import EXECUTABLE_CASES, run_executable  # noqa: E402

CATEGORIES["executables"] = (EXECUTABLE_CASES, run_executable)

# tuning records, autotvm logs and param archives (fuzz_record_cases.py)
from fuzz_record_cases import CATEGORIES as _RECORD_CATEGORIES  # noqa: E402

CATEGORIES.update(_RECORD_CATEGORIES)

# ONNX models against ONNX Runtime, the command line, compiled artifacts, OpenCL kernels
from fuzz_surfaces import CATEGORIES as _SURFACE_CATEGORIES  # noqa: E402

CATEGORIES.update(_SURFACE_CATEGORIES)
