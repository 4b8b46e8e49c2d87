"""Struct-info inference of the op table: static and symbolic shapes, unknown shapes, and every
error message (which names the op and the mismatching dims)."""

from __future__ import annotations

import numpy as np
import pytest

from minitvm import relax, tir
from minitvm.error import DTypeError, MiniTVMError, ShapeError
from minitvm.ir import structural_equal
from minitvm.relax import op
from minitvm.relax.struct_info import TensorStructInfo, TupleStructInfo


def T(shape, dtype="float32"):
    return relax.Var("t", relax.TensorStructInfo(shape, dtype))


def shape_of(call):
    s = call.struct_info
    return tuple(d.value if hasattr(d, "value") else d for d in s.shape)


n = tir.Var("n", "int64")
m = tir.Var("m", "int64")


# ----------------------------------------------------------------------------- symbolic shapes


def test_matmul_keeps_symbolic_batch_dim():
    s = op.matmul(T((n, 8)), T((8, 4))).struct_info
    assert s.shape[0] is n and s.shape[1].value == 4 and str(s.dtype) == "float32"


def test_matmul_broadcasts_batch_dims():
    assert shape_of(op.matmul(T((2, 1, 3, 4)), T((5, 4, 6)))) == (2, 5, 3, 6)


def test_matmul_vector_operands_drop_dims():
    assert shape_of(op.matmul(T((3, 4)), T((4,)))) == (3,)
    assert shape_of(op.matmul(T((4,)), T((2, 4, 5)))) == (2, 5)


def test_broadcast_symbolic_with_one():
    s = op.add(T((n, 1)), T((1, m))).struct_info
    assert s.shape[0] is n and s.shape[1] is m


def test_broadcast_same_symbolic_var_is_equal():
    s = op.multiply(T((n, 4)), T((n, 4))).struct_info
    assert s.shape[0] is n


def test_broadcast_unprovable_symbolic_dims_give_unknown_shape_of_known_rank():
    s = op.add(T((n, 4)), T((m, 4))).struct_info
    assert s.shape is None and s.ndim == 2


def test_symbolic_arithmetic_dims_are_simplified():
    s = op.concat([T((n, 2)), T((n, 3))], axis=1).struct_info
    assert s.shape[1].value == 5
    s = op.reshape(T((n, 4)), (-1,)).struct_info
    assert structural_equal(s.shape[0], n * 4)
    s = op.flatten(T((n, 2, 3))).struct_info
    assert structural_equal(s.shape[0], n * 6)


def test_reshape_minus_one_beside_a_symbolic_dim():
    # (1, n, 64) -> (1, n, 4, -1): the -1 is 16, which needs n cancelled from (n * 64) / (n * 4)
    s = op.reshape(T((1, n, 64)), (1, n, 4, -1)).struct_info
    assert structural_equal(s.shape[1], n) and s.shape[3].value == 16
    s = op.reshape(T((n, m, 6)), (m, -1, 3)).struct_info
    assert structural_equal(s.shape[1], n * 2)
    with pytest.raises(ShapeError, match="element counts differ"):
        op.reshape(T((n, 6)), (n, 4, -1)).struct_info
    x = relax.Var("x", relax.TensorStructInfo((1, n, 64), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(op.reshape(x, (1, n, 4, -1))))
    ex = relax.build(bb.get(), "llvm")
    data = np.random.default_rng(0).standard_normal((1, 5, 64)).astype("float32")
    import minitvm as tvm

    got = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(data)).numpy()
    np.testing.assert_array_equal(got, data.reshape(1, 5, 4, 16))


def test_conv2d_symbolic_spatial_dims():
    h = tir.Var("h", "int64")
    s = op.nn.conv2d(T((n, 3, h, 16)), T((8, 3, 3, 3)), padding=1).struct_info
    assert s.shape[0] is n and s.shape[2] is h and s.shape[3].value == 16


def test_unknown_shape_propagates_rank():
    x = relax.Var("x", relax.TensorStructInfo(None, "float32", ndim=2))
    assert op.nn.relu(x).struct_info.ndim == 2
    assert op.sum(x, axis=1).struct_info.ndim == 1
    assert op.matmul(x, T((4, 5))).struct_info.ndim == 2


def test_reduce_keepdims_and_axes():
    assert shape_of(op.sum(T((2, 3, 4)), axis=[0, 2], keepdims=True)) == (1, 3, 1)
    assert shape_of(op.mean(T((2, 3, 4)))) == ()
    assert shape_of(op.max(T((2, 3, 4)), axis=-1)) == (2, 3)


def test_split_returns_tuple_struct_info():
    s = op.split(T((n, 6)), [2, 5], axis=1).struct_info
    assert isinstance(s, TupleStructInfo)
    assert [f.shape[1].value for f in s.fields] == [2, 3, 1]


