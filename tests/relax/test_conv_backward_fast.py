"""relax.nn.conv2d_backward_data/_weight (the blocked-conv and matmul forms of
topi.nn.conv_backward) against torch.autograd's conv2d gradients."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax.op.grad_ops import conv2d_backward_data, conv2d_backward_weight
from minitvm.topi.nn.conv_backward import _batch_chunk, channel_block

torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies


def _run(op, g, other, out_shape, attrs, symbolic_batch=False):
    """`op(g, other, out_shape)` compiled and run; with `symbolic_batch` the batch dim of g
    (and of the data for d(weight), of d(data)'s shape for d(data)) is a variable."""
    batch = (tvm.te.var("n", "int64"),) if symbolic_batch else (g.shape[0],)
    gv = relax.Var("g", relax.TensorStructInfo((*batch, *g.shape[1:]), "float32"))
    oshape = (*batch, *other.shape[1:]) if op is conv2d_backward_weight else other.shape
    ov = relax.Var("o", relax.TensorStructInfo(oshape, "float32"))
    params, args = [gv, ov], (g, other)
    if op is conv2d_backward_data:  # d(data)'s shape as relax.Gradient passes it: dims of x
        out_shape = (*batch, *out_shape[1:])
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(op(gv, ov, out_shape, **attrs))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu(0))
    return vm["main"](*(tvm.nd.array(a) for a in args)).numpy()


def _check(n, c, h, w, o, k, stride, padding, dilation, symbolic_batch=False):
    """Both gradients of conv2d(x, weight) for a random output gradient, against torch."""
    kh, kw = k if isinstance(k, tuple) else (k, k)
    pt, pl, pb, pr = padding
    rng = np.random.default_rng(n * 1000 + c * 100 + h + o)
    x = torch.tensor(rng.standard_normal((n, c, h, w)), dtype=torch.float64, requires_grad=True)
    wt = torch.tensor(rng.standard_normal((o, c, kh, kw)), dtype=torch.float64, requires_grad=True)
    y = torch.nn.functional.conv2d(
        torch.nn.functional.pad(x, (pl, pr, pt, pb)), wt, stride=stride, dilation=dilation
    )
    gy = torch.tensor(rng.standard_normal(tuple(y.shape)), dtype=torch.float64)
    y.backward(gy)
    attrs = {"strides": (stride,) * 2, "padding": padding, "dilation": (dilation,) * 2}
    g32 = gy.numpy().astype("float32")
    w32, x32 = (t.detach().numpy().astype("float32") for t in (wt, x))
    got_x = _run(conv2d_backward_data, g32, w32, x.shape, attrs, symbolic_batch)
    got_w = _run(conv2d_backward_weight, g32, x32, wt.shape, attrs, symbolic_batch)
    for got, want in ((got_x, x.grad.numpy()), (got_w, wt.grad.numpy())):
        # float32 sums of up to thousands of terms: an absolute error relative to the largest
        scale = max(1.0, float(np.abs(want).max()))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * scale)


CASES = [
    # n, c, h, w, o, k, stride, (top, left, bottom, right), dilation
    (2, 3, 7, 9, 5, 3, 1, (1, 1, 1, 1), 1),
    (1, 4, 8, 8, 6, 3, 2, (1, 1, 1, 1), 1),
    (2, 5, 9, 11, 3, 3, 1, (0, 1, 2, 1), 2),
    (1, 17, 6, 6, 20, 1, 1, (0, 0, 0, 0), 1),
    (2, 3, 13, 13, 4, 7, 2, (3, 3, 3, 3), 1),
    (1, 2, 6, 7, 3, 1, 1, (1, 1, 1, 1), 1),
    (2, 32, 9, 9, 48, 3, 2, (0, 0, 0, 0), 1),
    (1, 4, 10, 10, 4, 3, 3, (2, 2, 2, 2), 2),
    (3, 16, 5, 5, 16, 3, 1, (3, 3, 3, 3), 1),
    (4, 24, 4, 4, 40, (3, 1), 1, (1, 0, 1, 0), 1),
    (5, 18, 3, 3, 7, 3, 2, (1, 1, 0, 0), 1),
    (2, 8, 1, 1, 16, 3, 1, (1, 1, 1, 1), 1),  # 8 of 9 taps read only padding
    (2, 8, 2, 3, 16, 3, 2, (1, 1, 1, 1), 1),
    (2, 3, 12, 11, 32, 7, 2, (3, 2, 1, 3), 1),  # an RGB stem: output channels as the vector
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_conv2d_backward_matches_torch_autograd(case):
    _check(*case)


def test_weight_gradient_summed_over_batch_chunks_matches_torch():
    # 8 images of 34x34x64 padded input (296 KB each): chunks of 2, four partial sums
    assert _batch_chunk(8, (34, 34, 64), (8, 64, 3, 3), 4) == 2
    _check(8, 64, 32, 32, 8, 3, 1, (1, 1, 1, 1), 1)


@hypothesis.settings(max_examples=12, deadline=None, derandomize=True)
@hypothesis.given(
    n=st.integers(1, 3),
    c=st.integers(1, 9),
    o=st.integers(1, 9),
    h=st.integers(3, 9),
    k=st.integers(1, 3),
    stride=st.integers(1, 3),
    dilation=st.integers(1, 2),
    padding=st.tuples(*[st.integers(0, 3)] * 4),
)
def test_conv2d_backward_random_shapes_match_torch(n, c, o, h, k, stride, dilation, padding):
    span = dilation * (k - 1) + 1
    hypothesis.assume(
        h + padding[0] + padding[2] >= span and h + 1 + padding[1] + padding[3] >= span
    )
    _check(n, c, h, h + 1, o, k, stride, padding, dilation)


def test_weight_gradient_with_dead_taps_summed_over_chunks_matches_torch():
    # one live tap of 3x3 (dilation 2 over a 1x1 image padded by 2), partial sums of 4 images
    assert _batch_chunk(8, (5, 5, 2048), (8, 2048, 3, 3), 4) == 4
    _check(8, 2048, 1, 1, 8, 3, 1, (2, 2, 2, 2), 2)


def test_conv2d_backward_symbolic_batch_matches_torch():
    # a symbolic batch keeps the weight gradient in one chunk and d(data) blocked
    _check(3, 16, 6, 6, 8, 3, 2, (1, 1, 1, 1), 1, symbolic_batch=True)


def test_channel_block_takes_vectors_whole_or_a_power_of_two():
    assert [channel_block(c) for c in (3, 16, 24, 64, 18)] == [3, 16, 8, 16, 1]
