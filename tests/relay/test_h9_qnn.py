"""relay.qnn quantize / dequantize / requantize, built by relay.build and checked against
numpy versions of TVM's documented formulas (exact integer results)."""

from fractions import Fraction

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.error import OpNotImplemented
from minitvm.relay.qnn.op._lower import fixed_point_multiplier
from minitvm.relay.testing import run_infer_type


def _run(out, params, *inputs):
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function(params, out)), "llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for p, value in zip(params, inputs):
        m.set_input(p.name_hint, value)
    m.run()
    return m.get_output(0).numpy()


def _round_half(value: Fraction, rounding: str) -> int:
    """value rounded to the nearest integer; a tie goes up (UPWARD) or away from 0 (TONEAREST)."""
    low = value.numerator // value.denominator
    frac = value - low
    if frac != Fraction(1, 2):
        return low + (frac > Fraction(1, 2))
    return low + 1 if rounding == "UPWARD" or value > 0 else low


def test_quantize_rounds_ties_to_even_and_saturates():
    x = np.array([[-1.5, -0.5, 0.5, 1.5, 2.5], [100.0, -100.0, 0.26, 3.74, 0.0]], "float32")
    v = relay.var("x", shape=x.shape)
    out = relay.qnn.quantize(v, relay.const(0.5), relay.const(3), out_dtype="int8")
    got = _run(out, [v], x)
    ref = np.clip(np.round(x / np.float32(0.5)) + 3, -128, 127).astype("int8")  # np.round: even
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, ref)
    assert got[0].tolist() == [0, 2, 4, 6, 8]  # -3, -1, 1, 3, 5 (ties to even) + 3


def test_quantize_and_dequantize_per_channel():
    rng = np.random.default_rng(0)
    x = rng.uniform(-4, 4, size=(3, 5)).astype("float32")
    scale = np.array([0.05, 0.1, 0.03], "float32")
    zero = np.array([10, 0, -7], "int32")
    v = relay.var("x", shape=x.shape)
    q = relay.qnn.quantize(v, relay.const(scale), relay.const(zero), axis=0, out_dtype="uint8")
    got = _run(q, [v], x)
    ref = np.clip(np.round(x / scale[:, None]) + zero[:, None], 0, 255).astype("uint8")
    np.testing.assert_array_equal(got, ref)
    w = relay.var("q", shape=got.shape, dtype="uint8")
    deq = relay.qnn.dequantize(w, relay.const(scale), relay.const(zero), axis=0)
    back = _run(deq, [w], got)
    ref_back = (got.astype("int32") - zero[:, None]).astype("float32") * scale[:, None]
    np.testing.assert_array_equal(back, ref_back)


def test_dequantize_to_float16_clips_to_its_range():
    q = np.array([-128, 0, 127], "int8")
    v = relay.var("q", shape=q.shape, dtype="int8")
    out = _run(
        relay.qnn.dequantize(v, relay.const(1000.0), relay.const(0), out_dtype="float16"), [v], q
    )
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, np.array([-65504, 0, 65504], "float16"))


def test_fixed_point_multiplier_is_a_q31_significand():
    for multiplier in (1 / 16, 0.3, 0.999999999, 3.0, 1e-6):
        m, shift = fixed_point_multiplier(multiplier)
        assert (1 << 30) <= m < (1 << 31)
        assert abs(m * 2.0 ** (shift - 31) - multiplier) <= multiplier * 2.0**-31


@pytest.mark.parametrize("compute_dtype", ["int64", "float32", "float64"])
@pytest.mark.parametrize("rounding", ["UPWARD", "TONEAREST"])
def test_requantize_exact_multiplier_rounds_ties_by_mode(rounding, compute_dtype):
    data = np.arange(-40, 40, dtype="int32")
    v = relay.var("x", shape=data.shape, dtype="int32")
    out = relay.qnn.requantize(v, relay.const(0.25), relay.const(2), relay.const(1.0),
                               relay.const(-3), rounding=rounding, compute_dtype=compute_dtype,
                               out_dtype="int8")  # fmt: skip
    got = _run(out, [v], data)
    if compute_dtype == "int64":  # rounds the product, then adds the output zero point
        ref = [_round_half(Fraction(int(t) - 2, 4), rounding) - 3 for t in data]
    else:  # adds the output zero point, then rounds (a TONEAREST tie moves with it)
        ref = [_round_half(Fraction(int(t) - 2, 4) - 3, rounding) for t in data]
    np.testing.assert_array_equal(got, np.clip(ref, -128, 127))


