"""Ops TVM's frontend tests need: tril/triu (numpy), conv3d and conv1d_transpose (torch),
conv2d_transpose with an OIHW kernel, pooling's out_layout, resize2d's out_dtype "void" and
strided_slice's assume_inbound; each compiled and run, against an outside oracle."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.error import MiniTVMError, ShapeError
from minitvm.relax import op
from minitvm.script import relax as R


def _run(build, *arrays):
    """Compile `build(*vars)` for the arrays' shapes and run it on them."""
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


# ----------------------------------------------------------------------------- tril / triu


@pytest.mark.parametrize("k", [0, 1, -2, 7])
def test_tril_triu_match_numpy_on_the_last_two_dims(k):
    x = _normal(2, 4, 5)
    np.testing.assert_array_equal(_run(lambda v: op.tril(v, k), x), np.tril(x, k))
    np.testing.assert_array_equal(_run(lambda v: R.triu(v, k), x), np.triu(x, k))


def test_tril_takes_k_as_a_prim_value_and_keeps_int_dtype():
    x = np.arange(12, dtype="int32").reshape(3, 4)
    got = _run(lambda v: op.tril(v, relax.PrimValue(tir.IntImm("int64", -1))), x)
    np.testing.assert_array_equal(got, np.tril(x, -1))


def test_tril_result_struct_info_is_the_input_struct_info():
    n = tir.Var("n", "int64")
    x = relax.Var("x", R.Tensor((n, 3, 4), "float16"))
    y = relax.BlockBuilder().normalize(op.triu(x, 1))
    assert y.struct_info.dtype == "float16"
    tvm.ir.assert_structural_equal(y.struct_info.shape, x.struct_info.shape)


def test_tril_refuses_a_tensor_of_rank_below_two():
    x = relax.Var("x", R.Tensor((4,), "float32"))
    with pytest.raises(
        ShapeError, match=r"relax.tril: x has shape \(4,\) \(rank 1\); it needs at least two dims"
    ):
        relax.BlockBuilder().normalize(op.tril(x))


def test_tril_refuses_a_non_integer_k():
    x = relax.Var("x", R.Tensor((3, 4), "float32"))
    with pytest.raises(ShapeError, match="k must be an int"):
        op.tril(x, 1.5)


# ----------------------------------------------------------------------------- convolutions


def test_conv3d_matches_torch_with_strides_padding_dilation_groups():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x, w = _normal(2, 4, 7, 6, 5), _normal(6, 2, 3, 2, 3, seed=1)
    got = _run(
        lambda a, b: op.nn.conv3d(a, b, (1, 2, 1), (1, 0, 2, 0, 1, 1), (2, 1, 1), groups=2), x, w
    )
    # torch pads symmetrically: pad by hand, as (W lo, W hi, H lo, H hi, D lo, D hi)
    xp = F.pad(torch.from_numpy(x), (2, 1, 0, 1, 1, 0))
    want = F.conv3d(xp, torch.from_numpy(w), stride=(1, 2, 1), dilation=(2, 1, 1), groups=2)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-4)


def test_conv3d_in_channels_last_layouts_matches_torch():
    torch = pytest.importorskip("torch")
    x, w = _normal(1, 4, 5, 3, 2), _normal(2, 2, 2, 2, 3, seed=1)  # NDHWC, DHWIO
    got = _run(
        lambda a, b: op.nn.conv3d(a, b, padding=1, data_layout="NDHWC", kernel_layout="DHWIO"),
        x,
        w,
    )
    xt = torch.from_numpy(x).permute(0, 4, 1, 2, 3)
    wt = torch.from_numpy(w).permute(4, 3, 0, 1, 2)
    want = torch.nn.functional.conv3d(xt, wt, padding=1).permute(0, 2, 3, 4, 1)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "kw",
    [
        {"strides": 2, "padding": 1, "output_padding": 1},
        {"strides": 3, "padding": (2, 0), "dilation": 2, "groups": 2},
        {},
    ],
)
def test_conv1d_transpose_matches_torch(kw):
    torch = pytest.importorskip("torch")
    x, w = _normal(2, 4, 6), _normal(4, 3, 3, seed=1)
    got = _run(lambda a, b: op.nn.conv1d_transpose(a, b, **kw), x, w)
    lo, hi = (kw.get("padding", 0),) * 2 if np.ndim(kw.get("padding", 0)) == 0 else kw["padding"]
    full = torch.nn.functional.conv_transpose1d(
        torch.from_numpy(x),
        torch.from_numpy(w),
        stride=kw.get("strides", 1),
        output_padding=kw.get("output_padding", 0),
        dilation=kw.get("dilation", 1),
        groups=kw.get("groups", 1),
    )  # torch crops both sides alike: crop (lo, hi) by hand
    want = full[:, :, lo : full.shape[2] - hi]
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-4)


def test_conv1d_transpose_kernel_layout_oiw_reads_dim0_as_outputs():
    torch = pytest.importorskip("torch")
    x, w = _normal(1, 3, 5), _normal(4, 3, 2, seed=1)  # OIW: (O, I, K)
    got = _run(lambda a, b: op.nn.conv1d_transpose(a, b, 2, kernel_layout="OIW"), x, w)
    wt = torch.from_numpy(w).permute(1, 0, 2)
    want = torch.nn.functional.conv_transpose1d(torch.from_numpy(x), wt, stride=2)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-4)


