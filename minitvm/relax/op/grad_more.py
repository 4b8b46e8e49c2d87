"""Gradient rules of the remaining importer ops (grad.py is at its size limit), each built from
ops that already exist, so no new backward kernel is needed.

- conv2d_transpose is the data-adjoint of a conv2d whose (OIHW) weight is the transposed
  conv's (IOHW) weight: d data = conv2d(g, weight), d weight = conv2d_backward_weight with the
  roles of data and output swapped. conv1d_transpose is that rule with a unit height axis.
  Groups > 1 are cut into groups=1 problems (as grad_extra.py does for conv2d).
- conv3d: d data = conv3d_transpose(g, weight) with the output padding that gives back the input
  size; d weight correlates the input with g: a conv3d of the batch-transposed input by the
  batch-transposed g, strides and dilation swapped, cropped to the kernel size.
  conv3d_transpose is conv3d's data-adjoint: d data = conv3d(g, weight), d weight = the same
  correlation with the roles of input and g swapped.
- einsum: the gradient of operand i is the einsum of g with the other operands, written to
  operand i's labels; labels only operand i has are broadcast back, size-1 (broadcast) dims
  summed. A label repeated inside one operand (a diagonal) is refused.
- gather_elements: scatter-add of g into zeros (scatter_elements with reduction "add").
- cumprod: d/dx_j = (reverse cumsum of g * y)_j / x_j before the first zero along the axis;
  at that first zero the same sum over the cumprod with the zero replaced by 1; after it, 0
  (every later product holds the zero). Exact for inputs with zeros, as torch's.
- max_pool1d / avg_pool1d: the 2-D pooling gradients with a unit height axis.
  adaptive_avg_pool1d is linear with a static (out, in) averaging matrix A: d x = g @ A;
  adaptive_avg_pool2d with uneven windows (which grad.py's rule refuses) is A_h^T g A_w.
- resize2d (nearest, linear, cubic): separable and linear, y = A_h x A_w^T for static matrices
  read off the op's own numpy reference on one-hot inputs (and checked on a random probe), so
  d x = A_h^T g A_w.
- nn.attention (BSNH): the scores and softmax are recomputed, then the usual backward of
  softmax(q k^T * scale + bias) v; causal-masked positions get no gradient.
- prelu: g where x > 0, else alpha g; d alpha = sum of g x over x <= 0 per channel.
- rms_norm: r = 1/sqrt(mean(x^2) + eps), dxh = g w: d x = r (dxh - x r^2 mean(dxh x)),
  d w = sum of g x r over the other axes.

Only the dims a rule sizes constants or slices with must be static (spatial dims, kernel
sizes); a symbolic batch, as the torch importer gives, is fine.
"""

from __future__ import annotations

import math

import numpy as np

from ...error import TVMError
from ...topi.reference import causal_keep
from ...topi.utils import const_int
from ..expr import Tuple, TupleGetItem, const
from . import cumulative, linear_algebra, manipulate, scatter, statistical
from . import elementwise as E
from . import nn as _nn
from ._table import OP_TABLE
from .grad import (
    GRAD_RULES,
    NO_GRAD_RULE,
    _install,
    _require_layouts,
    _swap_last,
    collapse_sum_to,
    dtype_of,
    shape_of,
    zeros_like,
)
from .grad import _adaptive_avg_pool2d as _even_adaptive_avg_pool2d
from .grad import _same_shape as same_shape
from .grad_extra import MAX_GRAD_GROUPS
from .grad_ops import avg_pool2d_grad, conv2d_backward_weight, max_pool2d_grad


def _static_axes(x, axes, op: str) -> list:
    """The dims of `x` on `axes`, which the rule sizes at build time (other dims may be
    symbolic: a batch dim usually is)."""
    dims = shape_of(x, f"the input of {op}")
    got = [const_int(dims[k]) for k in axes]
    if any(d is None for d in got):
        raise TVMError(
            f"relax.Gradient: {op} of a tensor of shape {tuple(dims)} has no gradient rule: dims "
            f"{list(axes)} must be static (they size the rule's constants or slices)"
        )
    return got


def _refuse(op: str, what: str, fix: str) -> TVMError:
    return TVMError(f"relax.Gradient: {op} {what} has no gradient rule; {fix}")


