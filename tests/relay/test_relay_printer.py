"""Relay's text form: def @main(...) { %0 = ...; }, meta constants, attrs, types once inferred."""

from __future__ import annotations

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.relay.printer import astext, print_type


def _conv_add():
    x = relay.var("x", relay.TensorType((1, 4, 6, 6), "float32"))
    w = relay.var("weight", shape=(4, 4, 3, 3))
    c = relay.const(np.ones((1, 4, 4, 4), "float32"))
    y = relay.add(relay.nn.conv2d(x, w), relay.multiply(c, relay.const(2, "float32")))
    return relay.Function([x, w], relay.add(y, c))


def test_module_prints_as_relay_text_with_numbered_temporaries_and_meta_constants():
    mod = tvm.IRModule.from_expr(_conv_add())
    assert str(mod) == "\n".join(
        [
            "def @main(%x: Tensor[(1, 4, 6, 6), float32], %weight: Tensor[(4, 4, 3, 3), float32]) {",
            "  %0 = nn.conv2d(%x, %weight, padding=[0, 0, 0, 0]);",
            "  %1 = multiply(meta[relay.Constant][0], 2f);",
            "  %2 = add(%0, %1);",
            "  add(%2, meta[relay.Constant][0])",
            "}",
        ]
    )
    assert astext(mod) == str(mod)


def test_inferred_module_shows_return_type_and_checked_types():
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(_conv_add()))
    text = str(mod)
    assert text.splitlines()[0].endswith(") -> Tensor[(1, 4, 4, 4), float32] {")
    ty = "/* ty=Tensor[(1, 4, 4, 4), float32] */"
    assert f"  %0 = nn.conv2d(%x, %weight, padding=[0, 0, 0, 0]) {ty};" in text
    assert f"multiply(meta[relay.Constant][0] {ty}, 2f /* ty=float32 */) {ty};" in text
    assert text.splitlines()[-2].endswith(f") {ty}")


def test_non_default_attributes_tuples_and_projections():
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(8, 3, 3, 3))
    conv = relay.nn.conv2d(x, w, strides=(2, 2), padding=(1, 1), channels=8, kernel_size=(3, 3))
    g, b, m, v = (relay.var(n, shape=(8,)) for n in "gbmv")
    bn = relay.nn.batch_norm(conv, g, b, m, v, epsilon=2e-5)
    pool = relay.nn.max_pool2d(bn[0], pool_size=(2, 2), strides=(2, 2))
    tup = relay.Tuple([pool, bn[1]])
    text = astext(relay.Function([x, w, g, b, m, v], tup))
    assert (
        "nn.conv2d(%x, %w, strides=[2, 2], padding=[1, 1, 1, 1], channels=8, kernel_size=[3, 3])"
        in text
    )
    assert "nn.batch_norm(%0, %g, %b, %m, %v, epsilon=2e-05f)" in text
    assert "%2 = %1.0;" in text and "%4 = %1.1;" in text
    assert "nn.max_pool2d(%2, pool_size=[2, 2], strides=[2, 2], padding=[0, 0, 0, 0])" in text
    assert text.splitlines()[-2] == "  (%3, %4)"


def test_fused_function_prints_with_primitive_attr_next_to_its_call():
    x = relay.var("x", shape=(2, 2))
    p = relay.var("p0", shape=(2, 2))
    inner = relay.Function([p], relay.exp(p)).with_attr("Primitive", 1)
    text = astext(relay.Function([x], relay.Call(inner, [x])))
    assert text.splitlines()[1:5] == [
        "  %0 = fn (%p0: Tensor[(2, 2), float32], Primitive=1) {",
        "    exp(%p0)",
        "  };",
        "  %0(%x)",
    ]


def test_distinct_variables_with_one_name_print_apart():
    a, b = relay.var("x", shape=(1,)), relay.var("x", shape=(1,))
    text = astext(relay.Function([a, b], relay.add(a, b)))
    assert "fn (%x: Tensor[(1,), float32], %x1: Tensor[(1,), float32])" in text
    assert "add(%x, %x1)" in text


def test_let_and_if_print_as_blocks_and_scalars_by_dtype():
    x = relay.var("x", shape=())
    v = relay.var("v")
    cond = relay.var("c", "bool")
    body = relay.If(cond, relay.add(v, relay.const(1.5)), v)
    text = astext(relay.Let(v, relay.multiply(x, relay.const(3, "int32")), body))
    lines = text.splitlines()
    assert lines[0] == "let %v = multiply(%x, 3);"  # the bound call itself, no temporary
    assert lines[1:] == ["if (%c) {", "  add(%v, 1.5f)", "} else {", "  %v", "}"]


def test_types_and_metadata():
    assert print_type(relay.TensorType((3,), "int64")) == "Tensor[(3,), int64]"
    assert print_type(relay.TensorType((), "float32")) == "float32"
    tup = relay.TupleType([relay.TensorType((1, 2)), relay.TensorType(())])
    assert print_type(tup) == "(Tensor[(1, 2), float32], float32)"
    f = relay.Function([], relay.const(np.arange(3, dtype="float32")))
    text = astext(f, show_meta_data=True)
    assert (
        "#[metadata]" in text and "relay.Constant[0]: Tensor[(3,), float32] = [0., 1., 2.]" in text
    )
