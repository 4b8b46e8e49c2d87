"""Arithmetic operations a TIR function performs (TVM's estimate_tir_flops).

Every binary arithmetic node counts one operation of its dtype (index arithmetic too, as in
TVM); a loop multiplies its body by the largest value its extent can take; an if or select
counts its condition and the costlier branch, per dtype. A function's "estimated_flops"
attribute replaces the count of its body.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ...error import ArgumentError
from ...ir.module import IRModule
from ..expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    BufferLoad,
    Div,
    FloorDiv,
    FloorMod,
    Max,
    Min,
    Mod,
    Mul,
    PrimExpr,
    Range,
    Select,
    Sub,
)
from ..function import PrimFunc
from ..stmt import Block, BlockRealize, BufferStore, For, IfThenElse, SeqStmt, Stmt

_ARITH = (Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max)
_FREE = (BufferLoad, EQ, NE, LT, LE, GT, GE)
ATTR_ESTIMATED_FLOPS = "estimated_flops"


def _max_with(a: Counter, b: Counter) -> Counter:
    return Counter({k: max(a.get(k, 0), b.get(k, 0)) for k in a.keys() | b.keys()})


class _Flops:
    def __init__(self) -> None:
        from ...arith import POS_INF, Analyzer  # arith imports tir.analysis: import at use

        self.ana, self.pos_inf = Analyzer(), POS_INF

    def expr(self, e: Any) -> Counter:
        out: Counter = Counter()
        if not isinstance(e, PrimExpr) or isinstance(e, _FREE):
            return out  # as in TVM: loads and comparisons cost nothing, nor do their operands
        if isinstance(e, Select):
            out += self.expr(e.condition)
            out += _max_with(self.expr(e.true_value), self.expr(e.false_value))
            return out
        if isinstance(e, _ARITH):
            out[str(e.dtype)] += 1
        for name in e.__dataclass_fields__:
            child = getattr(e, name)
            if isinstance(child, tuple):
                for c in child:
                    out += self.expr(c)
            else:
                out += self.expr(child)
        return out

    def stmt(self, s: Stmt) -> Counter:
        out: Counter = Counter()
        if isinstance(s, SeqStmt):
            for part in s.seq:
                out += self.stmt(part)
        elif isinstance(s, BufferStore):
            out += self.expr(s.value)
        elif isinstance(s, For):
            self.ana.bind(s.loop_var, Range.from_min_extent(s.min, s.extent), allow_override=True)
            bound = self.ana.const_int_bound(s.extent).max_value
            scale = 1 if bound >= self.pos_inf else bound  # unknown extents count once
            out += Counter({k: v * scale for k, v in self.stmt(s.body).items()})
        elif isinstance(s, IfThenElse):
            out += self.expr(s.condition)
            then = self.stmt(s.then_case)
            out += then if s.else_case is None else _max_with(then, self.stmt(s.else_case))
        elif isinstance(s, BlockRealize):
            out += self.stmt(s.block)
        elif isinstance(s, Block):
            if s.init is not None:
                out += self.stmt(s.init)
            out += self.stmt(s.body)
        else:  # let, attr, allocate, assert, evaluate, ...: values then body
            for name in s.__dataclass_fields__:
                child = getattr(s, name)
                out += self.stmt(child) if isinstance(child, Stmt) else self.expr(child)
        return out


def estimate_tir_flops(stmt_or_mod: Any) -> float:
    """Operations of an IRModule's PrimFuncs (or of one statement), summed over dtypes.

    `estimate_tir_flops(IRModule({"main": f}))` is 8.0 for `for i in range(8): a[i] = 2 * a[i]`.
    """
    if isinstance(stmt_or_mod, Stmt):
        return float(sum(_Flops().stmt(stmt_or_mod).values()))
    if isinstance(stmt_or_mod, PrimFunc):
        stmt_or_mod = IRModule({"main": stmt_or_mod})
    if not isinstance(stmt_or_mod, IRModule):
        raise ArgumentError(
            f"estimate_tir_flops: expected an IRModule or a Stmt, got {type(stmt_or_mod).__name__}"
        )
    counter = _Flops()
    total: Counter = Counter()
    given = 0.0
    for _, func in stmt_or_mod.functions_items():
        if not isinstance(func, PrimFunc):
            continue
        attr = (func.attrs or {}).get(ATTR_ESTIMATED_FLOPS)
        if attr is not None:
            given += int(attr)
        else:
            total += counter.stmt(func.body)
    return float(sum(total.values())) + given
