"""Relax constants print so that they parse back bit-exactly: small ones as literals, the rest
through the `metadata["relax.expr.Constant"][i]` section, which is decoded without running code."""

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.error import ParseError
from minitvm.ir import assert_structural_equal
from minitvm.relax.expr import Constant
from minitvm.script import from_source


def _module(*arrays):
    """main(x) adds each constant to x in turn (they broadcast against x's (4, 4) shape)."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((4, 4), arrays[0].dtype.name))
    with bb.function("main", [x]):
        with bb.dataflow():
            acc = x
            for a in arrays:
                acc = bb.emit(relax.op.add(acc, relax.const(a)))
            gv = bb.emit_output(acc)
        bb.emit_func_output(gv)
    return bb.get()


def _constants(mod):
    """The constant arguments of main's bindings, in order, as numpy arrays."""
    return [
        arg.data.numpy()
        for block in mod["main"].body.blocks
        for b in block.bindings
        for arg in getattr(b.value, "args", ())
        if isinstance(arg, Constant)
    ]


def _bits_equal(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


RNG = np.random.default_rng(7)


@pytest.mark.parametrize(
    "arrays",
    [
        [RNG.standard_normal((4, 4)).astype("float32")],  # 16 elements: inline
        [
            RNG.standard_normal((4, 4)).astype("float32"),
            np.float32(2.5) * np.ones((1, 4), "float32"),
        ],
        [np.float32(RNG.standard_normal((40, 4, 4)).astype("float32")).sum(0)],
        [np.arange(16, dtype="int64").reshape(4, 4) * (2**40)],
        [RNG.standard_normal((4, 4)).astype("float16")],
    ],
    ids=["inline", "two-inline", "summed", "int64", "float16"],
)
def test_small_constants_print_inline_and_round_trip_bit_exactly(arrays):
    mod = _module(*arrays)
    text = mod.script()
    assert "metadata" not in text and "R.const([" in text
    again = from_source(text)
    assert_structural_equal(mod, again)
    for want, got in zip(arrays, _constants(again)):
        assert _bits_equal(np.asarray(want), got)


def test_large_nan_and_repeated_constants_go_through_metadata_bit_exactly():
    big = np.broadcast_to(RNG.standard_normal((4, 4)).astype("float32"), (5, 4, 4)).copy()
    nan = np.array([[np.nan, -0.0, np.inf, -np.inf]], "float32")
    nan.view("uint32")[0, 0] = 0x7FC00123  # a NaN payload a literal would lose
    mod = _module(big, nan)
    text = mod.script()
    assert 'metadata["relax.expr.Constant"][0]' in text
    assert 'metadata["relax.expr.Constant"][1]' in text
    assert "<array" not in text and 'metadata = """' in text
    again = from_source(text)
    assert_structural_equal(mod, again)
    got = _constants(again)
    assert _bits_equal(big, got[0]) and _bits_equal(nan, got[1])
    assert from_source(again.script()).script() == text  # printing is stable


def test_show_meta_inlines_large_constants_and_still_round_trips():
    big = RNG.standard_normal((5, 4, 4)).astype("float32")
    mod = _module(big)
    text = mod.script(show_meta=True)
    assert "metadata" not in text
    assert _bits_equal(big, _constants(from_source(text))[0])


@pytest.mark.parametrize(
    "section,match",
    [
        ('"not json', "not JSON with a 'relax.expr.Constant' list"),
        (
            '{"relax.expr.Constant": [{"dtype": "float32", "shape": [2], "data": "AAAA"}]}',
            r"3 bytes of data do not fill shape \(2,\) of float32 \(8 bytes\)",
        ),
        (
            '{"relax.expr.Constant": [{"dtype": "object", "shape": [1], "data": "AAAA"}]}',
            "has dtype 'object'",
        ),
        (
            '{"relax.expr.Constant": [{"dtype": "float32", "shape": [1], "data": "!!"}]}',
            "needs dtype, shape and base64 data",
        ),
    ],
)
def test_a_damaged_metadata_section_is_a_clear_parse_error(section, match):
    text = _module(RNG.standard_normal((5, 4, 4)).astype("float32")).script()
    head = text[: text.index('metadata = """')]
    with pytest.raises(ParseError, match=match):
        from_source(head + "metadata = '''" + section + "'''\n")


def test_metadata_that_is_not_a_string_literal_is_refused_not_evaluated():
    text = _module(RNG.standard_normal((5, 4, 4)).astype("float32")).script()
    head = text[: text.index('metadata = """')]
    with pytest.raises(ParseError, match="must be a string literal holding JSON"):
        from_source(head + "metadata = __import__('os').getcwd()\n")


def test_a_lone_function_carries_its_metadata_and_computes_the_same():
    from minitvm.relax.eval_ref import evaluate

    x = relax.Var("x", relax.TensorStructInfo((100,), "float32"))
    bb = relax.BlockBuilder()
    w = RNG.standard_normal(100).astype("float32")
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(relax.op.multiply(x, relax.const(w))))
    func = bb.get()["main"]
    text = func.script()
    assert 'metadata["relax.expr.Constant"][0]' in text
    again = from_source(text)
    assert_structural_equal(func, again)
    xs = RNG.standard_normal(100).astype("float32")
    mod = minitvm.ir.IRModule({"main": again})
    np.testing.assert_array_equal(evaluate(mod, xs), xs * w)


def test_a_printed_module_pasted_into_a_file_reads_its_metadata(tmp_path, monkeypatch):
    import importlib

    big = RNG.standard_normal((5, 4, 4)).astype("float32")
    mod = _module(big)
    body, section = mod.script().split("\nmetadata = ")
    (tmp_path / "pasted_module.py").write_text(
        "from minitvm.script import ir as I, relax as R\n\nmetadata = " + section + "\n" + body
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    pasted = importlib.import_module("pasted_module")
    assert_structural_equal(mod, pasted.Module)
    assert _bits_equal(big, _constants(pasted.Module)[0])
