"""BindParams: turn parameters of a function into constants (weights known at compile time)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...error import MiniTVMError, ShapeError
from ...ir.module import IRModule
from ...tir.expr import IntImm
from ...tir.expr import Var as TirVar
from ..expr import Constant, Function, Var, const
from ..functor import ExprMutator, substitute_dims
from ..struct_info import TensorStructInfo


def bind_params_function(func: Function, params: Mapping[Any, Any]) -> Function:
    """Replace the named (or given) params by constants; symbolic dims they fix are substituted."""
    by_name: dict[str, Var] = {}
    for p in func.params:
        by_name.setdefault(p.name_hint, p)
    binding: dict[Var, Constant] = {}
    for key, value in params.items():
        if isinstance(key, Var):
            if key not in func.params:
                raise MiniTVMError(
                    f"BindParams: {key.name_hint!r} is not a parameter of the function"
                )
            var = key
        else:
            if key not in by_name:
                raise MiniTVMError(
                    f"BindParams: the function has no parameter named {key!r}; its params are "
                    f"{[p.name_hint for p in func.params]}"
                )
            var = by_name[key]
        binding[var] = value if isinstance(value, Constant) else const(_numpy(value))
    dims: dict[TirVar, IntImm] = {}
    for var, c in binding.items():
        _bind_dims(var, c, dims)
    mutator = ExprMutator()
    mutator.var_map.update(binding)
    body = mutator.visit_expr(func.body)
    kept = tuple(p for p in func.params if p not in binding)
    new = Function(kept, body, func.ret_struct_info, func.attrs, func.is_pure)
    return substitute_dims(new, dims)


def _numpy(value: Any) -> np.ndarray:
    return (
        np.asarray(value.numpy())
        if hasattr(value, "numpy") and not isinstance(value, np.ndarray)
        else np.asarray(value)
    )


def _bind_dims(var: Var, c: Constant, dims: dict) -> None:
    sinfo = var.struct_info
    data = c.data.numpy()
    if not isinstance(sinfo, TensorStructInfo):
        return
    if sinfo.dtype is not None and np.dtype(data.dtype) != sinfo.dtype.numpy_dtype():
        raise ShapeError(
            f"BindParams: parameter {var.name_hint!r} has dtype {sinfo.dtype}, the array is {data.dtype}"
        )
    if sinfo.shape is None:
        return
    if len(sinfo.shape) != data.ndim:
        raise ShapeError(
            f"BindParams: parameter {var.name_hint!r} has {len(sinfo.shape)} dims, the array has shape {data.shape}"
        )
    for k, (d, n) in enumerate(zip(sinfo.shape, data.shape)):
        if isinstance(d, IntImm):
            if d.value != n:
                raise ShapeError(
                    f"BindParams: parameter {var.name_hint!r} dim {k} is {d.value}, the array has shape {data.shape}"
                )
        elif isinstance(d, TirVar):
            seen = dims.get(d)
            if seen is not None and seen.value != n:
                raise ShapeError(
                    f"BindParams: symbolic dim {d.name} is bound to both {seen.value} and {n}"
                )
            dims[d] = IntImm(d.dtype, n)


def bind_params(mod: IRModule, func_name: str, params: Mapping[Any, Any]) -> IRModule:
    """`BindParams("main", {"w0": w0_np, ...})` as a pure function on modules."""
    func = mod[func_name]
    if not isinstance(func, Function):
        raise MiniTVMError(f"BindParams: {func_name!r} is not a relax Function")
    out = mod.copy()
    out[func_name] = bind_params_function(func, params)
    return out
