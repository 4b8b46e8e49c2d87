"""NarrowDataType(target_bits): give index variables the narrowest integer type that holds
every expression they occur in.

A loop, block or thread variable `v` is narrowed to `target_bits` when each integer
expression containing `v` (within the same buffer index or statement) has constant bounds
that fit in `int<target_bits>`; otherwise it keeps its type. Constants and integer casts
follow the same rule; buffer indices are judged on their own (an index inside `A[...]`
does not widen the expression around the load). The rewrite then retypes those variables,
constants and casts and promotes operands so every operation is well typed again.
Types are only ever narrowed, never widened.
"""

from __future__ import annotations

from typing import Any

from ..buffer import Buffer
from ..expr import BinaryOpExpr, BufferLoad, Cast, IntImm, PrimExpr, Range, Var
from ..expr_build import cast
from ..function import PrimFunc
from ..functor import Mutator, Visitor
from ..stmt import AttrStmt, Block, BlockRealize, For
from ._pass import prim_func_pass


def _is_scalar_int(e: Any) -> bool:
    return isinstance(e, PrimExpr) and e.dtype.is_int and e.dtype.lanes == 1


class _Bits(Visitor):
    """For each index variable, constant and cast: the bits it needs (`need`, by id)."""

    def __init__(self, target: int) -> None:
        from ...arith import Analyzer

        self.ana = Analyzer()
        self.target = target
        self.bits = target  # the widest type the expressions around the current one need
        self.extent_bits: dict[int, int] = {}  # id(index var) -> bits of its extent
        self.need: dict[int, int] = {}
        self.lo, self.hi = -(2 ** (target - 1)), 2 ** (target - 1) - 1

    def visit(self, n: Any) -> None:
        if not _is_scalar_int(n):
            super().visit(n)
            return
        fits = n.dtype.bits <= self.target
        if not fits:
            bound = self.ana.const_int_bound(n)
            fits = self.lo <= bound.min_value and bound.max_value <= self.hi
        saved = self.bits
        self.bits = max(self.bits, self.target if fits else 64)
        super().visit(n)
        self.bits = saved

    def _define(self, var: Var, rng: Range) -> None:
        self.ana.bind(var, rng, allow_override=True)
        self.extent_bits[id(var)] = rng.extent.dtype.bits

    def visit_For(self, loop: For) -> None:
        self._define(loop.loop_var, Range.from_min_extent(loop.min, loop.extent))
        self.generic_visit(loop)

    def visit_Block(self, block: Block) -> None:
        for iv in block.iter_vars:
            self._define(iv.var, iv.dom)
        self.generic_visit(block)

    def visit_AttrStmt(self, attr: AttrStmt) -> None:
        iv = attr.node
        if attr.attr_key in ("thread_extent", "virtual_thread") and hasattr(iv, "var"):
            self._define(iv.var, Range.from_min_extent(0, attr.value))
        self.generic_visit(attr)

    def visit_BufferLoad(self, load: BufferLoad) -> None:
        saved, self.bits = self.bits, self.target
        for i in load.indices:
            self.visit(i)
        self.bits = saved

    def visit_Buffer(self, buf: Buffer) -> None:
        pass  # shapes keep their type

    def _note(self, node: Any, bits: int) -> None:
        self.need[id(node)] = max(self.need.get(id(node), 0), min(bits, self.bits))

    def visit_Var(self, var: Var) -> None:
        if id(var) in self.extent_bits:
            self._note(var, self.extent_bits[id(var)])

    def visit_IntImm(self, imm: IntImm) -> None:
        if imm.dtype.is_int:
            self._note(imm, imm.dtype.bits)

    def visit_Cast(self, c: Cast) -> None:
        if c.dtype.is_int:
            self._note(c, c.dtype.bits)
        self.generic_visit(c)


class _Retype(Mutator):
    def __init__(self, need: dict[int, int]) -> None:
        super().__init__()
        self.need = need

    def _dtype(self, node: Any) -> Any:
        bits = self.need.get(id(node))
        return node.dtype if bits is None else node.dtype.with_bits(bits)

    def visit_Var(self, var: Var) -> Any:
        dtype = self._dtype(var)
        return var if dtype == var.dtype else Var(var.name, dtype)

    def visit_IntImm(self, imm: IntImm) -> Any:
        dtype = self._dtype(imm)
        return imm if dtype == imm.dtype else IntImm(dtype, imm.value)

    def visit_Cast(self, c: Cast) -> Any:
        value, dtype = self.visit(c.value), self._dtype(c)
        if value.dtype == dtype:
            return value
        return c if value is c.value and dtype == c.dtype else Cast(dtype, value)

    def visit_BinaryOpExpr(self, e: BinaryOpExpr) -> Any:
        a, b = self.visit(e.a), self.visit(e.b)
        if a is e.a and b is e.b:
            return e
        return type(e)(a, b)  # dtype inferred again; the narrower operand is promoted

    def visit_Buffer(self, buf: Buffer) -> Any:
        return buf

    def visit_For(self, loop: For) -> Any:
        loop = self.generic_visit(loop)
        dtype = loop.loop_var.dtype
        return loop.replace(min=cast(dtype, loop.min), extent=cast(dtype, loop.extent))

    def visit_Block(self, block: Block) -> Any:
        block = self.generic_visit(block)
        ivs = tuple(
            iv.replace(
                dom=Range.from_min_extent(
                    cast(iv.var.dtype, iv.dom.min), cast(iv.var.dtype, iv.dom.extent)
                )
            )
            for iv in block.iter_vars
        )
        return (
            block.replace(iter_vars=ivs)
            if any(a is not b for a, b in zip(ivs, block.iter_vars))
            else block
        )

    def visit_BlockRealize(self, realize: BlockRealize) -> Any:
        realize = self.generic_visit(realize)
        values = tuple(
            cast(iv.var.dtype, v) for iv, v in zip(realize.block.iter_vars, realize.iter_values)
        )
        same = all(a is b for a, b in zip(values, realize.iter_values))
        return realize if same else realize.replace(iter_values=values)

    def visit_AttrStmt(self, attr: AttrStmt) -> Any:
        attr = self.generic_visit(attr)
        iv = attr.node
        if attr.attr_key in ("thread_extent", "virtual_thread") and hasattr(iv, "var"):
            return attr.replace(value=cast(iv.var.dtype, attr.value))
        return attr


def narrow_datatype(func: PrimFunc, target_bits: int = 32) -> PrimFunc:
    """`func` with index variables narrowed to `target_bits` where their values fit."""
    bits = _Bits(target_bits)
    bits.visit(func.body)
    return func.replace(body=_Retype(bits.need).visit(func.body))


def NarrowDataType(target_bits: int = 32) -> Any:
    """TVM's pass object: `tvm.tir.transform.NarrowDataType(32)(mod)`."""
    return prim_func_pass(lambda f: narrow_datatype(f, target_bits), "NarrowDataType")()
