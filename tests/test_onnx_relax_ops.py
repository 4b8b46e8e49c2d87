"""The relax ops added for the ONNX importer, compiled and run, against numpy.

relax.op.asin/acos/atan/tan/sinh/cosh/trunc, isnan/isinf/isfinite, bitwise_*, left/right_shift,
reinterpret (elementwise_math.py) and cumprod (cumulative.py).
"""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import DTypeError
from minitvm.relax import op as R


def _run(build, *arrays):
    bb = relax.BlockBuilder()
    params = [
        relax.Var(f"x{i}", relax.TensorStructInfo(a.shape, str(a.dtype)))
        for i, a in enumerate(arrays)
    ]
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(build(*params)))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    return vm["main"](*[tvm.nd.array(a) for a in arrays]).numpy()


RNG = np.random.default_rng(0)
UNIT = RNG.uniform(-0.95, 0.95, (3, 5)).astype("float32")
SPECIAL = np.array([0.0, -1.5, 2.5, np.nan, np.inf, -np.inf], "float32")


@pytest.mark.parametrize(
    "op, ref, x",
    [
        (R.asin, np.arcsin, UNIT),
        (R.acos, np.arccos, UNIT),
        (R.atan, np.arctan, UNIT * 4),
        (R.tan, np.tan, UNIT),
        (R.sinh, np.sinh, UNIT * 3),
        (R.cosh, np.cosh, UNIT * 3),
        (R.trunc, np.trunc, UNIT * 7),
        (R.isnan, np.isnan, SPECIAL),
        (R.isinf, np.isinf, SPECIAL),
        (R.isfinite, np.isfinite, SPECIAL),
    ],
)
def test_unary_math_matches_numpy(op, ref, x):
    got = _run(op, x)
    np.testing.assert_allclose(got, ref(x), rtol=1e-5, atol=1e-6)
    assert got.dtype == ref(x).dtype


INTS = RNG.integers(-100, 100, (4, 6)).astype("int32")
SHIFTS = RNG.integers(0, 8, (4, 6)).astype("int32")
U8 = RNG.integers(0, 255, (4, 6)).astype("uint8")


@pytest.mark.parametrize(
    "op, ref, a, b",
    [
        (R.bitwise_and, np.bitwise_and, INTS, INTS[::-1].copy()),
        (R.bitwise_or, np.bitwise_or, INTS, INTS[::-1].copy()),
        (R.bitwise_xor, np.bitwise_xor, INTS, SHIFTS),
        (R.left_shift, np.left_shift, INTS, SHIFTS),
        (R.right_shift, np.right_shift, INTS, SHIFTS),  # arithmetic on signed
        (R.right_shift, np.right_shift, U8, (SHIFTS % 8).astype("uint8")),  # logical on unsigned
    ],
)
def test_bitwise_ops_match_numpy(op, ref, a, b):
    np.testing.assert_array_equal(_run(op, a, b), ref(a, b))


def test_bitwise_not_and_reinterpret_keep_the_bits():
    np.testing.assert_array_equal(_run(R.bitwise_not, INTS), np.invert(INTS))
    f = RNG.standard_normal(7).astype("float32")
    np.testing.assert_array_equal(_run(lambda x: R.reinterpret(x, "int32"), f), f.view("int32"))
    flags = np.array([True, False, True])
    np.testing.assert_array_equal(_run(lambda x: R.reinterpret(x, "uint8"), flags), [1, 0, 1])


def test_bitwise_ops_refuse_floats_and_reinterpret_refuses_other_widths():
    x = relax.Var("x", relax.TensorStructInfo((3,), "float32"))
    for call, match in [
        (R.bitwise_and(x, x), "bitwise ops take integer tensors"),
        (R.reinterpret(x, "int16"), "differ in width"),
    ]:
        with pytest.raises(DTypeError, match=match):
            call.op.op_def.infer(call)


@pytest.mark.parametrize("axis, exclusive", [(0, False), (1, False), (1, True), (None, False)])
def test_cumprod_matches_numpy(axis, exclusive):
    x = RNG.uniform(0.5, 1.5, (3, 4)).astype("float32")
    want = np.cumprod(x.reshape(-1) if axis is None else x, axis=0 if axis is None else axis)
    if exclusive:
        want = np.concatenate([np.ones_like(want[:, :1]), want[:, :-1]], axis=1)
    got = _run(lambda v: R.cumprod(v, axis, exclusive=exclusive), x)
    np.testing.assert_allclose(got, want, rtol=1e-5)
