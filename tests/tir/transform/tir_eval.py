"""A tiny reference interpreter of TIR (blocks or lowered loops) for pass tests: before and after
a pass must compute the same numbers. Vectors are numpy arrays; sizes must stay small."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.function import PrimFunc

_BIN = {
    E.Add: np.add,
    E.Sub: np.subtract,
    E.Mul: np.multiply,
    E.Min: np.minimum,
    E.Max: np.maximum,
    E.EQ: np.equal,
    E.NE: np.not_equal,
    E.LT: np.less,
    E.LE: np.less_equal,
    E.GT: np.greater,
    E.GE: np.greater_equal,
    E.And: np.logical_and,
    E.Or: np.logical_or,
    E.FloorDiv: np.floor_divide,
    E.FloorMod: np.mod,
}
_CALL = {
    "tir.exp": np.exp,
    "tir.log": np.log,
    "tir.sqrt": np.sqrt,
    "tir.tanh": np.tanh,
    "tir.fabs": np.abs,
    "tir.likely": lambda x: x,
    "tir.sigmoid": lambda x: 1 / (1 + np.exp(-x)),
}


class Interp:
    def __init__(self) -> None:
        self.env: dict[int, Any] = {}
        self.mem: dict[int, np.ndarray] = {}

    def ev(self, e: Any) -> Any:
        t = type(e)
        if isinstance(e, E.Var):
            return self.env[id(e)]
        if t in (E.IntImm, E.FloatImm):
            return e.dtype.numpy_dtype().type(e.value) if not e.dtype.is_bool else bool(e.value)
        if t in _BIN:
            return _BIN[t](self.ev(e.a), self.ev(e.b))
        if t is E.Div:
            a, b = self.ev(e.a), self.ev(e.b)
            return a / b if e.dtype.is_float else np.trunc(a / b).astype(e.dtype.numpy_dtype())
        if t is E.Not:
            return np.logical_not(self.ev(e.a))
        if t is E.Cast:
            v = self.ev(e.value)
            return np.asarray(v).astype(e.dtype.element_of().numpy_dtype())[()]
        if t is E.Select:
            return np.where(self.ev(e.condition), self.ev(e.true_value), self.ev(e.false_value))
        if t is E.Ramp:
            return self.ev(e.base) + self.ev(e.stride) * np.arange(e.lanes)
        if t is E.Broadcast:
            return np.full(e.lanes, self.ev(e.value))
        if t is E.BufferLoad:
            off = self.offset(e.buffer, [self.ev(i) for i in e.indices])
            return self.mem[id(e.buffer.data)][off]
        if t is E.Let:
            self.env[id(e.var)] = self.ev(e.value)
            return self.ev(e.body)
        if t is E.Call:
            if e.op.name == "tir.if_then_else":
                c = self.ev(e.args[0])
                return self.ev(e.args[1]) if c else self.ev(e.args[2])
            return _CALL[e.op.name](*[self.ev(a) for a in e.args])
        raise NotImplementedError(t.__name__)

    def offset(self, buf: Any, idx: list) -> Any:
        if buf.strides:
            off = sum(i * self.ev(s) for i, s in zip(idx, buf.strides))
        else:
            off = 0
            for i, dim in zip(idx, buf.shape):
                off = off * self.ev(dim) + i
        return off + self.ev(buf.elem_offset)

    def run(self, s: Any) -> None:
        t = type(s)
        if t is S.SeqStmt:
            for x in s.seq:
                self.run(x)
        elif t is S.For:
            lo, ext = int(self.ev(s.min)), int(self.ev(s.extent))
            for v in range(lo, lo + ext):
                self.env[id(s.loop_var)] = v
                self.run(s.body)
        elif t is S.IfThenElse:
            if self.ev(s.condition):
                self.run(s.then_case)
            elif s.else_case is not None:
                self.run(s.else_case)
        elif t is S.LetStmt:
            self.env[id(s.var)] = self.ev(s.value)
            self.run(s.body)
        elif t is S.Allocate:
            n = math.prod(int(self.ev(x)) for x in s.extents)
            self.mem[id(s.buffer_var)] = np.full(n, np.nan).astype(s.dtype.numpy_dtype())
            self.run(s.body)
        elif t is S.DeclBuffer:
            self.run(s.body)
        elif t is S.BufferStore:
            off = self.offset(s.buffer, [self.ev(i) for i in s.indices])
            self.mem[id(s.buffer.data)][off] = self.ev(s.value)
        elif t is S.Evaluate:
            self.ev(s.value)
        elif t is S.BlockRealize:
            self.block(s)
        else:
            raise NotImplementedError(t.__name__)

    def block(self, r: S.BlockRealize) -> None:
        if not self.ev(r.predicate):
            return
        b = r.block
        for iv, v in zip(b.iter_vars, r.iter_values):
            self.env[id(iv.var)] = self.ev(v)
        for buf in b.alloc_buffers:
            n = math.prod(int(self.ev(x)) for x in buf.shape)
            self.mem[id(buf.data)] = np.full(n, np.nan).astype(buf.dtype.numpy_dtype())
        first = all(
            self.env[id(iv.var)] == self.ev(iv.dom.min)
            for iv in b.iter_vars
            if iv.iter_type == E.IterType.CommReduce
        )
        if b.init is not None and first:
            self.run(b.init)
        self.run(b.body)


def run_tir(func: PrimFunc, *arrays: np.ndarray, sym: dict | None = None) -> list[np.ndarray]:
    """Run `func` on copies of `arrays` (one per buffer param, in order); returns the copies."""
    it = Interp()
    outs = [np.array(a, copy=True) for a in arrays]
    bufs = func.buffer_params()
    for v, value in (sym or {}).items():
        it.env[id(v)] = value
    for buf, arr in zip(bufs, outs):
        it.mem[id(buf.data)] = arr.reshape(-1)
        for dim, n in zip(buf.shape, arr.shape):
            if isinstance(dim, E.Var):
                it.env[id(dim)] = n
    it.run(func.body)
    return outs
