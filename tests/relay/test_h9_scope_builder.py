"""relay.ScopeBuilder: let chains and if/else scopes, checked on the IR and by evaluation."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relax.eval_ref import evaluate
from minitvm.relay._translate import to_relax
from minitvm.relay.scope_builder import ScopeError


def _build_abs_plus_one():
    x = relay.var("x", shape=(3,))
    cond = relay.var("cond", shape=(), dtype="bool")
    sb = relay.ScopeBuilder()
    one = sb.let("one", relay.const(1.0))
    with sb.if_scope(cond):
        sb.ret(sb.let(("t", relay.TensorType((3,), "float32")), relay.add(x, one)))
    with sb.else_scope():
        sb.ret(relay.subtract(one, x))
    return relay.Function([x, cond], sb.get()), one


def test_scope_builder_nests_lets_around_the_if():
    func, one = _build_abs_plus_one()
    body = func.body
    assert isinstance(body, relay.Let) and body.var is one
    branch = body.body
    assert isinstance(branch, relay.If)
    assert isinstance(branch.true_branch, relay.Let)
    assert branch.true_branch.var.name_hint == "t"
    assert branch.true_branch.var.type_annotation == relay.TensorType((3,), "float32")
    x = np.array([1.0, -2.0, 3.0], "float32")
    mod = to_relax(tvm.IRModule.from_expr(func))
    np.testing.assert_allclose(np.asarray(evaluate(mod, x, np.array(True))), x + 1)
    np.testing.assert_allclose(np.asarray(evaluate(mod, x, np.array(False))), 1 - x)


def test_scope_builder_misuse_raises():
    sb = relay.ScopeBuilder()
    with pytest.raises(ScopeError, match="no sb.ret"):
        sb.get()
    with pytest.raises(ScopeError, match="must follow an if_scope"), sb.else_scope():
        pass
    sb.ret(relay.const(1.0))
    with pytest.raises(ScopeError, match="already set"):
        sb.ret(relay.const(2.0))
    cond = relay.var("c", shape=(), dtype="bool")
    sb2 = relay.ScopeBuilder()
    with sb2.if_scope(cond):
        sb2.ret(relay.const(1.0))
    with pytest.raises(ScopeError, match="has no else_scope"):
        sb2.get()
