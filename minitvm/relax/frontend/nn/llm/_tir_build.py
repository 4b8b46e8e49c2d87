"""A small builder for the paged KV cache's TIR kernels (tir.ir_builder underneath; the relax
floor cannot use TVMScript, which sits above it), and the pieces the attention kernels share:
Llama RoPE of one element and the online-softmax attention of one query row.

Conventions of every attention kernel here: scores are accumulated in float32, in base 2 (scaled
by sm_scale * log2(e)), so `lse` is the row's log2-sum-exp2 as `_merge_state_inplace_cpu`
expects; a row that sees no key writes zeros. RoPE (rotary_mode 1) follows Llama: for position
p, element j < d/2 pairs with j + d/2 and turns by p * rope_scale / rope_theta ** (2j / d); the
rotated value is rounded to the data dtype, as the cache's numpy path does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..... import tir
from .....error import ArgumentError
from .....tir import ir_builder
from .....tir.expr import Var
from .....tir.function import PrimFunc
from .....tir.stmt import Block, BlockRealize, BufferStore

_LOG2E = math.log2(math.e)
_NEG = -3.0e38  # below any score: the running max starts here


def f32(x: Any) -> Any:
    return tir.Cast("float32", x)


class Kernel:
    """Parameters (buffers and scalars, in order), then a body emitted through `ib`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.params: list = []
        self.buffer_map: dict = {}
        self.ib = ir_builder.create()

    def buffer(self, name: str, shape: tuple, dtype: str) -> Any:
        handle = Var(f"var_{name}", "handle")
        buf = tir.decl_buffer(shape, dtype, name=name)
        self.params.append(handle)
        self.buffer_map[handle] = buf
        return buf

    def scalar(self, name: str, dtype: str) -> Var:
        var = Var(name, dtype)
        self.params.append(var)
        return var

    def store(self, buf: Any, index: tuple, value: Any) -> None:
        self.ib.emit(BufferStore(buf, tir.Cast(buf.dtype, value), tuple(index)))

    def loop(self, extent: Any, name: str):
        dtype = str(getattr(extent, "dtype", "int32"))
        return self.ib.for_range(0, extent, name=name, dtype=dtype)

    @contextmanager
    def block(self, name: str, **scratch: tuple) -> Iterator[dict]:
        """A block whose local buffers are `scratch` (name=(shape, dtype))."""
        outer, self.ib = self.ib, ir_builder.create()
        bufs = {n: tir.decl_buffer(shape, dtype, name=n) for n, (shape, dtype) in scratch.items()}
        yield bufs
        inner, self.ib = self.ib, outer
        block = Block((), (), (), name, inner.get(), alloc_buffers=tuple(bufs.values()))
        self.ib.emit(BlockRealize((), True, block))

    def func(self) -> PrimFunc:
        root = BlockRealize((), True, Block((), (), (), "root", self.ib.get()))
        attrs = {"tir.noalias": True}  # no global_symbol: built alone it is "main", as in TVM
        return PrimFunc(self.params, root, buffer_map=self.buffer_map, attrs=attrs)


def size_vars(dtype: str, *names: str) -> list:
    return [tir.SizeVar(n, dtype) for n in names]


def check_rope(rope_scaling: dict | None, what: str) -> None:
    rope_type = (rope_scaling or {}).get("rope_type", "default")
    if rope_type not in ("default", None):
        raise ArgumentError(
            f"{what}: rope_scaling type {rope_type!r} is not supported; only the default RoPE "
            "(with rope_scale) is"
        )


def groups(h_q: int, h_kv: int, what: str) -> int:
    if h_q % h_kv:
        raise ArgumentError(f"{what}: h_q {h_q} is not a multiple of h_kv {h_kv}")
    return h_q // h_kv


def rope(buf: Any, idx: tuple, pos: Any, dim: int, theta: Any, scale: Any, dtype: str) -> Any:
    """Element idx[-1] of buf rotated for position `pos` (float32, rounded to dtype)."""
    j = idx[-1]
    half = dim // 2
    partner = tir.if_then_else(j < half, j + half, j - half)  # always in range
    sign = tir.if_then_else(j < half, tir.const(-1.0, "float32"), tir.const(1.0, "float32"))
    exponent = f32((j * 2) % dim) / tir.const(float(dim), "float32")
    angle = f32(pos) * scale / tir.pow(theta, exponent)
    x, y = f32(buf[idx]), f32(buf[(*idx[:-1], partner)])
    return f32(tir.Cast(dtype, tir.cos(angle) * x + sign * tir.sin(angle) * y))


def attend_row(
    k: Kernel,
    *,
    d_qk: int,
    d_v: int,
    query: Callable[[Any], Any],
    n_keys: Any,
    visible: Callable[[Any], Any] | None,
    locate: Callable[[Any, dict], None],
    key: Callable[[Any, Any, dict], Any],
    value: Callable[[Any, Any, dict], Any],
    scale: Any,
    out: Callable[[Any, Any], None],
    lse: Callable[[Any], None],
    int_scratch: int = 2,
) -> None:
    """Emit one query row's attention as a block: query(j) is the (rotated) query, keys r of
    n_keys are read by key(r, j, s) / value(r, j, s) after locate(r, s) filled s["loc"]; only
    keys with visible(r) count; out(j, o) and lse(x) store the results."""
    with k.block(
        "attn",
        qf=((d_qk,), "float32"),
        acc=((d_v,), "float32"),
        st=((5,), "float32"),  # running max, running sum, score, rescale, weight
        loc=((int_scratch,), "int32"),
    ) as s:
        qf, acc, st = s["qf"], s["acc"], s["st"]
        with k.loop(d_qk, "j") as j:
            k.store(qf, (j,), query(j))
        with k.loop(d_v, "j") as j:
            k.store(acc, (j,), 0.0)
        k.store(st, (0,), _NEG)
        k.store(st, (1,), 0.0)
        with k.loop(n_keys, "r") as r:
            scope = k.ib.if_scope(visible(r)) if visible is not None else k.ib.new_scope()
            with scope:
                locate(r, s)
                k.store(st, (2,), 0.0)
                with k.loop(d_qk, "j") as j:
                    k.store(st, (2,), st[2] + qf[j] * key(r, j, s))
                k.store(st, (2,), st[2] * scale * tir.const(_LOG2E, "float32"))
                new_max = tir.max(st[0], st[2])
                k.store(st, (3,), tir.exp2(st[0] - new_max))
                k.store(st, (4,), tir.exp2(st[2] - new_max))
                k.store(st, (0,), new_max)
                k.store(st, (1,), st[1] * st[3] + st[4])
                with k.loop(d_v, "j") as j:
                    k.store(acc, (j,), acc[j] * st[3] + st[4] * value(r, j, s))
        zero = tir.const(0.0, "float32")
        with k.loop(d_v, "j") as j:
            out(j, tir.if_then_else(st[1] > zero, acc[j] / st[1], zero))
        lse(st[0] + tir.log2(tir.max(st[1], tir.const(1e-30, "float32"))))
