"""Relax analyses TVM code calls by name (`relax.analysis.remove_all_unused`)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from ..error import MiniTVMError
from ..ir.module import GlobalVar, IRModule
from ..ir.op import Op
from ..tir.expr import PrimExpr, cast
from ..tir.expr import Var as TirVar
from ..tir.functor import post_order_visit
from . import expr as rx
from . import struct_info as si
from .transform.dead_code_elimination import dead_code_elimination, remove_unused_bindings

_LOG = logging.getLogger("minitvm.relax.analysis")


def remove_all_unused(func: rx.Function | IRModule) -> rx.Function | IRModule:
    """Drop bindings whose variable is never used (a Function), or also unreachable functions
    (an IRModule). Calls in impure functions are kept: they may have side effects."""
    if isinstance(func, rx.Function):
        return remove_unused_bindings(func)
    if isinstance(func, IRModule):
        return dead_code_elimination(func)
    raise MiniTVMError(
        f"relax.analysis.remove_all_unused: expected a relax.Function or an IRModule, got "
        f"{type(func).__name__}"
    )


# ----------------------------------------------------------------------------- well_formed


def _tir_vars(node: Any) -> Iterator[TirVar]:
    found: list[TirVar] = []
    post_order_visit(node, lambda n: found.append(n) if isinstance(n, TirVar) else None)
    return iter(found)


def _dim_text(dim: Any) -> str:
    return str(dim.value) if hasattr(dim, "value") and isinstance(dim.value, int) else str(dim)


def _call_tir_tensors(value: Any) -> list:
    """The TensorStructInfos of call_tir's inputs (a Tuple or one value) or of its out_sinfo."""
    if isinstance(value, rx.Tuple):
        return [f.struct_info for f in value.fields]
    sinfo = value if isinstance(value, si.StructInfo) else value.struct_info
    return list(sinfo.fields) if isinstance(sinfo, si.TupleStructInfo) else [sinfo]


def _call_tir_mismatch(call: rx.Call, mod: IRModule) -> str | None:
    """Why a call_tir's tensors cannot be the callee's buffers (TVM's well-formed rule), or None.

    Each input, then each output, is matched with the PrimFunc's next buffer: the ranks and
    dtypes must agree, and every dim must equal the buffer's dim once the buffer's own symbolic
    dims are bound by the tensors before it. Only a provable difference is reported."""
    from ..arith import Analyzer
    from ..tir.stmt_functor import substitute

    gv = call.args[0] if call.args else None
    if not isinstance(gv, GlobalVar) or gv.name_hint not in mod or not call.sinfo_args:
        return None
    prim = mod[gv]
    buffers = [prim.buffer_map[p] for p in prim.params if p in prim.buffer_map]
    tensors = _call_tir_tensors(call.args[1]) + _call_tir_tensors(call.sinfo_args[0])
    if len(tensors) != len(buffers) or not all(isinstance(t, si.TensorStructInfo) for t in tensors):
        return None  # counts are the VM build's check (check_call_tir_arity)
    bound: dict = {}
    analyzer = Analyzer()
    for n, (t, buf) in enumerate(zip(tensors, buffers)):
        what = f"call_tir of '{gv.name_hint}': tensor {n} for buffer '{buf.name}'"
        if t.ndim != -1 and t.ndim != len(buf.shape):
            return f"{what} has {t.ndim} dims, the buffer {len(buf.shape)}"
        if t.dtype is not None and t.dtype != buf.dtype:
            return f"{what} has dtype {t.dtype}, the buffer {buf.dtype}"
        for k, (have, want) in enumerate(zip(t.shape or (), buf.shape)):
            if isinstance(want, TirVar) and want not in bound:
                bound[want] = have
                continue
            diff = analyzer.simplify(cast("int64", substitute(want, bound)) - cast("int64", have))
            if getattr(diff, "value", 0) != 0:
                want = substitute(want, bound)
                return f"{what}: dim {k} is {_dim_text(have)}, the buffer's is {_dim_text(want)}"
    return None


