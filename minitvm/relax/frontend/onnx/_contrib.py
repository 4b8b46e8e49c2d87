"""ONNX Runtime's com.microsoft contrib ops that exporters of transformer models write.

Only the ops in `CONTRIB_CONVERTERS` are accepted from that domain; any other is refused by
name. Each follows ONNX Runtime's CPU kernel (the only definition these ops have), and the
tests compare against onnxruntime.
"""

from __future__ import annotations

import math

import numpy as np

from ....error import OpAttributeInvalid, OpAttributeUnImplemented
from ... import op as R
from ._helpers import _const_like, _dtype, _ndim, _required, _tensor, shape_of


def _gelu(ctx, inputs, attrs):
    return ctx.emit(R.nn.gelu(ctx.expr(inputs[0])))


def _bias_gelu(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    return ctx.emit(R.nn.gelu(ctx.emit(R.add(x, _tensor(ctx, inputs[1], x)))))


def _normalized(ctx, x, gamma, beta, eps: float) -> list:
    """Layer norm over the last axis, with the mean and 1/std ONNX Runtime also returns (kept
    dims, as its kernel writes them)."""
    mean = ctx.emit(R.mean(x, [-1], keepdims=True))
    var = ctx.emit(R.variance(x, [-1], keepdims=True))
    inv = ctx.emit(R.rsqrt(ctx.emit(R.add(var, _const_like(ctx, var, eps)))))
    y = ctx.emit(R.multiply(ctx.emit(R.subtract(x, mean)), inv))
    y = ctx.emit(R.multiply(y, gamma))
    if beta is not None:
        y = ctx.emit(R.add(y, beta))
    return [y, mean, inv]


def _skip_layer_norm(ctx, inputs, attrs):
    """output = LayerNorm(input + skip + bias) * gamma + beta; outputs mean, inv_std_var and
    the sum input + skip + bias."""
    x = ctx.expr(inputs[0])
    total = ctx.emit(R.add(x, _tensor(ctx, inputs[1], x)))
    bias = inputs[4] if len(inputs) > 4 else None
    if bias is not None:
        total = ctx.emit(R.add(total, _tensor(ctx, bias, x)))
    beta = inputs[3] if len(inputs) > 3 and inputs[3] is not None else None
    beta = None if beta is None else _tensor(ctx, beta, x)
    eps = float(attrs.get("epsilon", 1e-12))
    return [*_normalized(ctx, total, _tensor(ctx, inputs[2], x), beta, eps), total]


def _embed_layer_norm(ctx, inputs, attrs):
    """BERT's embedding: word + position + segment embeddings, layer-normalised; mask_index
    is the number of ones of each row of the mask (zeros when there is no mask)."""
    inputs = list(inputs) + [None] * (9 - len(inputs))
    ids, segment_ids, word, position, segment, gamma, beta, mask, position_ids = inputs[:9]
    ids = ctx.expr(ids)
    if _ndim(ids) != 2:
        raise OpAttributeInvalid(f"input_ids must be (batch, sequence), got {shape_of(ids)}")
    batch, seq = shape_of(ids)
    word = ctx.expr(word)
    total = ctx.emit(R.take(word, ids, axis=0))
    position = _tensor(ctx, position, word)
    if position_ids is None:
        rows = ctx.emit(R.strided_slice(position, [0], [0], [seq]))
        total = ctx.emit(R.add(total, rows))
    else:
        total = ctx.emit(R.add(total, ctx.emit(R.take(position, ctx.expr(position_ids), 0))))
    if (segment_ids is None) != (segment is None):
        raise OpAttributeInvalid(
            "segment_ids and segment_embedding must be given together (or both omitted)"
        )
    if segment is not None:
        seg = ctx.emit(R.take(_tensor(ctx, segment, word), ctx.expr(segment_ids), axis=0))
        total = ctx.emit(R.add(total, seg))
    eps = float(attrs.get("epsilon", 1e-12))
    beta = None if beta is None else _tensor(ctx, beta, word)
    y = _normalized(ctx, total, _tensor(ctx, gamma, word), beta, eps)[0]
    if mask is None:
        mask_index = ctx.emit(R.zeros((batch,), "int32"))
    else:
        mask_index = ctx.emit(R.sum(ctx.emit(R.astype(ctx.expr(mask), "int32")), [1]))
    if len([o for o in ctx.node.output if o]) > 2:
        raise OpAttributeUnImplemented(
            "the third output (embedding_sum) is not supported; export without it"
        )
    return [y, mask_index]


# ----------------------------------------------------------------------------- Attention


def _heads(ctx, t, batch, seq, heads: int, size: int, key: bool = False):
    """(batch, seq, heads*size) -> (batch, heads, seq, size), or (batch, heads, size, seq)
    for keys so that one matmul gives the scores."""
    t = ctx.emit(R.reshape(t, (batch, seq, heads, size)))
    return ctx.emit(R.permute_dims(t, (0, 2, 3, 1) if key else (0, 2, 1, 3)))


def _attention_mask(ctx, mask, scores, batch, seq, filler):
    """The additive mask ONNX Runtime applies: `filler` where a key is masked, else 0.

    mask_index forms: (batch,) end of each row's keys (right padding); (batch, total) or
    (batch, seq, total) of 1 (keep) / 0 (mask)."""
    mask = ctx.expr(mask)
    dims = shape_of(mask)
    zero = _const_like(ctx, scores, 0.0)
    if len(dims) == 1 and (dims[0] is batch or (isinstance(batch, int) and dims[0] == batch)):
        ends = ctx.emit(R.reshape(ctx.emit(R.astype(mask, "int64")), (batch, 1, 1, 1)))
        keys = ctx.expr(np.arange(seq, dtype="int64").reshape(1, 1, 1, seq))
        keep = ctx.emit(R.less(keys, ends))
    elif len(dims) == 2:
        keep = ctx.emit(
            R.reshape(
                ctx.emit(R.greater(mask, ctx.expr(np.zeros((), _dtype(mask))))), (batch, 1, 1, seq)
            )
        )
    elif len(dims) == 3:
        keep = ctx.emit(
            R.reshape(
                ctx.emit(R.greater(mask, ctx.expr(np.zeros((), _dtype(mask))))),
                (batch, 1, seq, seq),
            )
        )
    else:
        raise OpAttributeUnImplemented(
            f"mask_index of shape {dims} is not supported; supported: (batch,) end positions, "
            "(batch, sequence) or (batch, sequence, sequence) 0/1 masks"
        )
    return ctx.emit(R.where(keep, zero, filler))


def _attention(ctx, inputs, attrs):
    """Multi-head self-attention with packed Q/K/V weights (ONNX Runtime's Attention)."""
    inputs = list(inputs) + [None] * (8 - len(inputs))
    x, weight, bias, mask, past, pos_bias, past_len = inputs[:7]
    if past is not None or past_len is not None or inputs[7] is not None:
        raise OpAttributeUnImplemented(
            "inputs 'past' / 'past_sequence_length' (a key/value cache) are not supported; "
            "export the model without the cache"
        )
    for name in ("do_rotary", "past_present_share_buffer"):
        if int(attrs.get(name, 0)):
            raise OpAttributeUnImplemented(f"attribute {name}=1 is not supported")
    if len([o for o in ctx.node.output if o]) > 1:
        raise OpAttributeUnImplemented("output 'present' is not supported (no cache)")
    x = ctx.expr(x)
    if _ndim(x) != 3:
        raise OpAttributeInvalid(f"input must be (batch, sequence, hidden), got {shape_of(x)}")
    batch, seq, _ = shape_of(x)
    heads = int(_required(attrs, "num_heads"))
    weight = _tensor(ctx, weight, x)
    width = shape_of(weight)[1]
    sizes = [int(s) for s in attrs.get("qkv_hidden_sizes", [])] or [width // 3] * 3
    if len(sizes) != 3 or sum(sizes) != width or sizes[0] != sizes[1]:
        raise OpAttributeInvalid(
            f"qkv_hidden_sizes {sizes} must be 3 sizes (Q and K equal) summing to the weight's "
            f"width {width}"
        )
    if any(s % heads for s in sizes):
        raise OpAttributeInvalid(f"qkv_hidden_sizes {sizes} must each divide by num_heads {heads}")
    qkv = ctx.emit(R.matmul(x, weight))
    if bias is not None:
        qkv = ctx.emit(R.add(qkv, _tensor(ctx, bias, x)))
    q, k, v = (
        ctx.emit(R.strided_slice(qkv, [2], [begin], [begin + size]))
        for begin, size in zip((0, sizes[0], sizes[0] + sizes[1]), sizes)
    )
    head_qk, head_v = sizes[0] // heads, sizes[2] // heads
    q = _heads(ctx, q, batch, seq, heads, head_qk)
    k = _heads(ctx, k, batch, seq, heads, head_qk, key=True)
    v = _heads(ctx, v, batch, seq, heads, head_v)
    scale = float(attrs.get("scale", 1.0 / math.sqrt(head_qk)))
    scores = ctx.emit(R.multiply(ctx.emit(R.matmul(q, k)), _const_like(ctx, x, scale)))
    filler = _const_like(ctx, x, float(attrs.get("mask_filter_value", -10000.0)))
    if mask is not None:
        scores = ctx.emit(R.add(scores, _attention_mask(ctx, mask, scores, batch, seq, filler)))
    if int(attrs.get("unidirectional", 0)):
        causal = np.tril(np.ones((seq, seq), bool))
        lowest = _const_like(ctx, x, float(np.finfo(_dtype(x)).min))
        scores = ctx.emit(R.where(ctx.expr(causal), scores, lowest))
    if pos_bias is not None:
        scores = ctx.emit(R.add(scores, _tensor(ctx, pos_bias, x)))
    probs = ctx.emit(R.nn.softmax(scores, -1))
    out = ctx.emit(R.permute_dims(ctx.emit(R.matmul(probs, v)), (0, 2, 1, 3)))
    return ctx.emit(R.reshape(out, (batch, seq, sizes[2])))


CONTRIB_CONVERTERS = {
    "Gelu": _gelu,
    "BiasGelu": _bias_gelu,
    "SkipLayerNormalization": _skip_layer_norm,
    "EmbedLayerNormalization": _embed_layer_norm,
    "Attention": _attention,
}