def test_conv2d_transpose_kernel_layout_oihw_matches_torch():
    torch = pytest.importorskip("torch")
    x, w = _normal(1, 4, 3, 5), _normal(3, 4, 3, 3, seed=1)  # OIHW: (O / groups, C, KH, KW)
    got = _run(
        lambda a, b: op.nn.conv2d_transpose(a, b, 2, 1, 1, groups=2, kernel_layout="OIHW"), x, w
    )
    wt = torch.from_numpy(w).permute(1, 0, 2, 3)
    want = torch.nn.functional.conv_transpose2d(
        torch.from_numpy(x), wt, stride=2, padding=1, output_padding=1, groups=2
    )
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-4)


def test_conv_errors_name_the_op_and_the_dims():
    bb = relax.BlockBuilder()
    c = tir.Var("c", "int64")
    x = relax.Var("x", R.Tensor((1, c, 8), "float32"))
    w = relax.Var("w", R.Tensor((c - 1, 2, 3), "float32"))
    with pytest.raises(
        ShapeError, match=r"conv1d_transpose: channels differ.*I dim is c - T.int64\(1\)"
    ):
        bb.normalize(op.nn.conv1d_transpose(x, w))
    with pytest.raises(ShapeError, match=r"conv3d: padding must be an int, 3 values or 6"):
        op.nn.conv3d(x, w, padding=(1, 2))
    with pytest.raises(ShapeError, match=r"conv3d: kernel_layout 'OIHW' must name the axes"):
        op.nn.conv3d(x, w, kernel_layout="OIHW")
    with pytest.raises(ShapeError, match="output_padding 2 must be smaller than the stride"):
        op.nn.conv1d_transpose(x, w, strides=2, output_padding=2)


# ----------------------------------------------------------------------------- attributes


def test_pooling_out_layout_matches_torch_in_that_layout():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x = _normal(2, 3, 7, 8)
    xt = torch.from_numpy(x)
    got = _run(lambda a: op.nn.max_pool2d(a, 3, 2, 1, out_layout="NHWC"), x)
    want = F.max_pool2d(xt, 3, 2, 1).permute(0, 2, 3, 1)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-6)
    got = _run(lambda a: op.nn.adaptive_avg_pool2d(a, (3, 2), out_layout="NHWC"), x)
    want = F.adaptive_avg_pool2d(xt, (3, 2)).permute(0, 2, 3, 1)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-6)


def test_pooling_out_layout_must_name_n_c_h_w():
    with pytest.raises(ShapeError, match="out_layout: layout 'OHWI' is not supported"):
        op.nn.avg_pool2d(relax.Var("x", R.Tensor((1, 2, 4, 4), "float32")), out_layout="OHWI")


def test_resize2d_out_dtype_void_means_the_data_dtype():
    torch = pytest.importorskip("torch")
    x = _normal(1, 2, 4, 5)
    call = op.image.resize2d(
        relax.Var("x", R.Tensor(x.shape, "float32")), (8, 10), out_dtype="void"
    )
    assert call.attrs["out_dtype"] is None
    got = _run(lambda a: op.image.resize2d(a, (8, 10), out_dtype="void"), x)
    want = torch.nn.functional.interpolate(torch.from_numpy(x), (8, 10), mode="bilinear")
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)


def test_strided_slice_assume_inbound_gives_numpy_slices():
    x = _normal(5, 6)
    got = _run(lambda a: op.strided_slice(a, [0, 1], [1, 0], [4, 6], [2, 3], True), x)
    np.testing.assert_array_equal(got, x[1:4:2, 0:6:3])
    v = relax.Var("x", R.Tensor((5, 6), "float32"))
    assert op.strided_slice(v, [0], [1], [3], assume_inbound=True).attrs["assume_inbound"]


def test_new_ops_print_and_parse_back():
    x = relax.Var("x", R.Tensor((1, 2, 3, 4, 4), "float32"))
    w = relax.Var("w", R.Tensor((2, 2, 1, 1, 1), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        y = bb.emit(op.nn.conv3d(x, w, strides=[1], padding=[0, 0, 0], out_dtype="float32"))
        bb.emit_func_output(bb.emit(op.tril(y, -1)))
    mod = bb.get()
    text = mod.script()
    assert "R.nn.conv3d(" in text and "R.tril(" in text
    tvm.ir.assert_structural_equal(tvm.script.from_source(text), mod)


def test_build_of_an_unknown_rank_tril_fails_clearly():
    x = relax.Var("x", R.Tensor("float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(op.tril(x)))
    with pytest.raises(MiniTVMError, match="tril"):
        relax.build(bb.get(), "llvm")


def test_strided_slice_takes_tvms_printed_prim_value_tuples():
    x = _normal(4, 10)
    pv = R.prim_value
    got = _run(lambda a: op.strided_slice(a, (pv(1),), (pv(0),), (pv(2**63 - 1),), (pv(3),)), x)
    np.testing.assert_array_equal(got, x[:, 0::3])
    v = relax.Var("x", R.Tensor((4, 10), "float32"))
    with pytest.raises(ShapeError, match="begin b is not a constant.*dynamic_strided_slice"):
        op.strided_slice(v, [0], [tir.Var("b", "int64")], [3])


def test_expand_dims_takes_a_one_element_axis_list():
    x = _normal(3, 4)
    np.testing.assert_array_equal(_run(lambda a: op.expand_dims(a, [1]), x), x[:, None])
    # several axes are positions in the result, as numpy's (and TVM's) expand_dims
    np.testing.assert_array_equal(_run(lambda a: op.expand_dims(a, [0, 3]), x), x[None, :, :, None])
    with pytest.raises(ShapeError, match="repeat an axis"):
        op.expand_dims(relax.Var("x", R.Tensor((3, 4), "float32")), [1, -3]).struct_info  # noqa: B018
