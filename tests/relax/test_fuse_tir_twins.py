"""FuseTIR shares one PrimFunc between primitive functions that fuse to equal structures."""

from __future__ import annotations

import itertools

import numpy as np

from minitvm import relax, tir
from minitvm.ir.transform import Sequential
from minitvm.relax import op
from minitvm.relax.eval_ref import evaluate
from minitvm.tir.function import PrimFunc

T = relax.TensorStructInfo


def _relu(v):
    return np.maximum(v, 0)


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


ACTS = {"relu": (op.nn.relu, _relu), "sigmoid": (op.sigmoid, _sigmoid)}


def _fused(layers, n):
    """x -> each layer (act, width): act(h @ w + b); LegalizeOps, FuseOps and FuseTIR applied."""
    widths = [8] + [w for _, w in layers]
    x = relax.Var("x", T((n, 8), "float32"))
    ws = [
        relax.Var(f"w{k}", T((i, o), "float32"))
        for k, (i, o) in enumerate(itertools.pairwise(widths))
    ]
    bs = [relax.Var(f"b{k}", T((o,), "float32")) for k, o in enumerate(widths[1:])]
    bb = relax.BlockBuilder()
    with bb.function("main", [x, *ws, *bs]):
        with bb.dataflow():
            h = x
            for (act, _), w, b in zip(layers, ws, bs):
                h = bb.emit(ACTS[act][0](op.add(op.matmul(h, w), b)))
            gv = bb.emit_output(h)
        bb.emit_func_output(gv)
    passes = [
        relax.transform.LegalizeOps(),
        relax.transform.AnnotateTIROpPattern(),
        relax.transform.FuseOps(),
        relax.transform.FuseTIR(),
    ]
    return Sequential(passes)(bb.get()), widths


def _check(mod, layers, widths, rows):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, 8)).astype("float32")
    ws = [rng.standard_normal((i, o)).astype("float32") for i, o in itertools.pairwise(widths)]
    bs = [rng.standard_normal(o).astype("float32") for o in widths[1:]]
    h = x
    for (act, _), w, b in zip(layers, ws, bs):
        h = ACTS[act][1](h @ w + b)
    np.testing.assert_allclose(evaluate(mod, x, *ws, *bs), h, rtol=1e-5, atol=1e-5)


def _callees(mod):
    calls = [b.value for b in mod["main"].body.blocks[0].bindings]
    return [c.args[0].name_hint for c in calls if isinstance(c, relax.Call)]


def _prims(mod):
    return sorted(gv.name_hint for gv, f in mod.functions_items() if isinstance(f, PrimFunc))


def test_twin_groups_share_one_prim_func_and_compute_the_same() -> None:
    layers = [("relu", 8)] * 3
    mod, widths = _fused(layers, tir.Var("n", "int64"))
    assert _prims(mod) == ["fused_matmul_add_nn_relu"]  # layers 2 and 3 reuse layer 1's
    assert _callees(mod) == ["fused_matmul_add_nn_relu"] * 3
    for rows in (1, 5):
        _check(mod, layers, widths, rows)


def test_groups_differing_in_an_op_or_a_shape_are_not_shared() -> None:
    layers = [("relu", 8), ("sigmoid", 8), ("relu", 8), ("relu", 16)]
    mod, widths = _fused(layers, 4)
    relu, sigmoid, relu_16 = (
        "fused_matmul_add_nn_relu",
        "fused_matmul_add_sigmoid",
        "fused_matmul_add_nn_relu2",  # FuseOps named the twin relu1
    )
    assert _callees(mod) == [relu, sigmoid, relu, relu_16]
    assert _prims(mod) == sorted([relu, sigmoid, relu_16])
    _check(mod, layers, widths, 4)
