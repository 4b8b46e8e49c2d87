"""`relax.op.nn.attention`: scaled dot-product attention in TVM's BSNH layout."""

from __future__ import annotations

from typing import Any

from ....error import ShapeError
from ....topi import reference as ref
from ....topi.nn.attention import CAUSAL_MASKS
from ....topi.nn.attention import attention as topi_attention
from ....topi.utils import fmt_dim, fmt_shape, prove_equal
from ...expr import Call, Expr
from ...struct_info import StructInfo, TensorStructInfo
from .. import _infer as I
from .._table import OpPattern, make_call, register_op

# (argument, its dim, other argument, its dim, what the dim is)
_SAME_DIMS = (
    ("query", 0, "key", 0, "batch"),
    ("key", 0, "value", 0, "batch"),
    ("query", 2, "key", 2, "num_heads"),
    ("key", 2, "value", 2, "num_heads"),
    ("query", 3, "key", 3, "head_dim"),
    ("key", 1, "value", 1, "seq_len_kv"),
)


def _infer_attention(call: Call) -> StructInfo:
    args = {name: I.tensor_arg(call, k, name) for k, name in enumerate(("query", "key", "value"))}
    for name, sinfo in args.items():
        I.require_ndim(call, sinfo, name, (4,), " (batch, seq_len, num_heads, head_dim)")
        I.require_float(call, sinfo, name)
    named = list(args.items())
    bias = None
    if len(call.args) > 3:
        bias = I.tensor_arg(call, 3, "bias")
        named.append(("bias", bias))
    dtype = I.same_dtype(call, named)
    q, k, v = args["query"], args["key"], args["value"]
    if any(s.shape is None for s in (q, k, v)):
        return TensorStructInfo(None, dtype, 4)
    for a, da, b, db, what in _SAME_DIMS:
        x, y = args[a].shape[da], args[b].shape[db]
        if not prove_equal(x, y):
            raise ShapeError(
                f"relax.nn.attention: {what} differs: {a} has shape {fmt_shape(args[a].shape)}, "
                f"{b} has shape {fmt_shape(args[b].shape)}: dim {da} of {a} ({fmt_dim(x)}) must "
                f"equal dim {db} of {b} ({fmt_dim(y)}) (layout BSNH; repeat the key/value heads "
                "first for grouped-query attention)"
            )
    if bias is not None and bias.shape is not None:
        if len(bias.shape) > 4:
            raise ShapeError(
                f"relax.nn.attention: bias has shape {fmt_shape(bias.shape)} (rank "
                f"{len(bias.shape)}); it must broadcast to (batch, num_heads, seq_len, seq_len_kv)"
            )
        scores = TensorStructInfo((q.shape[0], q.shape[2], q.shape[1], k.shape[1]), dtype)
        out = I.broadcast(
            call, "bias", bias, "the scores (batch, num_heads, seq_len, seq_len_kv)", scores
        )
        if out is not None and not all(map(prove_equal, out, scores.shape)):
            raise ShapeError(
                f"relax.nn.attention: bias of shape {fmt_shape(bias.shape)} broadcasts past the "
                f"scores' shape {fmt_shape(scores.shape)} (batch, num_heads, seq_len, seq_len_kv)"
            )
    return TensorStructInfo((q.shape[0], q.shape[1], q.shape[2], v.shape[3]), dtype)


def _te_attention(query, key, value, bias=None, scale=None, causal_mask=None, window_size=None):
    return topi_attention(query, key, value, bias, scale, causal_mask)


def _np_attention(query, key, value, bias=None, scale=None, causal_mask=None, window_size=None):
    return ref.attention(query, key, value, bias, scale, causal_mask)


_attention = register_op(
    "relax.nn.attention", _infer_attention, _te_attention, _np_attention, OpPattern.OPAQUE
)


def attention(
    query: Expr,
    key: Expr,
    value: Expr,
    bias: Expr | None = None,
    scale: Any = None,
    causal_mask: str | None = None,
    window_size: int | None = None,
) -> Call:
    """softmax(query key^T * scale + bias) value, all in BSNH layout (TVM's relax signature).

    query (B, S, N, H), key (B, T, N, H), value (B, T, N, Hv) -> (B, S, N, Hv); `scale`
    defaults to 1 / sqrt(H); `causal_mask` is None, "TopLeft" (torch's is_causal) or
    "BottomRight"."""
    if causal_mask not in (None, *CAUSAL_MASKS):
        raise ShapeError(
            f"relax.nn.attention: causal_mask {causal_mask!r} is not one of None, 'TopLeft', "
            "'BottomRight'"
        )
    if window_size is not None:
        raise ShapeError(
            "relax.nn.attention: window_size (sliding-window attention) is not supported; "
            "pass a bias that masks the positions outside the window instead"
        )
    scale = getattr(scale, "value", scale)  # a FloatImm, as TVM takes it
    args = (query, key, value) if bias is None else (query, key, value, bias)
    attrs = {
        "scale": None if scale is None else float(scale),
        "causal_mask": causal_mask,
        "window_size": None,
    }
    return make_call(_attention, args, attrs)
