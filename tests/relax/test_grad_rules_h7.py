"""Gradient rules of relax.nn.conv3d_transpose and relax.dynamic_strided_slice, against
torch.autograd in float64 (odd shapes, strides, padding, dilation, groups), compiled and run on
the VM."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax import op as R
from minitvm.relax.op.grad import GRAD_RULES, NO_GRAD_RULE
from minitvm.relax.transform.gradient import gradient

torch = pytest.importorskip("torch")


def _run_adjoint(params, build, wrt, inputs):
    """Differentiate sum(build(*params) * weights) w.r.t. `wrt`; returns (loss, grads, weights)."""
    bb = relax.BlockBuilder()
    with bb.function("main", [*params]):
        with bb.dataflow():
            y = build(bb, *params)
            shape = [int(d) for d in y.struct_info.shape] if y.struct_info.shape else None
            weights = np.random.default_rng(1).standard_normal(shape or [1]).astype("float64")
            out = bb.emit_output(
                R.sum(R.multiply(y, relax.const(weights if shape else weights[0])))
            )
        bb.emit_func_output(out)
    adj = gradient(bb.get(), "main", wrt)
    vm = relax.VirtualMachine(relax.build(adj, "llvm"), tvm.cpu(0))
    loss, grads = vm["main_adjoint"](*[tvm.nd.array(a) for a in inputs])
    return loss.numpy(), [g.numpy() for g in grads], weights


def _var(name, a):
    return relax.Var(name, relax.TensorStructInfo(a.shape, str(a.dtype)))


# (x shape, weight shape, strides, padding (relax: 6 values), output_padding, dilation, groups)
CONV3D_T = [
    ((2, 4, 3, 4, 3), (4, 3, 2, 3, 2), (2, 1, 3), (1, 0, 1, 1, 0, 1), (1, 0, 2), (1, 2, 1), 2),
    ((1, 3, 2, 3, 4), (3, 2, 3, 1, 2), (1, 2, 2), (0, 1, 0, 0, 1, 0), (2, 1, 0), (3, 1, 2), 1),
    ((2, 2, 3, 3, 2), (2, 1, 2, 2, 3), (2, 2, 1), (1, 0, 2, 0, 1, 0), (0, 1, 0), (1, 1, 1), 2),
]


def _torch_conv3d_transpose(x, w, strides, padding, out_pad, dilation, groups):
    """torch's conv_transpose3d with relax's (front, top, left, back, bottom, right) padding:
    unpadded, then cropped (torch pads both sides alike)."""
    y = torch.nn.functional.conv_transpose3d(
        x, w, stride=strides, output_padding=out_pad, dilation=dilation, groups=groups
    )
    lo, hi = padding[:3], padding[3:]
    return y[
        :, :, lo[0] : y.shape[2] - hi[0], lo[1] : y.shape[3] - hi[1], lo[2] : y.shape[4] - hi[2]
    ]


@pytest.mark.parametrize("case", CONV3D_T)
def test_conv3d_transpose_grad_matches_torch(case):
    xs, ws, strides, padding, out_pad, dilation, groups = case
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    params = [_var("x", x), _var("w", w)]

    def build(bb, xv, wv):
        call = R.nn.conv3d_transpose(xv, wv, strides, padding, out_pad, dilation, groups)
        return bb.emit(call)

    _, (dx, dw), weights = _run_adjoint(params, build, params, [x, w])
    tx, tw = (torch.tensor(a, requires_grad=True) for a in (x, w))
    ty = _torch_conv3d_transpose(tx, tw, strides, padding, out_pad, dilation, groups)
    (ty * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(dw, tw.grad.numpy(), rtol=1e-10, atol=1e-10)


SLICES = [  # (begin, end, strides) on x of shape (5, 7, 4)
    ([1, 0, 3], [5, 7, 0], [2, 3, -1]),
    ([-4, 6, 0], [100, -8, 4], [1, -2, 3]),
    ([0, 1, 1], [5, 6, 4], [3, 2, 1]),
]


@pytest.mark.parametrize("begin, end, strides", SLICES)
def test_dynamic_strided_slice_grad_matches_torch(begin, end, strides):
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((5, 7, 4)), rng.standard_normal((5, 7, 4))
    bounds = [np.array(v, "int64") for v in (begin, end, strides)]
    params = [_var("x", x), _var("w", w), *(_var(n, b) for n, b in zip("bes", bounds))]
    dims = [tir.Var(f"n{k}", "int64") for k in range(3)]

    def build(bb, xv, wv, b, e, s):
        y = bb.emit(R.dynamic_strided_slice(R.multiply(xv, wv), b, e, s))
        y = bb.match_cast(y, relax.TensorStructInfo(dims, "float64"))  # names the extents
        return bb.emit(R.multiply(y, y))

    def torch_slice(t):  # torch has no negative steps: flip those axes first
        index = []
        for axis, (b, e, s) in enumerate(zip(begin, end, strides)):
            lo, hi, step = slice(b, e, s).indices(t.shape[axis])
            count = len(range(lo, hi, step))
            start = lo if step > 0 else t.shape[axis] - 1 - lo
            if step < 0:
                t = t.flip(axis)
            index.append(
                slice(start, start + abs(step) * count, abs(step)) if count else slice(0, 0)
            )
        return t[tuple(index)]

    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(R.sum(build(bb, *params)))
        bb.emit_func_output(out)
    adj = gradient(bb.get(), "main", params[:2])
    vm = relax.VirtualMachine(relax.build(adj, "llvm"), tvm.cpu(0))
    loss, (dx, dw) = vm["main_adjoint"](*[tvm.nd.array(a) for a in (x, w, *bounds)])
    tx, tw = (torch.tensor(a, requires_grad=True) for a in (x, w))
    ty = torch_slice(tx * tw)
    numpy_slice = (x * w)[tuple(slice(*t) for t in zip(begin, end, strides))]
    np.testing.assert_array_equal(ty.detach().numpy(), numpy_slice)  # the reference itself
    tloss = (ty * ty).sum()
    tloss.backward()
    np.testing.assert_allclose(loss.numpy(), tloss.item(), rtol=1e-12)
    np.testing.assert_allclose(dx.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dw.numpy(), tw.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_dynamic_strided_slice_grad_needs_a_static_input_shape():
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n, 3), "float32"))
    b = relax.Var("b", relax.TensorStructInfo((2,), "int64"))
    m = [tir.Var("m0", "int64"), tir.Var("m1", "int64")]
    bb = relax.BlockBuilder()
    with bb.function("main", [x, b]):
        with bb.dataflow():
            y = bb.emit(R.dynamic_strided_slice(x, b, b, b))
            y = bb.match_cast(y, relax.TensorStructInfo(m, "float32"))
            out = bb.emit_output(R.sum(y))
        bb.emit_func_output(out)
    with pytest.raises(tvm.error.MiniTVMError, match="x's shape must be static"):
        gradient(bb.get(), "main", [x])


def test_both_ops_left_the_no_rule_list():
    for name in ("relax.nn.conv3d_transpose", "relax.dynamic_strided_slice"):
        assert name in GRAD_RULES and name not in NO_GRAD_RULE