def _per_group(call, groups: int, tensors, rule, bb, out_axes) -> list:
    """Run `rule(*parts)` -> [grads] on each of `groups` channel groups of `tensors` (pairs of
    (tensor, axis)) and join gradient k of the groups along `out_axes[k]`."""
    if groups == 1:
        return rule(*(t for t, _ in tensors))
    if groups > MAX_GRAD_GROUPS:
        raise _refuse(
            call.op.name,
            f"with groups={groups} (more than {MAX_GRAD_GROUPS})",
            "each group becomes its own kernel; use fewer groups",
        )
    parts = [bb.emit(manipulate.split(t, groups, axis=axis)) for t, axis in tensors]
    grads = [rule(*(bb.emit(TupleGetItem(p, i)) for p in parts)) for i in range(groups)]
    return [manipulate.concat([gr[k] for gr in grads], axis) for k, axis in enumerate(out_axes)]


# ----------------------------------------------------------------------------- transposed convs


def _conv2d_transpose(var, call, g, bb):
    _require_layouts(call, data_layout="NCHW", out_layout="NCHW")
    a = call.attrs
    data, weight = call.args
    groups = int(a["groups"])
    if a["kernel_layout"] not in ("IOHW", "OIHW") or (a["kernel_layout"] == "OIHW" and groups > 1):
        raise _refuse(
            "relax.nn.conv2d_transpose",
            f"with kernel_layout={a['kernel_layout']!r} and groups={groups}",
            "use kernel_layout 'IOHW' (torch's ConvTranspose2d weight)",
        )
    for op, s in zip(a["output_padding"], a["strides"]):
        if op >= s:  # the conv2d below would then be longer than the data
            raise _refuse(
                "relax.nn.conv2d_transpose",
                f"with output_padding {list(a['output_padding'])} not below the strides "
                f"{list(a['strides'])}",
                "use output_padding < strides",
            )
    swap = a["kernel_layout"] == "OIHW"
    w = bb.emit(manipulate.permute_dims(weight, [1, 0, 2, 3])) if swap else weight
    conv = {k: a[k] for k in ("strides", "padding", "dilation")}

    def one_group(x, w_g, g_g):
        d_x = _nn.conv2d(g_g, w_g, **conv)  # w_g (C, O, kh, kw) read as an OIHW conv2d weight
        d_w = conv2d_backward_weight(x, g_g, shape_of(w_g), **conv)
        return [d_x, d_w]

    d_x, d_w = _per_group(call, groups, [(data, 1), (w, 0), (g, 1)], one_group, bb, (1, 0))
    return [d_x, manipulate.permute_dims(d_w, [1, 0, 2, 3]) if swap else d_w]


def _unit(e, bb):
    return bb.emit(manipulate.expand_dims(e, 2))


def _conv1d_transpose(var, call, g, bb):
    _require_layouts(call, data_layout="NCW", kernel_layout="IOW", out_layout="NCW")
    a = call.attrs
    pad_l, pad_r = a["padding"]
    as_2d = _nn.conv2d_transpose(
        _unit(call.args[0], bb),
        _unit(call.args[1], bb),
        strides=(1, a["strides"][0]),
        padding=(0, pad_l, 0, pad_r),
        output_padding=(0, a["output_padding"][0]),
        dilation=(1, a["dilation"][0]),
        groups=a["groups"],
    )
    d_x, d_w = _conv2d_transpose(None, as_2d, _unit(g, bb), bb)
    return [manipulate.squeeze(d_x, [2]), manipulate.squeeze(d_w, [2])]


# ----------------------------------------------------------------------------- conv3d


def _conv3d(var, call, g, bb):
    _require_layouts(call, data_layout="NCDHW", kernel_layout="OIDHW", out_layout="NCDHW")
    a = call.attrs
    data, weight = call.args
    xs = [None, None, *_static_axes(data, [2, 3, 4], "relax.nn.conv3d")]
    ws = [None, None, *_static_axes(weight, [2, 3, 4], "relax.nn.conv3d's weight")]
    s, d, p = a["strides"], a["dilation"], a["padding"]
    # output padding: the input positions past the last window (they get no gradient)
    out_pad = [(xs[2 + i] + p[i] + p[3 + i] - d[i] * (ws[2 + i] - 1) - 1) % s[i] for i in range(3)]
    d_x = _nn.conv3d_transpose(
        g, weight, s, p, out_pad, d, a["groups"], kernel_layout="IODHW", out_dtype=a["out_dtype"]
    )
    groups = int(a["groups"])
    correlate = _weight_correlation(ws[2:], a, bb)
    (d_w,) = _per_group(call, groups, [(data, 1), (g, 1)], correlate, bb, (0,))
    return [d_x, d_w]


