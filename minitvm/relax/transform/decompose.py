"""DecomposeOpsForInference: inference-only ops become the elementwise ops they stand for.

`batch_norm(x, gamma, beta, mean, var)[0]` becomes `x * s + t` with s = gamma / sqrt(var + eps)
and t = beta - mean * s precomputed when the four are constants, else
`(x - mean) * (gamma / sqrt(var + eps)) + beta` with the per-channel tensors reshaped to
broadcast along the batch_norm's axis. Items 1 and 2 of its result are the moving mean and
variance themselves. A batch_norm whose tuple is used other than through its items stays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.module import IRModule
from .. import expr as rx
from ..functor import ExprMutator, used_vars
from ..op import add, divide, multiply, reshape, sqrt, subtract
from ..struct_info import TensorStructInfo
from ._util import map_functions


class Emitter:
    """Collects the bindings that replace one binding of a block being rebuilt."""

    def __init__(self, dataflow: bool):
        self.dataflow = dataflow
        self.bindings: list[rx.Binding] = []

    def emit(self, value: rx.Expr, hint: str, var: rx.Var | None = None) -> rx.Var:
        """Bind `value` to `var` (default: a fresh var of the block's kind named `hint`)."""
        if var is None:
            var = (rx.DataflowVar if self.dataflow else rx.Var)(hint, value.struct_info)
        self.bindings.append(rx.VarBinding(var, value))
        return var


def _batch_norm_items(bn: rx.Call, item: int, em: Emitter, out: rx.Var) -> rx.Expr | None:
    """Emit item `item` of `bn` into `em` bound to `out` (None: item 0 cannot be decomposed)."""
    if item > 0:
        return bn.args[2 + item]  # the moving mean / variance pass through
    x, gamma, beta, mean, var = bn.args
    x_info = x.struct_info
    if not isinstance(x_info, TensorStructInfo) or x_info.ndim < 0:
        return None
    axis = bn.attrs["axis"] % x_info.ndim
    eps, use_scale, use_center = bn.attrs["epsilon"], bn.attrs["scale"], bn.attrs["center"]
    if all(isinstance(a, rx.Constant) for a in bn.args[1:]):
        g, b, m, v = (a.data.numpy().astype("float64") for a in bn.args[1:])
        s = (g if use_scale else 1.0) / np.sqrt(v + eps)
        t = (b if use_center else 0.0) - m * s
        shape = [1] * x_info.ndim
        shape[axis] = -1
        dtype = str(x_info.dtype)
        y = em.emit(multiply(x, rx.Constant(s.reshape(shape).astype(dtype))), "bn_scale")
        return em.emit(add(y, rx.Constant(t.reshape(shape).astype(dtype))), "bn_shift", out)
    shape_info = gamma.struct_info
    if not isinstance(shape_info, TensorStructInfo) or shape_info.shape is None:
        return None
    shape = [1] * x_info.ndim
    shape[axis] = shape_info.shape[0]

    def along_axis(t: rx.Expr, hint: str) -> rx.Var:
        return em.emit(reshape(t, shape), hint)

    eps_const = rx.Constant(np.array(eps, dtype=str(x_info.dtype)))
    std = em.emit(sqrt(em.emit(add(var, eps_const), "bn_var_eps")), "bn_std")
    y = em.emit(subtract(x, along_axis(mean, "bn_mean")), "bn_centered")
    if use_scale:
        inv = em.emit(divide(gamma, std), "bn_inv_std")
        scaled = multiply(y, along_axis(inv, "bn_inv_std"))
    else:
        scaled = divide(y, along_axis(std, "bn_std"))
    if not use_center:
        return em.emit(scaled, "bn_out", out)
    y = em.emit(scaled, "bn_scaled")
    return em.emit(add(y, along_axis(beta, "bn_beta")), "bn_out", out)


# op name → emits item k of the op's tuple result (None: leave the op)
_DECOMPOSE = {"relax.nn.batch_norm": _batch_norm_items}


class _Decomposer(ExprMutator):
    def __init__(self, func: rx.Function, training_too: bool = True):
        super().__init__()
        self.training_too = training_too
        self.item_only = _item_only_vars(func)
        self.pending: dict[rx.Var, rx.Call] = {}

    def visit_binding(self, b: rx.Binding, block: Any) -> list[rx.Binding]:
        value = self.visit_expr(b.value)
        name = getattr(value.op, "name", None) if isinstance(value, rx.Call) else None
        keep = not self.training_too and value.attrs.get("training", False) if name else False
        if name in _DECOMPOSE and b.var in self.item_only and not keep:
            self.pending[b.var] = value  # emitted where its items are read
            return []
        if isinstance(value, rx.TupleGetItem) and value.tuple_value in self.pending:
            return self._emit_item(b, value, isinstance(block, rx.DataflowBlock))
        return [b.replace(value=value)]

    def _emit_item(self, b: rx.Binding, item: rx.TupleGetItem, dataflow: bool) -> list[rx.Binding]:
        call = self.pending[item.tuple_value]
        em = Emitter(dataflow)
        result = _DECOMPOSE[call.op.name](call, item.index, em, b.var)
        if result is None:  # cannot decompose: put the op back right here, once
            del self.pending[item.tuple_value]
            return [rx.VarBinding(item.tuple_value, call), b.replace(value=item)]
        if result is not b.var:
            em.emit(result, b.var.name_hint, b.var)
        return em.bindings


def _item_only_vars(func: rx.Function) -> set[rx.Var]:
    """The vars used only as `var[k]` bindings."""
    item_only: set[rx.Var] = set()
    other: set[rx.Var] = set()
    body = func.body
    for block in body.blocks:
        for b in block.bindings:
            if isinstance(b.value, rx.TupleGetItem) and isinstance(b.value.tuple_value, rx.Var):
                item_only.add(b.value.tuple_value)
            else:
                other |= used_vars(b.value)
    other |= used_vars(body.body)
    return item_only - other


def decompose_function(func: rx.Function, training_too: bool = True) -> rx.Function:
    """DecomposeOpsForInference on one function."""
    if not isinstance(func.body, rx.SeqExpr):
        return func
    return _Decomposer(func, training_too).visit_function(func)


def decompose_ops_for_inference(
    mod: IRModule, func_name: str | None = None, training_too: bool = True
) -> IRModule:
    """Rewrite the inference-only ops of every relax function (or only `func_name`)."""
    if func_name is None:
        return map_functions(mod, lambda f: decompose_function(f, training_too))
    out = mod.copy()
    out[func_name] = decompose_function(mod[func_name], training_too)
    return out


__all__ = ["Emitter", "decompose_ops_for_inference"]
