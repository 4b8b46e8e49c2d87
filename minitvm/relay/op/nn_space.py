"""`relay.nn.space_to_batch_nd` and `batch_to_space_nd`: blocks of the spatial dims moved into
the batch and back (TensorFlow's ops), as pad / reshape / transpose / slice rows."""

from __future__ import annotations

from typing import Any

from ...error import ShapeError
from ...relax import op as rop
from ..expr import Expr
from ._registry import call, register
from .tensor import static_shape


def _check(op: str, shape: tuple, blocks: tuple, pairs: tuple, what: str) -> None:
    m = len(blocks)
    if m < 1 or len(shape) < m + 1:
        raise ShapeError(f"nn.{op}: {m} block dims need data of rank > {m}, got {shape}")
    if len(pairs) != m or any(len(p) != 2 for p in pairs):
        raise ShapeError(f"nn.{op}: {what} {list(pairs)} must be {m} (before, after) pairs")
    if any(b < 1 for b in blocks):
        raise ShapeError(f"nn.{op}: block_shape {list(blocks)} must be positive")


def _space_to_batch(emit, args, attrs):
    x = args[0]
    shape = static_shape(x, "nn.space_to_batch_nd")
    blocks, pads = attrs.block_shape, attrs.paddings
    _check("space_to_batch_nd", shape, blocks, pads, "paddings")
    m, rest = len(blocks), list(shape[len(blocks) + 1 :])
    padded = [s + lo + hi for s, (lo, hi) in zip(shape[1 : m + 1], pads)]
    for s, b in zip(padded, blocks):
        if s % b:
            raise ShapeError(
                f"nn.space_to_batch_nd: padded spatial dims {padded} must divide by "
                f"block_shape {list(blocks)}"
            )
    flat_pads = [0, 0] + [v for p in pads for v in p] + [0, 0] * len(rest)
    x = emit(rop.nn.pad(x, flat_pads, attrs.pad_value))
    split = [shape[0]]
    for s, b in zip(padded, blocks):
        split += [s // b, b]
    x = emit(rop.reshape(x, split + rest))
    # (n, s1/b1, b1, ..., rest) -> (b1, ..., bm, n, s1/b1, ..., rest)
    order = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)]
    order += list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    x = emit(rop.permute_dims(x, order))
    batch = shape[0]
    for b in blocks:
        batch *= b
    return rop.reshape(x, [batch] + [s // b for s, b in zip(padded, blocks)] + rest)


def _batch_to_space(emit, args, attrs):
    x = args[0]
    shape = static_shape(x, "nn.batch_to_space_nd")
    blocks, crops = attrs.block_shape, attrs.crops
    _check("batch_to_space_nd", shape, blocks, crops, "crops")
    m, rest = len(blocks), list(shape[len(blocks) + 1 :])
    prod = 1
    for b in blocks:
        prod *= b
    if shape[0] % prod:
        raise ShapeError(
            f"nn.batch_to_space_nd: batch {shape[0]} must divide by prod(block_shape) = {prod}"
        )
    batch, spatial = shape[0] // prod, list(shape[1 : m + 1])
    x = emit(rop.reshape(x, list(blocks) + [batch] + spatial + rest))
    # (b1, ..., bm, n, s1, ..., rest) -> (n, s1, b1, s2, b2, ..., rest)
    order = [m] + [v for i in range(m) for v in (m + 1 + i, i)]
    order += list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    x = emit(rop.permute_dims(x, order))
    full = [s * b for s, b in zip(spatial, blocks)]
    x = emit(rop.reshape(x, [batch] + full + rest))
    ends = [s - hi for s, (lo, hi) in zip(full, crops)]
    if any(e <= lo for e, (lo, _) in zip(ends, crops)):
        raise ShapeError(f"nn.batch_to_space_nd: crops {list(crops)} remove all of {full}")
    return rop.strided_slice(x, list(range(1, m + 1)), [lo for lo, _ in crops], ends)


register("nn.space_to_batch_nd", _space_to_batch)
register("nn.batch_to_space_nd", _batch_to_space)


def _pairs(values: Any) -> tuple:
    return tuple(tuple(int(v) for v in p) for p in values)


def space_to_batch_nd(data: Expr, block_shape: Any, paddings: Any, pad_value: float = 0) -> Expr:
    """Pad spatial dims 1..M by `paddings` ((before, after) each), cut them into blocks of
    `block_shape` and move the block offsets into the batch: (N, *S, *R) ->
    (N * prod(B), *(S_padded / B), *R)."""
    attrs = {
        "block_shape": tuple(int(b) for b in block_shape),
        "paddings": _pairs(paddings),
        "pad_value": float(pad_value),
    }
    return call("nn.space_to_batch_nd", (data,), attrs)


def batch_to_space_nd(data: Expr, block_shape: Any, crops: Any) -> Expr:
    """The inverse of space_to_batch_nd: batch blocks back into spatial dims 1..M, then each
    cropped by `crops` ((before, after) each)."""
    attrs = {"block_shape": tuple(int(b) for b in block_shape), "crops": _pairs(crops)}
    return call("nn.batch_to_space_nd", (data,), attrs)


__all__ = ["batch_to_space_nd", "space_to_batch_nd"]
