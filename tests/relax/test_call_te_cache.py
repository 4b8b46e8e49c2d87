"""BlockBuilder.call_te reuses the PrimFunc of an op definition applied to the same shapes and
attributes (LegalizeOps, FoldConstant), and never shares one where the PrimFunc would differ."""

from __future__ import annotations

import numpy as np

from minitvm import relax, te, tir, topi
from minitvm.relax import op
from minitvm.relax.eval_ref import evaluate
from minitvm.tir import PrimFunc

T = relax.TensorStructInfo


def _counting(monkeypatch):
    made = []
    real = te.create_prim_func

    def count(*a, **k):
        made.append(1)
        return real(*a, **k)

    monkeypatch.setattr(te, "create_prim_func", count)
    return made


def _legalized(shapes, body):
    params = [relax.Var(f"p{k}", T(s, "float32")) for k, s in enumerate(shapes)]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = body(bb, *params)
            gv = bb.emit_output(out)
        bb.emit_func_output(gv)
    return relax.transform.LegalizeOps()(bb.get())


def _prims(mod):
    return sorted(gv.name_hint for gv, f in mod.functions_items() if isinstance(f, PrimFunc))


def test_same_op_same_shapes_is_made_once(monkeypatch) -> None:
    made = _counting(monkeypatch)

    def body(bb, x, y):
        a = bb.emit(op.add(x, y))
        b = bb.emit(op.add(a, y))  # hit: add of two (4, 5) tensors again
        return op.add(b, x)  # hit

    mod = _legalized([(4, 5), (4, 5)], body)
    assert len(made) == 1
    assert _prims(mod) == ["add"]
    x, y = np.arange(20.0, dtype="float32").reshape(4, 5), np.ones((4, 5), "float32")
    np.testing.assert_allclose(evaluate(mod, x, y), 2 * x + 2 * y)


def test_other_shapes_attrs_or_aliasing_make_their_own(monkeypatch) -> None:
    made = _counting(monkeypatch)

    def body(bb, x, y, z):
        a = bb.emit(op.add(x, y))  # (4, 5) + (4, 5)
        b = bb.emit(op.add(a, a))  # miss: one tensor twice is another PrimFunc
        c = bb.emit(op.sum(b, axis=[0]))  # (5,)
        d = bb.emit(op.sum(b, axis=[1]))  # miss: another attribute, (4,)
        e = bb.emit(op.sum(a, axis=[0]))  # hit: sum over axis 0 of a (4, 5) tensor again
        f = bb.emit(op.add(c, z))  # miss: other shapes, (5,) + (5,)
        return op.concat([op.add(f, e), d], axis=0)  # hit: (5,) + (5,); concat is new

    mod = _legalized([(4, 5), (4, 5), (5,)], body)
    assert len(made) == 6
    assert len(_prims(mod)) == 6
    rng = np.random.default_rng(0)
    x, y, z = (rng.standard_normal(s).astype("float32") for s in [(4, 5), (4, 5), (5,)])
    a = x + y
    expected = np.concatenate([2 * a.sum(0) + z + a.sum(0), (2 * a).sum(1)])
    np.testing.assert_allclose(evaluate(mod, x, y, z), expected, rtol=1e-5)


def _scale(x, factor):
    return topi.multiply(x, tir.const(factor, "float32"))


def test_float_attrs_are_told_apart_and_a_replaced_func_is_not_reused() -> None:
    bb = relax.BlockBuilder()
    x = relax.Var("x", T((3,), "float32"))
    with bb.function("main", [x]):
        half = bb.call_te(_scale, x, factor=0.5, _canonical_names=True)
        quarter = bb.call_te(_scale, x, factor=0.25, _canonical_names=True)
        assert half.args[0] is not quarter.args[0]
        again = bb.call_te(_scale, x, factor=0.5, _canonical_names=True)
        assert again.args[0] is half.args[0]  # hit
        gv = half.args[0]
        bb.update_func(gv, bb.get()[quarter.args[0]])  # the cached PrimFunc is no longer there
        fresh = bb.call_te(_scale, x, factor=0.5, _canonical_names=True)
        assert fresh.args[0] is not gv
        bb.emit_func_output(bb.emit(fresh))
    out = evaluate(bb.get(), np.array([2.0, 4.0, 8.0], "float32"))
    np.testing.assert_allclose(out, [1.0, 2.0, 4.0])


def test_user_te_functions_are_not_cached() -> None:
    """A user's te function may read state: each call makes its PrimFunc again."""
    state = {"factor": 2.0}

    def scaled(x):
        return topi.multiply(x, tir.const(state["factor"], "float32"))

    bb = relax.BlockBuilder()
    x = relax.Var("x", T((3,), "float32"))
    with bb.function("main", [x]):
        a = bb.emit_te(scaled, x)
        state["factor"] = 3.0
        b = bb.emit_te(scaled, x)
        bb.emit_func_output(bb.emit(op.add(a, b)))
    out = evaluate(relax.transform.LegalizeOps()(bb.get()), np.ones(3, "float32"))
    np.testing.assert_allclose(out, [5.0, 5.0, 5.0])
