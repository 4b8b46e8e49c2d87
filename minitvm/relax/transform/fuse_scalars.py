"""Scalar constants of fused kernels become immediates.

A 0-d relax constant passed to a `call_tir` (the 0.5, 3.0 and 0.0447 of a tanh GELU, the
1/sqrt(d) of attention) reaches the kernel as a 0-d buffer read on every element: the
simplifier cannot fold through a load, and `pow(x, c[()])` stays a libm call per lane. FuseOps
keeps such constants inside the group (`inlinable_scalars`) and FuseTIR binds them into the
callee as immediates (`bind_scalars`), where `pow` by 2 or 3 becomes products, as torch
computes it (exactly for 2; within an ulp of libm's powf for 3).
"""

from __future__ import annotations

import math
from typing import Any

from ...tir.buffer import Buffer
from ...tir.expr import BufferLoad, Call, FloatImm, PrimExpr
from ...tir.function import PrimFunc
from ...tir.functor import Mutator, post_order_visit
from ...tir.op import const
from ...tir.stmt import Block
from ..expr import Constant

# dtypes whose constants print and code-generate as exact immediates
_SCALAR_DTYPES = frozenset({"float32", "float64", "int32", "int64"})
_POW_BY_PRODUCT = {2.0: 2, 3.0: 3}  # exponent -> factors of x


def scalar_constant(arg: Any) -> PrimExpr | None:
    """The immediate a 0-d finite relax Constant of a plain dtype stands for, else None."""
    if not isinstance(arg, Constant):
        return None
    array = arg.data.numpy()
    if array.shape != () or str(array.dtype) not in _SCALAR_DTYPES:
        return None
    value = array.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return const(value, str(array.dtype))


class _Bind(Mutator):
    """Loads of the 0-d buffers in `values` -> immediates (and their read regions dropped);
    pow by a constant 2 or 3 -> products."""

    def __init__(self, values: dict[int, PrimExpr]):
        super().__init__()
        self.values = values

    def visit_BufferLoad(self, load: BufferLoad) -> Any:
        hit = self.values.get(id(load.buffer))
        if hit is not None and not load.indices:
            return hit
        return self.generic_visit(load)

    def visit_Block(self, block: Block) -> Block:
        block = self.generic_visit(block)
        reads = tuple(r for r in block.reads if id(r.buffer) not in self.values)
        return block.replace(reads=reads) if len(reads) != len(block.reads) else block

    def visit_Call(self, call: Call) -> Any:
        call = self.generic_visit(call)
        if getattr(call.op, "name", None) != "tir.pow" or not call.dtype.is_float:
            return call
        base, exponent = call.args
        times = _POW_BY_PRODUCT.get(exponent.value) if isinstance(exponent, FloatImm) else None
        if times is None or base.dtype != call.dtype:
            return call
        out = base
        for _ in range(times - 1):
            out = out * base
        return out


def _mentions(node: Any, buf: Buffer) -> bool:
    found = []
    post_order_visit(node, lambda n: found.append(n) if n is buf or n is buf.data else None)
    return bool(found)


def bind_scalars(callee: PrimFunc, values: dict[int, PrimExpr]) -> PrimFunc | None:
    """`callee` with its buffer params at positions `values` (-> immediate) read as those
    immediates; None when a param is used other than as a whole-value load (written, passed
    on by address), so it must stay a buffer."""
    cparams = callee.buffer_params()
    table = {id(cparams[k]): v for k, v in values.items()}
    for k, v in values.items():
        if cparams[k].shape or cparams[k].dtype != v.dtype:
            return None
    body = _Bind(table).visit(callee.body)
    if any(_mentions(body, cparams[k]) for k in values):
        return None
    return callee.replace(body=body)


def inlinable_scalars(
    callee: PrimFunc, args: tuple, memo: ScalarMemo | None = None
) -> dict[int, PrimExpr]:
    """Positions of `args` (a call_tir's inputs) holding a scalar constant that the callee
    only reads as a value, with their immediates (`memo`: answers of earlier calls)."""
    values = {k: v for k, a in enumerate(args) if (v := scalar_constant(a)) is not None}
    if not values:
        return values
    if memo is not None:
        return memo.inlinable(callee, values)
    if bind_scalars(callee, values) is None:
        values = {k: v for k, v in values.items() if bind_scalars(callee, {k: v}) is not None}
    return values


class ScalarMemo:
    """`inlinable_scalars` and `bind_scalars` answered once per callee and constants, for one
    pass over a module: a training step calls one shared kernel (a multiply by the learning
    rate) with the same constant from hundreds of groups, and each answer rewrites the kernel.
    It keeps the callees it saw alive, so their ids stay theirs."""

    def __init__(self) -> None:
        self._bound: dict[tuple, tuple[PrimFunc, PrimFunc | None]] = {}

    def bind(self, callee: PrimFunc, values: dict[int, PrimExpr]) -> PrimFunc | None:
        """`bind_scalars(callee, values)`, computed once."""
        key = (id(callee), tuple((k, _bits(v)) for k, v in sorted(values.items())))
        hit = self._bound.get(key)
        if hit is None or hit[0] is not callee:
            hit = (callee, bind_scalars(callee, values))
            self._bound[key] = hit
        return hit[1]

    def inlinable(self, callee: PrimFunc, values: dict[int, PrimExpr]) -> dict[int, PrimExpr]:
        if self.bind(callee, values) is not None:
            return values
        return {k: v for k, v in values.items() if self.bind(callee, {k: v}) is not None}


def _bits(value: PrimExpr) -> tuple:
    """An immediate's dtype and exact value (-0.0 apart from 0.0)."""
    v = value.value
    return str(value.dtype), float(v).hex() if isinstance(v, float) else v


__all__ = ["ScalarMemo", "bind_scalars", "inlinable_scalars", "scalar_constant"]
