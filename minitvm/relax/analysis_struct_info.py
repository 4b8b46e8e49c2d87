"""Struct-info relations as TVM's relax analysis defines them: the graded base check
(`struct_info_base_check`), erasing what is not defined in scope (`erase_to_well_defined`)
and the dims a struct info implies are non-negative (`collect_non_negative_expressions`)."""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from typing import Any

from ..error import MiniTVMError
from ..tir.expr import IntImm, PrimExpr
from ..tir.expr import Var as TirVar
from . import struct_info as si


class BaseCheckResult(enum.IntEnum):
    """How far `derived` is from being an instance of `base` (TVM's grading).

    FAIL_L0: never (different kinds, dtypes, ranks or constant dims);
    FAIL_L1: not provable from static information (`derived` knows less, e.g. R.Object);
    FAIL_L2: only the symbolic dims differ (decidable at run time by a match_cast);
    PASS: always.
    """

    FAIL_L0 = 0
    FAIL_L1 = 1
    FAIL_L2 = 2
    PASS = 3


_R = BaseCheckResult


class _BaseChecker:
    """TVM's graded base check; a subclass changes how one dim of `base` matches `derived`."""

    def prim_match(self, lhs: PrimExpr, rhs: PrimExpr) -> BaseCheckResult:
        """Constants must be equal; other dims fail only until run time unless provably equal."""
        from ..arith import Analyzer
        from ..ir.structural import structural_equal

        if isinstance(lhs, IntImm) and isinstance(rhs, IntImm):
            return _R.PASS if lhs.value == rhs.value else _R.FAIL_L0
        if structural_equal(lhs, rhs) or Analyzer().can_prove_equal(lhs, rhs):
            return _R.PASS
        return _R.FAIL_L2

    def dims(self, lhs: tuple, rhs: tuple) -> BaseCheckResult:
        if len(lhs) != len(rhs):
            return _R.FAIL_L0
        result = _R.PASS
        for a, b in zip(lhs, rhs):
            result = min(result, self.prim_match(a, b))
            if result == _R.FAIL_L0:
                break
        return result

    def check(self, base: si.StructInfo, derived: si.StructInfo) -> BaseCheckResult:
        if isinstance(base, si.ObjectStructInfo):
            return _R.PASS
        if isinstance(derived, si.ObjectStructInfo):
            return _R.FAIL_L1
        rule = _BASE_CHECKS.get(type(base))
        if rule is None or type(derived) is not type(base):
            return _R.FAIL_L0
        return rule(self, base, derived)

    def params(self, lhs: tuple, rhs: tuple) -> BaseCheckResult:
        # as TVM, params are checked like a tuple (not contravariantly), a static miss softened
        result = self.array(lhs, rhs)
        return _R.FAIL_L2 if result == _R.FAIL_L1 else result

    def array(self, lhs: tuple, rhs: tuple) -> BaseCheckResult:
        if len(lhs) != len(rhs):
            return _R.FAIL_L0
        return min((self.check(a, b) for a, b in zip(lhs, rhs)), default=_R.PASS)


def _vdevice_check(lhs: Any, rhs: Any) -> BaseCheckResult:
    if lhs is None:
        return _R.PASS
    if rhs is None or (lhs.target is not None and rhs.target is None):
        return _R.FAIL_L1
    if lhs.target is not None and (
        str(lhs.target) != str(rhs.target)
        or lhs.vdevice_id != rhs.vdevice_id
        or lhs.memory_scope != rhs.memory_scope
    ):
        return _R.FAIL_L0
    return _R.PASS


def _prim_check(c: _BaseChecker, lhs: si.PrimStructInfo, rhs: si.PrimStructInfo) -> BaseCheckResult:
    if lhs.dtype != rhs.dtype:
        return _R.FAIL_L0
    if lhs.value is None:
        return _R.PASS
    if rhs.value is None:
        return _R.FAIL_L2
    return c.prim_match(lhs.value, rhs.value)


def _shape_check(
    c: _BaseChecker, lhs: si.ShapeStructInfo, rhs: si.ShapeStructInfo
) -> BaseCheckResult:
    if lhs.ndim == -1:
        return _R.PASS
    if lhs.ndim != rhs.ndim:
        return _R.FAIL_L1 if rhs.ndim == -1 else _R.FAIL_L0
    if lhs.values is None:
        return _R.PASS
    if rhs.values is None:
        return _R.FAIL_L2
    return c.dims(lhs.values, rhs.values)


