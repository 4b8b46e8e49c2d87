"""relax.nn.conv3d_transpose (and topi.nn.conv3d_transpose_ncdhw below it) compiled and run
against torch's conv_transpose3d, plus its argument checks."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import ShapeError
from minitvm.relax import op
from minitvm.script import relax as R


def _run(build, *arrays):
    params = [relax.Var(f"a{i}", R.Tensor(a.shape, str(a.dtype))) for i, a in enumerate(arrays)]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        bb.emit_func_output(bb.emit(build(*params)))
    mod = bb.get()
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    out = vm["main"](*[tvm.nd.array(a) for a in arrays]).numpy()
    assert out.shape == tuple(int(d) for d in mod["main"].ret_struct_info.shape)
    return out


def _normal(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"strides": 2, "padding": 1, "output_padding": 1},
        {"strides": (1, 2, 3), "padding": (1, 0, 2, 0, 1, 1), "dilation": (2, 1, 1), "groups": 2},
        {"strides": (2, 1, 1), "output_padding": (0, 0, 1), "dilation": (1, 1, 2)},
    ],
)
def test_conv3d_transpose_matches_torch(kw):
    torch = pytest.importorskip("torch")
    x, w = _normal(2, 4, 3, 4, 3), _normal(4, 3, 2, 3, 2, seed=1)
    got = _run(lambda a, b: op.nn.conv3d_transpose(a, b, **kw), x, w)
    pad = kw.get("padding", 0)
    pad = (pad,) * 6 if np.ndim(pad) == 0 else tuple(pad) * (2 if len(pad) == 3 else 1)
    full = torch.nn.functional.conv_transpose3d(
        torch.from_numpy(x),
        torch.from_numpy(w),
        stride=kw.get("strides", 1),
        output_padding=kw.get("output_padding", 0),
        dilation=kw.get("dilation", 1),
        groups=kw.get("groups", 1),
    )  # torch pads both sides alike: crop (begin, end) by hand
    want = full[
        :,
        :,
        pad[0] : full.shape[2] - pad[3],
        pad[1] : full.shape[3] - pad[4],
        pad[2] : full.shape[4] - pad[5],
    ]
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-4)


def test_conv3d_transpose_argument_errors_name_the_rule():
    x = relax.Var("x", R.Tensor((1, 4, 3, 3, 3), "float32"))
    w = relax.Var("w", R.Tensor((4, 2, 2, 2, 2), "float32"))
    with pytest.raises(ShapeError, match=r"conv3d_transpose: output_padding \[2, 0, 0\] must"):
        op.nn.conv3d_transpose(x, w, strides=2, output_padding=(2, 0, 0))
    with pytest.raises(ShapeError, match=r"conv3d_transpose: kernel_layout 'OIHW' must name"):
        op.nn.conv3d_transpose(x, w, kernel_layout="OIHW")
    bb = relax.BlockBuilder()
    with pytest.raises(ShapeError, match=r"conv3d_transpose: channels differ"):
        bb.normalize(op.nn.conv3d_transpose(x, relax.Var("v", R.Tensor((3, 2, 2, 2, 2)))))
