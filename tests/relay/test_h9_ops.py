"""Relay reshape codes (0, -1, -2, -3, -4), reverse_reshape and nn.nll_loss against numpy."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.error import ShapeError
from minitvm.relax.eval_ref import evaluate
from minitvm.relay._translate import to_relax
from minitvm.topi.testing import nll_loss as nll_loss_ref


def _eval(out, params, *inputs):
    mod = tvm.IRModule.from_expr(relay.Function(params, out))
    return np.asarray(evaluate(to_relax(mod), *inputs))


@pytest.mark.parametrize(
    "newshape,expected",
    [
        ((6, -1), (6, 4)),
        ((0, -3), (2, 12)),
        ((-2,), (2, 3, 4)),
        ((0, -4, -1, 3, 0), (2, 1, 3, 4)),
        ((-4, 1, 2, -2), (1, 2, 3, 4)),
        ((-3, 0), (6, 4)),
    ],
)
def test_reshape_codes(newshape, expected):
    x = relay.var("x", shape=(2, 3, 4))
    data = np.arange(24, dtype="float32").reshape(2, 3, 4)
    out = relay.reshape(x, newshape)
    assert relay.transform.InferTypeLocal(out) == relay.TensorType(expected, "float32")
    np.testing.assert_array_equal(_eval(out, [x], data), data.reshape(expected))


@pytest.mark.parametrize(
    "newshape,expected",
    [((4, 0, 2), (4, 3, 2)), ((0, -1), (3, 8)), ((-1, 0), (6, 4)), ((0, -3), (2, 12))],
)
def test_reverse_reshape_reads_codes_right_to_left(newshape, expected):
    x = relay.var("x", shape=(2, 3, 4))
    data = np.arange(24, dtype="float32").reshape(2, 3, 4)
    out = relay.reverse_reshape(x, newshape)
    np.testing.assert_array_equal(_eval(out, [x], data), data.reshape(expected))


def test_reshape_code_errors():
    x = relay.var("x", shape=(2, 3, 4))
    with pytest.raises(ShapeError, match="cannot reshape"):
        relay.transform.InferTypeLocal(relay.reshape(x, (0, -4, -1, 3)))
    with pytest.raises(ShapeError, match="no input dim left"):
        relay.transform.InferTypeLocal(relay.reshape(x, (0, 0, 0, 0)))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_matches_torch(reduction):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    pred = rng.standard_normal((4, 5, 3)).astype("float32")
    target = rng.integers(0, 5, (4, 3)).astype("int32")
    target[0, 0] = -100
    weight = rng.uniform(size=5).astype("float32")
    p, t = relay.var("p", shape=pred.shape), relay.var("t", shape=target.shape, dtype="int32")
    w = relay.var("w", shape=weight.shape)
    got = _eval(relay.nn.nll_loss(p, t, w, reduction), [p, t, w], pred, target, weight)
    ref = torch.nn.functional.nll_loss(
        torch.tensor(pred), torch.tensor(target).long(), torch.tensor(weight), reduction=reduction
    ).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        nll_loss_ref(pred, target, weight, reduction), ref, rtol=1e-5, atol=1e-6
    )


def test_list_op_freqs_counts_calls_in_every_function():
    x = relay.var("x", shape=(1, 1, 5, 5))
    y = relay.nn.conv2d(x, relay.var("w1", shape=(1, 1, 3, 3)), padding=(1, 1))
    z = relay.add(y, relay.nn.conv2d(y, relay.var("w2", shape=(1, 1, 3, 3)), padding=(1, 1)))
    mod = tvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(z), z))
    assert relay.analysis.list_op_freqs(mod) == {"nn.conv2d": 2, "add": 1}
    fused = relay.transform.FuseOps(3)(relay.transform.InferType()(mod))
    assert relay.analysis.list_op_freqs(fused) == {"nn.conv2d": 2, "add": 1}


def test_get_total_mac_number_counts_convs_and_products():
    x = relay.var("x", shape=(2, 8, 10, 10))
    w = relay.var("w", shape=(16, 4, 3, 3))  # groups=2: 4 input channels per group
    conv = relay.nn.conv2d(x, w, padding=(1, 1), groups=2, channels=16, kernel_size=(3, 3))
    flat = relay.nn.batch_flatten(conv)  # (2, 1600)
    dense = relay.nn.dense(flat, relay.var("d", shape=(5, 1600)))
    a, b = relay.var("a", shape=(3, 4, 6)), relay.var("b", shape=(3, 7, 6))
    func = relay.Function(
        relay.analysis.free_vars(relay.Tuple([dense, relay.nn.batch_matmul(a, b)])),
        relay.Tuple([relay.add(dense, dense), relay.nn.batch_matmul(a, b)]),
    )
    expected = 2 * 16 * 10 * 10 * 4 * 9 + 2 * 5 * 1600 + 3 * 4 * 7 * 6
    assert relay.analysis.get_total_mac_number(func) == expected


def test_broadcast_to_takes_a_constant_shape_and_refuses_a_computed_one():
    from minitvm.error import OpNotImplemented

    x = relay.var("x", shape=(1, 3))
    out = relay.broadcast_to(x, relay.const(np.array([2, 3]), "int64"))
    data = np.arange(3, dtype="float32").reshape(1, 3)
    np.testing.assert_array_equal(_eval(out, [x], data), np.broadcast_to(data, (2, 3)))
    with pytest.raises(OpNotImplemented, match="computed at run time"):
        relay.broadcast_to(x, relay.shape_of(x))


def test_from_expr_wraps_an_expression_in_a_function_of_its_free_vars():
    """TVM's IRModule.from_expr: a Relay expression that is not a function becomes
    `fn (<free vars>) { expr }`; `functions=` adds globals; a str second argument is a name."""
    import minitvm as tvm

    x = relay.var("x", shape=(2, 3))
    y = relay.var("y", shape=(2, 3))
    mod = tvm.IRModule.from_expr(x * y + x)
    assert [p.name_hint for p in mod["main"].params] == ["x", "y"]
    a = np.arange(6, dtype="float32").reshape(2, 3)
    b = np.full((2, 3), 2.0, "float32")
    got = relay.create_executor("graph", mod=mod, target="llvm").evaluate()(a, b)
    np.testing.assert_allclose(got.numpy(), a * b + a)
    named = tvm.IRModule.from_expr(relay.Function([x], x), "f")
    assert "f" in named and "main" not in named
    with pytest.raises(tvm.error.TVMError, match="from_expr"):
        tvm.IRModule.from_expr(42)


def test_calling_a_global_var_builds_a_relay_call():
    """TVM's GlobalVar.__call__: `gv(y)` is a Relay call of the module function."""
    import minitvm as tvm

    x = relay.var("x", shape=(3,))
    y = relay.var("y", shape=(3,))
    gv = relay.GlobalVar("double")
    mod = tvm.IRModule()
    mod[gv] = relay.Function([x], x + x)
    mod["main"] = relay.Function([y], gv(y) * y)
    a = np.arange(3, dtype="float32")
    got = relay.create_executor("vm", mod=mod, target="llvm").evaluate()(a)
    np.testing.assert_allclose(got.numpy(), (a + a) * a)
    with pytest.raises(tvm.error.TVMError, match="Relay expressions"):
        gv(1)