class _WellFormed:
    """Collects the reasons an IRModule or Function is not well formed (empty list: it is).

    The rules (TVM's): every Var is defined once in the whole module and before use, in a
    scope that reaches the use (a SeqExpr's bindings end with it; DataflowVars end with their
    dataflow block and are defined only inside one); GlobalVars name functions of the module
    and match their `global_symbol`; symbolic (tir) variables are defined by a function's
    parameters or a MatchCast of the same function before use; function bodies and If branches
    are SeqExprs; no If inside a dataflow block; a call_tir's tensors fit its PrimFunc's buffers
    (`_call_tir_mismatch`).

    Unlike TVM, nested expressions (a call as another call's argument) are well formed: minitvm's
    parser keeps them and every pass accepts them, so A-normal form is not required.
    """

    def __init__(self, mod: IRModule | None):
        self.mod = mod
        self.errors: list[str] = []
        self.defined: set[int] = set()  # ids of every relax Var bound anywhere (SSA)
        self.scopes: list[set[int]] = []  # visible relax Vars
        self.tir_scopes: list[set[int]] = []  # visible symbolic vars
        self.dataflow: set[int] | None = None  # DataflowVars of the open dataflow block
        self.where = ""

    def fail(self, message: str) -> None:
        self.errors.append(f"{self.where}: {message}" if self.where else message)

    def visible(self, v: Any, scopes: list[set[int]]) -> bool:
        return any(id(v) in scope for scope in scopes)

    # -- definitions
    def define_var(self, v: rx.Var) -> None:
        if id(v) in self.defined:
            self.fail(f"variable '{v.name_hint}' is defined more than once")
        self.defined.add(id(v))
        if isinstance(v, rx.DataflowVar):
            if self.dataflow is None:
                self.fail(f"DataflowVar '{v.name_hint}' is defined outside a dataflow block")
            else:
                self.dataflow.add(id(v))
        else:
            self.scopes[-1].add(id(v))
        self.check_tir_use(v.struct_info, f"the struct info of '{v.name_hint}'")

    def define_tir(self, node: Any) -> None:
        for tv in _tir_vars(node):
            self.tir_scopes[-1].add(id(tv))

    def check_tir_use(self, node: Any, what: str) -> None:
        for tv in _tir_vars(node):
            if not self.visible(tv, self.tir_scopes):
                self.fail(f"symbolic variable '{tv.name}' in {what} is used before its definition")
                self.tir_scopes[-1].add(id(tv))  # report each once

    # -- functions
    def function(self, func: rx.Function, name: str | None) -> None:
        symbol = func.attrs.get("global_symbol")
        if name is not None and symbol is not None and symbol != name:
            self.fail(f"global_symbol {symbol!r} differs from the GlobalVar name {name!r}")
        self.scopes.append(set())
        self.tir_scopes.append(set())
        try:
            for p in func.params:
                self.define_tir(p.struct_info)
            for p in func.params:
                self.define_var(p)
            if not isinstance(func.body, rx.SeqExpr):
                self.fail("the function body is not a SeqExpr (normalize the function)")
            self.expr(func.body)
        finally:
            self.scopes.pop()
            self.tir_scopes.pop()

    # -- expressions
    def use(self, e: Any) -> None:
        """An expression in an argument position."""
        self.expr(e)

    def expr(self, e: Any) -> None:
        if isinstance(e, rx.DataflowVar):
            if self.dataflow is None or id(e) not in self.dataflow:
                self.fail(f"DataflowVar '{e.name_hint}' is used outside its dataflow block")
        elif isinstance(e, rx.Var):
            if not self.visible(e, self.scopes):
                self.fail(f"variable '{e.name_hint}' is used before its definition")
        elif isinstance(e, GlobalVar):
            if self.mod is not None and e.name_hint not in self.mod:
                self.fail(f"GlobalVar '{e.name_hint}' names no function of the module")
        elif isinstance(e, rx.Tuple):
            for f in e.fields:
                self.use(f)
        elif isinstance(e, rx.TupleGetItem):
            self.use(e.tuple_value)
        elif isinstance(e, rx.Call):
            if not isinstance(e.op, Op | rx.ExternFunc):
                self.use(e.op)
            if isinstance(e.op, Op) and e.op.name == "relax.call_tir" and self.mod is not None:
                problem = _call_tir_mismatch(e, self.mod)
                if problem:
                    self.fail(problem)
            for a in e.args:
                self.use(a)
            for sinfo in e.sinfo_args:
                self.check_tir_use(sinfo, "the struct info arguments of a call")
        elif isinstance(e, rx.ShapeExpr | rx.PrimValue):
            self.check_tir_use(e, type(e).__name__)
        elif isinstance(e, rx.If):
            self.if_expr(e)
        elif isinstance(e, rx.SeqExpr):
            self.seq(e)
        elif isinstance(e, rx.Function):
            self.scopes.append(set())  # a nested function sees the enclosing scopes
            try:
                self.function(e, None)
            finally:
                self.scopes.pop()

    def if_expr(self, e: rx.If) -> None:
        if self.dataflow is not None:
            self.fail("an If appears inside a dataflow block; dataflow blocks hold no control flow")
        self.use(e.cond)
        for branch in (e.true_branch, e.false_branch):
            if not isinstance(branch, rx.SeqExpr):
                self.fail("an If branch is not a SeqExpr (normalize the function)")
            self.scopes.append(set())
            try:
                self.expr(branch)
            finally:
                self.scopes.pop()

    def seq(self, e: rx.SeqExpr) -> None:
        self.scopes.append(set())
        try:
            for block in e.blocks:
                outer = self.dataflow
                self.dataflow = set() if isinstance(block, rx.DataflowBlock) else None
                try:
                    for b in block.bindings:
                        self.binding(b)
                finally:
                    self.dataflow = outer
            self.expr(e.body)
        finally:
            self.scopes.pop()

    def binding(self, b: Any) -> None:
        self.expr(b.value)
        if isinstance(b, rx.MatchCast):
            self.define_tir(b.struct_info)
        elif not isinstance(b, rx.VarBinding):
            self.fail(f"unknown binding kind {type(b).__name__}")
        self.define_var(b.var)


