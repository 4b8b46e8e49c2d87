"""numpy references of the operators (the oracle for tests and the graph-level evaluator)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np


def _pair(v: Any) -> tuple:
    if isinstance(v, int):
        return (v, v)
    v = tuple(v)
    return (v[0], v[0]) if len(v) == 1 else v


def _pad4(p: Any) -> tuple:
    if isinstance(p, int):
        return (p,) * 4
    p = tuple(p)
    return p * 4 if len(p) == 1 else (p[0], p[1], p[0], p[1]) if len(p) == 2 else p


def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0).astype(x.dtype)


def gelu(x: np.ndarray) -> np.ndarray:
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return (0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))).astype(x.dtype)


def sigmoid(x: np.ndarray) -> np.ndarray:
    return (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(x.dtype)


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype)


def log_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    m = x.max(axis=axis, keepdims=True)
    return (x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))).astype(x.dtype)


def dense(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    out = x @ w.T
    return (out if b is None else out + b).astype(x.dtype)


def conv2d(
    data: np.ndarray,
    kernel: np.ndarray,
    strides: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    data_layout: str = "NCHW",
    kernel_layout: str = "OIHW",
    out_layout: str | None = None,
) -> np.ndarray:
    """conv2d in any layouts: through NCHW/OIHW and back to `out_layout` (default data_layout)."""
    if (data_layout, kernel_layout, out_layout or data_layout) != ("NCHW", "OIHW", "NCHW"):
        x = layout_transform(data, data_layout, "NCHW")
        w = layout_transform(kernel, kernel_layout, "OIHW")
        out = conv2d(x, w, strides, padding, dilation, groups)
        return layout_transform(out, "NCHW", out_layout or data_layout)
    sh, sw = _pair(strides)
    dh, dw = _pair(dilation)
    pt, pl, pb, pr = _pad4(padding)
    x = np.pad(data, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    n, _c, h, w = x.shape
    o, cg, kh, kw = kernel.shape
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (w - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow), dtype=np.float64)
    og = o // groups
    for g in range(groups):
        xs = x[:, g * cg : (g + 1) * cg]
        ks = kernel[g * og : (g + 1) * og].astype(np.float64)
        for i in range(kh):
            for j in range(kw):
                patch = xs[
                    :,
                    :,
                    i * dh : i * dh + sh * (oh - 1) + 1 : sh,
                    j * dw : j * dw + sw * (ow - 1) + 1 : sw,
                ]
                out[:, g * og : (g + 1) * og] += np.einsum("nchw,oc->nohw", patch, ks[:, :, i, j])
    return out.astype(data.dtype)


conv2d_nchw = conv2d  # TVM's name of the NCHW / OIHW case (conv2d's default layouts)


def padded_taps(start: int, k: int, d: int, end: int) -> int:
    """How many of the taps start, start+d, ..., start+(k-1)d lie before `end` (the padded
    input's end): what an average with count_include_pad divides by, as TVM and ONNX count it."""
    return max(0, min(k, (end - 1 - start) // d + 1))


def pool2d(
    data: np.ndarray,
    pool_size: Any,
    strides: Any = 1,
    dilation: Any = 1,
    padding: Any = 0,
    pool_type: str = "max",
    ceil_mode: bool = False,
    count_include_pad: bool = False,
    layout: str = "NCHW",
) -> np.ndarray:
    if layout != "NCHW":  # through NCHW and back
        x = layout_transform(data, layout, "NCHW")
        out = pool2d(
            x, pool_size, strides, dilation, padding, pool_type, ceil_mode, count_include_pad
        )
        return layout_transform(out, "NCHW", layout)
    kh, kw = _pair(pool_size)
    sh, sw = _pair(strides)
    dh, dw = _pair(dilation)
    pt, pl, pb, pr = _pad4(padding)
    n, c, h, w = data.shape

    def out_dim(size: int, k: int, lo: int, hi: int, s: int, d: int) -> int:
        extra = s - 1 if ceil_mode else 0
        out = (size + lo + hi - d * (k - 1) - 1 + extra) // s + 1
        return out - 1 if ceil_mode and (out - 1) * s >= size + lo else out

    oh, ow = out_dim(h, kh, pt, pb, sh, dh), out_dim(w, kw, pl, pr, sw, dw)
    out = np.zeros((n, c, oh, ow), dtype=np.float64)
    for y in range(oh):
        for x in range(ow):
            ys = [y * sh - pt + i * dh for i in range(kh)]
            xs = [x * sw - pl + j * dw for j in range(kw)]
            vy = [v for v in ys if 0 <= v < h]
            vx = [v for v in xs if 0 <= v < w]
            win = data[:, :, vy][:, :, :, vx].astype(np.float64)
            if pool_type == "max":
                out[:, :, y, x] = win.max(axis=(2, 3)) if win.size else -np.inf
            elif count_include_pad:
                y0, x0 = y * sh - pt, x * sw - pl
                cy = padded_taps(y0, kh, dh, h + pb)
                cx = padded_taps(x0, kw, dw, w + pr)
                out[:, :, y, x] = win.sum(axis=(2, 3)) / max(cy * cx, 1)
            else:
                out[:, :, y, x] = win.sum(axis=(2, 3)) / max(len(vy) * len(vx), 1)
    return out.astype(data.dtype)


def adaptive_avg_pool2d(
    data: np.ndarray, output_size: Any = None, layout: str = "NCHW"
) -> np.ndarray:
    if layout != "NCHW":  # through NCHW and back
        out = adaptive_avg_pool2d(layout_transform(data, layout, "NCHW"), output_size)
        return layout_transform(out, "NCHW", layout)
    n, c, h, w = data.shape
    oh, ow = (h, w) if output_size is None else _pair(output_size)
    out = np.zeros((n, c, oh, ow), dtype=np.float64)
    for y in range(oh):
        y0, y1 = y * h // oh, -(-(y + 1) * h // oh)
        for x in range(ow):
            x0, x1 = x * w // ow, -(-(x + 1) * w // ow)
            out[:, :, y, x] = data[:, :, y0:y1, x0:x1].astype(np.float64).mean(axis=(2, 3))
    return out.astype(data.dtype)


def batch_norm(
    x: np.ndarray,
    gamma: np.ndarray,
    beta: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
    axis: int = 1,
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
    training: bool = False,
    momentum: float = 0.1,
) -> tuple:
    axis = axis % x.ndim
    shape = [1] * x.ndim
    shape[axis] = -1
    if training:
        others = tuple(n for n in range(x.ndim) if n != axis)
        use_mean = x.mean(axis=others)
        use_var = ((x - use_mean.reshape(shape)) ** 2).mean(axis=others)
        new_mean = ((1 - momentum) * mean + momentum * use_mean).astype(mean.dtype)
        new_var = ((1 - momentum) * var + momentum * use_var).astype(var.dtype)
    else:
        use_mean, use_var, new_mean, new_var = mean, var, mean, var
    out = (x - use_mean.reshape(shape)) / np.sqrt(use_var.reshape(shape) + epsilon)
    if scale:
        out = out * gamma.reshape(shape)
    if center:
        out = out + beta.reshape(shape)
    return out.astype(x.dtype), new_mean, new_var


def layer_norm(
    x: np.ndarray,
    gamma: np.ndarray,
    beta: np.ndarray,
    axes: Any = -1,
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> np.ndarray:
    axes = tuple(sorted(a % x.ndim for a in ([axes] if isinstance(axes, int) else axes)))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    out = (x - mean) / np.sqrt(var + epsilon)
    shape = [x.shape[n] if n in axes else 1 for n in range(x.ndim)]
    if scale:
        out = out * gamma.reshape(shape)
    if center:
        out = out + beta.reshape(shape)
    return out.astype(x.dtype)


def reduce(fn: Any, x: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    axis = tuple(axis) if isinstance(axis, Sequence) else axis
    return np.asarray(fn(x, axis=axis, keepdims=keepdims)).astype(x.dtype)


def strided_slice(
    x: np.ndarray,
    axes: Sequence[int],
    begin: Sequence[int],
    end: Sequence[int],
    strides: Sequence[int] | None = None,
) -> np.ndarray:
    index = [slice(None)] * x.ndim
    strides = strides or [1] * len(axes)
    for a, b, e, s in zip(axes, begin, end, strides):
        index[a] = slice(b, e, s)
    return x[tuple(index)]


def take(
    x: np.ndarray, indices: np.ndarray, axis: int | None = None, mode: str = "clip"
) -> np.ndarray:
    return np.take(x, indices, axis=axis, mode="raise" if mode == "fast" else mode)


def split(x: np.ndarray, indices_or_sections: Any, axis: int = 0) -> tuple:
    return tuple(np.split(x, indices_or_sections, axis=axis))


def _parse_layout(layout: str) -> list[tuple[str, int | None]]:
    """[(letter, block or None)] of a layout string (validated by topi.layout.Layout)."""
    from .layout import Layout

    return list(Layout.parse(layout).axes)


def layout_transform(
    x: np.ndarray, src_layout: str, dst_layout: str, pad_value: float | None = None
) -> np.ndarray:
    """`x` in `src_layout` rewritten in `dst_layout` by reshapes and transposes; a block that
    does not divide its axis pads the tail with `pad_value`."""
    src, dst = _parse_layout(src_layout), _parse_layout(dst_layout)
    letters = [a for a, _ in src]
    primals = [a for a in letters if a.isupper()]
    # 1. primal order, each primal's outer axis followed by its block: merge them
    order = []
    for p in primals:
        order.append(letters.index(p))
        if p.lower() in letters:
            order.append(letters.index(p.lower()))
    full = {
        p: int(np.prod([x.shape[letters.index(a)] for a in (p, p.lower()) if a in letters]))
        for p in primals
    }
    y = x.transpose(order).reshape([full[p] for p in primals])
    # 2. pad each primal to a multiple of its block in dst, split it, and order as dst
    blocks = {a.upper(): f for a, f in dst if a.islower()}
    widths = [(0, -full[p] % blocks.get(p, 1)) for p in primals]
    if any(hi for _, hi in widths):
        if pad_value is None:
            raise ValueError(f"layout_transform {src_layout}->{dst_layout}: needs pad_value")
        y = np.pad(y, widths, constant_values=pad_value)
    split_shape, names = [], []
    for p, (_, hi) in zip(primals, widths):
        b = blocks.get(p)
        if b is None:
            split_shape.append(full[p])
            names.append(p)
        else:
            split_shape += [(full[p] + hi) // b, b]
            names += [p, p.lower()]
    y = y.reshape(split_shape)
    return np.ascontiguousarray(y.transpose([names.index(a) for a, _ in dst]))


def index_map_transform(
    x: np.ndarray, index_map: Any, pad_value: float | None = None
) -> np.ndarray:
    """Element idx of `x` moved to `index_map(idx)`; the image's other elements are pad_value."""
    out = index_map.map_ndarray(x)
    if pad_value:
        filled = index_map.map_ndarray(np.ones(x.shape, dtype=bool))
        out = np.where(filled, out, np.asarray(pad_value, dtype=x.dtype))
    return out


def silu(x: np.ndarray) -> np.ndarray:
    return (x * sigmoid(x)).astype(x.dtype)


def leaky_relu(x: np.ndarray, alpha: float = 0.01) -> np.ndarray:
    return np.where(x > 0, x, x * np.asarray(alpha, x.dtype)).astype(x.dtype)


def softplus(x: np.ndarray, beta: float = 1.0, threshold: float = 20.0) -> np.ndarray:
    bx = x.astype(np.float64) * beta
    soft = (np.log1p(np.exp(-np.abs(bx))) + np.maximum(bx, 0)) / beta
    return np.where(bx > threshold, x, soft).astype(x.dtype)


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    v = x.astype(np.float64)
    inner = math.sqrt(2.0 / math.pi) * (v + 0.044715 * v**3)
    return (0.5 * v * (1.0 + np.tanh(inner))).astype(x.dtype)


def group_norm(
    x: np.ndarray,
    gamma: np.ndarray,
    beta: np.ndarray,
    num_groups: int,
    channel_axis: int,
    axes: Sequence[int],
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> np.ndarray:
    """Normalise over `axes` and the channels of each of `num_groups` groups."""
    c_ax = channel_axis % x.ndim
    shape = list(x.shape)
    grouped = shape[:c_ax] + [num_groups, shape[c_ax] // num_groups] + shape[c_ax + 1 :]
    red = tuple(sorted([c_ax + 1] + [a % x.ndim + (a % x.ndim > c_ax) for a in axes]))
    y = x.astype(np.float64).reshape(grouped)
    mean = y.mean(axis=red, keepdims=True)
    var = ((y - mean) ** 2).mean(axis=red, keepdims=True)
    out = ((y - mean) / np.sqrt(var + epsilon)).reshape(shape)
    pshape = [1] * x.ndim
    pshape[c_ax] = -1
    if scale:
        out = out * gamma.reshape(pshape)
    if center:
        out = out + beta.reshape(pshape)
    return out.astype(x.dtype)


def causal_keep(s: int, t: int, causal_mask: str | None) -> np.ndarray:
    """The (s, t) boolean mask of attention positions kept by a causal mask (TVM's modes)."""
    if causal_mask is None:
        return np.ones((s, t), dtype=bool)
    offset = 0 if causal_mask == "TopLeft" else t - s
    return np.tril(np.ones((s, t), dtype=bool), k=offset)


def attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    bias: np.ndarray | None = None,
    scale: float | None = None,
    causal_mask: str | None = None,
) -> np.ndarray:
    """softmax(q k^T * scale + bias) v in TVM's BSNH layout (batch, seq, heads, head_dim)."""
    qf, kf, vf = (a.astype(np.float64).transpose(0, 2, 1, 3) for a in (q, k, v))
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = qf @ kf.transpose(0, 1, 3, 2) * scale
    if bias is not None:
        scores = scores + bias
    keep = causal_keep(q.shape[1], k.shape[1], causal_mask)
    scores = np.where(keep, scores, np.finfo(q.dtype).min)
    scores = scores - scores.max(axis=-1, keepdims=True)
    p = np.exp(scores)
    p = p / p.sum(axis=-1, keepdims=True)
    return (p @ vf).transpose(0, 2, 1, 3).astype(q.dtype)


_COORDINATE_MODES = {
    "half_pixel": lambda x, i, o: (x + 0.5) * (i / o) - 0.5,
    "pytorch_half_pixel": lambda x, i, o: (x + 0.5) * (i / o) - 0.5 if o > 1 else 0 * x,
    "align_corners": lambda x, i, o: x * ((i - 1) / (o - 1)) if o > 1 else 0 * x,
    "asymmetric": lambda x, i, o: x * (i / o),
    "tf_half_pixel_for_nn": lambda x, i, o: (x + 0.5) * (i / o),
}
_ROUNDING = {
    "round": lambda v: np.floor(v + 0.5),
    "round_prefer_ceil": lambda v: np.floor(v + 0.5),
    "round_prefer_floor": lambda v: np.ceil(v - 0.5),
    "floor": np.floor,
    "ceil": np.ceil,
}


def resize2d(
    data: np.ndarray,
    size: Sequence[int],
    layout: str = "NCHW",
    method: str = "linear",
    coordinate_transformation_mode: str = "half_pixel",
    rounding_method: str = "round",
    out_dtype: str | None = None,
) -> np.ndarray:
    """Nearest / bilinear resize of H and W (coordinates in the data's float type)."""
    x = data if layout == "NCHW" else data.transpose(0, 3, 1, 2)
    fdt = x.dtype if x.dtype.kind == "f" else np.dtype("float32")
    _, _, h, w = x.shape
    oh, ow = (int(s) for s in size)
    mode = _COORDINATE_MODES[coordinate_transformation_mode]

    def src(o: int, i: int) -> np.ndarray:
        pos = np.arange(o).astype(fdt)
        return np.asarray(mode(pos, fdt.type(i), fdt.type(o)), dtype=fdt)

    sy, sx = src(oh, h), src(ow, w)
    if method == "nearest_neighbor":
        rnd = _ROUNDING[rounding_method]
        iy = np.clip(rnd(sy).astype(np.int64), 0, h - 1)
        ix = np.clip(rnd(sx).astype(np.int64), 0, w - 1)
        out = x[:, :, iy][:, :, :, ix]
    else:
        fy, fx = np.floor(sy), np.floor(sx)
        wy, wx = (sy - fy)[:, None], (sx - fx)[None, :]
        y0, x0 = fy.astype(np.int64), fx.astype(np.int64)
        ys = (np.clip(y0, 0, h - 1), np.clip(y0 + 1, 0, h - 1))
        xs = (np.clip(x0, 0, w - 1), np.clip(x0 + 1, 0, w - 1))
        xf = x.astype(fdt)

        def row(yi: np.ndarray) -> np.ndarray:
            r = xf[:, :, yi]
            return r[:, :, :, xs[0]] * (1 - wx) + r[:, :, :, xs[1]] * wx

        out = row(ys[0]) * (1 - wy) + row(ys[1]) * wy
    out = out if layout == "NCHW" else out.transpose(0, 2, 3, 1)
    return np.ascontiguousarray(out).astype(out_dtype or data.dtype)


def conv1d_ncw(
    data: np.ndarray,
    kernel: np.ndarray,
    stride: int = 1,
    padding: Sequence[int] = (0, 0),
    dilation: int = 1,
    groups: int = 1,
) -> np.ndarray:
    out = conv2d_nchw(
        data[:, :, None], kernel[:, :, None], (1, stride), (0, padding[0], 0, padding[1]),
        (1, dilation), groups,
    )  # fmt: skip
    return out[:, :, 0]


def conv2d_transpose_nchw(
    data: np.ndarray,
    kernel: np.ndarray,
    strides: Sequence[int],
    padding: Sequence[int],
    output_padding: Sequence[int],
    dilation: Sequence[int],
    groups: int = 1,
) -> np.ndarray:
    """Scatter each input pixel times the kernel into the (uncropped) output, then crop."""
    n, c, h, w = data.shape
    _, og, kh, kw = kernel.shape
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = strides, dilation, padding
    full_h = (h - 1) * sh + dh * (kh - 1) + 1 + output_padding[0]
    full_w = (w - 1) * sw + dw * (kw - 1) + 1 + output_padding[1]
    full = np.zeros((n, og * groups, full_h + pb, full_w + pr), dtype=np.float64)
    cg = c // groups
    for g in range(groups):
        xs = data[:, g * cg : (g + 1) * cg].astype(np.float64)
        ks = kernel[g * cg : (g + 1) * cg].astype(np.float64)
        for i in range(kh):
            for j in range(kw):
                part = np.einsum("nchw,co->nohw", xs, ks[:, :, i, j])
                full[:, g * og : (g + 1) * og,
                     i * dh : i * dh + sh * (h - 1) + 1 : sh,
                     j * dw : j * dw + sw * (w - 1) + 1 : sw] += part  # fmt: skip
    oh = full_h - pt - pb
    ow = full_w - pl - pr
    return full[:, :, pt : pt + oh, pl : pl + ow].astype(data.dtype)


def conv1d_transpose_ncw(
    data: np.ndarray,
    kernel: np.ndarray,
    stride: int = 1,
    padding: Sequence[int] = (0, 0),
    output_padding: int = 0,
    dilation: int = 1,
    groups: int = 1,
) -> np.ndarray:
    out = conv2d_transpose_nchw(
        data[:, :, None], kernel[:, :, None], (1, stride), (0, padding[0], 0, padding[1]),
        (0, output_padding), (1, dilation), groups,
    )  # fmt: skip
    return out[:, :, 0]


def conv3d_ncdhw(
    data: np.ndarray,
    kernel: np.ndarray,
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int = 1,
) -> np.ndarray:
    """A sum over the kernel's taps of strided input views times that tap, per group."""
    lo, hi = padding[:3], padding[3:]
    x = np.pad(data, [(0, 0), (0, 0)] + list(zip(lo, hi)))
    n, _c, *size = x.shape
    o, cg, *ks = kernel.shape
    outs = [(size[i] - dilation[i] * (ks[i] - 1) - 1) // strides[i] + 1 for i in range(3)]
    out = np.zeros((n, o, *outs), dtype=np.float64)
    og = o // groups
    for g in range(groups):
        xs = x[:, g * cg : (g + 1) * cg].astype(np.float64)
        kg = kernel[g * og : (g + 1) * og].astype(np.float64)
        for tap in np.ndindex(*ks):
            view = tuple(
                slice(tap[i] * dilation[i], tap[i] * dilation[i] + strides[i] * (outs[i] - 1) + 1,
                      strides[i])
                for i in range(3)
            )  # fmt: skip
            part = np.einsum(
                "ncdhw,oc->nodhw", xs[(slice(None), slice(None), *view)], kg[(..., *tap)]
            )
            out[:, g * og : (g + 1) * og] += part
    return out.astype(data.dtype)