def _tensor_check(
    c: _BaseChecker, lhs: si.TensorStructInfo, rhs: si.TensorStructInfo
) -> BaseCheckResult:
    if lhs.dtype is not None and lhs.dtype != rhs.dtype:
        return _R.FAIL_L1 if rhs.dtype is None else _R.FAIL_L0
    if lhs.ndim != -1 and lhs.ndim != rhs.ndim:
        return _R.FAIL_L1 if rhs.ndim == -1 else _R.FAIL_L0
    vdevice = _vdevice_check(lhs.vdevice, rhs.vdevice)
    if vdevice != _R.PASS:
        return vdevice
    if lhs.shape is None:
        return _R.PASS
    if rhs.shape is None:
        return _R.FAIL_L2
    return c.dims(lhs.shape, rhs.shape)


def _tuple_check(
    c: _BaseChecker, lhs: si.TupleStructInfo, rhs: si.TupleStructInfo
) -> BaseCheckResult:
    return c.array(lhs.fields, rhs.fields)


def _func_check(c: _BaseChecker, lhs: si.FuncStructInfo, rhs: si.FuncStructInfo) -> BaseCheckResult:
    from ..ir.structural import structural_equal

    if lhs.purity and not rhs.purity:
        return _R.FAIL_L0
    if lhs.params is None:
        return c.check(lhs.ret, rhs.ret)
    if rhs.params is None:
        return _R.FAIL_L2
    if structural_equal(lhs, rhs):  # equal up to renaming the vars the params define
        return _R.PASS
    return min(c.params(lhs.params, rhs.params), c.check(lhs.ret, rhs.ret))


# base class -> rule; the rule runs when `derived` is the same kind as `base`
_BASE_CHECKS = {
    si.PrimStructInfo: _prim_check,
    si.ShapeStructInfo: _shape_check,
    si.TensorStructInfo: _tensor_check,
    si.TupleStructInfo: _tuple_check,
    si.FuncStructInfo: _func_check,
}


def struct_info_base_check(base: si.StructInfo, derived: si.StructInfo) -> BaseCheckResult:
    """Whether every value of struct info `derived` is an instance of `base`, graded as TVM
    does: `struct_info_base_check(R.Tensor(ndim=2), R.Tensor((n, 4))) == BaseCheckResult.PASS`.
    """
    for name, value in (("base", base), ("derived", derived)):
        if not isinstance(value, si.StructInfo):
            raise MiniTVMError(
                f"relax.analysis.struct_info_base_check: {name} must be a StructInfo, got "
                f"{type(value).__name__}"
            )
    return _BaseChecker().check(base, derived)


# ----------------------------------------------------------------------------- call results


class _CallDeriver(_BaseChecker):
    """Matches a callee's params against the arguments, binding each symbolic var of a param
    dim to the argument's dim where it first appears (TVM's CallRetStructInfoDeriver)."""

    def __init__(self) -> None:
        self.bound: dict[int, tuple[TirVar, PrimExpr]] = {}
        self.binding = True

    def prim_match(self, lhs: PrimExpr, rhs: PrimExpr) -> BaseCheckResult:
        from ..arith import Analyzer

        if not self.binding or not isinstance(lhs, TirVar):
            return super().prim_match(lhs, rhs)
        if id(lhs) not in self.bound:
            self.bound[id(lhs)] = (lhs, rhs)
            return _R.PASS
        known = self.bound[id(lhs)][1]
        return _R.PASS if Analyzer().can_prove_equal(known, rhs) else _R.FAIL_L2

    def params(self, lhs: tuple, rhs: tuple) -> BaseCheckResult:
        # a function-typed argument's own params define their own vars: bind nothing there
        self.binding, was = False, self.binding
        try:
            return super().params(lhs, rhs)
        finally:
            self.binding = was


def derive_call_ret_struct_info(
    func_sinfo: si.FuncStructInfo, call: Any, ctx: Any = None
) -> si.StructInfo:
    """The struct info of `call`'s result when its callee has struct info `func_sinfo`: the
    return struct info with the callee's symbolic vars replaced by what the arguments bind
    (TVM's rule; a var no argument binds makes its shape unknown, keeping the rank).

    `ctx` (a BlockBuilder) is accepted for TVM's signature. Raises when the argument count
    differs or an argument can never match its parameter.
    """
    del ctx
    if not isinstance(func_sinfo, si.FuncStructInfo):
        raise MiniTVMError(
            "relax.analysis.derive_call_ret_struct_info: func_sinfo must be a FuncStructInfo, "
            f"got {type(func_sinfo).__name__}"
        )
    if func_sinfo.params is None:
        return func_sinfo.ret
    args = tuple(call.args)
    callee = getattr(call.op, "name_hint", None) or getattr(call.op, "name", call.op)
    if len(args) != len(func_sinfo.params):
        raise MiniTVMError(
            f"calling {callee}: it takes {len(func_sinfo.params)} argument(s) "
            f"{list(func_sinfo.params)}, but was called with {len(args)}"
        )
    deriver = _CallDeriver()
    for i, (param, arg) in enumerate(zip(func_sinfo.params, args)):
        given = arg.struct_info
        if deriver.check(param, given) in (_R.FAIL_L0, _R.FAIL_L1):
            raise MiniTVMError(
                f"calling {callee}: argument {i} has struct info {given}, which can never "
                f"match the parameter's {param}; pass a value of that kind (match_cast it first "
                "when only its shape is unknown)"
            )
    return _erase(func_sinfo.ret, {v: e for v, e in deriver.bound.values()})