def well_formed(obj: IRModule | rx.Function, check_struct_info: bool = True) -> bool:
    """Whether a relax IRModule or Function is well formed (the rules: `_WellFormed`).

    Each violation is logged as a warning on the `minitvm.relax.analysis` logger. In minitvm
    every expression's struct info is derived, never missing, so `check_struct_info` adds no
    further checks.
    """
    errors = well_formed_errors(obj)
    for message in errors:
        _LOG.warning("not well formed: %s", message)
    return not errors


def well_formed_errors(obj: IRModule | rx.Function) -> list[str]:
    """The reasons `well_formed(obj)` is False, one line each (an empty list when it is True)."""
    if isinstance(obj, rx.Function):
        checker = _WellFormed(None)
        checker.where = str(obj.attrs.get("global_symbol", "<function>"))
        checker.function(obj, None)
        return checker.errors
    if not isinstance(obj, IRModule):
        raise MiniTVMError(
            f"relax.analysis.well_formed: expected an IRModule or a relax.Function, got "
            f"{type(obj).__name__}"
        )
    checker = _WellFormed(obj)
    for gv, func in obj.functions_items():
        if isinstance(func, rx.Function):
            checker.where = gv.name_hint
            checker.function(func, gv.name_hint)
    return checker.errors


# ----------------------------------------------------------------------------- struct_info_lca


def _same(a: Any, b: Any) -> bool:
    from ..ir.structural import structural_equal

    return structural_equal(a, b, map_free_vars=False)


def struct_info_lca(lhs: si.StructInfo, rhs: si.StructInfo) -> si.StructInfo:
    """The most specific struct info that both `lhs` and `rhs` are instances of.

    Example: the LCA of `R.Tensor((2, 3), "float32")` and `R.Tensor((4, 3), "float32")` is
    `R.Tensor(ndim=2, dtype="float32")`; of a tensor and a tuple, `R.Object`.
    """
    for name, value in (("lhs", lhs), ("rhs", rhs)):
        if not isinstance(value, si.StructInfo):
            raise MiniTVMError(
                f"relax.analysis.struct_info_lca: {name} must be a StructInfo, got "
                f"{type(value).__name__}"
            )
    if type(lhs) is not type(rhs) or isinstance(lhs, si.ObjectStructInfo):
        return si.ObjectStructInfo()
    if isinstance(lhs, si.PrimStructInfo):
        if lhs.dtype != rhs.dtype:
            return si.ObjectStructInfo()
        return lhs if _same(lhs.value, rhs.value) else si.PrimStructInfo(lhs.dtype)
    if isinstance(lhs, si.ShapeStructInfo):
        if lhs.values is not None and _same(lhs.values, rhs.values):
            return lhs
        return si.ShapeStructInfo(ndim=lhs.ndim if lhs.ndim == rhs.ndim else -1)
    if isinstance(lhs, si.TensorStructInfo):
        dtype = lhs.dtype if lhs.dtype == rhs.dtype else None
        ndim = lhs.ndim if lhs.ndim == rhs.ndim else -1
        shape = lhs.shape if lhs.shape is not None and _same(lhs.shape, rhs.shape) else None
        return si.TensorStructInfo(shape, dtype, ndim)
    if isinstance(lhs, si.TupleStructInfo):
        if len(lhs.fields) != len(rhs.fields):
            return si.ObjectStructInfo()
        return si.TupleStructInfo([struct_info_lca(a, b) for a, b in zip(lhs.fields, rhs.fields)])
    if isinstance(lhs, si.FuncStructInfo):
        ret = struct_info_lca(lhs.ret, rhs.ret)
        purity = lhs.purity and rhs.purity
        if lhs.params is None or rhs.params is None:
            return si.FuncStructInfo(None, ret, purity)
        if _same(lhs, rhs):  # equal up to renaming the symbolic vars the params define
            return lhs
        # TVM v0.19 unifies unequal params one by one (tests/test_classic_names_tvm019.py
        # expects an opaque function here); kept opaque until that test is settled
        return si.FuncStructInfo(None, ret, purity)
    return si.ObjectStructInfo()


