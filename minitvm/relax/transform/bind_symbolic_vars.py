"""Binding a function's inputs, TVM-style: `func.bind_symbolic_vars({"n": 16})` fixes symbolic
dims, `func.bind_params({"w": array})` turns parameters into values. Both return a new function.

As in TVM, a binding whose value changes gets a fresh variable with the value's new struct info
(a parameter bound to a (16,) constant makes `B = A` a (16,) tensor), and the return struct info
becomes the body's when that is more precise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...error import ArgumentError, MiniTVMError, ShapeError
from ...ir.module import IRModule
from ...ir.transform import Pass
from ...tir.expr import IntImm, PrimExpr, as_expr
from ...tir.expr import Var as TirVar
from .. import expr as rx
from .. import struct_info as si
from ..analysis import (
    _same,
    _tir_vars,
    definable_tir_vars_in_struct_info,
    struct_info_lca,
)
from ..functor import ExprMutator


def substitute_dims(node: Any, dims: dict) -> Any:
    """Replace symbolic vars under a relax node; an expression that changed is simplified, as
    TVM does (`2 * M * 16` with M bound stays readable as `M * 32`)."""
    from ...arith import Analyzer
    from ...tir.functor import Mutator, substitute

    if not dims:
        return node
    table = {id(k): v for k, v in dims.items()}
    analyzer = Analyzer()

    class _Subst(Mutator):
        def visit(self, n: Any) -> Any:
            if isinstance(n, TirVar):
                return table.get(id(n), n)
            if isinstance(n, PrimExpr):
                new = substitute(n, dims)
                return n if new is n else analyzer.simplify(new)
            return super().visit(n)

    return _Subst().visit(node)


class _Rebinder(ExprMutator):
    """Replaces vars by values; a binding whose value changed is re-made with its new struct info."""

    def visit_binding(self, b: rx.Binding, block: rx.BindingBlock) -> list[rx.Binding]:
        value = self.visit_expr(b.value)
        if value is b.value or not isinstance(b, rx.VarBinding):
            return [b.replace(value=value)]
        try:
            sinfo = value.struct_info
        except MiniTVMError:  # a call the module would resolve: keep the old annotation
            return [b.replace(value=value)]
        var = type(b.var)(b.var.name_hint, sinfo)
        self.var_map[b.var] = var
        return [rx.VarBinding(var, value)]


def _rebuilt(func: rx.Function, params: tuple, body: rx.Expr, ret: si.StructInfo) -> rx.Function:
    """The function with `params`/`body`, its return struct info refined to the body's when that
    is more precise and uses only symbolic vars the params define (TVM's Function does this)."""
    body_sinfo = body.struct_info
    defined = {id(v) for p in params for v in definable_tir_vars_in_struct_info(p.struct_info)}
    if _same(struct_info_lca(ret, body_sinfo), ret) and all(
        id(v) in defined for v in _tir_vars(body_sinfo)
    ):
        ret = body_sinfo
    return rx.Function(params, body, ret, func.attrs, func.is_pure)


# ----------------------------------------------------------------------------- symbolic vars


def _symbolic_vars(func: rx.Function) -> list[TirVar]:
    seen: dict[int, TirVar] = {}
    for v in _tir_vars(func):
        seen.setdefault(id(v), v)
    return list(seen.values())


def _resolve_symbolic(func: rx.Function, binding_map: Mapping[Any, Any]) -> dict:
    """{tir var of `func`: PrimExpr} from keys given as tir Vars or their names."""
    known = _symbolic_vars(func)
    out: dict[int, tuple[TirVar, PrimExpr]] = {}
    for key, value in binding_map.items():
        if isinstance(key, str):
            named = [v for v in known if v.name == key]
            if len(named) != 1:
                why = "no symbolic var" if not named else f"{len(named)} different symbolic vars"
                raise ArgumentError(
                    f"bind_symbolic_vars: the function has {why} named {key!r}; pass the "
                    "tir.Var itself as the key"
                )
            var = named[0]
        elif isinstance(key, TirVar):
            if all(key is not v for v in known):
                raise ArgumentError(
                    f"bind_symbolic_vars: {key.name!r} is not a symbolic var of the function "
                    "(a tir.Var of the same name is a different variable)"
                )
            var = key
        else:
            raise ArgumentError(
                f"bind_symbolic_vars: key {key!r} must be a tir.Var or the name of one"
            )
        if id(var) in out:
            raise ArgumentError(f"bind_symbolic_vars: {var.name!r} is bound twice")
        out[id(var)] = (var, _as_prim(value, var))
    return {var: value for var, value in out.values()}


def _as_prim(value: Any, like: TirVar) -> PrimExpr:
    if isinstance(value, int) and not isinstance(value, bool):
        return IntImm(like.dtype, value)
    if isinstance(value, PrimExpr):
        return value
    raise ArgumentError(
        f"bind_symbolic_vars: the value for {like.name!r} must be an int or a PrimExpr, "
        f"got {value!r}"
    )


def _check_defined(new: rx.Function, dims: dict) -> None:
    """Symbolic vars the replacements bring in must be definable by the new params."""
    defined = {id(v) for p in new.params for v in definable_tir_vars_in_struct_info(p.struct_info)}
    replaced = {id(v) for v in dims}
    for var, value in dims.items():
        for v in _tir_vars(value):
            if id(v) not in defined and id(v) not in replaced:
                raise ArgumentError(
                    f"bind_symbolic_vars: {var.name!r} -> {value} uses {v.name!r}, which no "
                    "parameter of the function defines; bind it too, or use it alone as "
                    "another var's value"
                )


def bind_symbolic_vars_function(func: rx.Function, binding_map: Mapping[Any, Any]) -> rx.Function:
    """`func` with the given symbolic vars (keys: tir.Vars or their names) replaced by values."""
    dims = _resolve_symbolic(func, binding_map)
    if not dims:
        return func
    new = substitute_dims(func, dims)
    _check_defined(new, dims)
    return _rebuilt(new, new.params, new.body, new.ret_struct_info)


def bind_symbolic_vars(
    mod: IRModule, binding_map: Mapping[Any, Any], func_name: str | None = None
) -> IRModule:
    """Bind symbolic vars in function `func_name`, or in every relax function that has them."""
    out = mod.copy()
    for gv, func in mod.functions_items():
        if isinstance(func, rx.Function) and func_name in (None, gv.name_hint):
            names = {v.name for v in _symbolic_vars(func)}
            mine = {
                k: v
                for k, v in binding_map.items()
                if (k in names if isinstance(k, str) else any(k is u for u in _symbolic_vars(func)))
            }
            out[gv] = bind_symbolic_vars_function(func, mine)
    return out


def BindSymbolicVars(binding_map: Mapping[Any, Any], func_name: str | None = None) -> Pass:
    return Pass(lambda mod: bind_symbolic_vars(mod, binding_map, func_name), "BindSymbolicVars")


# ----------------------------------------------------------------------------- params


def _as_value(value: Any, param: rx.Var) -> rx.Expr:
    if isinstance(value, rx.Expr):
        return value
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        value = value.numpy()
    if isinstance(value, np.ndarray):
        return rx.const(value)
    raise ArgumentError(
        f"bind_params: the value for {param.name_hint!r} must be a relax expression or an "
        f"array (numpy or tvm.nd), got {type(value).__name__}"
    )


def _match_dims(param: rx.Var, want: Any, got: Any, dims: dict) -> None:
    """Bind the bare symbolic dims of `want` to the matching entries of `got`."""
    if want is None or got is None:
        return
    if len(want) != len(got):
        raise ShapeError(
            f"bind_params: {param.name_hint!r} has {len(want)} dims, the value has {len(got)}"
        )
    for w, g in zip(want, got):
        g = as_expr(g) if not isinstance(g, PrimExpr) else g
        if isinstance(w, TirVar):
            seen = dims.get(w)
            if seen is not None and not _same(seen, g):
                raise ShapeError(f"bind_params: {w.name} is bound to both {seen} and {g}")
            dims[w] = g
        elif isinstance(w, IntImm) and isinstance(g, IntImm) and w.value != g.value:
            raise ShapeError(f"bind_params: {param.name_hint!r} needs {w.value}, the value has {g}")


def _dims_from(param: rx.Var, value: rx.Expr, dims: dict) -> None:
    want, got = param.struct_info, value.struct_info
    if isinstance(want, si.TensorStructInfo) and isinstance(got, si.TensorStructInfo):
        if None not in (want.dtype, got.dtype) and want.dtype != got.dtype:
            raise ShapeError(
                f"bind_params: {param.name_hint!r} has dtype {want.dtype}, the value {got.dtype}"
            )
        _match_dims(param, want.shape, got.shape, dims)
    elif isinstance(want, si.ShapeStructInfo) and isinstance(got, si.ShapeStructInfo):
        _match_dims(param, want.values, got.values, dims)
    elif isinstance(want, si.PrimStructInfo) and isinstance(got, si.PrimStructInfo):
        _match_dims(param, (want.value,) if want.value is not None else None, (got.value,), dims)


def bind_params_to_function(func: rx.Function, binding_map: Mapping[Any, Any]) -> rx.Function:
    """`func` without the given params (keys: relax Vars or their names), which become values;
    the symbolic dims those values fix are substituted everywhere."""
    binding: dict[rx.Var, rx.Expr] = {}
    for key, value in binding_map.items():
        if isinstance(key, str):
            named = [p for p in func.params if p.name_hint == key]
            if len(named) != 1:
                raise ArgumentError(
                    f"bind_params: the function has {len(named)} parameters named {key!r} "
                    f"(its params: {[p.name_hint for p in func.params]}); pass the Var itself"
                )
            param = named[0]
        elif isinstance(key, rx.Var) and any(key is p for p in func.params):
            param = key
        else:
            raise ArgumentError(f"bind_params: {key!r} is not a parameter of the function")
        binding[param] = _as_value(value, param)
    dims: dict = {}
    for param, value in binding.items():
        _dims_from(param, value, dims)
    # dims first, so that the values' struct infos meet already-substituted operands
    sub = substitute_dims(func, dims)
    bound = [i for i, p in enumerate(func.params) if p in binding]
    mutator = _Rebinder()
    mutator.var_map.update({sub.params[i]: binding[func.params[i]] for i in bound})
    body = mutator.visit_expr(sub.body)
    kept = tuple(p for i, p in enumerate(sub.params) if i not in bound)
    return _rebuilt(sub, kept, body, sub.ret_struct_info)