@pytest.mark.parametrize("rounding", ["UPWARD", "TONEAREST"])
def test_requantize_fixed_point_per_channel_within_half(rounding):
    rng = np.random.default_rng(0)
    data = rng.integers(-30000, 30000, size=(3, 64)).astype("int32")
    in_scale = np.array([0.0123, 0.5, 2.75], "float32")
    v = relay.var("x", shape=data.shape, dtype="int32")
    out = relay.qnn.requantize(v, relay.const(in_scale), relay.const(0), relay.const(0.7),
                               relay.const(0), axis=0, rounding=rounding, out_dtype="int32")  # fmt: skip
    got = _run(out, [v], data)
    for c in range(3):
        m, shift = fixed_point_multiplier(float(in_scale[c]) / float(np.float32(0.7)))
        for t, g in zip(data[c], got[c]):
            # the fixed-point product, rounded exactly: TVM's formula on Python integers
            assert g == _round_half(Fraction(int(t) * m, 2**31) * Fraction(2) ** shift, rounding)


def test_requantize_config_sets_the_defaults():
    data = np.arange(0, -32, -1).astype("int32")
    v = relay.var("x", shape=data.shape, dtype="int32")

    def build():
        out = relay.qnn.requantize(v, relay.const(1.0), relay.const(0), relay.const(16.0),
                                   relay.const(0), out_dtype="int8")  # fmt: skip
        return out.attrs.rounding, _run(out, [v], data)

    rounding, upward = build()
    with relay.qnn.requantize_config(rounding="TONEAREST"):
        rounding2, nearest = build()
    assert (rounding, rounding2) == ("UPWARD", "TONEAREST")
    assert upward[8] == 0 and nearest[8] == -1  # -0.5: a tie, up vs away from zero
    assert relay.qnn.requantize(v, relay.const(1.0), relay.const(0), relay.const(2.0),
                                relay.const(0)).attrs.rounding == "UPWARD"  # fmt: skip


def test_qnn_types_and_checks():
    v = relay.var("x", shape=(2, 3), dtype="int32")
    s, z = relay.var("s", shape=(), dtype="float32"), relay.var("z", shape=(), dtype="int32")
    out = run_infer_type(relay.qnn.requantize(v, s, z, s, z, out_dtype="uint8"))
    assert out.checked_type == relay.TensorType((2, 3), "uint8")
    with pytest.raises(OpNotImplemented, match="rounding 'DOWN'"):
        relay.qnn.requantize(v, s, z, s, z, rounding="DOWN")
    with pytest.raises(OpNotImplemented, match="must be constants"):
        _run(relay.qnn.requantize(v, s, z, s, z), [v, s, z], np.zeros((2, 3), "int32"),
             np.float32(1), np.int32(0))  # fmt: skip


def _requant_ref(t, scale, zero, out_scale, out_zero):
    """TVM's int64 fixed-point requantize (UPWARD) on Python integers, into int32."""
    m, shift = fixed_point_multiplier(float(np.float32(scale)) / float(np.float32(out_scale)))
    return [_round_half(Fraction((int(v) - zero) * m, 2**31) * Fraction(2) ** shift, "UPWARD")
            + out_zero for v in t]  # fmt: skip


def _qparams(*values):
    return [relay.const(np.float32(v)) if isinstance(v, float) else relay.const(np.int32(v))
            for v in values]  # fmt: skip


