"""relax.op.dynamic_strided_slice: bounds and strides read from tensors at run time, checked
against numpy's slicing (whose clamping TVM's op and ONNX Slice share)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.error import DTypeError, ShapeError
from minitvm.relax import op as R

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings
from hypothesis import strategies as st

SHAPE = (4, 5, 3)


def _build(shape=SHAPE, dtype="float32"):
    """One executable: slice, name the result's dims, double it (a TE kernel on those dims)."""
    x = relax.Var("x", relax.TensorStructInfo(shape, dtype))
    bounds = [relax.Var(n, relax.TensorStructInfo((len(shape),), "int64")) for n in "bes"]
    bb = relax.BlockBuilder()
    with bb.function("main", [x, *bounds]):
        with bb.dataflow():
            y = bb.emit(R.dynamic_strided_slice(x, *bounds))
            dims = [tir.Var(f"d{i}", "int64") for i in range(len(shape))]
            named = bb.match_cast(y, relax.TensorStructInfo(dims, dtype))
            out = bb.emit_output(bb.emit(R.add(named, named)))
        bb.emit_func_output(out)
    return relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())


VM = None


def _vm():
    global VM
    if VM is None:
        VM = _build()
    return VM


def _run(x, begin, end, strides):
    args = [tvm.nd.array(np.asarray(v, "int64")) for v in (begin, end, strides)]
    return _vm()["main"](tvm.nd.array(x), *args).numpy()


X = np.arange(60, dtype="float32").reshape(SHAPE)
BIG = np.iinfo(np.int64).max


@pytest.mark.parametrize(
    "begin, end, strides",
    [
        ([0, 0, 0], [4, 5, 3], [1, 1, 1]),
        ([1, -4, 2], [3, -1, 0], [1, 2, -1]),
        ([-1, 4, 0], [-BIG, -BIG, BIG], [-1, -2, 1]),
        ([10, -10, 1], [20, 10, 1], [1, 3, 1]),  # empty and clamped
        ([3, 0, 2], [0, 5, -5], [-2, 4, -1]),
    ],
)
def test_dynamic_strided_slice_matches_numpy(begin, end, strides):
    want = 2 * X[tuple(slice(b, e, s) for b, e, s in zip(begin, end, strides))]
    got = _run(X, begin, end, strides)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


_bound = st.integers(-7, 7) | st.sampled_from([BIG, -BIG])


@settings(max_examples=30, deadline=None)
@given(
    st.lists(_bound, min_size=3, max_size=3),
    st.lists(_bound, min_size=3, max_size=3),
    st.lists(st.integers(-3, 3).filter(bool), min_size=3, max_size=3),
)
def test_dynamic_strided_slice_random_bounds_match_numpy(begin, end, strides):
    want = 2 * X[tuple(slice(b, e, s) for b, e, s in zip(begin, end, strides))]
    np.testing.assert_array_equal(_run(X, begin, end, strides), want)


def test_dynamic_strided_slice_zero_stride_is_refused_at_run_time():
    with pytest.raises(ShapeError, match="strides .* contain 0"):
        _run(X, [0, 0, 0], [1, 1, 1], [1, 0, 1])


def test_dynamic_strided_slice_checks_its_arguments_at_build_time():
    x = relax.Var("x", relax.TensorStructInfo(SHAPE, "float32"))
    short = relax.Var("b", relax.TensorStructInfo((2,), "int64"))
    floats = relax.Var("f", relax.TensorStructInfo((3,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, short, floats]):
        with pytest.raises(ShapeError, match="begin has length 2 but x has rank 3"):
            bb.emit(R.dynamic_strided_slice(x, short, short, short))
        with pytest.raises(DTypeError, match="end has dtype float32"):
            full = relax.const(np.zeros(3, "int64"))
            bb.emit(R.dynamic_strided_slice(x, full, floats, full))
        bb.emit_func_output(x)


def test_dynamic_strided_slice_struct_info_keeps_rank_and_dtype():
    x = relax.Var("x", relax.TensorStructInfo(SHAPE, "int32"))
    b = relax.const(np.zeros(3, "int64"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        y = bb.emit(R.dynamic_strided_slice(x, b, b, b))
        assert y.struct_info.ndim == 3 and y.struct_info.dtype == "int32"
        assert y.struct_info.shape is None
        bb.emit_func_output(x)


def test_dynamic_strided_slice_prints_and_parses_back():
    x = relax.Var("x", relax.TensorStructInfo((4, 5), "float32"))
    b = relax.Var("b", relax.TensorStructInfo((2,), "int64"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, b]):
        bb.emit_func_output(bb.emit(R.dynamic_strided_slice(x, b, b, b)))
    mod = bb.get()
    assert "R.dynamic_strided_slice(x, b, b, b)" in mod.script()
    tvm.ir.assert_structural_equal(tvm.script.from_source(mod.script()), mod)
