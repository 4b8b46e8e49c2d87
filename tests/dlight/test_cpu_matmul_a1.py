"""The CPU matmul schedule on the forms of a training step (plain, A.T @ B, A @ B.T, both,
batched; a symbolic batch) and on output rows no vector width divides (an LM head of 1000
columns: full-width tiles and a guarded last one), checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minitvm as tvm
from minitvm import relax, tir
from minitvm.arith.analyzer import Analyzer
from minitvm.dlight.cpu import matmul_tile
from minitvm.dlight.cpu.matmul_remainder import remainder_cols
from minitvm.ir.transform import Sequential
from minitvm.relax import op
from minitvm.tir.functor import post_order_visit, substitute
from minitvm.tir.stmt import Block, For, ForKind

SCHEDULE = Sequential(
    [
        relax.transform.LegalizeOps(),
        relax.transform.AnnotateTIROpPattern(),
        relax.transform.FuseOps(),
        relax.transform.FuseTIR(),
        relax.transform.DefaultSchedule(),
    ]
)


def _swap(x):
    perm = list(range(x.struct_info.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return op.permute_dims(x, perm)


def _graph(a_shape, b_shape, trans_a, trans_b):
    """relax `matmul(a, b)` with either operand given transposed (a permute_dims that FuseOps
    fuses into the kernel, as the matmul gradient emits it)."""
    a = relax.Var("a", relax.TensorStructInfo(a_shape, "float32"))
    b = relax.Var("b", relax.TensorStructInfo(b_shape, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [a, b]):
        with bb.dataflow():
            x = bb.emit(_swap(a)) if trans_a else a
            y = bb.emit(_swap(b)) if trans_b else b
            out = bb.emit_output(bb.emit(op.matmul(x, y)))
        bb.emit_func_output(out)
    return bb.get()


def _run(mod, a, b):
    ex = relax.build(mod, target="llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu(0))
    return vm["main"](tvm.nd.array(a), tvm.nd.array(b)).numpy()


def _check(a_shape, b_shape, trans_a, trans_b, sizes=None, seed=0):
    """Build the graph (dims may be symbolic), run it at `sizes` and compare with numpy."""
    sizes = sizes or {}
    ana = Analyzer()
    bind = lambda v: tir.IntImm(v.dtype, sizes[v.name]) if isinstance(v, tir.Var) else None
    value = lambda d: int(ana.simplify(substitute(d, bind))) if isinstance(d, tir.PrimExpr) else d
    rng = np.random.default_rng(seed)
    a = rng.standard_normal([value(d) for d in a_shape]).astype("float32")
    b = rng.standard_normal([value(d) for d in b_shape]).astype("float32")
    an = np.swapaxes(a, -1, -2) if trans_a else a
    bn = np.swapaxes(b, -1, -2) if trans_b else b
    got = _run(_graph(a_shape, b_shape, trans_a, trans_b), a, b)
    np.testing.assert_allclose(got, an @ bn, rtol=1e-5, atol=1e-4 * np.sqrt(an.shape[-1]))


def _prim(mod):
    (func,) = [f for f in mod.functions.values() if isinstance(f, tir.PrimFunc)]
    return func


def _blocks(func):
    names = []
    post_order_visit(func.body, lambda n: names.append(n) if isinstance(n, Block) else None)
    return {b.name_hint: b for b in names}


def _vector_extents(func):
    found = []
    post_order_visit(
        func.body,
        lambda n: (
            found.append(int(n.extent))
            if isinstance(n, For) and n.kind == ForKind.VECTORIZED
            else None
        ),
    )
    return found


DIMS = st.sampled_from([1, 2, 3, 7, 16, 17, 33, 64, 65, 130, 250])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=DIMS, k=DIMS, n=DIMS, trans_a=st.booleans(), trans_b=st.booleans())
def test_matmul_forms_of_any_size_match_numpy(m, k, n, trans_a, trans_b) -> None:
    a_shape = (k, m) if trans_a else (m, k)
    b_shape = (n, k) if trans_b else (k, n)
    _check(a_shape, b_shape, trans_a, trans_b, seed=m * 7 + k * 3 + n)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    batch=st.sampled_from([1, 2, 3]),
    m=st.sampled_from([1, 5, 64, 128]),
    k=st.sampled_from([1, 9, 64]),
    n=st.sampled_from([1, 17, 64, 128]),
    trans_a=st.booleans(),
    trans_b=st.booleans(),
)
def test_batched_matmul_forms_with_a_symbolic_batch_match_numpy(
    batch, m, k, n, trans_a, trans_b
) -> None:
    b = tir.Var("b", "int64")
    a_shape = (b, 4, k, m) if trans_a else (b, 4, m, k)
    b_shape = (b, 4, n, k) if trans_b else (b, 4, k, n)
    _check(a_shape, b_shape, trans_a, trans_b, {"b": batch}, seed=batch + m + n)


@pytest.mark.parametrize(
    "form",
    [
        ("x W", ("R", 256), (256, 96), False, False),
        ("g W.T", ("R", 96), (256, 96), False, True),  # W.T of 96 KB: inlined and packed
        ("x.T g", ("R", 256), ("R", 96), True, False),  # weight gradient, symbolic k
        ("x.T g", ("R", 96), ("R", 256), True, False),
    ],
    ids=lambda f: f[0],
)
@pytest.mark.parametrize("rows", [1, 37, 96])
def test_training_step_forms_with_symbolic_rows_match_numpy(form, rows) -> None:
    _, a_shape, b_shape, ta, tb = form
    r = tir.Var("r", "int64")  # batch x tokens, symbolic as in a training step
    sym = lambda s: tuple(r if d == "R" else d for d in s)
    _check(sym(a_shape), sym(b_shape), ta, tb, {"r": rows}, seed=rows)


def test_transposed_weight_beyond_l1_is_packed_into_panels_not_transposed_first() -> None:
    # a separate transpose stage gathered down W's columns, then the tile read the copy again
    mod = SCHEDULE(_graph((64, 256), (192, 256), False, True))
    blocks = _blocks(_prim(mod))
    assert "T_transpose" not in blocks, sorted(blocks)
    assert "b_global" in blocks, sorted(blocks)
    _check((64, 256), (192, 256), False, True)


def test_transposed_weight_within_l1_stays_a_transpose_stage() -> None:
    mod = SCHEDULE(_graph((64, 24), (40, 24), False, True))
    assert "T_transpose" in _blocks(_prim(mod))


@pytest.mark.parametrize(
    "extent, cols",
    [(1000, 64), (500, 64), (250, 64), (50257, 64), (200, None), (131, 32), (1024, None)],
)
def test_remainder_width_is_full_width_when_the_padding_is_small(extent, cols) -> None:
    # 200: its 8-lane tiles keep (64 or 32 would pad by 28% or 12%); 1024: 64 divides it;
    # 131 has no guard-free width at all: the least padded of 64 and 32
    assert remainder_cols(extent) == cols


def test_matmul_tile_takes_the_remainder_width_only_when_asked() -> None:
    assert matmul_tile(1024, 1000, 256).cols == 8  # guard-free: 8 lanes
    assert matmul_tile(1024, 1000, 256, remainder=True).cols == 64
    assert matmul_tile(1024, 1024, 256, remainder=True).cols == 64
    assert matmul_tile(16, 131, 8, remainder=True).cols == 32  # no guard-free width


@pytest.mark.parametrize("trans_b", [False, True], ids=["KN", "NK"])
@pytest.mark.parametrize("rows", [1000, None])
def test_lm_head_of_1000_columns_gets_full_width_tiles_and_matches_numpy(rows, trans_b) -> None:
    n = tir.Var("n", "int64")
    m = n if rows is None else rows
    b_shape = (1000, 64) if trans_b else (64, 1000)
    func = _prim(SCHEDULE(_graph((m, 64), b_shape, False, trans_b)))
    assert 64 in _vector_extents(func), _vector_extents(func)
    # B packed into 16 panels of 64 columns, the last one padded
    (panel,) = [b for b in func.body.block.alloc_buffers if b.name.endswith("_global")]
    assert [int(d) for d in panel.shape] == [16, 64, 64]
    _check((m, 64), b_shape, False, trans_b, {"n": 37})


def test_lm_head_with_a_fused_bias_and_odd_rows_matches_numpy() -> None:
    x = relax.Var("x", relax.TensorStructInfo((13, 32), "float32"))
    w = relax.Var("w", relax.TensorStructInfo((32, 1000), "float32"))
    bias = relax.Var("bias", relax.TensorStructInfo((1000,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w, bias]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(op.add(op.matmul(x, w), bias)))
        bb.emit_func_output(out)
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(s).astype("float32") for s in [(13, 32), (32, 1000), (1000,)]]
    ex = relax.build(bb.get(), target="llvm")
    got = relax.VirtualMachine(ex, tvm.cpu(0))["main"](*map(tvm.nd.array, args)).numpy()
    np.testing.assert_allclose(got, args[0] @ args[1] + args[2], rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("trans_b", [False, True], ids=["KN", "NK"])
def test_batched_matmul_of_250_columns_with_a_symbolic_batch_matches_numpy(trans_b) -> None:
    b = tir.Var("b", "int64")
    b_shape = (b, 2, 250, 16) if trans_b else (b, 2, 16, 250)
    func = _prim(SCHEDULE(_graph((b, 2, 40, 16), b_shape, False, trans_b)))
    assert 64 in _vector_extents(func), _vector_extents(func)  # 4 tiles of 64, the last guarded
    _check((b, 2, 40, 16), b_shape, False, trans_b, {"b": 3})
