"""Shared workloads: the fp32 GEMM of the benchmarks and the demo, with its two schedules.

The schedule functions take `get_block(sch, name)` so the same code drives minitvm's
`tir.Schedule` (`sch.get_block`) and TVM 0.27's (`sch.get_sblock`) in benchmarks/gemm.py.
"""

from __future__ import annotations

from typing import Any

MR, NR, KU = 8, 32, 4  # register tile rows, vector columns, k unroll


def gemm_te(te: Any, n: int, packed: bool) -> tuple:
    """C = A @ B over n x n float32; `packed` adds a layout stage Bp[j//NR, k, j%NR] = B[k, j]."""
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    if not packed:
        C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
        return A, B, C
    Bp = te.compute((n // NR, n, NR), lambda jo, kk, ji: B[kk, jo * NR + ji], name="Bp")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * Bp[j // NR, k, j % NR], axis=k), name="C")
    return A, B, C


def schedule_classic(sch: Any, get_block: Any) -> None:
    """The dlsys notes' schedule: tile 32x32, split k by 4, reorder, vectorize j, parallel i."""
    c = get_block(sch, "C")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, [None, 32])
    jo, ji = sch.split(j, [None, 32])
    ko, ki = sch.split(k, [None, 4])
    sch.reorder(io, jo, ko, ii, ki, ji)
    sch.vectorize(ji)
    sch.parallel(io)


def schedule_blocked(sch: Any, get_block: Any) -> None:
    """Register-blocked GEMM on the packed workload: an MR x NR accumulator tile through
    cache_write("local"), k unrolled by KU, NR lanes vectorized; column panels outermost and in
    parallel, so each packed B panel stays in L2 while the row blocks of A stream past it."""
    c = get_block(sch, "C")
    cw = sch.cache_write(c, 0, "local")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, [None, MR])
    jo, ji = sch.split(j, [None, NR])
    ko, ki = sch.split(k, [None, KU])
    sch.reorder(jo, io, ko, ki, ii, ji)
    sch.reverse_compute_at(cw, io)
    sch.parallel(jo)
    sch.unroll(ki)
    sch.unroll(ii)
    sch.vectorize(ji)
    sch.decompose_reduction(c, ko)
    jo2, _, ji2 = sch.get_loops(get_block(sch, "Bp"))
    sch.parallel(jo2)
    sch.vectorize(ji2)
    sch.vectorize(sch.get_loops(cw)[-1])


