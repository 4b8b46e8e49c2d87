"""Gradient rule of `relax.nn.max_pool3d` / `avg_pool3d`, through 2-D pooling.

A 3-D box window is separable: pooling over (H, W) of each depth slice, then over D with a
(kD, 1) window of the flattened (OH * OW) axis, gives the 3-D result, for the max and for the
mean alike (both counts, with or without padding, are products of per-axis counts). The
gradient runs the two 2-D pooling gradients backwards through that factorisation. Ties of the
max pass the gradient to every tied input, as max_pool2d_grad does.
"""

from __future__ import annotations

from ...error import MiniTVMError
from ..expr import Expr
from . import manipulate, nn
from .grad import shape_of
from .grad_ops import avg_pool2d_grad, max_pool2d_grad


def pool3d_grad(pool_type: str, call, g: Expr, bb) -> list:
    """[grad w.r.t. data] of a pool3d call whose output grad is `g`."""
    x = call.args[0]
    n, c, d, h, w = shape_of(x, f"{pool_type}_pool3d's data")
    a = call.attrs
    (kd, kh, kw), (sd, sh, sw), (dd, dh, dw) = a["pool_size"], a["strides"], a["dilation"]
    pf, pt, pl, pk, pb, pr = a["padding"]
    if pool_type == "avg" and a["count_include_pad"] and (dh, dw) != (1, 1):
        # avg_pool2d_grad counts a dilated window's extent there, pool3d its taps
        raise MiniTVMError(
            f"relax.Gradient: avg_pool3d with count_include_pad and dilation {list(a['dilation'])}"
            " has no gradient rule yet; use dilation 1 on H and W, or count_include_pad=False"
        )
    common = {"ceil_mode": a["ceil_mode"], "count_include_pad": a["count_include_pad"]}
    hw = {"pool_size": (kh, kw), "strides": (sh, sw), "padding": (pt, pl, pb, pr),
          "dilation": (dh, dw), "layout": "NCHW", **common}  # fmt: skip
    depth = {"pool_size": (kd, 1), "strides": (sd, 1), "padding": (pf, 0, pk, 0),
             "dilation": (dd, 1), "layout": "NCHW", **common}  # fmt: skip
    pool2d = nn.max_pool2d if pool_type == "max" else nn.avg_pool2d
    grad2d = max_pool2d_grad if pool_type == "max" else avg_pool2d_grad
    hw_call = {k: v for k, v in hw.items() if pool_type == "avg" or k != "count_include_pad"}
    x2 = bb.emit(manipulate.reshape(x, (n, c * d, h, w)))
    z = bb.emit(pool2d(x2, **hw_call))
    _, _, oh, ow = shape_of(z)
    z2 = bb.emit(manipulate.reshape(z, (n, c, d, oh * ow)))
    _, _, od, _, _ = shape_of(g, f"{pool_type}_pool3d's output grad")
    g2 = bb.emit(manipulate.reshape(g, (n, c, od, oh * ow)))
    gz2 = bb.emit(grad2d(g2, z2, **depth))
    gz = bb.emit(manipulate.reshape(gz2, (n, c * d, oh, ow)))
    gx2 = bb.emit(grad2d(gz, x2, **hw))
    return [manipulate.reshape(gx2, (n, c, d, h, w))]