# ----------------------------------------------------------------------------- erasure


def _substitute(expr: PrimExpr, var_map: Mapping) -> PrimExpr | None:
    """`expr` with its tir vars replaced by `var_map`, simplified; None when a var is unmapped."""
    from ..arith import Analyzer
    from ..tir.functor import post_order_visit, substitute

    mapped = {id(v): si.as_dim(e) if isinstance(e, int) else e for v, e in var_map.items()}
    missing: list = []

    def visit(n: Any) -> None:
        if isinstance(n, TirVar) and id(n) not in mapped:
            missing.append(n)

    post_order_visit(expr, visit)
    if missing:
        return None
    out = substitute(expr, lambda v: mapped.get(id(v)))
    return out if out is expr else Analyzer().simplify(out)


def _erase_dims(dims: tuple | None, var_map: Mapping) -> tuple | None:
    if dims is None:
        return None
    out = tuple(_substitute(d, var_map) for d in dims)
    return None if any(d is None for d in out) else out


def erase_to_well_defined(
    sinfo: si.StructInfo,
    shape_var_map: Mapping | None = None,
    var_map: Mapping | None = None,
) -> si.StructInfo:
    """`sinfo` with what is not defined in scope erased, as TVM: symbolic dims are replaced
    through `shape_var_map` (tir var -> expr; a dim using a var it lacks makes the whole shape
    unknown, keeping only the rank). `var_map` (relax var -> expr) is accepted for TVM's
    signature; minitvm keeps a shape given by a relax var as its rank only, so it is unused.

    >>> erase_to_well_defined(R.Tensor((n, 4)), {})  # R.Tensor(ndim=2)
    """
    tir_map = dict(shape_var_map or {})
    del var_map  # see the docstring: a shape var never survives into TensorStructInfo
    return _erase(sinfo, tir_map)


def _erase(sinfo: si.StructInfo, var_map: Mapping) -> si.StructInfo:
    if isinstance(sinfo, si.TensorStructInfo):
        shape = _erase_dims(sinfo.shape, var_map)
        return si.TensorStructInfo(shape, sinfo.dtype, -1 if shape else sinfo.ndim, sinfo.vdevice)
    if isinstance(sinfo, si.ShapeStructInfo):
        values = _erase_dims(sinfo.values, var_map)
        return si.ShapeStructInfo(values, -1 if values is not None else sinfo.ndim)
    if isinstance(sinfo, si.PrimStructInfo):
        value = None if sinfo.value is None else _substitute(sinfo.value, var_map)
        return si.PrimStructInfo(sinfo.dtype, value)
    if isinstance(sinfo, si.TupleStructInfo):
        return si.TupleStructInfo([_erase(f, var_map) for f in sinfo.fields])
    # a function's signature binds its own symbolic vars, and objects carry none
    return sinfo


# ----------------------------------------------------------------------------- non-negative dims


def _shape_dims(sinfo: si.StructInfo) -> Iterator[PrimExpr]:
    stack = [sinfo]
    while stack:
        s = stack.pop()
        if isinstance(s, si.TupleStructInfo):
            stack.extend(reversed(s.fields))
        elif isinstance(s, si.FuncStructInfo):
            stack.extend(reversed([*(s.params or ()), s.ret]))
        elif isinstance(s, si.TensorStructInfo):
            yield from s.shape or ()
        elif isinstance(s, si.ShapeStructInfo):
            yield from s.values or ()
        # a PrimStructInfo value may be negative: it implies nothing


def collect_non_negative_expressions(sinfo: si.StructInfo) -> list[PrimExpr]:
    """The symbolic expressions that `sinfo` implies are >= 0 (tensor dims and shape values;
    not R.Prim values), each once, in order of first appearance; constants are left out."""
    from ..ir.structural import structural_equal

    if not isinstance(sinfo, si.StructInfo):
        raise MiniTVMError(f"expected a relax StructInfo, got {type(sinfo).__name__}: {sinfo!r}")
    out: list[PrimExpr] = []
    for dim in _shape_dims(sinfo):
        if not isinstance(dim, IntImm) and not any(structural_equal(dim, o) for o in out):
            out.append(dim)
    return out


__all__ = [
    "BaseCheckResult",
    "collect_non_negative_expressions",
    "erase_to_well_defined",
    "struct_info_base_check",
]