def test_batch_norm_returns_out_mean_var_tuple():
    s = op.nn.batch_norm(T((n, 3, 4, 4)), T((3,)), T((3,)), T((3,)), T((3,))).struct_info
    assert isinstance(s, TupleStructInfo) and len(s.fields) == 3
    assert s.fields[0].shape[0] is n


def test_take_and_astype():
    s = op.take(T((5, n)), T((2, 3), "int32"), axis=1).struct_info
    assert shape_of(op.take(T((5, 4)), T((2, 3), "int32"), axis=1)) == (
        5,
        2,
        3,
    )
    assert s.shape[0].value == 5
    assert str(op.astype(T((2,)), "float16").struct_info.dtype) == "float16"


def test_creation_ops():
    s = op.zeros((n, 3), "int32").struct_info
    assert s.shape[0] is n and str(s.dtype) == "int32"
    assert str(op.full((2,), relax.const(1, "int64")).struct_info.dtype) == "int64"


def test_pool_and_adaptive_pool_shapes():
    assert shape_of(op.nn.max_pool2d(T((1, 2, 8, 8)), 2, 2)) == (1, 2, 4, 4)
    assert shape_of(op.nn.avg_pool2d(T((1, 2, 7, 7)), 2, 2, ceil_mode=True)) == (1, 2, 4, 4)
    assert shape_of(op.nn.adaptive_avg_pool2d(T((1, 2, 7, 7)), 1)) == (1, 2, 1, 1)


def test_strided_slice_clamps_like_numpy():
    x = np.zeros((10, 6))
    call = op.strided_slice(T((10, 6)), [0, 1], [-3, 5], [100, 0], [1, -2])
    assert shape_of(call) == x[-3:100, 5:0:-2].shape


# ----------------------------------------------------------------------------- errors


def test_matmul_inner_dim_error_names_dims():
    with pytest.raises(
        ShapeError,
        match=r"relax\.matmul: inner dims differ: x has shape \(4, 8\), y has shape \(7, 3\): "
        r"dim 1 of x \(8\) must equal dim 0 of y \(7\)\.",
    ):
        op.matmul(T((4, 8)), T((7, 3))).struct_info


def test_matmul_unprovable_symbolic_inner_dims_suggest_match_cast():
    with pytest.raises(
        ShapeError, match=r"dim 1 of x \(n\) must equal dim 0 of y \(m\).*match_cast"
    ):
        op.matmul(T((4, n)), T((m, 3))).struct_info


def test_broadcast_error_names_both_dims():
    with pytest.raises(
        ShapeError,
        match=r"relax\.add: shapes do not broadcast: x1 has shape \(2, 3\), x2 has shape \(4,\): "
        r"dim 1 of x1 \(3\) must equal dim 0 of x2 \(4\)",
    ):
        op.add(T((2, 3)), T((4,))).struct_info


def test_dtype_mismatch_error():
    with pytest.raises(
        DTypeError, match=r"relax\.subtract: dtypes differ: x1 is float32, x2 is int32"
    ):
        op.subtract(T((2,)), T((2,), "int32")).struct_info


def test_float_only_op_on_int_error():
    with pytest.raises(DTypeError, match=r"relax\.exp: x has dtype int32.*astype"):
        op.exp(T((2,), "int32")).struct_info


def test_non_tensor_argument_error():
    with pytest.raises(
        ShapeError, match=r"relax\.nn\.relu: argument 'x' must be a tensor, got ShapeStructInfo"
    ):
        op.nn.relu(relax.ShapeExpr([2, 3])).struct_info


def test_linear_errors():
    with pytest.raises(
        ShapeError,
        match=r"relax\.nn\.linear: in_features differ: .*dim 1 of x \(8\) must equal dim 1 of weight \(6\)",
    ):
        op.nn.linear(T((2, 8)), T((5, 6))).struct_info
    with pytest.raises(
        ShapeError, match=r"relax\.nn\.linear: bias has shape \(4,\) but weight has 5 out_features"
    ):
        op.nn.linear(T((2, 8)), T((5, 8)), T((4,))).struct_info
    with pytest.raises(
        ShapeError, match=r"relax\.nn\.linear: weight has shape \(5,\) \(rank 1\); expected rank 2"
    ):
        op.nn.linear(T((2, 8)), T((5,))).struct_info


