"""Relay expressions, the op table and type inference (checked_type, errors naming op and dims)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.error import MiniTVMError, ShapeError
from minitvm.relay.expr_functor import ExprMutator, ExprVisitor, post_order_visit
from minitvm.relay.type_infer import RelayTypeError, infer_type


def _typed(expr):
    return infer_type(expr).checked_type


# ----------------------------------------------------------------------------- expressions


def test_var_forms_and_const_dtypes():
    x = relay.var("x", relay.TensorType((1, 64, 56, 56), "float32"))
    w = relay.var("weight", shape=(64, 64, 3, 3))
    s = relay.var("s", "int32")
    assert x.name_hint == "x" and x.type_annotation.shape == (1, 64, 56, 56)
    assert w.type_annotation == relay.TensorType((64, 64, 3, 3), "float32")
    assert s.type_annotation == relay.TensorType((), "int32")
    assert relay.const(2.0).data.dtype == "float32"
    assert relay.const(2).data.dtype == "int32"
    assert relay.const(2, "float32").data.dtype == "float32"
    assert relay.const(np.zeros((2, 3), "float64")).data.dtype == "float64"
    assert relay.const(np.ones((2, 3), "float32")).data.numpy().shape == (2, 3)


def test_op_is_one_object_per_name_and_unknown_names_are_suggested():
    x = relay.var("x", shape=(1, 4, 8, 8))
    w = relay.var("w", shape=(4, 4, 3, 3))
    assert relay.nn.conv2d(x, w).op is relay.op.get("nn.conv2d")
    with pytest.raises(MiniTVMError, match="unknown Relay op 'nn.conv3x'.*nn.conv2d"):
        relay.op.get("nn.conv3x")


def test_call_attrs_read_as_fields_and_compare_by_value():
    x = relay.var("x", shape=(1, 4, 8, 8))
    w = relay.var("w", shape=(4, 4, 3, 3))
    c1 = relay.nn.conv2d(x, w, padding=1, channels=4, kernel_size=3)
    c2 = relay.nn.conv2d(x, w, padding=(1, 1, 1, 1), channels=4, kernel_size=(3, 3))
    assert c1.attrs.padding == (1, 1, 1, 1) and c1.attrs["channels"] == 4
    assert "kernel_layout" in list(c1.attrs.keys())
    assert c1.attrs == c2.attrs and hash(c1.attrs) == hash(c2.attrs)
    assert tvm.ir.structural_equal(c1, c2)
    with pytest.raises(AttributeError, match="no field 'stride'"):
        _ = c1.attrs.stride


def test_batch_norm_is_a_tuple_wrapper_and_dropout_its_first_field():
    x = relay.var("x", shape=(1, 4, 8, 8))
    stats = [relay.var(n, shape=(4,)) for n in "gbmv"]
    bn = relay.nn.batch_norm(x, *stats)
    assert len(bn) == 3 and isinstance(bn[0], relay.TupleGetItem) and bn[2].index == 2
    assert isinstance(_typed(bn.astuple()), relay.TupleType)
    d = relay.nn.dropout(x)
    assert isinstance(d, relay.TupleGetItem) and d.tuple_value.op.name == "nn.dropout"
    assert _typed(d) == relay.TensorType((1, 4, 8, 8))


def test_arithmetic_operators_build_calls():
    x = relay.var("x", shape=(2, 3))
    y = relay.var("y", shape=(2, 3))
    e = (x + y) * 2.0 - x / y
    assert e.op.name == "subtract" and e.args[0].op.name == "multiply"
    assert e.args[0].args[1].data.dtype == "float32"
    assert _typed(e) == relay.TensorType((2, 3))


def test_function_attrs_and_structural_equality_up_to_renaming():
    def make(name):
        x = relay.var(name, shape=(2, 3))
        return relay.Function([x], relay.nn.relu(x) + x)

    f = make("x")
    assert tvm.ir.structural_equal(f, make("y"))
    assert tvm.ir.structural_hash(f) == tvm.ir.structural_hash(make("z"))
    g = f.with_attr("Primitive", 1)
    assert g.attrs["Primitive"] == 1 and not f.attrs
    assert not tvm.ir.structural_equal(f, g)
    mod = tvm.IRModule.from_expr(f)
    assert mod["main"] is f


def test_mutator_keeps_unchanged_nodes_and_rebuilds_changed_ones():
    x = relay.var("x", shape=(2, 3))
    f = relay.Function([x], relay.exp(relay.nn.relu(x)))
    assert ExprMutator().visit(f) is f

    class ReluToSigmoid(ExprMutator):
        def visit_call(self, call):
            call = super().visit_call(call)
            return relay.sigmoid(call.args[0]) if call.op.name == "nn.relu" else call

    g = ReluToSigmoid().visit(f)
    assert g is not f and g.body.args[0].op.name == "sigmoid" and g.params[0] is x


def test_visitor_visits_shared_nodes_once():
    x = relay.var("x", shape=(2, 3))
    r = relay.nn.relu(x)
    seen = []

    class Count(ExprVisitor):
        def visit_call(self, call):
            seen.append(call.op.name)
            super().visit_call(call)

    Count().visit(relay.add(r, r))
    assert seen == ["add", "nn.relu"]
    order = []
    post_order_visit(relay.add(r, r), lambda n: order.append(type(n).__name__))
    assert order[-1] == "Call" and order.count("Var") == 1


# ----------------------------------------------------------------------------- type inference


def test_infer_type_fills_checked_type_and_main_ret_type():
    x = relay.var("x", relay.TensorType((1, 64, 56, 56), "float32"))
    w = relay.var("weight", shape=(64, 64, 3, 3))
    conv = relay.nn.conv2d(x, w)
    f = relay.Function([x, w], relay.add(conv, relay.const(np.ones((1, 64, 54, 54), "float32"))))
    mod = infer_type(tvm.IRModule.from_expr(f))
    assert conv.checked_type == relay.TensorType((1, 64, 54, 54))
    assert mod["main"].ret_type == relay.TensorType((1, 64, 54, 54))
    assert isinstance(mod["main"].checked_type, relay.FuncType)


def test_checked_type_before_inference_says_to_run_infer_type():
    x = relay.var("x", shape=(2, 3))
    with pytest.raises(MiniTVMError, match="InferType"):
        _ = relay.nn.relu(x).checked_type


SHAPES = [
    (
        lambda x: relay.nn.max_pool2d(x, (3, 3), (2, 2), padding=(1, 1)),
        (1, 8, 16, 16),
        (1, 8, 8, 8),
    ),
    (lambda x: relay.nn.avg_pool2d(x, (2, 2), (2, 2)), (1, 8, 16, 16), (1, 8, 8, 8)),
    (lambda x: relay.nn.global_avg_pool2d(x), (2, 8, 5, 5), (2, 8, 1, 1)),
    (lambda x: relay.nn.global_max_pool2d(x), (2, 8, 5, 5), (2, 8, 1, 1)),
    (lambda x: relay.nn.batch_flatten(x), (2, 8, 5, 5), (2, 200)),
    (lambda x: relay.reshape(x, (0, -1)), (2, 8, 5, 5), (2, 200)),
    (lambda x: relay.squeeze(x), (1, 8, 1, 5), (8, 5)),
    (lambda x: relay.squeeze(x, axis=[2]), (1, 8, 1, 5), (1, 8, 5)),
    (lambda x: relay.expand_dims(x, 1, 2), (3, 4), (3, 1, 1, 4)),
    (lambda x: relay.transpose(x, (0, 2, 1)), (2, 3, 4), (2, 4, 3)),
    (lambda x: relay.transpose(x), (2, 3, 4), (4, 3, 2)),
    (lambda x: relay.concatenate([x, x], 1), (2, 3), (2, 6)),
    (lambda x: relay.sum(x, axis=1, keepdims=True), (2, 3, 4), (2, 1, 4)),
    (lambda x: relay.mean(x, axis=[1], exclude=True), (2, 3, 4), (3,)),
    (lambda x: relay.max(x), (2, 3, 4), ()),
    (lambda x: relay.nn.softmax(x), (2, 3), (2, 3)),
]


@pytest.mark.parametrize("build,shape,expected", SHAPES)
def test_result_types_of_shape_ops(build, shape, expected):
    assert _typed(build(relay.var("x", shape=shape))) == relay.TensorType(expected)


def test_cast_changes_dtype():
    assert _typed(relay.cast(relay.var("x", shape=(2,)), "int32")) == relay.TensorType(
        (2,), "int32"
    )


def test_type_error_names_the_op_and_the_mismatching_dims():
    x = relay.var("x", shape=(1, 3, 8, 8))
    with pytest.raises(
        RelayTypeError, match=r"nn\.conv2d.*dim 1 of weight \(5\).*dim 1 of data \(3\)"
    ):
        infer_type(relay.nn.conv2d(x, relay.var("w", shape=(4, 5, 3, 3))))
    with pytest.raises(
        RelayTypeError, match=r"call of add\(.*dim 0 of x1 \(2\) must equal dim 0 of x2 \(4\)"
    ):
        infer_type(relay.add(relay.var("a", shape=(2, 3)), relay.var("b", shape=(4, 3))))


def test_conv2d_channels_and_kernel_size_must_match_the_weight():
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    with pytest.raises(RelayTypeError, match=r"channels=5 but the weight \(4, 3, 3, 3\)"):
        infer_type(relay.nn.conv2d(x, w, channels=5))
    with pytest.raises(RelayTypeError, match=r"kernel_size=\[5, 5\].*3x3 window"):
        infer_type(relay.nn.conv2d(x, w, kernel_size=5))


def test_dense_units_and_reshape_errors():
    x = relay.var("x", shape=(2, 8))
    with pytest.raises(RelayTypeError, match=r"nn\.dense: units=7 but the weight \(10, 8\)"):
        infer_type(relay.nn.dense(x, relay.var("w", shape=(10, 8)), units=7))
    with pytest.raises(
        ShapeError, match=r"reshape: cannot reshape data of shape \(2, 8\) into \[3, -1\]"
    ):
        infer_type(relay.reshape(x, (3, -1)))


def test_untyped_variable_error_says_how_to_type_it():
    with pytest.raises(RelayTypeError, match=r"variable %x has no type.*relay\.var\('x', shape="):
        infer_type(relay.nn.relu(relay.var("x")))


def test_function_params_without_types_take_the_call_arguments_types():
    p = relay.var("p")
    inner = relay.Function([p], relay.nn.relu(p)).with_attr("Primitive", 1)
    x = relay.var("x", shape=(2, 3))
    call = relay.Call(inner, [x])
    assert _typed(call) == relay.TensorType((2, 3))
    assert p.checked_type == relay.TensorType((2, 3))


def test_declared_return_type_is_checked():
    x = relay.var("x", shape=(2, 3))
    f = relay.Function([x], relay.nn.relu(x), ret_type=relay.TensorType((3, 2)))
    with pytest.raises(RelayTypeError, match="declared to return"):
        infer_type(tvm.IRModule.from_expr(f))


def test_type_errors_speak_relay():
    a, b = relay.var("a", shape=(2, 3)), relay.var("b", shape=(2, 3), dtype="int32")
    with pytest.raises(RelayTypeError, match="add: dtypes differ.*cast one with relay.cast"):
        infer_type(relay.add(a, b))
    with pytest.raises(RelayTypeError, match=r"nn\.dense: in_features differ.*dim 1 of x \(7\)"):
        infer_type(relay.nn.dense(relay.var("x", shape=(2, 7)), relay.var("w", shape=(4, 8))))
    with pytest.raises(
        RelayTypeError, match=r"bias has 4 elements, data \(2, 3, 4, 4\) has 3 along axis 1"
    ):
        infer_type(
            relay.nn.bias_add(relay.var("x", shape=(2, 3, 4, 4)), relay.var("c", shape=(4,)))
        )


def test_untyped_weights_take_their_shapes_from_data_and_attrs():
    data = relay.var("data", shape=(1, 3, 8, 8))
    names = ("weight", "bn_gamma", "bn_beta", "bn_mean", "bn_var", "fc_weight", "fc_bias")
    w, g, b, m, v, fw, fb = (relay.var(n) for n in names)
    y = relay.nn.conv2d(data, w, kernel_size=(3, 3), channels=4, padding=(1, 1))
    y = relay.nn.relu(relay.nn.batch_norm(y, g, b, m, v)[0])
    y = relay.nn.bias_add(relay.nn.dense(relay.nn.batch_flatten(y), fw, units=10), fb, axis=-1)
    f = relay.Function([data, w, g, b, m, v, fw, fb], y)
    main = infer_type(tvm.IRModule.from_expr(f))["main"]
    assert [p.checked_type.shape for p in main.params[1:]] == [
        (4, 3, 3, 3), (4,), (4,), (4,), (4,), (10, 256), (10,)
    ]  # fmt: skip
    assert main.ret_type == relay.TensorType((1, 10))


def test_untyped_weight_without_the_attrs_to_deduce_it_is_an_error():
    data = relay.var("data", shape=(1, 3, 8, 8))
    w = relay.var("weight")
    with pytest.raises(RelayTypeError, match="variable %weight has no type"):
        infer_type(relay.nn.conv2d(data, w))  # no channels / kernel_size
