"""FoldBatchnormToConv2D: `batch_norm(conv2d(x, W) [+ b])[0]` with constant W, b and statistics
becomes `conv2d(x, W * s) + b'`, s = gamma / sqrt(var + eps), b' = (b - mean) * s + beta.

The scaled weight and the bias are computed here (numpy; per-channel factors in float64,
stored in the weight's dtype), so no run-time work is left for the normalisation. The conv may use any kernel layout
(the scale follows its O axis, blocked or not); its output layout must keep the channel axis
whole (the batch_norm's `axis` names it). A pattern whose pieces are not all constants, or
whose intermediate values have other users, is left alone (DecomposeOpsForInference then
turns the batch_norm into elementwise ops).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.module import IRModule
from ...topi.layout import Layout
from ..expr import Call, Constant, Function, SeqExpr, TupleGetItem, Var, VarBinding
from ..functor import ExprMutator, used_vars
from ..op import add
from ._util import map_functions
from .dead_code_elimination import remove_unused_bindings


def per_channel(vec: np.ndarray, layout: Layout, axis: str) -> np.ndarray:
    """`vec` (one value per index of primal `axis`) shaped to broadcast against `layout`."""
    shape = [1] * layout.ndim
    block = layout.block(axis)
    outer = layout.index_of(axis)
    if block is None:
        shape[outer] = vec.size
        return vec.reshape(shape)
    inner = layout.index_of(axis.lower())
    blocked = vec.reshape(vec.size // block, block)
    if outer > inner:
        blocked = blocked.T
    shape[outer], shape[inner] = vec.size // block, block
    return np.ascontiguousarray(blocked).reshape(shape)


def channel_vector(value: np.ndarray, ndim: int, axis: int, channels: int) -> np.ndarray | None:
    """The per-channel vector of a constant that broadcasts along `axis` only, else None."""
    if value.ndim > ndim:
        return None
    full = (1,) * (ndim - value.ndim) + value.shape
    if any(d != 1 for k, d in enumerate(full) if k != axis) or full[axis] not in (1, channels):
        return None
    return np.broadcast_to(value.reshape(full[axis]), (channels,))


def _op_name(value: Any) -> str | None:
    return getattr(value.op, "name", None) if isinstance(value, Call) else None


def _use_counts(func: Function) -> dict[Var, int]:
    """How many bindings (and the function's result) use each var."""
    counts: dict[Var, int] = {}
    seq = func.body
    uses = [b.value for block in seq.blocks for b in block.bindings] + [seq.body]
    for value in uses:
        for v in used_vars(value):
            counts[v] = counts.get(v, 0) + 1
    return counts


class _Match:
    """One conv [+ bias] + batch_norm chain found in a function, with the values to fold."""

    def __init__(self, conv_var: Var, conv: Call, bias: np.ndarray | None, bn: Call):
        self.conv_var, self.conv, self.bias, self.bn = conv_var, conv, bias, bn

    def rewrite(self) -> tuple[Call, Call]:
        """The new conv call (scaled weight) and the add of the folded bias."""
        conv, bn = self.conv, self.bn
        weight = conv.args[1].data.numpy()
        gamma, beta, mean, var = (a.data.numpy().astype("float64") for a in bn.args[1:])
        scale = 1.0 / np.sqrt(var + bn.attrs["epsilon"])
        if bn.attrs["scale"]:
            scale = scale * gamma
        shift = -mean if self.bias is None else self.bias.astype("float64") - mean
        shift = shift * scale + (beta if bn.attrs["center"] else 0.0)
        kernel = Layout.parse(conv.attrs.get("kernel_layout", "OIHW"))
        # the per-channel math in float64, the weight-sized product in the weight's dtype
        new_w = weight * per_channel(scale, kernel, "O").astype(weight.dtype)
        out_layout = Layout.parse(_out_layout(conv))
        bias = per_channel(shift, out_layout, "C").astype(weight.dtype)
        new_conv = conv.replace(args=(conv.args[0], Constant(new_w)))
        return new_conv, add(self.conv_var, Constant(bias))


def _out_layout(conv: Call) -> str:
    return conv.attrs.get("out_layout") or conv.attrs.get("data_layout", "NCHW")


def _find(func: Function) -> tuple[dict[Var, Any], set[Var]]:
    """Bindings to replace (var → new value) and bindings to drop."""
    values = {b.var: b.value for block in func.body.blocks for b in block.bindings}
    counts = _use_counts(func)
    replace: dict[Var, Any] = {}
    drop: set[Var] = set()
    for var, value in values.items():
        if not (isinstance(value, TupleGetItem) and value.index == 0):
            continue
        bn_var = value.tuple_value
        bn = values.get(bn_var)
        if _op_name(bn) != "relax.nn.batch_norm" or counts.get(bn_var) != 1:
            continue
        if bn.attrs.get("training", False):  # normalised by batch statistics: nothing to fold
            continue
        match = _match_conv(bn, values, counts)
        if match is None or match.conv_var in replace:
            continue
        new_conv, new_add = match.rewrite()
        replace[match.conv_var] = new_conv
        replace[var] = new_add
        drop.add(bn_var)
        if bn.args[0] is not match.conv_var:
            drop.add(bn.args[0])  # the old bias add
    return replace, drop


def _match_conv(bn: Call, values: dict[Var, Any], counts: dict[Var, int]) -> _Match | None:
    """The conv [+ constant bias] chain feeding `bn`, when everything folds."""
    if not all(isinstance(a, Constant) for a in bn.args[1:]):
        return None
    data = bn.args[0]
    if not isinstance(data, Var) or counts.get(data) != 1:
        return None
    value, bias = values.get(data), None
    if _op_name(value) == "relax.add":
        conv_var, bias = _split_bias(value)
        if conv_var is None or counts.get(conv_var) != 1:
            return None
        value, data = values.get(conv_var), conv_var
    if _op_name(value) != "relax.nn.conv2d" or not isinstance(value.args[1], Constant):
        return None
    out = Layout.parse(_out_layout(value))
    if out.block("C") is not None or out.index_of("C") != _axis(bn):
        return None
    # the scaled weight is stored in the weight's dtype: it must be the (float) output's
    if str(data.struct_info.dtype) != value.args[1].data.dtype or "float" not in str(
        data.struct_info.dtype
    ):
        return None
    channels = bn.args[1].data.shape[0]
    vec = None
    if bias is not None:
        vec = channel_vector(bias.data.numpy(), out.ndim, out.index_of("C"), channels)
        if vec is None:
            return None
    return _Match(data, value, vec, bn)


def _axis(bn: Call) -> int:
    axis = bn.attrs["axis"]
    return axis + bn.args[0].struct_info.ndim if axis < 0 else axis


def _split_bias(add_call: Call) -> tuple[Var | None, Constant | None]:
    """(the var, the constant) of `var + const` or `const + var`."""
    a, b = add_call.args
    if isinstance(a, Var) and isinstance(b, Constant):
        return a, b
    if isinstance(b, Var) and isinstance(a, Constant):
        return b, a
    return None, None


class _Apply(ExprMutator):
    def __init__(self, replace: dict[Var, Any], drop: set[Var]):
        super().__init__()
        self.replace, self.drop = replace, drop

    def visit_binding(self, b, block):
        if b.var in self.drop:
            return []
        if b.var in self.replace and isinstance(b, VarBinding):
            return [b.replace(value=self.replace[b.var])]
        return [b]


def fold_batchnorm_function(func: Function) -> Function:
    """Fold every conv2d [+ bias] + batch_norm chain of `func` whose parameters are constants."""
    if not isinstance(func.body, SeqExpr):
        return func
    replace, drop = _find(func)
    if not replace:
        return func
    return remove_unused_bindings(_Apply(replace, drop).visit_function(func))


def fold_batchnorm_to_conv2d(mod: IRModule) -> IRModule:
    """FoldBatchnormToConv2D over every relax function of `mod`."""
    return map_functions(mod, fold_batchnorm_function)


__all__ = ["channel_vector", "fold_batchnorm_to_conv2d", "per_channel"]
