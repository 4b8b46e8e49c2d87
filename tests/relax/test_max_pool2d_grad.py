"""relax.nn.max_pool2d_grad compiled for llvm against torch.autograd (distinct inputs), and on
ties against a brute-force scatter where every tied maximum receives its window's gradient."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import ShapeError
from minitvm.relax.op import grad_ops

torch = pytest.importorskip("torch")


def _run(g, x, pool_size, strides, padding, dilation=(1, 1), ceil_mode=False, use_out=False):
    """The compiled gradient; with `use_out` it reads max_pool2d's result instead of
    computing the max again."""
    gv = relax.Var("g", relax.TensorStructInfo(g.shape, "float32"))
    xv = relax.Var("x", relax.TensorStructInfo(x.shape, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [gv, xv]):
        with bb.dataflow():
            fwd = None
            if use_out:
                fwd = bb.emit(
                    relax.op.nn.max_pool2d(
                        xv, pool_size, strides, padding, dilation, ceil_mode=ceil_mode
                    )
                )
            out = bb.emit(
                grad_ops.max_pool2d_grad(
                    gv,
                    xv,
                    out=fwd,
                    pool_size=pool_size,
                    strides=strides,
                    padding=padding,
                    dilation=dilation,
                    ceil_mode=ceil_mode,
                    count_include_pad=False,
                    layout="NCHW",
                )
            )
            out = bb.emit_output(out)
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu(0))
    return vm["main"](tvm.nd.array(g), tvm.nd.array(x)).numpy()


CASES = [
    # pool_size, strides, padding (top, left, bottom, right), dilation, ceil_mode, input (h, w)
    ((3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False, (16, 16)),  # ResNet's stem pool
    ((2, 2), (2, 2), (0, 0, 0, 0), (1, 1), False, (8, 6)),
    ((3, 3), (3, 3), (0, 0, 0, 0), (1, 1), False, (9, 10)),  # windows apart: one per input
    ((5, 3), (2, 3), (2, 1, 2, 1), (1, 1), False, (11, 7)),
    ((3, 3), (2, 1), (1, 1, 1, 1), (1, 1), False, (9, 8)),  # stride 1 on one axis: taps
    ((3, 3), (2, 2), (0, 0, 0, 0), (1, 1), True, (8, 8)),  # ceil mode's extra window
    ((3, 2), (2, 2), (1, 0, 1, 0), (2, 1), False, (10, 7)),  # dilation: taps on that axis
    ((2, 2), (4, 4), (0, 0, 0, 0), (1, 1), False, (9, 9)),  # stride over size: gaps
]


@pytest.mark.parametrize("use_out", [False, True])
@pytest.mark.parametrize("pool_size, strides, padding, dilation, ceil_mode, hw", CASES)
def test_max_pool2d_grad_matches_torch_autograd(
    pool_size, strides, padding, dilation, ceil_mode, hw, use_out
):
    rng = np.random.default_rng(0)
    n = 2 * 3 * hw[0] * hw[1]
    x = (rng.permutation(n).reshape(2, 3, *hw) * 0.01).astype("float32")  # no ties
    xt = torch.from_numpy(x).double().requires_grad_()
    pad = (padding[0], padding[1])
    y = torch.nn.functional.max_pool2d(xt, pool_size, strides, pad, dilation, ceil_mode)
    g = rng.standard_normal(tuple(y.shape)).astype("float32")
    y.backward(torch.from_numpy(g).double())
    got = _run(g, x, pool_size, strides, padding, dilation, ceil_mode, use_out)
    np.testing.assert_allclose(got, xt.grad.numpy(), rtol=1e-5, atol=1e-5)


def _brute_force(g, x, k, s, p):
    """Every input equal to its window's maximum gets the window's gradient."""
    h, w = x.shape[2:]
    dx = np.zeros_like(x, dtype=np.float64)
    for oy in range(g.shape[2]):
        for ox in range(g.shape[3]):
            taps = [
                (y, xx)
                for y in range(oy * s - p, oy * s - p + k)
                for xx in range(ox * s - p, ox * s - p + k)
                if 0 <= y < h and 0 <= xx < w
            ]
            vals = np.stack([x[:, :, y, xx] for y, xx in taps])
            top = vals.max(axis=0)
            for y, xx in taps:
                dx[:, :, y, xx] += np.where(x[:, :, y, xx] == top, g[:, :, oy, ox], 0.0)
    return dx


@pytest.mark.parametrize("use_out", [False, True])
def test_max_pool2d_grad_ties_all_receive_gradient(use_out):
    rng = np.random.default_rng(1)
    x = rng.integers(0, 3, (2, 2, 9, 9)).astype("float32")  # many ties, overlapping windows
    g = rng.standard_normal((2, 2, 5, 5)).astype("float32")
    got = _run(g, x, (3, 3), (2, 2), (1, 1, 1, 1), use_out=use_out)
    np.testing.assert_allclose(got, _brute_force(g, x, 3, 2, 1), rtol=1e-5, atol=1e-5)


def test_max_pool2d_grad_out_of_wrong_rank_is_refused():
    g = relax.Var("g", relax.TensorStructInfo((1, 2, 2, 2), "float32"))
    x = relax.Var("x", relax.TensorStructInfo((1, 2, 4, 4), "float32"))
    flat = relax.Var("flat", relax.TensorStructInfo((8,), "float32"))
    attrs = dict(relax.op.nn.max_pool2d(x, 2, 2).attrs)
    bb = relax.BlockBuilder()
    with (
        pytest.raises(ShapeError, match=r"out \(the forward output\) has rank 1"),
        bb.function("main", [g, x, flat]),
    ):
        bb.emit(grad_ops.max_pool2d_grad(g, x, out=flat, **attrs))
