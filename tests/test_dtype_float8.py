"""float8 (e4m3fn, e5m2 and their fnuz kinds) and int4/uint4: storage, compiled casts, and
ONNX's Cast `saturate`, QuantizeLinear and DequantizeLinear.

Oracles: ml_dtypes' conversions (exhaustive over the 256 float8 patterns, and over every tie
between two float8 values), ONNX's reference evaluator, and torch's float8 types.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, te
from minitvm.error import DTypeError
from minitvm.ir.dtype import DataType

ml_dtypes = pytest.importorskip("ml_dtypes", reason="float8 numpy arrays need ml_dtypes")
FLOAT8 = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"]


def _np(name: str) -> np.dtype:
    return np.dtype(getattr(ml_dtypes, name, None) or name)


def _assert_same_bits(got: np.ndarray, ref: np.ndarray) -> None:
    """Bit equality, except that any NaN matches any NaN."""
    assert got.dtype == ref.dtype
    bits = f"uint{8 * ref.dtype.itemsize}"
    nan = np.isnan(got.astype(np.float32)) & np.isnan(ref.astype(np.float32))
    bad = (got.view(bits) != ref.view(bits)) & ~nan
    assert not bad.any(), f"{got[bad]} != {ref[bad]} (bits {got.view(bits)[bad]})"


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
    return np.arange(256, dtype=np.uint8).view(_np(name))


def _ties_and_neighbours(name: str) -> np.ndarray:
    """Every finite float8 value, the midpoints between neighbours (exact ties) and values
    just beside them, plus overflow, underflow and the specials, as float32."""
    values = np.unique(_all_patterns(name).astype(np.float64))
    values = values[np.isfinite(values)]
    mids = (values[1:] + values[:-1]) / 2
    beside = np.concatenate(
        [
            np.nextafter(mids.astype(np.float32), np.float32(np.inf)),
            np.nextafter(mids.astype(np.float32), np.float32(-np.inf)),
        ]
    )
    big = float(ml_dtypes.finfo(_np(name)).max)
    extra = [np.nan, np.inf, -np.inf, -0.0, big * 1.03, big * 1.07, -big * 1.2, 1e6, 1e-9]
    return np.concatenate([values, mids, beside, extra]).astype(np.float32)


def test_float8_and_int4_dtypes_parse():
    for name in FLOAT8:
        d = DataType(name)
        assert (str(d), d.bits, d.bytes, d.is_float8, d.is_float) == (name, 8, 1, True, True)
        assert d.numpy_dtype() == _np(name)
        assert str(d.with_lanes(4)) == f"{name}x4"
    for name in ("int4", "uint4"):
        d = DataType(name)
        assert (str(d), d.bits, d.bytes, d.is_integer) == (name, 4, 1, True)
        assert d.numpy_dtype() == _np(name)
    with pytest.raises(DTypeError, match="always 8 bits"):
        DataType("float8_e4m3fn8")
    with pytest.raises(DTypeError, match="unknown dtype 'float8_e3m4'"):
        DataType("float8_e3m4")


@pytest.mark.parametrize("name", FLOAT8)
@pytest.mark.parametrize("dst", ["float32", "float16"])
def test_every_float8_pattern_decodes_exactly(name, dst):
    x = _all_patterns(name)
    got = _run_cast(x, dst, lanes=8)
    _assert_same_bits(got, x.astype(np.float32).astype(dst))


@pytest.mark.parametrize("name", FLOAT8)
def test_float32_to_float8_rounds_to_nearest_even_without_saturating(name):
    x = _ties_and_neighbours(name)
    with np.errstate(over="ignore", invalid="ignore"):
        ref = x.astype(_np(name))
    _assert_same_bits(_run_cast(x, name), ref)
    _assert_same_bits(_run_cast(x, name, lanes=16), ref)


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2fnuz"])
@pytest.mark.parametrize("src", ["float16", "float64", "bfloat16", "int32"])
def test_other_types_to_float8_round_once(name, src):
    if src == "int32":
        x = np.arange(-300, 300, 7, dtype=np.int32)
    else:
        x = _ties_and_neighbours(name).astype(np.float64)
        x = np.concatenate([x, x * (1 + 2.0**-30)])  # just past a tie: float64 keeps it
        with np.errstate(over="ignore", invalid="ignore"):
            x = x.astype(_np(src))
    with np.errstate(over="ignore", invalid="ignore"):
        ref = x.astype(_np(name))
    _assert_same_bits(_run_cast(x, name), ref)


def test_float8_in_range_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal(101).astype(np.float32) * 50
    for name, tdtype in [
        ("float8_e4m3fn", torch.float8_e4m3fn),
        ("float8_e5m2", torch.float8_e5m2),
    ]:
        ref = torch.from_numpy(x).to(tdtype).view(torch.uint8).numpy()
        np.testing.assert_array_equal(_run_cast(x, name).view(np.uint8), ref)


@pytest.mark.parametrize("name", ["int4", "uint4"])
def test_int4_casts_follow_ml_dtypes(name):
    x = np.concatenate([np.arange(-20, 20, 0.5), [np.nan, 7.99, -8.99, 15.5]]).astype(np.float32)
    with np.errstate(invalid="ignore"):
        ref = x.astype(_np(name))
    _assert_same_bits(_run_cast(x, name), ref)
    values = np.arange(-8, 8) if name == "int4" else np.arange(16)
    q = values.astype(_np(name))
    np.testing.assert_array_equal(_run_cast(q, "float32"), values.astype(np.float32))
    np.testing.assert_array_equal(_run_cast(q, "int32"), values)
    assert tvm.nd.array(q).numpy().view(np.uint8).tolist() == q.view(np.uint8).tolist()


def test_float8_relax_graph_computes_in_float32():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((3, 11), "float8_e4m3fn"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.multiply(x, x))
            out = bb.emit_output(relax.op.astype(y, "float32"))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    xa = np.random.default_rng(1).standard_normal((3, 11)).astype(_np("float8_e4m3fn"))
    got = vm["main"](tvm.nd.array(xa)).numpy()
    x32 = xa.astype(np.float32)
    ref = (x32 * x32).astype(_np("float8_e4m3fn")).astype(np.float32)
    np.testing.assert_array_equal(got, ref)


# --------------------------------------------------------------------------- ONNX


def _onnx_run(model, feeds: dict) -> tuple[list, list]:
    from onnx.reference import ReferenceEvaluator

    from minitvm.relax.frontend.onnx import from_onnx

    ref = ReferenceEvaluator(model).run(None, feeds)
    vm = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())
    out = vm["main"](*[tvm.nd.array(v) for v in feeds.values()])
    outs = out if isinstance(out, list | tuple) else [out]
    return [o.numpy() for o in outs], [np.asarray(r) for r in ref]


def _model(nodes, inputs, outputs, opset=23):
    from onnx import helper

    graph = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("saturate", [1, 0])
@pytest.mark.parametrize("to", ["FLOAT8E4M3FN", "FLOAT8E5M2", "FLOAT8E4M3FNUZ", "FLOAT8E5M2FNUZ"])
def test_onnx_cast_saturate_matches_reference(saturate, to):
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    elem = getattr(TensorProto, to)
    x = np.concatenate(
        [_ties_and_neighbours("float8_e4m3fn"), [1e5, -7e4, 60000.0, 250.0, 470.0]]
    ).astype(np.float32)
    node = helper.make_node("Cast", ["x"], ["y"], to=elem, saturate=saturate)
    model = _model(
        [node],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [len(x)])],
        [helper.make_tensor_value_info("y", elem, [len(x)])],
    )
    (got,), (ref,) = _onnx_run(model, {"x": x})
    _assert_same_bits(got, ref.astype(got.dtype))


@pytest.mark.parametrize("to", ["INT4", "UINT4", "FLOAT8E4M3FN"])
def test_onnx_quantize_then_dequantize_matches_reference(to):
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    elem = getattr(TensorProto, to)
    zero_np = np.zeros((), _np(_our_name(to)))
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "scale", "zero"], ["q"]),
        helper.make_node("DequantizeLinear", ["q", "scale", "zero"], ["y"]),
    ]
    model = _model(
        nodes,
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 7]),
            helper.make_tensor_value_info("scale", TensorProto.FLOAT, []),
            helper.make_tensor_value_info("zero", elem, []),
        ],
        [
            helper.make_tensor_value_info("q", elem, [3, 7]),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 7]),
        ],
        opset=21,
    )
    x = (np.random.default_rng(2).standard_normal((3, 7)) * 40).astype(np.float32)
    x[0, :3] = [np.float32(2.5 * 3), -1000.0, 1000.0]  # a tie and both saturations
    feeds = {"x": x, "scale": np.array(3.0, np.float32), "zero": zero_np}
    (q, y), (q_ref, y_ref) = _onnx_run(model, feeds)
    _assert_same_bits(q, q_ref.astype(q.dtype))
    np.testing.assert_array_equal(y, y_ref)


def _our_name(onnx_name: str) -> str:
    """The minitvm dtype of an ONNX element type name."""
    return {"INT4": "int4", "UINT4": "uint4", "FLOAT8E4M3FN": "float8_e4m3fn"}[onnx_name]


@pytest.mark.parametrize("saturate", [1, 0])
def test_onnx_cast_of_a_constant_folds_with_the_saturate_rule(saturate):
    """A Cast whose input is known at import is folded there: the fold must clip to the
    float8 maximum like the run-time Cast (numpy's astype would give NaN)."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    from minitvm.relax.frontend.onnx import from_onnx

    value = helper.make_tensor("v", TensorProto.FLOAT, [4], [1000.0, -1e6, 3.0, 0.3])
    nodes = [
        helper.make_node("Constant", [], ["c"], value=value),
        helper.make_node("Cast", ["c"], ["f8"], to=TensorProto.FLOAT8E4M3FN, saturate=saturate),
        helper.make_node("Cast", ["f8"], ["y0"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["y0", "x"], ["y"]),
    ]
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in ("x", "y")]
    model = helper.make_model(
        helper.make_graph(nodes, "g", io[:1], io[1:]), opset_imports=[helper.make_opsetid("", 21)]
    )
    x = np.zeros(4, "float32")
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    vm = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())
    got = vm["main"](tvm.nd.array(x)).numpy()
    np.testing.assert_array_equal(got, want)
