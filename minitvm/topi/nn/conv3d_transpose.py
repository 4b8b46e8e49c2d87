"""conv3d_transpose (NCDHW data, IODHW kernel) as a TE compute, and its numpy reference."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ... import te
from ...error import TEError
from ...tir import op as tir_op
from ...tir.expr import make_const
from ..utils import const_int, fmt_shape, simplify
from .conv_ext import conv2d_transpose_out_dim, conv3d_ncdhw


def conv3d_transpose_ncdhw(
    data: te.Tensor,
    kernel: te.Tensor,
    strides: Sequence[int],
    padding: Sequence[int],
    output_padding: Sequence[int],
    dilation: Sequence[int],
    groups: int = 1,
    out_dtype: str | None = None,
) -> te.Tensor:
    """The transpose (data gradient) of conv3d: data (N, C, D, H, W), kernel
    (C, O/groups, KD, KH, KW) -> (N, O, OD, OH, OW); padding is (front, top, left, back,
    bottom, right).

    Computed as a stride-1 conv3d_ncdhw of the input spread out by `strides` (zeros between
    its voxels) and bordered by d * (k - 1) - pad, with the kernel flipped and its two channel
    dims swapped per group, as conv2d_transpose_nchw does in 2-d."""
    if len(data.shape) != 5 or len(kernel.shape) != 5 or len(padding) != 6:
        raise TEError(
            f"topi.nn.conv3d_transpose_ncdhw: data {fmt_shape(data.shape)} and kernel "
            f"{fmt_shape(kernel.shape)} must be 5-D and padding {list(padding)} 6 values"
        )
    n, c, *size = data.shape
    _, og, *ks = kernel.shape
    cc, kc = const_int(c), [const_int(k) for k in ks]
    if cc is None or cc % groups or None in kc:
        raise TEError(
            f"topi.nn.conv3d_transpose_ncdhw: in_channels of data {fmt_shape(data.shape)} must "
            f"be static and divisible by groups={groups}, and the kernel {fmt_shape(kernel.shape)} "
            "static"
        )
    cg = cc // groups
    lo = [dilation[i] * (kc[i] - 1) - padding[i] for i in range(3)]
    outs = [
        conv2d_transpose_out_dim(
            size[i], ks[i], strides[i], padding[i], padding[i + 3], dilation[i], output_padding[i]
        )
        for i in range(3)
    ]
    spans = [simplify(outs[i] + dilation[i] * (kc[i] - 1)) for i in range(3)]
    zero = make_const(data.dtype, 0)

    def source(pos: Any, i: int) -> tuple[Any, Any]:
        """Whether spread-out position `pos` on spatial axis i holds an input voxel, and which."""
        num = pos - lo[i]
        if strides[i] == 1:
            return tir_op.all(num >= 0, num < size[i]), num
        whole = tir_op.floormod(num, strides[i]) == 0
        index = tir_op.floordiv(num, strides[i])
        return tir_op.all(num >= 0, whole, index < size[i]), index

    def spread_body(b: Any, ch: Any, z: Any, y: Any, x: Any):
        found = [source(p, i) for i, p in enumerate((z, y, x))]
        inside = tir_op.all(*[ok for ok, _ in found])
        return tir_op.if_then_else(inside, data[(b, ch, *[ix for _, ix in found])], zero)

    spread = te.compute((n, c, *spans), spread_body, name="data_dilate_pad", tag="injective,pad")

    def flipped_body(o: Any, ci: Any, kz: Any, ky: Any, kx: Any):
        ch = ci if groups == 1 else tir_op.floordiv(o, og) * cg + ci
        oi = o if groups == 1 else tir_op.floormod(o, og)
        return kernel[(ch, oi, *[kc[i] - 1 - t for i, t in enumerate((kz, ky, kx))])]

    flipped = te.compute(
        (simplify(og * groups), cg, *ks), flipped_body, name="kernel_flip", tag="injective"
    )
    return conv3d_ncdhw(spread, flipped, (1, 1, 1), (0,) * 6, tuple(dilation), groups, out_dtype)


def conv3d_transpose_ncdhw_reference(
    data: np.ndarray,
    kernel: np.ndarray,
    strides: Sequence[int],
    padding: Sequence[int],
    output_padding: Sequence[int],
    dilation: Sequence[int],
    groups: int = 1,
) -> np.ndarray:
    """numpy: scatter each input voxel times each kernel tap into the uncropped output, crop."""
    n, c, *size = data.shape
    _, og, *ks = kernel.shape
    full = [(size[i] - 1) * strides[i] + dilation[i] * (ks[i] - 1) + 1 + output_padding[i]
            for i in range(3)]  # fmt: skip
    out = np.zeros((n, og * groups, *full), np.float64)
    cg = c // groups
    for g in range(groups):
        xs = data[:, g * cg : (g + 1) * cg].astype(np.float64)
        kg = kernel[g * cg : (g + 1) * cg].astype(np.float64)
        for tap in np.ndindex(*ks):
            view = tuple(
                slice(tap[i] * dilation[i], tap[i] * dilation[i] + strides[i] * (size[i] - 1) + 1,
                      strides[i])
                for i in range(3)
            )  # fmt: skip
            out[(slice(None), slice(g * og, (g + 1) * og), *view)] += np.einsum(
                "ncdhw,co->nodhw", xs, kg[(..., *tap)]
            )
    crop = tuple(slice(padding[i], full[i] - padding[i + 3]) for i in range(3))
    return out[(slice(None), slice(None), *crop)].astype(data.dtype)
