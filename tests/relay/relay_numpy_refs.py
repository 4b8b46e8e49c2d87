"""numpy references of Relay ops that minitvm.topi.reference does not have."""

import numpy as np


def conv2d_transpose_ref(x, w, strides, padding, output_padding=(0, 0)):
    """Scatter every input pixel times the IOHW kernel, then crop the padding."""
    n, _, h, wd = x.shape
    _, co, kh, kw = w.shape
    (sh, sw), (pt, pl, pb, pr) = strides, padding
    full = np.zeros(
        (n, co, (h - 1) * sh + kh + output_padding[0], (wd - 1) * sw + kw + output_padding[1])
    )
    for i in range(h):
        for j in range(wd):
            full[:, :, i * sh : i * sh + kh, j * sw : j * sw + kw] += np.einsum(
                "nc,cokl->nokl", x[:, :, i, j], w
            )
    return full[:, :, pt : full.shape[2] - pb, pl : full.shape[3] - pr]
