"""Relax op rules from TVM v0.19's documented behaviour (binary.cc / manipulate.cc / ccl.cc and
their unit tests), checked against numpy and torch where the op computes something."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.error import MiniTVMError, ShapeError, StructInfoKindError
from minitvm.script import relax as R


def _sinfo(call):
    return relax.BlockBuilder().normalize(call).struct_info


def _run(params, build, *inputs):
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        out = bb.emit(build(*params))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    return vm["main"](*[tvm.nd.array(a) for a in inputs])


# --- binary operators: TVM lets an R.Prim operand broadcast like a scalar; arithmetic needs
# equal dtypes (a TypeError otherwise), comparisons give bool for any pair of dtypes.


def test_binary_with_prim_operand_broadcasts_as_scalar():
    x = relax.Var("x", R.Tensor((2, 3), "float32"))
    s = relax.Var("s", R.Prim("float32"))
    out = _sinfo(relax.op.multiply(x, s))
    tvm.ir.assert_structural_equal(out, relax.TensorStructInfo((2, 3), "float32"))
    tvm.ir.assert_structural_equal(_sinfo(relax.op.add(s, s)), relax.PrimStructInfo("float32"))
    tvm.ir.assert_structural_equal(_sinfo(relax.op.less(s, s)), relax.PrimStructInfo("bool"))


def test_binary_with_prim_constant_runs_like_numpy():
    x = relax.Var("x", R.Tensor((2, 3), "float32"))
    c = relax.PrimValue(tir.FloatImm("float32", 2.5))
    xn = np.arange(6, dtype="float32").reshape(2, 3) - 2
    got = _run([x], lambda x: relax.op.subtract(x, c), xn)
    np.testing.assert_allclose(got.numpy(), xn - np.float32(2.5))


def test_binary_arith_dtype_mismatch_and_wrong_kind_are_type_errors():
    x = relax.Var("x", R.Tensor((2, 3), "float32"))
    y = relax.Var("y", R.Tensor((2, 3), "int32"))
    with pytest.raises(TypeError, match="dtypes differ"):
        _sinfo(relax.op.add(x, y))
    shape = relax.Var("s", relax.ShapeStructInfo((2, 3)))
    with pytest.raises(StructInfoKindError, match="argument 'x1' must be a tensor"):
        _sinfo(relax.op.add(shape, x))
    assert issubclass(StructInfoKindError, TypeError) and issubclass(
        StructInfoKindError, ShapeError
    )


@pytest.mark.parametrize("dx,dy", [("float32", "int32"), ("float32", "int64"), ("int32", "int64")])
def test_mixed_dtype_comparison_is_exact(dx, dy):
    # 2**24 + 1 is not a float32: a comparison done in float32 would call these equal
    x = relax.Var("x", R.Tensor((4,), dx))
    y = relax.Var("y", R.Tensor((4,), dy))
    assert _sinfo(relax.op.less(x, y)).dtype == "bool"
    xn = np.array([16777216, 1, -3, 7], dx)
    yn = np.array([16777217, 1, -4, 8], dy)
    for op, ref in ((relax.op.less, np.less), (relax.op.equal, np.equal)):
        got = _run([x, y], op, xn, yn)
        np.testing.assert_array_equal(got.numpy(), ref(xn, yn))


# --- collapse_sum_to / collapse_sum_like (torch's Tensor.sum_to_size is the same operation)


@pytest.mark.parametrize(
    "shape,target", [((2, 3, 4), (3, 1)), ((2, 3, 4), (1, 4)), ((3, 4), (3, 4)), ((5, 1), (1,))]
)
def test_collapse_sum_to_matches_torch_sum_to_size(shape, target):
    torch = pytest.importorskip("torch")
    x = relax.Var("x", R.Tensor(shape, "float32"))
    xn = np.random.default_rng(0).standard_normal(shape).astype("float32")
    got = _run([x], lambda x: relax.op.collapse_sum_to(x, target), xn)
    np.testing.assert_allclose(got.numpy(), torch.tensor(xn).sum_to_size(*target).numpy(), 1e-5)
    like = relax.Var("y", R.Tensor(target, "float32"))
    got = _run([x, like], relax.op.collapse_sum_like, xn, np.zeros(target, "float32"))
    np.testing.assert_allclose(got.numpy(), torch.tensor(xn).sum_to_size(*target).numpy(), 1e-5)


def test_collapse_sum_refuses_dims_that_do_not_collapse():
    x = relax.Var("x", R.Tensor((3, 4, 5), "float32"))
    with pytest.raises(ShapeError, match=r"data dim 1 \(4\) and target dim 1 \(6\) do not match"):
        _sinfo(relax.op.collapse_sum_to(x, (3, 6, 5)))
    a, b = tir.Var("a", "int64"), tir.Var("b", "int64")
    z = relax.Var("z", R.Tensor((3, a, 5), "float32"))
    w = relax.Var("w", R.Tensor((3, b, 5), "float32"))
    with pytest.raises(ShapeError, match="cannot be proven equal"):
        _sinfo(relax.op.collapse_sum_like(z, w))
    with pytest.raises(ShapeError, match="a sum cannot add dims"):
        _sinfo(relax.op.collapse_sum_to(x, (2, 3, 4, 5)))


# --- collectives: shape rules as TVM's; LegalizeOps makes runtime.disco calls that this
# single-process runtime does not have, so running them fails instead of faking a group of one


def test_ccl_shape_rules():
    m = tir.Var("m", "int64")
    x = relax.Var("x", R.Tensor((m, 6), "float16"))
    assert _sinfo(relax.op.ccl.allreduce(x, "max")).dtype == "float16"
    tvm.ir.assert_structural_equal(
        _sinfo(relax.op.ccl.allgather(x, 2)), relax.TensorStructInfo((m * 2, 6), "float16")
    )
    tvm.ir.assert_structural_equal(
        _sinfo(relax.op.ccl.scatter_from_worker0(x, 3, axis=1)),
        relax.TensorStructInfo((m, 2), "float16"),
    )
    with pytest.raises(ShapeError, match=r"dim 1 \(6\) is not divisible by num_workers=4"):
        _sinfo(relax.op.ccl.scatter_from_worker0(x, 4, axis=1))
    with pytest.raises(ShapeError, match="op_type 'mean' is not one of"):
        relax.op.ccl.allreduce(x, "mean")


def test_ccl_legalizes_to_disco_calls_that_this_runtime_refuses():
    x = relax.Var("x", R.Tensor((4,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(relax.op.ccl.allreduce(x, "sum")))
    legal = relax.transform.LegalizeOps()(bb.get())
    call = legal["main"].body.blocks[0].bindings[0].value
    assert call.op.name == "relax.call_dps_packed"
    assert call.args[0].global_symbol == "runtime.disco.allreduce"
    with pytest.raises(MiniTVMError, match="no global function named .runtime.disco.allreduce"):
        vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
        vm["main"](tvm.nd.array(np.ones(4, "float32")))


def test_call_dps_packed_converts_python_numbers_like_tvm():
    x = relax.Var("x", R.Tensor((4,), "float32"))
    call = relax.op.call_dps_packed("f", [x, True, 2.0], R.Tensor((4,), "float32"))
    flag, number = call.args[1].fields[1:]
    assert flag.value.dtype == "int64" and flag.value.value == 1
    assert number.value.dtype == "float64" and number.value.value == 2.0


# --- take: TVM accepts a scalar (R.Prim) index, which drops the axis like numpy's x[i]


def test_take_with_scalar_index_matches_numpy():
    x = relax.Var("x", R.Tensor((4, 3), "float32"))
    idx = relax.Var("i", R.Prim("int64"))
    tvm.ir.assert_structural_equal(
        _sinfo(relax.op.take(x, idx, axis=1)), relax.TensorStructInfo((4,), "float32")
    )
    xn = np.arange(12, dtype="float32").reshape(4, 3)
    two = relax.PrimValue(tir.IntImm("int64", 2))
    got = _run([x], lambda x: relax.op.take(x, two, axis=0), xn)
    np.testing.assert_array_equal(got.numpy(), np.take(xn, 2, axis=0))


def test_take_keeps_the_rank_when_shapes_are_unknown():
    x = relax.Var("x", R.Tensor("float32", ndim=3))
    idx = relax.Var("i", R.Tensor("int64", ndim=2))
    out = _sinfo(relax.op.take(x, idx, axis=1))
    assert out.shape is None and out.ndim == 4
    assert _sinfo(relax.op.take(x, idx)).ndim == 2


# --- concat with axis=None: TVM's rule is that the inputs are 1-d, joined end to end


def test_concat_without_axis_joins_1d_tensors_like_numpy():
    xs = [relax.Var(f"x{k}", R.Tensor((n,), "float32")) for k, n in enumerate((3, 4))]
    tvm.ir.assert_structural_equal(
        _sinfo(relax.op.concat(xs, axis=None)), relax.TensorStructInfo((7,), "float32")
    )
    a, b = np.arange(3, dtype="float32"), np.arange(4, dtype="float32") + 10
    got = _run(xs, lambda x, y: relax.op.concat([x, y], axis=None), a, b)
    np.testing.assert_array_equal(got.numpy(), np.concatenate([a, b], axis=None))
    m = relax.Var("m", R.Tensor((3, 4), "float32"))
    with pytest.raises(ShapeError, match="axis=None joins 1-d tensors, got rank 2"):
        _sinfo(relax.op.concat([m], axis=None))


def test_concat_without_axis_has_the_gradient_of_axis_0():
    xs = [relax.Var(f"x{k}", R.Tensor((n,), "float32")) for k, n in enumerate((3, 4))]
    bb = relax.BlockBuilder()
    with bb.function("main", xs):
        with bb.dataflow():
            cat = bb.emit(relax.op.concat(xs, axis=None))
            w = relax.const(np.arange(7, dtype="float32"))
            out = bb.emit_output(relax.op.sum(relax.op.multiply(cat, w)))
        bb.emit_func_output(out)
    grad_mod = relax.transform.Gradient("main")(bb.get())
    vm = relax.VirtualMachine(relax.build(grad_mod, "llvm"), tvm.cpu())
    a, b = np.ones(3, "float32"), np.ones(4, "float32")
    _, (ga, gb) = vm["main_adjoint"](tvm.nd.array(a), tvm.nd.array(b))
    np.testing.assert_array_equal(ga.numpy(), np.arange(3, dtype="float32"))
    np.testing.assert_array_equal(gb.numpy(), np.arange(3, 7, dtype="float32"))
