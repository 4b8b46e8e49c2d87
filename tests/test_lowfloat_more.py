"""float4_e2m1fn, float8_e8m0fnu and int2/uint2: storage, compiled casts, reinterpret, and
ONNX's Cast (with e8m0's `round_mode`), QuantizeLinear and DequantizeLinear.

Oracles: ml_dtypes' conversions (exhaustive over every bit pattern of the narrow type, and
over every tie and every float32 exponent on the way in) and ONNX's reference evaluator.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, te
from minitvm.error import DTypeError, MiniTVMError
from minitvm.ir.dtype import DataType

ml_dtypes = pytest.importorskip("ml_dtypes", reason="these numpy arrays need ml_dtypes")
NARROW = {"float4_e2m1fn": 16, "float8_e8m0fnu": 256, "int2": 4, "uint2": 4}


def _np(name: str) -> np.dtype:
    return np.dtype(getattr(ml_dtypes, name, None) or name)


def _assert_same_bits(got: np.ndarray, ref: np.ndarray) -> None:
    """Bit equality, except that any NaN matches any NaN."""
    assert got.dtype == ref.dtype
    bits = f"uint{8 * ref.dtype.itemsize}"
    bad = got.view(bits) != ref.view(bits)
    if "float" in ref.dtype.name:
        bad &= ~(np.isnan(got.astype(np.float32)) & np.isnan(ref.astype(np.float32)))
    assert not bad.any(), f"{got[bad][:8]} != {ref[bad][:8]} (bits {got.view(bits)[bad][:8]})"


def _run_cast(x: np.ndarray, dst: str, lanes: int = 1) -> np.ndarray:
    n = len(x)
    a = te.placeholder((n,), str(DataType(x.dtype)), name="A")
    b = te.compute((n,), lambda i: a[i].astype(dst), name="B")
    s = te.create_schedule(b.op)
    if lanes > 1:
        _, inner = s[b].split(b.op.axis[0], factor=lanes)
        s[b].vectorize(inner)
    out = tvm.nd.empty((n,), dst)
    tvm.build(s, [a, b], "llvm")(tvm.nd.array(x), out)
    return out.numpy()


def _all_patterns(name: str) -> np.ndarray:
    return np.arange(NARROW[name], dtype=np.uint8).view(_np(name))


def _float32_probes(name: str) -> np.ndarray:
    """Every value of the type, the midpoints between neighbours (exact ties) and the float32
    values just beside them; every float32 exponent with mantissas at e8m0's and float4's
    rounding edges, both signs; and the specials."""
    values = np.unique(_all_patterns(name).astype(np.float64))
    values = values[np.isfinite(values)]
    mids = ((values[1:] + values[:-1]) / 2).astype(np.float32)
    beside = [np.nextafter(mids, np.float32(np.inf)), np.nextafter(mids, np.float32(-np.inf))]
    exps = np.arange(256, dtype=np.uint32) << 23
    edges = [0, 1, 0x1FFFFF, 0x200000, 0x200001, 0x3FFFFF, 0x400000, 0x400001, 0x5FFFFF]
    edges += [0x600000, 0x600001, 0x7FFFFF]
    sweep = np.concatenate([exps + e for e in edges])
    sweep = np.concatenate([sweep, sweep | 0x80000000]).view(np.float32)
    extra = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e6, -1e6], np.float32)
    return np.concatenate([values.astype(np.float32), mids, *beside, sweep, extra])


def test_new_dtypes_parse_with_ml_dtypes_names():
    for name, bits, is_float in [
        ("float4_e2m1fn", 4, True),
        ("float8_e8m0fnu", 8, True),
        ("int2", 2, False),
        ("uint2", 2, False),
    ]:
        d = DataType(name)
        assert (str(d), d.bits, d.bytes, d.is_float) == (name, bits, 1, is_float)
        assert d.numpy_dtype() == _np(name)
        assert DataType(_np(name)) == d
        assert str(d.with_lanes(8)) == f"{name}x8"
    assert DataType("float8_e8m0fnu").is_float8 and DataType("float4_e2m1fn").is_float4
    with pytest.raises(DTypeError, match="always 4 bits"):
        DataType("float4_e2m1fn4")
    with pytest.raises(DTypeError, match="int with 3 bits"):
        DataType("int3")


@pytest.mark.parametrize("name", ["float4_e2m1fn", "float8_e8m0fnu"])
@pytest.mark.parametrize("dst", ["float32", "float16", "float64", "bfloat16"])
def test_every_pattern_decodes_exactly(name, dst):
    x = _all_patterns(name)
    with np.errstate(over="ignore"):
        ref = x.astype(_np(dst))
    _assert_same_bits(_run_cast(x, dst, lanes=8), ref)


@pytest.mark.parametrize("name", ["float4_e2m1fn", "float8_e8m0fnu"])
@pytest.mark.parametrize("lanes", [1, 16])
def test_float32_encodes_as_ml_dtypes_does(name, lanes):
    """float4 rounds to nearest even and saturates (NaN gives the zero of the other sign);
    e8m0 rounds a mantissa of one half up and gives NaN for zero, negatives and overflow."""
    x = _float32_probes(name)
    with np.errstate(over="ignore", invalid="ignore"):
        ref = x.astype(_np(name))
    _assert_same_bits(_run_cast(x, name, lanes=lanes), ref)


@pytest.mark.parametrize("name", ["float4_e2m1fn", "float8_e8m0fnu"])
@pytest.mark.parametrize("src", ["float16", "float64", "bfloat16", "int32"])
def test_other_types_encode_with_one_rounding(name, src):
    if src == "int32":
        x = np.concatenate([np.arange(-300, 300, 1), [2**31 - 1, -(2**31), 2**24 + 1]])
        x = x.astype(np.int32)
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            x = _float32_probes(name).astype(np.float64)
            x = np.concatenate([x, x * (1 + 2.0**-30), x * (1 - 2.0**-30)])  # past a tie
            x = x.astype(_np(src))
    with np.errstate(over="ignore", invalid="ignore"):
        ref = x.astype(_np(name))
    _assert_same_bits(_run_cast(x, name), ref)


@pytest.mark.parametrize("name", ["int2", "uint2"])
def test_int2_casts_follow_ml_dtypes(name):
    x = np.concatenate([np.arange(-6, 6, 0.25), [np.nan, np.inf, 1.99, -2.99, 3.99, -0.99]])
    x = x.astype(np.float32)
    with np.errstate(invalid="ignore"):
        ref = x.astype(_np(name))  # toward zero, and 0 out of range
    _assert_same_bits(_run_cast(x, name), ref)
    _assert_same_bits(_run_cast(x, name, lanes=8), ref)
    wide = np.arange(-9, 9, dtype=np.int32)  # integers wrap to their low two bits
    _assert_same_bits(_run_cast(wide, name), wide.astype(_np(name)))
    q = _all_patterns(name)
    values = q.astype(np.int32)
    np.testing.assert_array_equal(_run_cast(q, "float32"), values.astype(np.float32))
    np.testing.assert_array_equal(_run_cast(q, "int8"), values.astype(np.int8))
    assert tvm.nd.array(q).numpy().view(np.uint8).tolist() == q.view(np.uint8).tolist()


def test_reinterpret_reads_and_writes_low_float_bits():
    """reinterpret moves bits in and out of the float32 the legalizer computes in."""
    for name, bits in [("float8_e8m0fnu", "uint8"), ("float4_e2m1fn", "uint4")]:
        bb = relax.BlockBuilder()
        x = relax.Var("x", relax.TensorStructInfo((NARROW[name],), bits))
        with bb.function("main", [x]):
            with bb.dataflow():
                y = bb.emit_output(relax.op.reinterpret(x, name))
                doubled = relax.op.astype(relax.op.multiply(y, y), name)
                z = bb.emit_output(relax.op.reinterpret(doubled, bits))
            bb.emit_func_output(relax.Tuple([y, z]))
        vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
        xa = np.arange(NARROW[name], dtype=np.uint8).astype(_np(bits))
        y, z = vm["main"](tvm.nd.array(xa))
        _assert_same_bits(y.numpy(), xa.view(_np(name)))
        xf = xa.view(_np(name)).astype(np.float32)
        with np.errstate(over="ignore", invalid="ignore"):
            want = (xf * xf).astype(_np(name)).view(_np(bits))
        _assert_same_bits(z.numpy(), want)


# --------------------------------------------------------------------------- ONNX


def _onnx_run(model, feeds: dict) -> tuple[list, list]:
    from onnx.reference import ReferenceEvaluator

    from minitvm.relax.frontend.onnx import from_onnx

    ref = ReferenceEvaluator(model).run(None, feeds)
    vm = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())
    out = vm["main"](*[tvm.nd.array(v) for v in feeds.values()])
    outs = out if isinstance(out, list | tuple) else [out]
    return [o.numpy() for o in outs], [np.asarray(r) for r in ref]


def _cast_model(src: int, dst: int, n: int, **attrs):
    from onnx import helper

    node = helper.make_node("Cast", ["x"], ["y"], to=dst, **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", src, [n])],
        [helper.make_tensor_value_info("y", dst, [n])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)])


@pytest.mark.parametrize("saturate", [1, 0])
@pytest.mark.parametrize("round_mode", ["up", "down", "nearest"])
@pytest.mark.parametrize("src", ["FLOAT", "FLOAT16"])
def test_onnx_cast_to_e8m0_follows_round_mode(saturate, round_mode, src):
    """ONNX's e8m0 rule is not ml_dtypes': sign ignored, 0 → 2^-127, rounding per round_mode."""
    pytest.importorskip("onnx")
    from onnx import TensorProto

    x = _float32_probes("float8_e8m0fnu")
    with np.errstate(over="ignore", invalid="ignore"):
        x = np.concatenate([x, x * np.float32(1.5), np.float32(2.0**127) * np.float32([1.4, 1.6])])
        x = x.astype(np.float16 if src == "FLOAT16" else np.float32)
    elem = getattr(TensorProto, src)
    model = _cast_model(elem, TensorProto.FLOAT8E8M0, len(x), saturate=saturate)
    model.graph.node[0].attribute.append(_attr("round_mode", round_mode))
    (got,), (ref,) = _onnx_run(model, {"x": x})
    _assert_same_bits(got, ref.astype(got.dtype))


def _attr(name: str, value):
    from onnx import helper

    return helper.make_attribute(name, value)


@pytest.mark.parametrize("dst", ["FLOAT4E2M1", "INT2", "UINT2"])
@pytest.mark.parametrize("saturate", [1, 0])
def test_onnx_cast_to_narrow_types_matches_reference(dst, saturate):
    pytest.importorskip("onnx")
    from onnx import TensorProto

    x = _float32_probes("float4_e2m1fn")
    elem = getattr(TensorProto, dst)
    model = _cast_model(TensorProto.FLOAT, elem, len(x), saturate=saturate)
    with np.errstate(over="ignore", invalid="ignore"):
        (got,), (ref,) = _onnx_run(model, {"x": x})
    _assert_same_bits(got, ref.astype(got.dtype))


@pytest.mark.parametrize("src", ["FLOAT4E2M1", "FLOAT8E8M0", "INT2", "UINT2"])
@pytest.mark.parametrize("dst", ["FLOAT", "FLOAT16", "INT8"])
def test_onnx_cast_from_narrow_types_matches_reference(src, dst):
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    name = {"FLOAT4E2M1": "float4_e2m1fn", "FLOAT8E8M0": "float8_e8m0fnu"}.get(src, src.lower())
    x = _all_patterns(name)
    if dst == "INT8" and "FLOAT" in src:
        x = x[np.isfinite(x.astype(np.float32)) & (np.abs(x.astype(np.float32)) < 100)]
    elem = getattr(TensorProto, src)
    model = _cast_model(elem, getattr(TensorProto, dst), len(x))
    assert helper.tensor_dtype_to_np_dtype(elem) == x.dtype
    with np.errstate(over="ignore"):
        (got,), (ref,) = _onnx_run(model, {"x": x})
    _assert_same_bits(got, ref.astype(got.dtype))


@pytest.mark.parametrize("to", ["INT2", "UINT2", "FLOAT4E2M1"])
def test_onnx_quantize_then_dequantize_matches_reference(to):
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    elem = getattr(TensorProto, to)
    name = {"FLOAT4E2M1": "float4_e2m1fn"}.get(to, to.lower())
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "scale", "zero"], ["q"], axis=0),
        helper.make_node("DequantizeLinear", ["q", "scale", "zero"], ["y"], axis=0),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 9]),
            helper.make_tensor_value_info("scale", TensorProto.FLOAT, [3]),
            helper.make_tensor_value_info("zero", elem, [3]),
        ],
        [
            helper.make_tensor_value_info("q", elem, [3, 9]),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 9]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)])
    x = (np.random.default_rng(3).standard_normal((3, 9)) * 6).astype(np.float32)
    x[0, :4] = [2.5 * 2, -100.0, 100.0, np.float32(0.75 * 2)]  # ties and both saturations
    zero = np.array([0, 1, -1] if to == "INT2" else [0, 1, 2], np.float32).astype(_np(name))
    feeds = {"x": x, "scale": np.array([2.0, 3.0, 0.5], np.float32), "zero": zero}
    (q, y), (q_ref, y_ref) = _onnx_run(model, feeds)
    _assert_same_bits(q, q_ref.astype(q.dtype))
    if to == "FLOAT4E2M1":
        # ONNX's reference evaluator drops a float4 zero point when dequantizing; the spec
        # keeps y = (x - x_zero_point) * x_scale for every type, and so do we
        scale = feeds["scale"][:, None]
        y_ref = (q_ref.astype(np.float32) - zero.astype(np.float32)[:, None]) * scale
    np.testing.assert_array_equal(y, y_ref)


def test_onnx_cast_of_a_constant_to_int2_folds_like_the_reference():
    """A Cast of a value known at import is folded there, with int2's own rule (0 when out
    of range), as the run-time Cast computes it."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    from minitvm.relax.frontend.onnx import from_onnx

    value = helper.make_tensor("v", TensorProto.FLOAT, [4], [1.5, -2.0, 3.0, 7.0])
    nodes = [
        helper.make_node("Constant", [], ["c"], value=value),
        helper.make_node("Cast", ["c"], ["i2"], to=TensorProto.INT2),
        helper.make_node("Cast", ["i2"], ["y0"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["y0", "x"], ["y"]),
    ]
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in ("x", "y")]
    model = helper.make_model(
        helper.make_graph(nodes, "g", io[:1], io[1:]), opset_imports=[helper.make_opsetid("", 25)]
    )
    x = np.zeros(4, "float32")
    with np.errstate(invalid="ignore"):  # 7.0 is out of int2's range: ml_dtypes gives 0
        want = ReferenceEvaluator(model).run(None, {"x": x})[0]
        mod = from_onnx(model)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    np.testing.assert_array_equal(vm["main"](tvm.nd.array(x)).numpy(), want)