def test_conv2d_errors():
    with pytest.raises(
        ShapeError,
        match=r"relax\.nn\.conv2d: channels differ: .*dim 1 of weight \(4\) must equal dim 1 of data \(3\) / groups \(1\)",
    ):
        op.nn.conv2d(T((1, 3, 8, 8)), T((8, 4, 3, 3))).struct_info
    with pytest.raises(
        ShapeError, match=r"relax\.nn\.conv2d: in_channels \(3\) is not divisible by groups=2"
    ):
        op.nn.conv2d(T((1, 3, 8, 8)), T((8, 1, 3, 3)), groups=2).struct_info
    with pytest.raises(ShapeError, match=r"relax\.nn\.conv2d: output height is -1"):
        op.nn.conv2d(T((1, 3, 2, 8)), T((8, 3, 4, 3))).struct_info
    with pytest.raises(
        ShapeError,
        match=r"relax\.nn\.conv2d: data has shape \(1, 3, 8\) \(rank 3\); expected rank 4",
    ):
        op.nn.conv2d(T((1, 3, 8)), T((8, 3, 3, 3))).struct_info
    with pytest.raises(ShapeError, match="layouts NHWC/OIHW are not supported"):
        op.nn.conv2d(T((1, 8, 8, 3)), T((8, 3, 3, 3)), data_layout="NHWC")


def test_pool_errors():
    with pytest.raises(
        ShapeError,
        match=r"relax\.nn\.max_pool2d: output height is 0: pool_size \(5, 5\) does not fit the padded input \(4, 4\)",
    ):
        op.nn.max_pool2d(T((1, 2, 4, 4)), 5).struct_info


def test_reshape_errors():
    with pytest.raises(
        ShapeError,
        match=r"relax\.reshape: cannot reshape x of shape \(2, 3\) \(6 elements\) into \(4, 2\) \(8 elements\)",
    ):
        op.reshape(T((2, 3)), (4, 2)).struct_info
    with pytest.raises(ShapeError, match=r"more than one -1"):
        op.reshape(T((2, 3)), (-1, -1))
    with pytest.raises(ShapeError, match=r"6 is not divisible by 4"):
        op.reshape(T((2, 3)), (4, -1))


def test_axis_errors():
    with pytest.raises(
        ShapeError, match=r"relax\.nn\.softmax: axis 2 is out of range for a tensor of rank 2"
    ):
        op.nn.softmax(T((2, 3)), axis=2).struct_info
    with pytest.raises(
        ShapeError, match=r"relax\.permute_dims: axes \[0, 0\] are not a permutation"
    ):
        op.permute_dims(T((2, 3)), [0, 0]).struct_info
    with pytest.raises(ShapeError, match=r"relax\.sum: axes \[1, -1\] repeat an axis"):
        op.sum(T((2, 3)), axis=[1, -1]).struct_info


def test_concat_and_split_errors():
    with pytest.raises(
        ShapeError,
        match=r"relax\.concat: tensors\[0\] has shape \(2, 3\), tensors\[1\] has shape \(4, 4\): dim 0 \(2 vs 4\)",
    ):
        op.concat([T((2, 3)), T((4, 4))], axis=1).struct_info
    with pytest.raises(ShapeError, match=r"relax\.concat: tensors have different ranks \[1, 2\]"):
        op.concat([T((2, 3)), T((4,))]).struct_info
    with pytest.raises(
        ShapeError, match=r"relax\.split: dim of size 5 does not split into 2 equal sections"
    ):
        op.split(T((5, 2)), 2).struct_info


def test_norm_errors():
    with pytest.raises(
        ShapeError, match=r"relax\.nn\.layer_norm: gamma has shape \(3,\), expected \(4,\)"
    ):
        op.nn.layer_norm(T((2, 4)), T((3,)), T((4,))).struct_info
    with pytest.raises(
        ShapeError, match=r"relax\.nn\.batch_norm: moving_var has shape \(2,\), expected \(3,\)"
    ):
        op.nn.batch_norm(T((2, 3)), T((3,)), T((3,)), T((3,)), T((2,))).struct_info


def test_take_index_dtype_and_strided_slice_errors():
    with pytest.raises(DTypeError, match=r"relax\.take: indices have dtype float32"):
        op.take(T((4,)), T((2,))).struct_info
    with pytest.raises(ShapeError, match="stride 0 on axis 0"):
        op.strided_slice(T((4,)), [0], [0], [2], [0]).struct_info
    with pytest.raises(ShapeError, match="must have the same length"):
        op.strided_slice(T((4,)), [0], [0, 1], [2])


def test_full_requires_scalar_fill():
    with pytest.raises(DTypeError, match="relax.full: fill_value must be a scalar"):
        op.full((2,), T((2,))).struct_info


def test_call_tir_needs_a_global_var_and_out_sinfo():
    with pytest.raises(MiniTVMError, match="call_tir: the callee must be a GlobalVar"):
        relax.call_tir("mm", [T((2,))], TensorStructInfo((2,), "float32"))
    with pytest.raises(MiniTVMError, match="out_sinfo must be a TensorStructInfo"):
        relax.call_tir(relax.GlobalVar("mm"), [T((2,))], "float32")


def test_python_scalars_become_constants_of_the_tensor_dtype():
    call = op.add(T((2,), "float16"), 1)
    assert isinstance(call.args[1], relax.Constant)
    assert str(call.args[1].struct_info.dtype) == "float16"
    assert shape_of(op.multiply(2.0, T((3,)))) == (3,)
