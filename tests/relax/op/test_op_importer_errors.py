"""Every error the importer ops raise: it names the op, the argument and what was seen."""

from __future__ import annotations

import numpy as np
import pytest

from minitvm import relax, tir
from minitvm.error import DTypeError, ShapeError
from minitvm.relax import op

n = tir.Var("n", "int64")


def T(shape, dtype="float32"):
    return relax.Var("t", relax.TensorStructInfo(shape, dtype))


def B(shape):
    return T(shape, "bool")


CASES = [
    # (builds the call, error class, message regex)
    (lambda: op.logical_and(T((2, 3)), B((2, 3))), DTypeError, r"relax.logical_and: x1 has dtype float32.*bool"),
    (lambda: op.logical_not(T((2,), "int32")), DTypeError, r"relax.logical_not: x1 has dtype int32"),
    (lambda: op.less(T((2, 3)), T((4, 3))), ShapeError, r"relax.less: shapes do not broadcast"),
    (lambda: op.where(T((2,)), T((2,)), T((2,))), DTypeError, r"relax.where: condition has dtype float32; it must be bool"),
    (lambda: op.where(B((2,)), T((2,)), T((2,), "int32")), DTypeError, r"relax.where: dtypes differ: x1 is float32, x2 is int32"),
    (lambda: op.where(B((3,)), T((2,)), T((2,))), ShapeError, r"relax.where: shapes do not broadcast: condition has shape \(3,\)"),
    (lambda: op.rsqrt(T((2,), "int32")), DTypeError, r"relax.rsqrt: x has dtype int32"),
    (lambda: op.nn.softplus(T((2,)), beta=0.0), ShapeError, r"relax.nn.softplus: beta must be non-zero"),
    (lambda: op.nn.dropout(T((2,)), 1.0), ShapeError, r"relax.nn.dropout: rate must be in \[0, 1\)"),
    (lambda: op.nn.group_norm(T((2, 6, 4)), T((6,)), T((6,)), 4, 1, [2]), ShapeError,
     r"relax.nn.group_norm: the 6 channels of data \(2, 6, 4\) \(axis 1\) do not split into num_groups=4"),
    (lambda: op.nn.group_norm(T((2, 6, 4)), T((5,)), T((6,)), 3, 1, [2]), ShapeError,
     r"relax.nn.group_norm: gamma has shape \(5,\), expected \(6,\)"),
    (lambda: op.nn.group_norm(T((2, 6)), T((6,)), T((6,)), 0, 1, []), ShapeError, r"num_groups must be positive"),
    (lambda: op.nn.attention(T((2, 3, 4)), T((2, 3, 1, 4)), T((2, 3, 1, 4))), ShapeError,
     r"relax.nn.attention: query has shape \(2, 3, 4\) \(rank 3\); expected rank 4"),
    (lambda: op.nn.attention(T((2, 3, 2, 4)), T((2, 5, 2, 8)), T((2, 5, 2, 4))), ShapeError,
     r"relax.nn.attention: head_dim differs: query has shape \(2, 3, 2, 4\), key has shape \(2, 5, 2, 8\)"),
    (lambda: op.nn.attention(T((2, 3, 2, 4)), T((2, 5, 1, 4)), T((2, 5, 1, 4))), ShapeError,
     r"num_heads differs.*grouped-query"),
    (lambda: op.nn.attention(T((2, 3, 2, 4)), T((2, 5, 2, 4)), T((2, 6, 2, 4))), ShapeError, r"seq_len_kv differs"),
    (lambda: op.nn.attention(T((1, 3, 1, 4)), T((1, 3, 1, 4)), T((1, 3, 1, 4)), causal_mask="Upper"), ShapeError,
     r"causal_mask 'Upper' is not one of None, 'TopLeft', 'BottomRight'"),
    (lambda: op.nn.attention(T((1, 3, 1, 4)), T((1, 3, 1, 4)), T((1, 3, 1, 4)), window_size=2), ShapeError,
     r"window_size .* is not supported"),
    (lambda: op.nn.attention(T((1, 3, 1, 4)), T((1, 5, 1, 4)), T((1, 5, 1, 4)), T((1, 1, 3, 4))), ShapeError,
     r"relax.nn.attention: shapes do not broadcast: bias has shape \(1, 1, 3, 4\)"),
    (lambda: op.nn.attention(T((1, 3, 1, 4)), T((1, 5, 1, 4)), T((1, 5, 1, 4)), T((2, 1, 1, 3, 5))), ShapeError,
     r"bias has shape \(2, 1, 1, 3, 5\) \(rank 5\)"),
    (lambda: op.squeeze(T((2, 1, 3)), 0), ShapeError, r"relax.squeeze: dim 0 of x \(2, 1, 3\) is 2, not 1"),
    (lambda: op.squeeze(T((n, 3)), 0), ShapeError, r"dim 0 of x \(n, 3\) is n, not 1.*match_cast"),
    (lambda: op.squeeze(T((2, 1)), 2), ShapeError, r"relax.squeeze: axis 2 is out of range for a tensor of rank 2"),
    (lambda: op.broadcast_to(T((2, 3)), (4, 3)), ShapeError,
     r"relax.broadcast_to: cannot broadcast x of shape \(2, 3\) to \(4, 3\): dim 0 of x \(2\) must be 1"),
    (lambda: op.broadcast_to(T((2, 3)), (3,)), ShapeError, r"relax.broadcast_to: x has shape \(2, 3\) \(rank 2\), more dims"),
    (lambda: op.tile(T((2,)), (-1,)), ShapeError, r"relax.tile: repeats \[-1\] must be non-negative"),
    (lambda: op.repeat(T((2,)), -2), ShapeError, r"relax.repeat: repeats must be non-negative"),
    (lambda: op.flip(T((2,)), 1), ShapeError, r"relax.flip: axis 1 is out of range"),
    (lambda: op.cumsum(T((2, 3)), axis=2), ShapeError, r"relax.cumsum: axis 2 is out of range"),
    (lambda: op.argmax(T((2, 3)), axis=-3), ShapeError, r"relax.argmax: axis -3 is out of range"),
    (lambda: op.variance(T((2, 3)), axis=[1, 1]), ShapeError, r"relax.variance: axes \[1, 1\] repeat an axis"),
    (lambda: op.nn.pad(T((2, 3)), (1, 1)), ShapeError,
     r"relax.nn.pad: pad_width has 2 numbers for data of rank 2; give \(before, after\) for every dim: 4"),
    (lambda: op.nn.pad(T((2, 3)), (0, 0, -1, 0)), ShapeError, r"non-negative ints.*strided_slice"),
    (lambda: op.nn.pad(T((2, 3)), (0, 0, 1, 1), pad_mode="wrap"), ShapeError, r"pad_mode 'wrap' is not one of"),
    (lambda: op.nn.pad(T((2, 3)), (0, 0, 3, 0), pad_mode="reflect"), ShapeError,
     r"reflect padding \(3, 0\) of dim 1 of data \(2, 3\) must be smaller than the dim \(3\)"),
    (lambda: op.nn.pad(T((2, 3)), (0, 0, 1, 0), pad_value=T((1,))), ShapeError, r"relax.nn.pad: pad_value must be a constant number"),
    (lambda: op.image.resize2d(T((1, 2, 3, 3)), (4, 4), method="bicubic"), ShapeError,
     r"relax.image.resize2d: method 'bicubic' is not supported; use one of \('nearest_neighbor', 'linear', 'cubic'\)"),
    (lambda: op.image.resize2d(T((1, 2, 3, 3)), (4, 4), coordinate_transformation_mode="tf_crop_and_resize"),
     ShapeError, r"coordinate_transformation_mode 'tf_crop_and_resize' is not supported"),
    (lambda: op.image.resize2d(T((1, 2, 3, 3)), (4, 4, 4)), ShapeError, r"size \[4, 4, 4\] must be one or two dims"),
    (lambda: op.image.resize2d(T((1, 2, 3, 3)), (0, 4)), ShapeError, r"size \[0, 4\] must be positive"),
    (lambda: op.image.resize2d(T((1, 2, 3, 3), "int32"), (4, 4)), DTypeError,
     r"relax.image.resize2d: data has dtype int32, but this op needs a float tensor"),
    (lambda: op.image.resize2d(T((2, 3, 3)), (4, 4)), ShapeError, r"data has shape \(2, 3, 3\) \(rank 3\); expected rank 4"),
    (lambda: op.nn.conv1d(T((1, 4, 8)), T((6, 3, 3))), ShapeError,
     r"relax.nn.conv1d: channels differ: data \(1, 4, 8\), weight \(6, 3, 3\): dim 1 of weight \(3\) must equal dim 1 of data \(4\) / groups \(1\)"),
    (lambda: op.nn.conv1d(T((1, 4, 2)), T((6, 4, 3))), ShapeError, r"relax.nn.conv1d: output width is 0"),
    (lambda: op.nn.conv1d(T((1, 4, 8)), T((6, 4, 3)), data_layout="NWC"), ShapeError,
     r"relax.nn.conv1d: layouts \(data, kernel, out\) \('NWC', 'OIW', 'NWC'\) are not supported"),
    (lambda: op.nn.conv1d(T((1, 4, 8)), T((5, 2, 3)), groups=2), ShapeError, r"out_channels \(5\) .* not divisible by groups=2"),
    (lambda: op.nn.conv2d_transpose(T((1, 4, 5, 5)), T((3, 2, 3, 3))), ShapeError,
     r"relax.nn.conv2d_transpose: channels differ: .*dim 0 of weight \(3\) must equal dim 1 of data \(4\)"),
    (lambda: op.nn.conv2d_transpose(T((1, 4, 5, 5)), T((4, 2, 3, 3)), strides=2, output_padding=2), ShapeError,
     r"output_padding 2 along H must be smaller than the stride \(2\)"),
    (lambda: op.nn.conv2d_transpose(T((1, 4, 1, 1)), T((4, 2, 1, 1)), padding=1), ShapeError,
     r"relax.nn.conv2d_transpose: output height is -1"),
    (lambda: op.nn.max_pool1d(T((1, 2, 2)), 3), ShapeError, r"relax.nn.max_pool1d: output width is 0: pool_size 3"),
    (lambda: op.nn.avg_pool1d(T((1, 2, 8)), 2, layout="NWC"), ShapeError, r"layout 'NWC' / out_layout None is not supported"),
    (lambda: op.nn.adaptive_avg_pool1d(T((1, 2, n)), 2), ShapeError, r"the width of data \(1, 2, n\) must be static"),
    (lambda: op.einsum([T((2, 3))], "ij,jk->ik"), ShapeError, r"relax.einsum: subscripts 'ij,jk->ik' name 2 operands, but 1 were given"),
    (lambda: op.einsum([T((2, 3)), T((4, 5))], "ij,jk->ik"), ShapeError,
     r"relax.einsum: label 'j' has extent 3 in one operand and 4 in another \(operand shapes \(2, 3\), \(4, 5\)\)"),
    (lambda: op.einsum([T((2, 3))], "ij->k"), ShapeError, r"output 'k' of 'ij->k' must name distinct input labels"),
    (lambda: op.einsum([T((2, 3))], "ijk->i"), ShapeError, r"term 'ijk' of subscripts 'ijk->i' has 3 labels, but its operand has rank 2"),
]  # fmt: skip


@pytest.mark.parametrize("build, err, match", CASES, ids=[c[2][:40] for c in CASES])
def test_importer_op_error_names_op_argument_and_what_was_seen(build, err, match) -> None:
    with pytest.raises(err, match=match):
        _ = build().struct_info  # shape rules run when the struct info is first read


def test_squeeze_without_axis_keeps_symbolic_dims() -> None:
    s = op.squeeze(T((1, n, 1, 4))).struct_info
    assert s.shape[0] is n and [int(d) for d in s.shape[1:]] == [4]


def test_dropout_is_identity_and_ones_mask() -> None:
    from minitvm.relax.eval_ref import evaluate

    x = relax.Var("x", relax.TensorStructInfo((n, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            d = bb.emit(op.nn.dropout(x, 0.5))
            out = bb.emit_output(relax.TupleGetItem(d, 0))
        bb.emit_func_output(out)
    data = np.arange(6, dtype="float32").reshape(2, 3)
    got = evaluate(relax.transform.LegalizeOps()(bb.get()), data)
    np.testing.assert_array_equal(got, data)