def test_onnx_cast_to_e8m0_refuses_an_unknown_round_mode():
    pytest.importorskip("onnx")
    from onnx import TensorProto

    from minitvm.relax.frontend.onnx import from_onnx

    model = _cast_model(TensorProto.FLOAT, TensorProto.FLOAT8E8M0, 4)
    model.graph.node[0].attribute.append(_attr("round_mode", "sideways"))
    with pytest.raises(MiniTVMError, match="round_mode='sideways' is not supported"):
        from_onnx(model)


@pytest.mark.parametrize("name", ["int2", "uint2", "float4_e2m1fn", "float8_e8m0fnu"])
def test_onnx_packed_initializers_read_back(name):
    """ONNX packs 2- and 4-bit initializers several to a byte; they import value for value."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    from minitvm.relax.frontend.onnx import from_onnx

    w = np.resize(_all_patterns(name), 7)
    init = numpy_helper.from_array(w, "w")
    if name != "float8_e8m0fnu":
        assert len(init.raw_data) < len(w)  # several values a byte
    nodes = [
        helper.make_node("Cast", ["w"], ["wf"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["wf", "x"], ["y"]),
    ]
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [7]) for n in ("x", "y")]
    graph = helper.make_graph(nodes, "g", io[:1], io[1:], initializer=[init])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)])
    vm = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())
    got = vm["main"](tvm.nd.array(np.zeros(7, np.float32))).numpy()
    np.testing.assert_array_equal(got, w.astype(np.float32))
