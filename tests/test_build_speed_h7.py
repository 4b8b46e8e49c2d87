"""Build speed of repeated layers (a training step repeats each layer's forward and backward
groups): FuseTIR fuses a group met before once, and FuseOps/FuseTIR work out a shared kernel's
scalar constants once per pass; the fused module and its numbers stay what they were."""

from __future__ import annotations

import importlib
import math

import numpy as np

from minitvm import relax, tir
from minitvm.ir.transform import Sequential
from minitvm.relax import op
from minitvm.relax.eval_ref import evaluate
from minitvm.relax.transform.fuse_scalars import ScalarMemo
from minitvm.tir.expr import FloatImm
from minitvm.tir.function import PrimFunc
from minitvm.tir.functor import post_order_visit

T = relax.TensorStructInfo
# the modules (the package re-exports functions of the same names)
fuse_tir = importlib.import_module("minitvm.relax.transform.fuse_tir")
fuse_scalars = importlib.import_module("minitvm.relax.transform.fuse_scalars")
LAYERS = 4


def _layers(n) -> relax.Function:
    """x -> LAYERS x (relu(h @ w_k + b_k) * 0.5 + 1.0): equal groups, scalar constants."""
    x = relax.Var("x", T((n, 8), "float32"))
    ws = [relax.Var(f"w{k}", T((8, 8), "float32")) for k in range(LAYERS)]
    bs = [relax.Var(f"b{k}", T((8,), "float32")) for k in range(LAYERS)]
    bb = relax.BlockBuilder()
    with bb.function("main", [x, *ws, *bs]):
        with bb.dataflow():
            h = x
            for w, b in zip(ws, bs):
                act = op.nn.relu(op.add(op.matmul(h, w), b))
                h = bb.emit(op.add(op.multiply(act, relax.const(np.float32(0.5))),
                                   relax.const(np.float32(1.0))))  # fmt: skip
            gv = bb.emit_output(h)
        bb.emit_func_output(gv)
    return bb.get()


def _fuse(mod):
    passes = ["LegalizeOps", "AnnotateTIROpPattern", "FuseOps", "FuseTIR"]
    return Sequential([getattr(relax.transform, p)() for p in passes])(mod)


def _reference(x, ws, bs):
    h = x
    for w, b in zip(ws, bs):
        h = np.maximum(h @ w + b, 0) * 0.5 + 1.0
    return h


def _counting(monkeypatch, module, name: str) -> list:
    calls: list = []
    original = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_fuse_tir_fuses_a_repeated_group_once(monkeypatch) -> None:
    fused = _counting(monkeypatch, fuse_tir, "fuse_primitive")
    n = tir.Var("n", "int64")
    mod = _fuse(_layers(n))
    # every layer's group is the same relax function over the same caller's `n`
    assert len(fused) == 1
    prims = [gv.name_hint for gv, f in mod.functions_items() if isinstance(f, PrimFunc)]
    assert len(prims) == 1
    calls = [b.value for b in mod["main"].body.blocks[0].bindings]
    callees = [c.args[0].name_hint for c in calls if isinstance(c, relax.Call)]
    assert callees == prims * LAYERS
    rng = np.random.default_rng(0)
    ws = [rng.standard_normal((8, 8)).astype("float32") for _ in range(LAYERS)]
    bs = [rng.standard_normal(8).astype("float32") for _ in range(LAYERS)]
    for rows in (1, 5):
        x = rng.standard_normal((rows, 8)).astype("float32")
        got = evaluate(mod, x, *ws, *bs)
        np.testing.assert_allclose(got, _reference(x, ws, bs), rtol=1e-5, atol=1e-5)


def test_fused_module_is_the_one_fusing_every_group_gives(monkeypatch) -> None:
    """Skipping the repeats changes nothing: the same script as fusing each group on its own
    (the memo off: every group misses it)."""
    mod = _layers(tir.Var("n", "int64"))
    fast = _fuse(mod)

    real = fuse_tir._Index

    class _Never(real):
        def find(self, node, accept=None):
            bucket, _ = super().find(node, accept)
            return bucket, None

    # relax groups (map_free_vars False) never found again; fused PrimFuncs shared as before
    monkeypatch.setattr(
        fuse_tir, "_Index", lambda map_free_vars: (real if map_free_vars else _Never)(map_free_vars)
    )
    slow = _fuse(mod)
    assert fast.script() == slow.script()


def test_groups_over_other_shapes_are_fused_apart() -> None:
    """Equal groups over different static shapes are not one group (each kernel its own)."""
    x = relax.Var("x", T((4, 8), "float32"))
    y = relax.Var("y", T((4, 16), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            a = bb.emit(op.nn.relu(op.add(x, x)))
            b = bb.emit(op.nn.relu(op.add(y, y)))
            gv = bb.emit_output(relax.Tuple((a, b)))
        bb.emit_func_output(gv)
    mod = _fuse(bb.get())
    assert len([f for _, f in mod.functions_items() if isinstance(f, PrimFunc)]) == 2
    rng = np.random.default_rng(1)
    xv, yv = rng.standard_normal((4, 8)), rng.standard_normal((4, 16))
    xv, yv = xv.astype("float32"), yv.astype("float32")
    got = evaluate(mod, xv, yv)
    np.testing.assert_allclose(got[0], np.maximum(2 * xv, 0), rtol=1e-6)
    np.testing.assert_allclose(got[1], np.maximum(2 * yv, 0), rtol=1e-6)


def test_shared_kernel_scalars_are_bound_once_per_pass(monkeypatch) -> None:
    bound = _counting(monkeypatch, fuse_scalars, "bind_scalars")
    _fuse(_layers(tir.Var("n", "int64")))
    # multiply by 0.5 and add 1.0: one answer each for FuseOps and one each for FuseTIR
    # (before: one per call in every group, in both passes)
    assert len(bound) == 4


def test_scalar_memo_keeps_zero_and_negative_zero_apart() -> None:
    x = relax.Var("x", T((4,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(op.multiply(x, relax.const(np.float32(0.0))))
        bb.emit_func_output(gv)
    mod = relax.transform.LegalizeOps()(bb.get())
    (callee,) = [f for _, f in mod.functions_items() if isinstance(f, PrimFunc)]
    memo = ScalarMemo()
    signs = []
    for value in (0.0, -0.0):
        out = memo.bind(callee, {1: tir.const(value, "float32")})
        imms: list = []
        post_order_visit(out.body, imms.append)
        signs.append([math.copysign(1.0, e.value) for e in imms if isinstance(e, FloatImm)])
    assert signs == [[1.0], [-1.0]]
