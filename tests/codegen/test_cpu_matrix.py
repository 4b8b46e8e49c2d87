"""Every op kind × dtype × vector width, compiled for several x86-64 CPUs without running it:
the object code may only reference symbols the loader can resolve (minitvm's compiler-runtime
helpers, the thread pool, or libc/libm in this process). This holds whatever CPU CI runs on:
an unresolved helper (`__truncdfhf2` on Zen, `__extendhfsf2` on a CPU without F16C) used to
make MCJIT jump to address 0.
"""

from __future__ import annotations

import llvmlite.binding as llvm
import pytest
from codegen_harness import flat_buffer, prim_func
from test_llvm_expr import ALL_DTYPES, ARITH, BINARY_MATH, CMP, FLOAT_DTYPES, INT_DTYPES, UNARY

from minitvm import tir
from minitvm.codegen import llvm as codegen_llvm
from minitvm.ir.dtype import DataType
from minitvm.runtime import compiler_rt, threadpool
from minitvm.runtime.elf import read_elf
from minitvm.tir import (
    And,
    BufferLoad,
    BufferStore,
    Cast,
    Div,
    FloorDiv,
    FloorMod,
    For,
    ForKind,
    Mod,
    Or,
    Ramp,
    SeqStmt,
    Select,
    Var,
)

# baseline (no F16C), AVX2, AVX-512 without FP16 (Intel, AMD), AVX512-FP16; plus the host
CPUS = ["x86-64", "x86-64-v3", "skylake-avx512", "znver4", "znver5", "sapphirerapids"]
LANES = (1, 16)
FLOATS = ["float16", *FLOAT_DTYPES]
BITWISE = ["bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right"]


def _kernel(name: str, in_dtypes: tuple[str, ...], outputs: list, lanes: int):
    """`Out<k>[v] = make_k(In0[v], ...)` for each (out dtype, make) of `outputs`, over n
    elements, `lanes` at a time (Ramp/vector code). One function for many ops keeps LLVM's
    per-function cost out of the test's time."""
    params, bmap, loads, stores = [], {}, [], []
    i, n = Var("i"), Var("n")  # a symbolic length: O3 cannot unroll the loop fully
    index = i if lanes == 1 else Ramp(i * lanes, 1, lanes)
    for k, dt in enumerate(in_dtypes):
        p, buf, _ = flat_buffer(f"In{k}", n, dt)
        params.append(p)
        bmap[p] = buf
        loads.append(BufferLoad(buf, (index,)))
    for k, (out_dtype, make) in enumerate(outputs):
        p, out, _ = flat_buffer(f"Out{k}", n, out_dtype)
        params.append(p)
        bmap[p] = out
        stores.append(BufferStore(out, make(*loads), (index,)))
    body = For(i, 0, tir.floordiv(n, lanes), ForKind.SERIAL, SeqStmt(tuple(stores)))
    return prim_func(name, params, bmap, body)


def _cases():
    """(name, input dtypes, output dtype, make) for every op kind and dtype."""
    numeric = FLOATS + INT_DTYPES
    ops = {**ARITH, Div: None, Mod: None, FloorDiv: None, FloorMod: None}
    for op in ops:
        for dt in numeric:
            yield f"{op.__name__}_{dt}", [dt, dt], dt, op
    for op in CMP:
        for dt in numeric:
            yield f"{op.__name__}_{dt}", [dt, dt], "bool", op
    for op in (And, Or):
        yield f"{op.__name__}_bool", ["bool", "bool"], "bool", op
    yield "select_f32", ["bool", "float32"], "float32", lambda c, x: Select(c, x, x * x)
    for name, (make, _, _) in UNARY.items():
        for dt in FLOATS:
            yield f"{name}_{dt}", [dt], dt, make
    for name, (make, _) in BINARY_MATH.items():
        for dt in FLOATS:
            yield f"{name}_{dt}", [dt, dt], dt, make
    for dt in FLOATS:
        yield f"fma_{dt}", [dt, dt, dt], dt, tir.fma
        yield f"powi_{dt}", [dt, "int32"], dt, lambda x, n, dt=dt: tir.power(x, _cast(dt, n))
        for test in ("isnan", "isinf", "isfinite"):
            yield f"{test}_{dt}", [dt], "bool", getattr(tir, test)
    for name in BITWISE:
        for dt in INT_DTYPES:
            yield (
                f"{name}_{dt}",
                [dt, dt],
                dt,
                lambda x, y, name=name: tir.call_intrin(x.dtype, name, x, y),
            )
    for src in ALL_DTYPES:
        for dst in ALL_DTYPES:
            yield f"cast_{src}_{dst}", [src], dst, lambda x, dst=dst: _cast(dst, x)


def _cast(dtype: str, x):
    """Cast `x` to `dtype` with x's lane count."""
    return Cast(DataType(dtype).with_lanes(x.dtype.lanes), x)


def _functions() -> list:
    """One function per input signature and lane count, computing every op on those inputs."""
    by_inputs: dict[tuple[str, ...], list] = {}
    for _, ins, out, make in _cases():
        by_inputs.setdefault(tuple(ins), []).append((out, make))
    funcs = [
        _kernel(f"k{k}_x{lanes}", ins, outputs, lanes)
        for lanes in LANES
        for k, (ins, outputs) in enumerate(by_inputs.items())
    ]
    return [*funcs, _parallel_with_heap_buffer()]


def _parallel_with_heap_buffer():
    """A parallel loop and a symbolic-size heap allocation (thread pool, aligned_alloc, free)."""
    n = Var("n")
    ap, A, _ = flat_buffer("A", n)
    tmp = tir.decl_buffer((n,), "float32", "tmp")
    i, j = Var("i"), Var("j")
    fill = For(j, 0, n, ForKind.SERIAL, BufferStore(tmp, BufferLoad(A, (j,)), (j,)))
    inner = tir.Allocate(tmp.data, "float32", (n,), tir.const(True), fill)
    body = For(i, 0, 4, ForKind.PARALLEL, inner)
    return prim_func("parallel_heap", [ap], {ap: A}, body)


@pytest.fixture(scope="module")
def functions():
    return _functions()


def _unresolvable(symbols: frozenset[str]) -> list[str]:
    compiler_rt.ensure_helpers()
    threadpool.ensure_pool()
    provided = compiler_rt.PROVIDED_SYMBOLS
    return sorted(s for s in symbols if s not in provided and not llvm.address_of_symbol(s))


@pytest.mark.parametrize("cpu", [*CPUS, "host"])
def test_every_op_and_dtype_references_only_resolvable_symbols(functions, cpu):
    target = "llvm" if cpu == "host" else f"llvm -mcpu={cpu}"
    result = codegen_llvm.build(functions, target)
    undefined = read_elf(result.object_code, target).undefined_symbols
    assert not _unresolvable(undefined), f"{target}: unresolved {_unresolvable(undefined)}"
    if cpu == "x86-64":  # without F16C every float16 op calls the helpers: the matrix covers them
        assert compiler_rt.PROVIDED_SYMBOLS <= undefined