@pytest.mark.parametrize("op", ["add", "subtract"])
def test_qnn_add_subtract_requantize_inputs_to_the_output(op):
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, size=(2, 8)).astype("uint8")
    b = rng.integers(0, 256, size=(2, 8)).astype("uint8")
    x, y = (
        relay.var("x", shape=a.shape, dtype="uint8"),
        relay.var("y", shape=b.shape, dtype="uint8"),
    )
    params = _qparams(0.0157, 127, 0.0079, 120, 0.0235, 128)
    got = _run(getattr(relay.qnn, op)(x, y, *params), [x, y], a, b)
    ra = np.array(_requant_ref(a.ravel(), 0.0157, 127, 0.0235, 128))
    rb = np.array(_requant_ref(b.ravel(), 0.0079, 120, 0.0235, 128))
    ref = ra + rb - 128 if op == "add" else ra - rb + 128
    np.testing.assert_array_equal(got.ravel(), np.clip(ref, 0, 255))


def test_qnn_mul_rescales_the_product():
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, size=(16,)).astype("int8")
    b = rng.integers(-128, 128, size=(16,)).astype("int8")
    x, y = relay.var("x", shape=a.shape, dtype="int8"), relay.var("y", shape=b.shape, dtype="int8")
    got = _run(relay.qnn.mul(x, y, *_qparams(0.05, 3, 0.1, -2, 0.2, 1)), [x, y], a, b)
    product = (a.astype(int) - 3) * (b.astype(int) + 2)
    scale = float(np.float32(0.05) * np.float32(0.1))
    ref = _requant_ref(product, scale, 0, 0.2, 1)
    np.testing.assert_array_equal(got, np.clip(ref, -128, 127))


def test_qnn_concatenate_requantizes_only_differing_inputs():
    a = np.arange(6, dtype="uint8").reshape(2, 3) * 40
    b = np.arange(6, dtype="uint8").reshape(2, 3) * 7
    x, y = (
        relay.var("x", shape=a.shape, dtype="uint8"),
        relay.var("y", shape=b.shape, dtype="uint8"),
    )
    s = _qparams(0.5, 0.25, 2, 3)
    out = relay.qnn.concatenate((x, y), (s[0], s[1]), (s[2], s[3]), s[0], s[2], axis=1)
    got = _run(out, [x, y], a, b)
    rb = np.array(_requant_ref(b.ravel(), 0.25, 3, 0.5, 2)).reshape(2, 3)
    np.testing.assert_array_equal(got, np.concatenate([a, np.clip(rb, 0, 255)], axis=1))


def test_canonicalize_ops_leaves_core_ops_computing_the_same():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, size=(2, 8)).astype("uint8")
    b = rng.integers(0, 256, size=(2, 8)).astype("uint8")
    x, y = (
        relay.var("x", shape=a.shape, dtype="uint8"),
        relay.var("y", shape=b.shape, dtype="uint8"),
    )
    z = relay.qnn.add(x, y, *_qparams(0.0157, 127, 0.0079, 120, 0.0235, 128))
    z = relay.qnn.requantize(z, *_qparams(0.0235, 128, 0.05, 3), rounding="TONEAREST")
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, y], z)))
    lowered = relay.qnn.transform.CanonicalizeOps()(mod)
    ops = relay.analysis.list_op_freqs(lowered)
    assert not any(name.startswith("qnn.") for name in ops) and ops["right_shift"] == 3
    assert lowered["main"].ret_type == relay.TensorType((2, 8), "int8")
    before = _run(mod["main"].body, list(mod["main"].params), a, b)
    after = _run(lowered["main"].body, list(lowered["main"].params), a, b)
    np.testing.assert_array_equal(after, before)


def test_executor_converts_input_dtypes_only_without_loss():
    x = relay.var("x", shape=(3,), dtype="uint8")
    func = relay.Function([x], relay.add(x, relay.const(np.uint8(1))))
    run = relay.create_executor("graph", target="llvm").evaluate(func)
    np.testing.assert_array_equal(run(np.array([1, 2, 250])).numpy(), [2, 3, 251])
    with pytest.raises(tvm.error.DTypeError, match="has dtype uint8, got int64"):
        run(np.array([1, 2, 300]))