def _weight_correlation(kernel: list, a, bb):
    """(x, y) -> [the gradient of a conv3d weight (O, C, *kernel) whose conv maps x (N, C, ...)
    to y's positions (N, O, ...)]: a conv3d of the batch-transposed x by the batch-transposed y,
    strides and dilation swapped, cropped to the kernel size."""
    batch_first = [1, 0, 2, 3, 4]

    def correlate(x, y):
        corr = _nn.conv3d(
            bb.emit(manipulate.permute_dims(x, batch_first)),
            bb.emit(manipulate.permute_dims(y, batch_first)),
            strides=a["dilation"],
            padding=a["padding"],
            dilation=a["strides"],
        )  # (C, O, >= kd, >= kh, >= kw)
        crop = manipulate.strided_slice(bb.emit(corr), [2, 3, 4], [0, 0, 0], list(kernel))
        return [manipulate.permute_dims(crop, batch_first)]

    return correlate


def _conv3d_transpose(var, call, g, bb):
    """The transposed conv is the data-adjoint of conv3d(., weight) (weight IODHW read as
    OIDHW): d data = that conv3d of g, cropped where output_padding >= stride made it longer;
    d weight is that conv3d's weight gradient with g as its input and data as its output."""
    _require_layouts(call, data_layout="NCDHW", kernel_layout="IODHW", out_layout="NCDHW")
    a = call.attrs
    data, weight = call.args
    xs = _static_axes(data, [2, 3, 4], "relax.nn.conv3d_transpose")
    ws = _static_axes(weight, [2, 3, 4], "relax.nn.conv3d_transpose's weight")
    conv = {k: a[k] for k in ("strides", "padding", "dilation", "groups")}
    d_x = _nn.conv3d(g, weight, **conv, out_dtype=a["out_dtype"])
    if any(op >= st for op, st in zip(a["output_padding"], a["strides"])):
        d_x = manipulate.strided_slice(bb.emit(d_x), [2, 3, 4], [0, 0, 0], xs)
    correlate = _weight_correlation(ws, a, bb)
    (d_w,) = _per_group(call, int(a["groups"]), [(g, 1), (data, 1)], correlate, bb, (0,))
    return [d_x, d_w]


# ----------------------------------------------------------------------------- einsum


def _einsum(var, call, g, bb):
    from ...topi.linalg import parse_einsum

    arg = call.args[0]
    fields = arg.fields if isinstance(arg, Tuple) else None
    if fields is None:
        raise _refuse("relax.einsum", "of a tuple variable", "pass the operands as a list")
    shapes = [shape_of(f, "an operand of relax.einsum") for f in fields]
    terms, out = parse_einsum(call.attrs["subscripts"], [len(s) for s in shapes], "relax.einsum")
    # einsum's labels may be digits (an expanded "..."): give every label a letter of its own
    letters = {c: chr(ord("a") + k) for k, c in enumerate(dict.fromkeys("".join(terms) + out))}
    if len(letters) > 26:
        raise _refuse("relax.einsum", f"with {len(letters)} labels", "use at most 26 labels")
    terms = ["".join(letters[c] for c in t) for t in terms]
    out = "".join(letters[c] for c in out)
    extent = {}
    for term, shape in zip(terms, shapes):
        for c, dim in zip(term, shape):
            if c not in extent or const_int(extent[c]) == 1:
                extent[c] = dim
    grads = []
    for i, (term, shape) in enumerate(zip(terms, shapes)):
        if len(set(term)) != len(term):
            raise _refuse(
                "relax.einsum",
                f"{call.attrs['subscripts']!r}: operand {i} repeats a label (a diagonal)",
                "take the diagonal with another op first",
            )
        others = [t for k, t in enumerate(terms) if k != i]
        seen = set(out).union(*others)
        kept = "".join(c for c in term if c in seen)
        spec = ",".join([out, *others]) + "->" + kept
        ops = [g, *(f for k, f in enumerate(fields) if k != i)]
        grad = linear_algebra.einsum(ops, spec)
        # labels only this operand has get an axis of 1, then every label its full extent
        # (the others may hold a broadcast 1 there); a broadcast 1 of this operand is summed
        missing = [k for k, c in enumerate(term) if c not in seen]
        if missing:
            grad = manipulate.expand_dims(grad, missing)
        full = tuple(extent[c] for c in term)
        grad = bb.emit(grad)
        if not same_shape(shape_of(grad), full):
            grad = bb.emit(manipulate.broadcast_to(grad, full))
        grads.append(grad if same_shape(shape, full) else collapse_sum_to(grad, shape))
    return [grads]