# ----------------------------------------------------------------------------- symbolic vars


def _struct_info_exprs(sinfo: si.StructInfo, definable_only: bool) -> Iterator[Any]:
    """The tir expressions a struct info mentions, in order (a function: params, then return).
    `definable_only` keeps bare vars only: `n` in `(1, n)` can be bound by matching a value,
    `n` in `(2 * n,)` cannot."""
    if not isinstance(sinfo, si.StructInfo):
        raise MiniTVMError(f"expected a relax StructInfo, got {type(sinfo).__name__}: {sinfo!r}")
    stack = [sinfo]
    while stack:
        s = stack.pop()
        if isinstance(s, si.TupleStructInfo):
            stack.extend(reversed(s.fields))
        elif isinstance(s, si.FuncStructInfo):
            stack.extend(reversed([*(s.params or ()), s.ret]))
        else:
            dims = {
                si.TensorStructInfo: "shape",
                si.ShapeStructInfo: "values",
                si.PrimStructInfo: "value",
            }
            field = next((f for cls, f in dims.items() if isinstance(s, cls)), None)
            value = getattr(s, field) if field else None
            for e in (
                value if isinstance(value, tuple | list) else ([value] if value is not None else [])
            ):
                if isinstance(e, PrimExpr) and (not definable_only or isinstance(e, TirVar)):
                    yield e


def _unique_tir_vars(exprs: Iterator[Any]) -> list[TirVar]:
    seen: dict[int, TirVar] = {}
    for e in exprs:
        for v in _tir_vars(e):
            seen.setdefault(id(v), v)
    return list(seen.values())


def tir_vars_in_struct_info(sinfo: si.StructInfo) -> list[TirVar]:
    """The tir variables used anywhere in `sinfo`, each once, in order of first use."""
    return _unique_tir_vars(_struct_info_exprs(sinfo, definable_only=False))


def definable_tir_vars_in_struct_info(sinfo: si.StructInfo) -> list[TirVar]:
    """The tir variables `sinfo` can define: those that appear on their own as a dimension or a
    PrimStructInfo value (matching a value against `(1, n)` binds `n`; `(2 * n,)` does not)."""
    return _unique_tir_vars(_struct_info_exprs(sinfo, definable_only=True))


__all__ = [
    "definable_tir_vars_in_struct_info",
    "remove_all_unused",
    "struct_info_lca",
    "tir_vars_in_struct_info",
    "well_formed",
    "well_formed_errors",
]

from .compile_time import computable_at_compile_time

__all__ += ["computable_at_compile_time"]

from .analysis_vars import (
    all_global_vars,
    all_vars,
    bound_vars,
    defined_symbolic_vars,
    detect_recursion,
    free_symbolic_vars,
    free_vars,
    name_to_binding,
    udchain,
)

__all__ += [
    "all_global_vars",
    "all_vars",
    "bound_vars",
    "defined_symbolic_vars",
    "detect_recursion",
    "free_symbolic_vars",
    "free_vars",
    "name_to_binding",
    "udchain",
]

from .reshape_pattern import has_reshape_pattern

__all__ += ["has_reshape_pattern"]

from .analysis_struct_info import (
    BaseCheckResult,
    collect_non_negative_expressions,
    derive_call_ret_struct_info,
    erase_to_well_defined,
    struct_info_base_check,
)

__all__ += [
    "BaseCheckResult",
    "collect_non_negative_expressions",
    "derive_call_ret_struct_info",
    "erase_to_well_defined",
    "struct_info_base_check",
]
