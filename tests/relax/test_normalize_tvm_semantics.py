"""BlockBuilder.normalize infers struct info at once, as TVM's normalizer does: a call that its
op rejects raises there, not later when something reads the result. Oracles: numpy rejects the
same programs; TVM's documented rule that an unknown dtype makes a binary result's dtype unknown."""

import numpy as np
import pytest

from minitvm import relax
from minitvm.error import DTypeError, MiniTVMError, ShapeError
from minitvm.relax import op
from minitvm.relax.eval_ref import evaluate
from minitvm.script import relax as R


def _var(shape, dtype="float32"):
    return relax.Var("x", R.Tensor(shape, dtype))


def test_normalize_rejects_shapes_that_do_not_broadcast():
    with pytest.raises(ValueError):
        np.broadcast_shapes((2, 3), (2, 4))  # the oracle rejects it too
    bb = relax.BlockBuilder()
    with pytest.raises(ShapeError, match="do not broadcast"):
        bb.normalize(op.add(_var((2, 3)), relax.Var("y", R.Tensor((2, 4), "float32"))))


def test_normalize_rejects_an_axis_out_of_range():
    x = np.zeros((1, 2, 3, 4))
    with pytest.raises(np.exceptions.AxisError):
        np.transpose(x, (0, 3, 4, 1))
    bb = relax.BlockBuilder()
    with pytest.raises(ShapeError, match="axis 4 is out of range"):
        bb.normalize(op.permute_dims(_var((1, 2, 3, 4)), [0, 3, 4, 1]))
    with pytest.raises(ShapeError, match="axis 4 is out of range"):
        bb.normalize(op.permute_dims(relax.Var("x", R.Tensor("float32", ndim=4)), [0, 3, 4, 1]))


def test_normalize_returns_the_call_with_its_inferred_struct_info():
    bb = relax.BlockBuilder()
    call = bb.normalize(op.add(_var((2, 1)), relax.Var("y", R.Tensor((1, 3), "float32"))))
    assert [int(d) for d in call.struct_info.shape] == list(np.broadcast_shapes((2, 1), (1, 3)))


def test_binary_op_with_an_unknown_dtype_has_an_unknown_dtype():
    bb = relax.BlockBuilder()
    unknown = relax.Var("x", R.Tensor((2, 3)))
    known = relax.Var("y", R.Tensor((2, 3), "float32"))
    assert bb.normalize(op.add(unknown, known)).struct_info.dtype is None
    assert bb.normalize(op.concat([unknown, known], axis=0)).struct_info.dtype is None
    assert str(bb.normalize(op.add(known, known)).struct_info.dtype) == "float32"


def test_binary_op_with_two_known_different_dtypes_is_refused():
    bb = relax.BlockBuilder()
    with pytest.raises(DTypeError, match="dtypes differ"):
        bb.normalize(op.add(_var((2, 3), "float32"), relax.Var("y", R.Tensor((2, 3), "int32"))))


def test_normalize_of_a_non_expression_is_refused():
    with pytest.raises(MiniTVMError, match="expected a relax expression"):
        relax.BlockBuilder().normalize(3.5)


def test_eliminate_common_subexpr_takes_tvms_call_only_flag():
    bb = relax.BlockBuilder()
    x = _var((2, 3))
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(op.exp(x))
            b = bb.emit(op.exp(x))
            gv = bb.emit_output(op.add(a, b))
        bb.emit_func_output(gv)
    mod = bb.get()
    for call_only in (False, True):
        after = relax.transform.EliminateCommonSubexpr(call_only)(mod)
        bindings = after["main"].body.blocks[0].bindings
        assert len(bindings) == 2  # the second exp reuses the first
        data = np.random.default_rng(0).standard_normal((2, 3)).astype("float32")
        out = np.asarray(evaluate(after, data))
        np.testing.assert_allclose(out, 2 * np.exp(data), rtol=1e-6)


def _ranked(ndim, dtype="float32"):
    return relax.Var("x", R.Tensor(dtype, ndim=ndim))  # rank known, dims unknown


def test_rank_only_tensors_still_get_axis_checks():
    bb = relax.BlockBuilder()
    with pytest.raises(IndexError):  # numpy's split has no axis 2 of a 2-d array either
        np.split(np.zeros((2, 3)), 1, axis=2)
    with pytest.raises(ShapeError, match="axis 2 is out of range"):
        bb.normalize(op.split(_ranked(2), 1, axis=2))
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        np.squeeze(np.zeros((2, 1, 3, 1)), axis=(3, -1))
    with pytest.raises(ShapeError, match="same axis twice"):
        bb.normalize(op.squeeze(_ranked(4), [3, -1]))
    with pytest.raises(ShapeError, match="same axis twice"):
        bb.normalize(op.strided_slice(_var((8, 9)), axes=[0, -2], begin=[0, 0], end=[8, 8]))


def test_broadcast_to_a_target_of_lower_rank_is_refused_when_only_ranks_are_known():
    with pytest.raises(ValueError):
        np.broadcast_to(np.zeros((2, 1)), (2,))
    target = relax.Var("s", relax.ShapeStructInfo(ndim=1))
    with pytest.raises(ShapeError, match="rank 2, more than the target's 1"):
        relax.BlockBuilder().normalize(op.broadcast_to(_var((2, 1)), target))


def test_norm_parameters_must_have_the_datas_dtype():
    bb = relax.BlockBuilder()
    x = _var((2, 3, 4, 5))
    beta = relax.Var("beta", R.Tensor((4, 5), "float32"))
    for gamma in (
        relax.Var("gamma", R.Tensor((4, 5), "int8")),
        relax.Var("gamma", R.Tensor((4, 5))),  # unknown dtype: TVM refuses it too
    ):
        with pytest.raises(DTypeError, match="gamma has dtype"):
            bb.normalize(op.nn.layer_norm(x, gamma, beta, axes=[-2, -1]))
    gamma = relax.Var("gamma", R.Tensor((4, 5), "float32"))
    assert bb.normalize(op.nn.layer_norm(x, gamma, beta, axes=[-2, -1])).struct_info.ndim == 4


def test_where_needs_a_bool_condition_even_when_its_dtype_is_unknown():
    bb = relax.BlockBuilder()
    x, y = _var((2, 3)), _var((2, 3))
    for cond in (_var((2, 3), "float32"), relax.Var("c", R.Tensor((2, 3)))):
        with pytest.raises(DTypeError, match="must be bool"):
            bb.normalize(op.where(cond, x, y))
    ok = bb.normalize(op.where(_var((2, 3), "bool"), x, y))
    assert str(ok.struct_info.dtype) == "float32"


def test_acosh_asinh_atanh_match_numpy():
    bb = relax.BlockBuilder()
    x = _var((5,))
    with bb.function("main", [x]):
        with bb.dataflow():
            big = bb.emit(op.add(op.multiply(x, x), relax.const(1.5, "float32")))
            small = bb.emit(op.multiply(op.tanh(x), relax.const(0.5, "float32")))
            out = bb.emit_output(relax.Tuple([op.asinh(x), op.acosh(big), op.atanh(small)]))
        bb.emit_func_output(out)
    data = np.linspace(-2, 2, 5).astype("float32")
    got = evaluate(bb.get(), data)
    np.testing.assert_allclose(got[0], np.arcsinh(data), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], np.arccosh(data * data + 1.5), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], np.arctanh(np.tanh(data) * 0.5), rtol=1e-5, atol=1e-6)