# ----------------------------------------------------------------------------- gather / cumprod


def _gather_elements(var, call, g, bb):
    data, indices = call.args
    return [scatter.scatter_elements(zeros_like(data), indices, g, call.attrs["axis"], "add"), None]


def _cumprod(var, call, g, bb):
    x = call.args[0]
    if not x.struct_info.dtype.is_float:
        return [None]
    a = call.attrs
    if a["dtype"] not in (None, dtype_of(x)):
        raise _refuse(
            "relax.cumprod", f"with dtype={a['dtype']!r}", "cast the input first (astype)"
        )
    axis, exclusive = a["axis"], a["exclusive"]
    flat = axis is None
    xf, gf, ax = (
        (manipulate.reshape(x, (-1,)), manipulate.reshape(g, (-1,)), 0) if flat else (x, g, axis)
    )
    dt = dtype_of(x)
    zero, one = const(0, dt), const(1, dt)
    is_zero = bb.emit(E.equal(xf, zero))
    zeros = bb.emit(manipulate.astype(is_zero, dt))
    before = bb.emit(E.equal(statistical.cumsum(zeros, ax), zero))  # no zero up to here
    first = bb.emit(
        E.logical_and(is_zero, E.equal(statistical.cumsum(zeros, ax, exclusive=True), zero))
    )
    x_one = bb.emit(E.where(first, one, xf))  # the first zero replaced by 1

    def rev_cumsum(e):  # sum over the positions i >= j (i > j when exclusive)
        return manipulate.flip(
            statistical.cumsum(manipulate.flip(e, ax), ax, exclusive=exclusive), ax
        )

    y = cumulative.cumprod(xf, ax, exclusive=exclusive)
    y_one = cumulative.cumprod(x_one, ax, exclusive=exclusive)
    head = E.divide(rev_cumsum(E.multiply(gf, y)), E.where(is_zero, one, xf))
    at_zero = rev_cumsum(E.multiply(gf, y_one))
    grad = E.where(before, head, E.where(first, at_zero, zero))
    return [manipulate.reshape(grad, shape_of(x)) if flat else grad]


# ----------------------------------------------------------------------------- 1-D pooling


def _pool1d(grad_op):
    def rule(var, call, g, bb):
        _require_layouts(call, layout="NCW", out_layout="NCW")
        a = call.attrs
        pad_l, pad_r = a["padding"]
        attrs = {
            "pool_size": (1, a["pool_size"][0]),
            "strides": (1, a["strides"][0]),
            "padding": (0, pad_l, 0, pad_r),
            "dilation": (1, a["dilation"][0]),
            "ceil_mode": a["ceil_mode"],
            "count_include_pad": a["count_include_pad"],
            "layout": "NCHW",
        }
        x, g2 = _unit(call.args[0], bb), _unit(g, bb)
        extra = {"out": _unit(var, bb)} if grad_op is max_pool2d_grad else {}
        return [manipulate.squeeze(grad_op(g2, x, **extra, **attrs), [2])]

    return rule


def _adaptive_avg_pool1d(var, call, g, bb):
    _require_layouts(call, layout="NCW", out_layout="NCW")
    x = call.args[0]
    (width,) = _static_axes(x, [2], "relax.nn.adaptive_avg_pool1d")
    size = call.attrs["output_size"]
    out = width if size is None else const_int(size[0] if isinstance(size, tuple) else size)
    if out is None:
        raise _refuse(
            "relax.nn.adaptive_avg_pool1d", f"to a symbolic output_size {size}", "use a static one"
        )
    return [linear_algebra.matmul(g, const(_averaging(width, out).astype(dtype_of(x))))]


def _averaging(n_in: int, n_out: int) -> np.ndarray:
    """(n_out, n_in): row o averages window o, [floor(o I / O), ceil((o + 1) I / O))."""
    avg = np.zeros((n_out, n_in))
    for o in range(n_out):
        lo, hi = (o * n_in) // n_out, -((-(o + 1) * n_in) // n_out)
        avg[o, lo:hi] = 1.0 / (hi - lo)
    return avg


