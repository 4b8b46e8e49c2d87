"""The rows forms of topi.nn.conv_backward_rows against torch: the blocked forward conv on narrow
outputs (one matmul over the batch's output pixels) and the per-phase d(data) of strided convs,
in float64 and float32, with odd sizes, strides 2-4, dilation and asymmetric padding."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, te
from minitvm.topi.nn.conv import conv2d_layout
from minitvm.topi.nn.conv_backward import conv2d_backward_data
from minitvm.topi.nn.conv_backward_rows import _phase_taps

torch = pytest.importorskip("torch")


def _build_run(inputs, out, arrays):
    s = te.create_schedule(out.op)
    f = tvm.build(s, [*inputs, out], "llvm")
    args = [tvm.nd.array(a) for a in arrays]
    res = tvm.nd.array(np.zeros([int(d) for d in out.shape], dtype=out.dtype))
    f(*args, res)
    return res.numpy()


def _ops(t):
    """Names of the compute stages from `t` up to its placeholders."""
    seen, todo = set(), [t]
    while todo:
        op = todo.pop().op
        if op.name not in seen and hasattr(op, "input_tensors"):
            seen.add(op.name)
            todo.extend(op.input_tensors)
    return seen


def _blocked(a, cb):
    """NCHW -> NCHW{cb}c."""
    n, c, h, w = a.shape
    return np.ascontiguousarray(a.reshape(n, c // cb, cb, h, w).transpose(0, 1, 3, 4, 2))


FORWARD = [
    # n, c, o, h, w, k, stride, (top, left, bottom, right), dilation, dtype
    (3, 16, 32, 1, 1, 3, 1, (1, 1, 1, 1), 1, "float64"),  # one live tap of nine
    (2, 16, 16, 5, 4, 3, 2, (1, 0, 2, 1), 1, "float64"),
    (2, 32, 16, 7, 9, 3, 3, (2, 2, 2, 2), 2, "float32"),
    (1, 16, 48, 6, 4, (2, 3), 1, (0, 1, 1, 0), 1, "float32"),
    (2, 16, 16, 3, 3, 1, 2, (0, 0, 0, 0), 1, "float64"),
]


@pytest.mark.parametrize("case", FORWARD, ids=str)
def test_blocked_conv_on_narrow_outputs_takes_rows_form_and_matches_torch(case):
    n, c, o, h, w, k, stride, pad, dil, dtype = case
    kh, kw = k if isinstance(k, tuple) else (k, k)
    rng = np.random.default_rng(h * 31 + w)
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    wt = rng.standard_normal((o, c, kh, kw)).astype(dtype)
    want = torch.nn.functional.conv2d(
        torch.nn.functional.pad(torch.from_numpy(x).double(), (pad[1], pad[3], pad[0], pad[2])),
        torch.from_numpy(wt).double(),
        stride=stride,
        dilation=dil,
    ).numpy()
    xb = _blocked(x, 16)
    wb = np.ascontiguousarray(
        wt.reshape(o // 16, 16, c // 16, 16, kh, kw).transpose(0, 2, 4, 5, 3, 1)
    )
    xp = te.placeholder(xb.shape, dtype, "x")
    wp = te.placeholder(wb.shape, dtype, "w")
    out = conv2d_layout(xp, wp, stride, pad, dil, 1, "NCHW16c", "OIHW16i16o", "NCHW16c")
    assert "conv2d_rows" in _ops(out)
    got = _build_run([xp, wp], out, [xb, wb])
    tol = 1e-10 if dtype == "float64" else 1e-4
    np.testing.assert_allclose(got, _blocked(want, 16), rtol=tol, atol=tol * np.abs(want).max())


def test_wide_outputs_keep_the_blocked_conv():
    xp = te.placeholder((1, 1, 4, 4, 16), "float32", "x")
    wp = te.placeholder((1, 1, 3, 3, 16, 16), "float32", "w")
    out = conv2d_layout(xp, wp, 1, 1, 1, 1, "NCHW16c", "OIHW16i16o", "NCHW16c")
    assert "conv2d_rows" not in _ops(out)


PHASES = [
    # n, c, o, h, w, k, stride, (top, left, bottom, right), dilation
    (2, 5, 7, 8, 9, 3, 2, (1, 1, 1, 1), 1),
    (1, 4, 3, 9, 10, 3, 2, (2, 2, 2, 2), 2),  # stride and dilation share a factor
    (2, 3, 4, 10, 7, 3, 3, (1, 0, 2, 1), 2),
    (1, 2, 3, 11, 10, 2, 4, (0, 1, 1, 0), 1),  # phases 2 and 3 take no tap: zeros
    (2, 3, 5, 1, 2, 3, 3, (1, 1, 1, 1), 1),  # fewer rows than the stride
    (2, 16, 32, 8, 8, 1, 2, (0, 0, 0, 0), 1),  # a ResNet downsample
    (1, 3, 4, 13, 12, (5, 3), (2, 3), (2, 1, 2, 1), 1),
    (1, 2, 3, 1, 1, 1, 2, (1, 1, 1, 1), 1),  # every window reads padding only: all zeros
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", PHASES, ids=str)
def test_strided_data_gradient_by_phases_matches_torch(case, dtype):
    n, c, o, h, w, k, stride, pad, dil = case
    kh, kw = k if isinstance(k, tuple) else (k, k)
    sh, sw = stride if isinstance(stride, tuple) else (stride, stride)
    rng = np.random.default_rng(h * 13 + c)
    x = torch.tensor(rng.standard_normal((n, c, h, w)), requires_grad=True)
    wt = torch.tensor(rng.standard_normal((o, c, kh, kw)))
    y = torch.nn.functional.conv2d(
        torch.nn.functional.pad(x, (pad[1], pad[3], pad[0], pad[2])),
        wt,
        stride=(sh, sw),
        dilation=dil,
    )
    gy = torch.tensor(rng.standard_normal(tuple(y.shape)))
    y.backward(gy)
    gp = te.placeholder(tuple(y.shape), dtype, "g")
    wp = te.placeholder((o, c, kh, kw), dtype, "w")
    out = conv2d_backward_data(gp, wp, (n, c, h, w), (sh, sw), pad, (dil, dil))
    assert "conv2d_rows" in _ops(out) or not np.any(x.grad.numpy())
    got = _build_run([gp, wp], out, [gy.numpy().astype(dtype), wt.numpy().astype(dtype)])
    want = x.grad.numpy()
    tol = 1e-10 if dtype == "float64" else 1e-4
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max()))


def test_phase_taps_skip_taps_that_read_only_padding():
    # 3x3, stride 2, pad 1 over 4 rows (2 output rows): even rows take tap 1, odd rows 2 and 0
    assert _phase_taps(4, 2, 3, 2, 1, 1, 0) == (2, 0, [1])
    assert _phase_taps(4, 2, 3, 2, 1, 1, 1) == (2, 0, [2, 0])
    # a 1x1 kernel with stride 2: odd rows take no tap
    assert _phase_taps(5, 3, 1, 2, 1, 0, 1) is None


def test_resnet_shaped_gradients_through_relax_match_torch():
    # the relax op as relax.Gradient emits it, built by the default pipeline
    from minitvm.relax.op.grad_ops import conv2d_backward_data as bwd

    rng = np.random.default_rng(0)
    g = rng.standard_normal((4, 32, 2, 2)).astype("float32")
    w = rng.standard_normal((32, 16, 3, 3)).astype("float32")
    gv = relax.Var("g", relax.TensorStructInfo(g.shape, "float32"))
    wv = relax.Var("w", relax.TensorStructInfo(w.shape, "float32"))
    bb = relax.BlockBuilder()
    attrs = {"strides": (2, 2), "padding": (1, 1, 1, 1), "dilation": (1, 1)}
    with bb.function("main", [gv, wv]):
        with bb.dataflow():
            out = bb.emit_output(bwd(gv, wv, (4, 16, 4, 4), **attrs))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu(0))
    got = vm["main"](tvm.nd.array(g), tvm.nd.array(w)).numpy()
    want = torch.nn.grad.conv2d_input(
        (4, 16, 4, 4), torch.from_numpy(w).double(), torch.from_numpy(g).double(), 2, 1
    ).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
