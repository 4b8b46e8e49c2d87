"""Test helpers: build lowered PrimFuncs by hand and run them.

`run` goes through `minitvm.runtime.Module` (the checked path users take). `Loaded` calls the
native ABI of docs/contracts.md §2 directly (MCJIT `add_object_file` + ctypes) so tests can
see raw return codes.
"""

from __future__ import annotations

import ctypes
import struct

import llvmlite.binding as llvm
import numpy as np

from minitvm.codegen import llvm as codegen_llvm
from minitvm.ir.dtype import DataType
from minitvm.target import Target
from minitvm.tir import Buffer, PrimFunc, Var, decl_buffer

_ENGINES = []  # keep engines alive for the whole session (their code may still be referenced)


def flat_buffer(name: str, n, dtype: str = "float32") -> tuple[Var, Buffer, Buffer]:
    """(param var, param buffer of shape (n,), the same memory as a flat buffer)."""
    buf = decl_buffer((n,), dtype, name)
    return Var(name.lower() + "_handle", DataType("handle")), buf, buf


def prim_func(name: str, params: list, buffer_map: dict, body) -> PrimFunc:
    return PrimFunc(
        tuple(params),
        body,
        buffer_map=buffer_map,
        attrs={"global_symbol": name, "tir.noalias": True},
    )


def aligned_copy(a: np.ndarray, align: int = 64) -> np.ndarray:
    """A C-contiguous copy of `a` whose data pointer is a multiple of `align`."""
    a = np.asarray(a)
    raw = np.empty(a.nbytes + align, dtype=np.uint8)
    start = (-raw.ctypes.data) % align
    out = raw[start : start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


class Loaded:
    """An object file loaded into its own MCJIT engine, callable per the native ABI."""

    def __init__(self, result):
        self.result = result
        tm = Target("llvm").new_target_machine()  # MCJIT takes ownership of it
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
        engine.add_object_file(llvm.ObjectFileRef.from_data(result.object_code))
        engine.finalize_object()
        _ENGINES.append(engine)
        self.engine = engine
        self.infos = {info["name"]: info for info in result.func_infos}

    def __call__(self, name: str, *args) -> int:
        """Call `name` with numpy arrays (updated in place) and Python scalars; return its code."""
        info = self.infos[name]
        fn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)(
            self.engine.get_function_address(info["symbol"])
        )
        arrays, scalars = [], []
        for param, arg in zip(info["params"], args):
            if param["kind"] == "buffer":
                arrays.append(arg)
            else:
                scalars.append((param["dtype"], arg))
        ptrs = (ctypes.c_void_p * max(len(arrays), 1))(*[a.ctypes.data for a in arrays])
        words = []
        for sym in info["sym_vars"]:
            words.append(int(arrays_shape(info, args, sym)))
        for dtype, value in scalars:
            if DataType(dtype).is_float:
                words.append(struct.unpack("<q", struct.pack("<d", float(value)))[0])
            else:
                words.append(int(value))
        packed = (ctypes.c_int64 * max(len(words), 1))(*words)
        return fn(ptrs, packed)


def arrays_shape(info: dict, args, sym: dict) -> int:
    return args[sym["param"]].shape[sym["dim"]]


def build_and_load(*funcs: PrimFunc) -> Loaded:
    return Loaded(codegen_llvm.build(list(funcs), "llvm"))


def run(func: PrimFunc, *args):
    """Build `func`, call it through the runtime Module with `args` (arrays are updated in place)."""
    from minitvm.runtime.module import Module

    module = Module.from_codegen(codegen_llvm.build([func], "llvm"))
    module[func.attrs["global_symbol"]](*args)


def elementwise(name: str, in_dtypes: list[str], out_dtype: str, make, n: int = 16) -> PrimFunc:
    """`Out[i] = make(In0[i], In1[i], ...)` over a static length `n`, one serial loop."""
    from minitvm.tir import BufferLoad, BufferStore, For, ForKind

    params, bmap, loads = [], {}, []
    i = Var("i")
    for k, dt in enumerate(in_dtypes):
        p, buf, _ = flat_buffer(f"In{k}", n, dt)
        params.append(p)
        bmap[p] = buf
        loads.append(BufferLoad(buf, (i,)))
    p, out, _ = flat_buffer("Out", n, out_dtype)
    params.append(p)
    bmap[p] = out
    body = For(i, 0, n, ForKind.SERIAL, BufferStore(out, make(*loads), (i,)))
    return prim_func(name, params, bmap, body)


def run_elementwise(make, inputs: list[np.ndarray], out_dtype: str) -> np.ndarray:
    """Build, run and return the output of `elementwise` on `inputs`."""
    n = len(inputs[0])
    dtypes = [str(DataType(a.dtype)) for a in inputs]
    func = elementwise("ew", dtypes, out_dtype, make, n)
    out = np.zeros(n, DataType(out_dtype).numpy_dtype())
    run(func, *inputs, out)
    return out


def run_isolated(code: str, timeout: float = 120) -> str:
    """Run `code` in a fresh Python process (for cases that crashed the process before their
    fix); assert it exited cleanly and return its stdout."""
    import os
    import subprocess
    import sys
    import textwrap

    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    assert proc.returncode == 0, (
        f"exit code {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\n"
        f"stderr:\n{proc.stderr[-3000:]}"
    )
    return proc.stdout