def _adaptive_avg_pool2d(var, call, g, bb):
    """Windows that tile H and W evenly keep grad.py's rule (an avg_pool2d gradient); other
    sizes (uneven, overlapping windows) use the separable averaging: d x = A_h^T g A_w."""
    _require_layouts(call, layout="NCHW", out_layout="NCHW")
    x = call.args[0]
    size = call.attrs["output_size"]
    if size is None:  # the identity
        return _even_adaptive_avg_pool2d(var, call, g, bb)
    h, w = _static_axes(x, [2, 3], "relax.nn.adaptive_avg_pool2d")
    oh, ow = _static_axes(var, [2, 3], "relax.nn.adaptive_avg_pool2d's result")
    if h % oh == 0 and w % ow == 0:
        return _even_adaptive_avg_pool2d(var, call, g, bb)
    dt = dtype_of(x)
    rows = linear_algebra.matmul(const(_averaging(h, oh).T.astype(dt)), g)  # (n, c, h, ow)
    return [linear_algebra.matmul(rows, const(_averaging(w, ow).astype(dt)))]


# ----------------------------------------------------------------------------- resize2d


def _resize_matrices(call, h: int, w: int, oh: int, ow: int) -> tuple:
    """(A_h (oh, h), A_w (ow, w)) with resize(x) = A_h x A_w^T on each (n, c) image."""
    a = dict(call.attrs)
    ref = OP_TABLE["relax.image.resize2d"].numpy
    a["layout"] = "NCHW"
    a["out_dtype"] = "float64"

    def rows(n_in: int, n_other: int, along_h: bool) -> np.ndarray:
        shape = (n_in, 1, n_in, n_other) if along_h else (n_in, 1, n_other, n_in)
        one_hot = np.zeros(shape)
        for k in range(n_in):  # image k: ones on row (or column) k
            one_hot[(k, 0, k) if along_h else (k, 0, slice(None), k)] = 1.0
        out = ref(one_hot, (oh, ow), **a)  # each output row of A mixes rows, all sums 1
        return (out[:, 0, :, 0] if along_h else out[:, 0, 0, :]).T

    a_h, a_w = rows(h, w, True), rows(w, h, False)
    probe = np.random.default_rng(0).standard_normal((1, 1, h, w))
    if not np.allclose(a_h @ probe[0, 0] @ a_w.T, ref(probe, (oh, ow), **a)[0, 0], atol=1e-9):
        raise _refuse(
            "relax.image.resize2d",
            f"with method={a['method']!r}, coordinate_transformation_mode="
            f"{a['coordinate_transformation_mode']!r}",
            "this resize is not a separable linear map; use method 'linear' or 'nearest_neighbor'",
        )
    return a_h, a_w


def _resize2d(var, call, g, bb):
    _require_layouts(call, layout="NCHW")
    x = call.args[0]
    if not x.struct_info.dtype.is_float or call.attrs["out_dtype"] not in (None, dtype_of(x)):
        raise _refuse(
            "relax.image.resize2d",
            f"of {dtype_of(x)} data to out_dtype {call.attrs['out_dtype']}",
            "resize float data in its own dtype",
        )
    h, w = _static_axes(x, [2, 3], "relax.image.resize2d")
    oh, ow = _static_axes(var, [2, 3], "relax.image.resize2d's result")
    a_h, a_w = _resize_matrices(call, h, w, oh, ow)
    dt = dtype_of(x)
    rows = linear_algebra.matmul(const(a_h.T.astype(dt)), g)  # (n, c, h, ow)
    return [linear_algebra.matmul(rows, const(a_w.astype(dt))), None]


# ----------------------------------------------------------------------------- attention