def conv2d_nchwc_te(
    n: Any,
    c: int,
    hw: int,
    o: int,
    k: int,
    stride: int = 1,
    pad: int = 0,
    cb: int = 16,
    ob: int = 16,
    epilogue: str = "",
) -> tuple:
    """A blocked conv Y[n, oc/ob, oh, ow, ob] over X[n, c/cb, hw, hw, cb] and packed weights
    W[o/ob, c/cb, k, k, cb, ob], in the form of topi.nn.conv2d_NCHWc: padding in its own
    stage "data_pad", reduction axes (ic_outer, kh, kw, ic_inner). `epilogue` is "" or a
    "+"-joined list of "bias", "relu", "residual" (a tensor like Y added), "nchw" (the result
    written back in NCHW). Returns (inputs..., output)."""
    from .. import te

    X = te.placeholder((n, c // cb, hw, hw, cb), name="X")
    W = te.placeholder((o // ob, c // cb, k, k, cb, ob), name="W")
    Xp = _pad_nchwc(X, pad)
    oh = (hw + 2 * pad - k) // stride + 1
    ico = te.reduce_axis((0, c // cb), "ic_outer")
    kh = te.reduce_axis((0, k), "kh")
    kw = te.reduce_axis((0, k), "kw")
    ici = te.reduce_axis((0, cb), "ic_inner")
    Y = te.compute(
        (n, o // ob, oh, oh, ob),
        lambda b, oc, y, x, oi: te.sum(
            Xp[b, ico, y * stride + kh, x * stride + kw, ici] * W[oc, ico, kh, kw, ici, oi],
            axis=[ico, kh, kw, ici],
        ),
        name="conv2d_NCHWc",
    )
    return tuple(_epilogue([X, W], Y, epilogue, n, o, oh, ob))


def _pad_nchwc(X: Any, pad: int) -> Any:
    """X [n, c, h, w, cb] zero-padded by `pad` in h and w, as the stage "data_pad"."""
    from .. import te, tir

    if not pad:
        return X
    n, c, h, w, cb = X.shape
    return te.compute(
        (n, c, h + 2 * pad, w + 2 * pad, cb),
        lambda b, ci, y, x, cc: te.if_then_else(
            tir.all(y >= pad, y < h + pad, x >= pad, x < w + pad),
            X[b, ci, y - pad, x - pad, cc],
            tir.const(0.0, "float32"),
        ),
        name="data_pad",
        tag="injective,pad",
    )


def depthwise_conv2d_nchwc_te(
    n: Any,
    c: int,
    hw: int,
    k: int,
    stride: int = 1,
    pad: int = 0,
    cb: int = 16,
    epilogue: str = "",
) -> tuple:
    """A blocked depthwise conv Y[n, c/cb, oh, ow, cb] over X[n, c/cb, hw, hw, cb] and weights
    W[c/cb, 1, k, k, 1, cb] (kernel layout OIHW1i{cb}o), padding in the stage "data_pad";
    `epilogue` as for `conv2d_nchwc_te`. Returns (inputs..., output)."""
    from .. import te

    X = te.placeholder((n, c // cb, hw, hw, cb), name="X")
    W = te.placeholder((c // cb, 1, k, k, 1, cb), name="W")
    Xp = _pad_nchwc(X, pad)
    oh = (hw + 2 * pad - k) // stride + 1
    kh = te.reduce_axis((0, k), "kh")
    kw = te.reduce_axis((0, k), "kw")
    Y = te.compute(
        (n, c // cb, oh, oh, cb),
        lambda b, co, y, x, ci: te.sum(
            Xp[b, co, y * stride + kh, x * stride + kw, ci] * W[co, 0, kh, kw, 0, ci],
            axis=[kh, kw],
        ),
        name="depthwise_conv2d_NCHWc",
    )
    return tuple(_epilogue([X, W], Y, epilogue, n, c, oh, cb))


def _epilogue(inputs: list, Y: Any, epilogue: str, n: Any, o: int, oh: int, ob: int) -> list:
    """inputs + [extra inputs] + [Y with the "+"-joined `epilogue` steps applied]."""
    from .. import te, tir

    for step in [s for s in epilogue.split("+") if s]:
        if step == "bias":
            B = te.placeholder((o // ob, 1, 1, ob), name="bias")
            inputs.append(B)
            Y = te.compute(Y.shape, lambda *i, Y=Y, B=B: Y(*i) + B[i[1], 0, 0, i[4]], name="T_add")
        elif step == "relu":
            Y = te.compute(
                Y.shape, lambda *i, Y=Y: te.max(Y(*i), tir.const(0.0, "float32")), name="T_relu"
            )
        elif step == "residual":
            R = te.placeholder(Y.shape, name="residual")
            inputs.append(R)
            Y = te.compute(Y.shape, lambda *i, Y=Y, R=R: Y(*i) + R(*i), name="T_residual")
        elif step == "nchw":
            Y = te.compute(
                (n, o, oh, oh), lambda b, f, y, x, Y=Y: Y[b, f // ob, y, x, f % ob], name="T_nchw"
            )
    return [*inputs, Y]


def depthwise_conv2d_nchwc_ref(
    x, w, stride: int, pad: int, extra: dict | None = None, epilogue: str = ""
):
    """numpy reference of `depthwise_conv2d_nchwc_te`, through `conv2d_nchwc_ref` with the
    weight spread over a block-diagonal dense kernel."""
    import numpy as np

    cbo, _, k, _, _, cb = w.shape
    dense = np.zeros((cbo, cbo, k, k, cb, cb), w.dtype)
    for co in range(cbo):
        for ci in range(cb):
            dense[co, co, :, :, ci, ci] = w[co, 0, :, :, 0, ci]
    return conv2d_nchwc_ref(x, dense, stride, pad, extra, epilogue)


def conv2d_nchwc_ref(x, w, stride: int, pad: int, extra: dict | None = None, epilogue: str = ""):
    """numpy reference of `conv2d_nchwc_te` (float64 accumulation)."""
    import numpy as np

    n, cbo, hw, _, cb = x.shape
    oco, _, k, _, _, ob = w.shape
    xn = x.transpose(0, 1, 4, 2, 3).reshape(n, cbo * cb, hw, hw).astype("float64")
    xn = np.pad(xn, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    wn = w.transpose(0, 5, 1, 4, 2, 3).reshape(oco * ob, cbo * cb, k, k).astype("float64")
    oh = (hw + 2 * pad - k) // stride + 1
    y = np.zeros((n, oco * ob, oh, oh))
    for dy in range(k):
        for dx in range(k):
            win = xn[:, :, dy : dy + stride * oh : stride, dx : dx + stride * oh : stride]
            y += np.einsum("nchw,oc->nohw", win, wn[:, :, dy, dx])
    y = y.reshape(n, oco, ob, oh, oh).transpose(0, 1, 3, 4, 2)
    extra = extra or {}
    for step in [s for s in epilogue.split("+") if s]:
        if step == "bias":
            y = y + extra["bias"].reshape(1, oco, 1, 1, ob)
        elif step == "relu":
            y = np.maximum(y, 0)
        elif step == "residual":
            y = y + extra["residual"]
        elif step == "nchw":
            y = y.transpose(0, 1, 4, 2, 3).reshape(n, oco * ob, oh, oh)
    return y.astype("float32")
