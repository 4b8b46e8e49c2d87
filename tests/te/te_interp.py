"""A slow reference interpreter for block-form TIR (what te.create_prim_func returns).

It runs a PrimFunc on numpy arrays with Python loops, so the TE tests can check the meaning
of the IR without the compiler. Only for small sizes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from minitvm import tir
from minitvm.tir import expr as E
from minitvm.tir import stmt as S


def _np(dtype) -> np.dtype:
    return dtype.numpy_dtype()


def _trunc_div(a, b):
    q = abs(int(a)) // abs(int(b))
    return q if (a >= 0) == (b > 0) else -q


_BINARY = {
    E.Add: lambda a, b: a + b,
    E.Sub: lambda a, b: a - b,
    E.Mul: lambda a, b: a * b,
    E.FloorDiv: lambda a, b: a // b,
    E.FloorMod: lambda a, b: a % b,
    E.Min: lambda a, b: min(a, b),
    E.Max: lambda a, b: max(a, b),
    E.EQ: lambda a, b: a == b,
    E.NE: lambda a, b: a != b,
    E.LT: lambda a, b: a < b,
    E.LE: lambda a, b: a <= b,
    E.GT: lambda a, b: a > b,
    E.GE: lambda a, b: a >= b,
    E.And: lambda a, b: bool(a) and bool(b),
    E.Or: lambda a, b: bool(a) or bool(b),
}

_CALLS = {
    "tir.exp": np.exp,
    "tir.log": np.log,
    "tir.sqrt": np.sqrt,
    "tir.tanh": np.tanh,
    "tir.sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tir.fabs": np.abs,
    "tir.floor": np.floor,
    "tir.ceil": np.ceil,
    "tir.erf": lambda x: type(x)(math.erf(x)),
    "tir.pow": np.power,
    "tir.round": np.round,
    "tir.trunc": np.trunc,
    "tir.exp2": np.exp2,
    "tir.log2": np.log2,
    "tir.log10": np.log10,
    "tir.log1p": np.log1p,
    "tir.sin": np.sin,
    "tir.cos": np.cos,
    "tir.rsqrt": lambda x: 1 / np.sqrt(x),
    "tir.likely": lambda x: x,
}


class Interpreter:
    def __init__(self) -> None:
        self.env: dict[int, Any] = {}
        self.arrays: dict[int, np.ndarray] = {}

    # --- expressions ---------------------------------------------------------
    def ev(self, e: Any) -> Any:
        t = type(e)
        if t is E.IntImm:
            return bool(e.value) if e.dtype.is_bool else e.value
        if t is E.FloatImm:
            return _np(e.dtype).type(e.value)
        if isinstance(e, E.Var):
            return self.env[id(e)]
        if t in _BINARY:
            out = _BINARY[t](self.ev(e.a), self.ev(e.b))
            return self._as(out, e.dtype)
        if t is E.Div:
            a, b = self.ev(e.a), self.ev(e.b)
            return self._as(a / b if e.dtype.is_float else _trunc_div(a, b), e.dtype)
        if t is E.Mod:
            a, b = self.ev(e.a), self.ev(e.b)
            return a - _trunc_div(a, b) * b
        if t is E.Not:
            return not self.ev(e.a)
        if t is E.Select:
            c, x, y = self.ev(e.condition), self.ev(e.true_value), self.ev(e.false_value)
            return x if c else y
        if t is E.Cast:
            return self._as(self.ev(e.value), e.dtype)
        if t is E.BufferLoad:
            return self.arrays[id(e.buffer)][tuple(int(self.ev(i)) for i in e.indices)]
        if t is E.Let:
            self.env[id(e.var)] = self.ev(e.value)
            return self.ev(e.body)
        if t is E.Call:
            name = e.op.name
            if name == "tir.if_then_else":
                cond = self.ev(e.args[0])
                return self.ev(e.args[1] if cond else e.args[2])
            out = _CALLS[name](*(self.ev(a) for a in e.args))
            return self._as(out, e.dtype)
        raise NotImplementedError(f"tir_eval: expression {t.__name__}")

    @staticmethod
    def _as(value: Any, dtype) -> Any:
        if dtype.is_bool:
            return bool(value)
        if dtype.is_float:
            return _np(dtype).type(value)
        return int(value)

    # --- statements ----------------------------------------------------------
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
        elif t is S.BlockRealize:
            if not self.ev(s.predicate):
                return
            values = [self.ev(v) for v in s.iter_values]
            block = s.block
            for iv, v in zip(block.iter_vars, values):
                self.env[id(iv.var)] = v
            for buf in block.alloc_buffers:
                shape = tuple(int(self.ev(d)) for d in buf.shape)
                self.arrays[id(buf)] = np.zeros(shape, _np(buf.dtype))
            if block.init is not None:
                first = all(
                    self.env[id(iv.var)] == self.ev(iv.dom.min)
                    for iv in block.iter_vars
                    if iv.iter_type == tir.IterType.CommReduce
                )
                if first:
                    self.run(block.init)
            self.run(block.body)
        elif t is S.BufferStore:
            arr = self.arrays[id(s.buffer)]
            arr[tuple(int(self.ev(i)) for i in s.indices)] = self.ev(s.value)
        elif t is S.IfThenElse:
            if self.ev(s.condition):
                self.run(s.then_case)
            elif s.else_case is not None:
                self.run(s.else_case)
        elif t is S.LetStmt:
            self.env[id(s.var)] = self.ev(s.value)
            self.run(s.body)
        elif t is S.Evaluate:
            self.ev(s.value)
        else:
            raise NotImplementedError(f"tir_eval: statement {t.__name__}")


def run_prim_func(func: tir.PrimFunc, *args: Any) -> None:
    """Run `func` on numpy arrays (buffers, written in place) and Python scalars (scalar params)."""
    interp = Interpreter()
    assert len(args) == len(func.params), (len(args), len(func.params))
    for p, a in zip(func.params, args):
        buf = func.buffer_map.get(p)
        if buf is None:
            interp.env[id(p)] = a
            continue
        assert a.dtype == _np(buf.dtype), (buf.name, a.dtype, buf.dtype)
        assert a.ndim == len(buf.shape), (buf.name, a.shape)
        for dim, size in zip(buf.shape, a.shape):
            if isinstance(dim, E.Var):
                seen = interp.env.setdefault(id(dim), size)
                assert seen == size, f"{buf.name}: {dim.name} is {seen} and {size}"
            else:
                assert int(interp.ev(dim)) == size, (buf.name, a.shape)
        interp.arrays[id(buf)] = a
    interp.run(func.body)