def _attention(var, call, g, bb):
    q, k, v = call.args[:3]
    bias = call.args[3] if len(call.args) > 3 else None
    a = call.attrs
    head_dim = const_int(shape_of(q)[3])
    if a["scale"] is None and head_dim is None:
        raise _refuse("relax.nn.attention", "with a symbolic head_dim", "pass scale explicitly")
    scale = a["scale"] if a["scale"] is not None else 1.0 / math.sqrt(head_dim)
    dt = dtype_of(q)

    def heads_first(e):  # BSNH -> BNSH (and back: the same permutation)
        return bb.emit(manipulate.permute_dims(e, [0, 2, 1, 3]))

    qh, kh, vh, gh = (heads_first(e) for e in (q, k, v, g))
    scores = E.multiply(linear_algebra.matmul(qh, _swap_last(kh)), scale)
    if bias is not None:
        scores = E.add(scores, bias)
    keep = None
    if a["causal_mask"] is not None:
        s, t = const_int(shape_of(q)[1]), const_int(shape_of(k)[1])
        if s is None or t is None:
            raise _refuse(
                "relax.nn.attention", "with a causal mask over symbolic sequence lengths",
                "use static sequence lengths",
            )  # fmt: skip
        keep = const(causal_keep(s, t, a["causal_mask"]))
        scores = E.where(keep, scores, const(np.finfo(dt).min, dt))
    p = bb.emit(_nn.softmax(bb.emit(scores), -1))
    d_v = linear_algebra.matmul(_swap_last(p), gh)
    dp = bb.emit(linear_algebra.matmul(gh, _swap_last(vh)))
    row = statistical.sum(E.multiply(dp, p), [-1], keepdims=True)
    ds = E.multiply(p, E.subtract(dp, row))
    if keep is not None:  # a masked score is a constant (rows masked whole included)
        ds = E.where(keep, ds, const(0, dt))
    ds = bb.emit(ds)
    d_q = E.multiply(linear_algebra.matmul(ds, kh), scale)
    d_k = E.multiply(linear_algebra.matmul(_swap_last(ds), qh), scale)
    grads = [heads_first(bb.emit(e)) for e in (d_q, d_k, d_v)]
    if bias is not None:
        grads.append(collapse_sum_to(ds, shape_of(bias)))
    return grads


# ----------------------------------------------------------------------------- prelu / rms_norm


def _channel_layout(x, axis: int) -> tuple:
    return tuple(-1 if k == axis else 1 for k in range(len(shape_of(x))))


def _prelu(var, call, g, bb):
    x, alpha = call.args
    nd = len(shape_of(x))
    axis = call.attrs["axis"] % nd
    pos = bb.emit(E.greater(x, const(0, dtype_of(x))))
    slope = manipulate.reshape(alpha, _channel_layout(x, axis))
    d_x = E.where(pos, g, E.multiply(g, slope))
    neg = E.where(pos, const(0, dtype_of(g)), E.multiply(g, x))
    others = [k for k in range(nd) if k != axis]
    return [d_x, statistical.sum(neg, others) if others else neg]


def _rms_norm(var, call, g, bb):
    x, weight = call.args
    nd = len(shape_of(x))
    axes = sorted(k % nd for k in call.attrs["axes"])
    dims = shape_of(x)
    counts = [const_int(dims[k]) for k in axes]
    if any(c is None for c in counts):
        raise _refuse(
            "relax.nn.rms_norm", f"over symbolic dims of data {dims}", "make those dims static"
        )
    inv_n = 1.0 / float(np.prod(counts))

    def mean(e):
        return E.multiply(statistical.sum(e, axes, keepdims=True), inv_n)

    r = bb.emit(E.divide(1.0, E.sqrt(E.add(mean(E.multiply(x, x)), call.attrs["epsilon"]))))
    layout = tuple(d if k in axes else 1 for k, d in enumerate(dims))
    dxh = bb.emit(E.multiply(g, manipulate.reshape(weight, layout)))
    inner = E.multiply(E.multiply(x, E.multiply(r, r)), mean(E.multiply(dxh, x)))
    d_x = E.multiply(r, E.subtract(dxh, inner))
    others = [k for k in range(nd) if k not in axes]
    gxr = E.multiply(E.multiply(g, x), r)
    d_w = statistical.sum(gxr, others) if others else gxr
    return [d_x, manipulate.reshape(d_w, shape_of(weight))]


MORE_IMPORTER_RULES = {
    "relax.nn.conv2d_transpose": _conv2d_transpose,
    "relax.nn.conv1d_transpose": _conv1d_transpose,
    "relax.nn.conv3d": _conv3d,
    "relax.nn.conv3d_transpose": _conv3d_transpose,
    "relax.einsum": _einsum,
    "relax.gather_elements": _gather_elements,
    "relax.cumprod": _cumprod,
    "relax.nn.max_pool1d": _pool1d(max_pool2d_grad),
    "relax.nn.avg_pool1d": _pool1d(avg_pool2d_grad),
    "relax.nn.adaptive_avg_pool1d": _adaptive_avg_pool1d,
    "relax.nn.adaptive_avg_pool2d": _adaptive_avg_pool2d,
    "relax.image.resize2d": _resize2d,
    "relax.nn.attention": _attention,
    "relax.nn.prelu": _prelu,
    "relax.nn.rms_norm": _rms_norm,
}
GRAD_RULES.update(MORE_IMPORTER_RULES)
for _name in MORE_IMPORTER_RULES:
    NO_GRAD_RULE.pop(_name, None)
_install()
