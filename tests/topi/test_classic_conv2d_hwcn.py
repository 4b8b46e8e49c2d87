"""topi.nn.conv2d_hwcn (data HWCN, kernel HWIO -> HWON) against a numpy reference."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, topi


def _numpy_conv2d_hwcn(a, w, stride, pad, dil):
    h, wd, _, n = a.shape
    kh, kw, _, o = w.shape
    ap = np.pad(a, ((pad, pad), (pad, pad), (0, 0), (0, 0)))
    oh = (h + 2 * pad - dil * (kh - 1) - 1) // stride + 1
    ow = (wd + 2 * pad - dil * (kw - 1) - 1) // stride + 1
    out = np.zeros((oh, ow, o, n), a.dtype)
    for y in range(oh):
        for x in range(ow):
            for ky in range(kh):
                for kx in range(kw):
                    row = ap[y * stride + ky * dil, x * stride + kx * dil]  # [c, n]
                    out[y, x] += np.einsum("cn,co->on", row, w[ky, kx])
    return out


@pytest.mark.parametrize("stride, pad, dil", [(1, 0, 1), (2, 1, 1), (1, 2, 2)])
def test_conv2d_hwcn_matches_numpy(stride, pad, dil):
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((9, 8, 3, 2)).astype("float32")
    w_np = rng.standard_normal((3, 3, 3, 4)).astype("float32")
    A = te.placeholder(a_np.shape, name="A")
    W = te.placeholder(w_np.shape, name="W")
    C = topi.nn.conv2d_hwcn(A, W, stride, pad, dil)
    expect = _numpy_conv2d_hwcn(a_np, w_np, stride, pad, dil)
    assert tuple(int(d) for d in C.shape) == expect.shape
    f = tvm.build(te.create_schedule(C.op), [A, W, C], "llvm")
    c = tvm.nd.empty(expect.shape, "float32")
    f(tvm.nd.array(a_np), tvm.nd.array(w_np), c)
    np.testing.assert_allclose(c.numpy(), expect, rtol=1e-4, atol=1e-4)


def test_conv2d_hwcn_channel_mismatch_names_both_shapes():
    A = te.placeholder((8, 8, 3, 1), name="A")
    W = te.placeholder((3, 3, 4, 2), name="W")
    with pytest.raises(tvm.error.TEError, match="input channels"):
        topi.nn.conv2d_hwcn(A, W, 1, 0, 1)


def test_same_padding_keeps_the_size_and_generic_schedule_builds():
    """TVM's tedd tutorial: conv2d_hwcn(padding="SAME") + bias + relu, topi.generic schedule."""
    rng = np.random.default_rng(1)
    a_np = rng.standard_normal((7, 7, 2, 1)).astype("float32")
    w_np = rng.standard_normal((3, 3, 2, 3)).astype("float32")
    A = te.placeholder(a_np.shape, name="A")
    W = te.placeholder(w_np.shape, name="W")
    B = te.placeholder((1, 3, 1), name="bias")
    conv = topi.nn.conv2d_hwcn(A, W, 1, "SAME", 1)
    out = topi.nn.relu(topi.add(conv, B))
    s = topi.generic.schedule_conv2d_hwcn([out])
    f = tvm.build(s, [A, W, B, out], "llvm")
    b_np = rng.standard_normal((1, 3, 1)).astype("float32")
    res = tvm.nd.empty((7, 7, 3, 1), "float32")
    f(tvm.nd.array(a_np), tvm.nd.array(w_np), tvm.nd.array(b_np), res)
    expect = np.maximum(_numpy_conv2d_hwcn(a_np, w_np, 1, 1, 1) + b_np, 0)
    np.testing.assert_allclose(res.numpy(), expect, rtol=1e-4, atol=1e-4)


def test_generic_schedule_refuses_non_tensors():
    with pytest.raises(tvm.error.TEError, match="schedule_injective"):
        topi.generic.schedule_injective([1])
