"""DefaultSchedule: every op of the table, legalized with a symbolic batch dim and given the
default CPU schedule, still matches its numpy reference; fused graphs get their epilogues
inlined; hand-scheduled functions are left alone; scheduled kernels are not slower."""

from __future__ import annotations

import importlib
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_op_table import CASES, _as_list, _build, _inputs

from minitvm import relax, te, tir
from minitvm.ir.module import IRModule
from minitvm.ir.transform import Sequential
from minitvm.relax import op
from minitvm.relax.eval_ref import Evaluator, evaluate
from minitvm.relax.transform.default_schedule import IS_SCHEDULED, default_schedule_func
from minitvm.tir.function import PrimFunc
from minitvm.tir.functor import post_order_visit
from minitvm.tir.stmt import For, ForKind

T = relax.TensorStructInfo


def _loop_kinds(func: PrimFunc) -> list[ForKind]:
    kinds: list[ForKind] = []
    post_order_visit(func.body, lambda n: kinds.append(n.kind) if isinstance(n, For) else None)
    return kinds


def _prims(mod: IRModule) -> dict[str, PrimFunc]:
    return {gv.name_hint: f for gv, f in mod.functions_items() if isinstance(f, PrimFunc)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_default_schedule_keeps_every_table_op_correct(name: str) -> None:
    case = CASES[name]
    mod, _ = _build(case, symbolic=case.symbolic)
    inputs = _inputs(case)
    expected = _as_list(evaluate(mod, *inputs))
    scheduled = _default_pipeline()(mod)  # legalize, fuse, schedule
    for f in _prims(scheduled).values():
        assert f.attrs[IS_SCHEDULED] is True
    got = _as_list(evaluate(scheduled, *inputs))
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=case.rtol, atol=case.atol)


@pytest.mark.parametrize(
    "name",
    [
        "add",
        "matmul",
        "matmul_batched",
        "nn.conv2d",
        "nn.softmax",
        "sum",
        "take",
        "concat",
        "nn.layer_norm",
        "nn.max_pool2d",
        "mean",
        "strided_slice",
    ],
)
def test_parallel_paths_stay_correct_on_tiny_shapes(name: str, monkeypatch) -> None:
    # parallelize even the tiny test shapes
    monkeypatch.setattr("minitvm.dlight.cpu.utils.PARALLEL_MIN_WORK", 1)
    case = CASES[name]
    mod, _ = _build(case, symbolic=case.symbolic)
    inputs = _inputs(case)
    expected = _as_list(evaluate(mod, *inputs))
    scheduled = Sequential([relax.transform.LegalizeOps(), relax.transform.DefaultSchedule()])(mod)
    kinds = [k for f in _prims(scheduled).values() for k in _loop_kinds(f)]
    assert ForKind.PARALLEL in kinds
    for g, e in zip(_as_list(evaluate(scheduled, *inputs)), expected):
        np.testing.assert_allclose(g, e, rtol=case.rtol, atol=case.atol)


def _mlp(n):
    x = relax.Var("x", T((n, 32), "float32"))
    w1, b1 = relax.Var("w1", T((32, 64), "float32")), relax.Var("b1", T((64,), "float32"))
    w2, b2 = relax.Var("w2", T((64, 10), "float32")), relax.Var("b2", T((10,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w1, b1, w2, b2]):
        with bb.dataflow():
            h = bb.emit(op.nn.relu(op.add(op.matmul(x, w1), b1)))
            gv = bb.emit_output(op.nn.softmax(op.add(op.matmul(h, w2), b2)))
        bb.emit_func_output(gv)
    return bb.get()


def _default_pipeline():
    return Sequential(
        [
            relax.transform.LegalizeOps(),
            relax.transform.AnnotateTIROpPattern(),
            relax.transform.FuseOps(),
            relax.transform.FuseTIR(),
            relax.transform.ApplyDefaultSchedule(),
        ]
    )


def test_fused_mlp_gets_epilogues_inlined_tiles_and_stays_correct_for_any_batch() -> None:
    n = tir.Var("n", "int64")
    mod = _mlp(n)
    scheduled = _default_pipeline()(mod)
    prims = _prims(scheduled)
    assert sorted(prims) == ["fused_matmul_add", "fused_matmul_add_nn_relu", "nn_softmax"]
    layer1 = prims["fused_matmul_add_nn_relu"]
    # T_add was inlined into the relu, the relu folded into the write-back of the register
    # tile: only the tile's local accumulator stays an intermediate
    assert [(b.name, b.scope()) for b in layer1.body.block.alloc_buffers] == [
        ("T_matmul_local", "local")
    ]
    kinds = _loop_kinds(layer1)
    assert ForKind.PARALLEL in kinds and ForKind.VECTORIZED in kinds
    # the relu epilogue runs tile by tile inside the matmul's parallel row loop
    top = layer1.body.block.body
    assert isinstance(top, For) and top.kind is ForKind.PARALLEL
    rng = np.random.default_rng(0)
    w1, b1 = (
        rng.standard_normal((32, 64)).astype("float32"),
        rng.standard_normal(64).astype("float32"),
    )
    w2, b2 = (
        rng.standard_normal((64, 10)).astype("float32"),
        rng.standard_normal(10).astype("float32"),
    )
    for rows in (1, 7, 33):
        x = rng.standard_normal((rows, 32)).astype("float32")
        logits = np.maximum(x @ w1 + b1, 0) @ w2 + b2
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        np.testing.assert_allclose(
            evaluate(scheduled, x, w1, b1, w2, b2),
            e / e.sum(axis=1, keepdims=True),
            rtol=1e-4,
            atol=1e-6,
        )


def test_fused_conv_with_padding_and_epilogue_is_correct_after_scheduling() -> None:
    n = tir.Var("n", "int64")
    x = relax.Var("x", T((n, 3, 9, 9), "float32"))
    w = relax.Var("w", T((8, 3, 3, 3), "float32"))
    b = relax.Var("b", T((1, 8, 1, 1), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w, b]):
        with bb.dataflow():
            gv = bb.emit_output(op.nn.relu(op.add(op.nn.conv2d(x, w, padding=1), b)))
        bb.emit_func_output(gv)
    mod = bb.get()
    scheduled = _default_pipeline()(mod)
    assert list(_prims(scheduled)) == ["fused_nn_conv2d_add_nn_relu"]
    rng = np.random.default_rng(1)
    args = [
        rng.standard_normal(s).astype("float32") for s in [(2, 3, 9, 9), (8, 3, 3, 3), (1, 8, 1, 1)]
    ]
    np.testing.assert_allclose(
        evaluate(scheduled, *args), evaluate(mod, *args), rtol=1e-4, atol=1e-4
    )


def _te_add(n=64):
    a = te.placeholder((n, n), "float32", name="A")
    c = te.compute((n, n), lambda i, j: a[i, j] + 1.0, name="C")
    return te.create_prim_func([a, c])


def test_hand_scheduled_functions_are_left_alone() -> None:
    sch = tir.Schedule(_te_add())
    i, _ = sch.get_loops(sch.get_block("C"))
    sch.parallel(i)
    hand = sch.mod["main"]
    out = default_schedule_func(hand)
    assert out.body is hand.body and out.attrs[IS_SCHEDULED] is True
    marked = _te_add().with_attr(IS_SCHEDULED, True)
    assert default_schedule_func(marked) is marked
    mod = relax.transform.DefaultSchedule()(IRModule({"hand": hand, "plain": _te_add()}))
    assert mod["hand"].body is hand.body
    assert ForKind.VECTORIZED in _loop_kinds(mod["plain"])


def _best_time(fn, *args, repeat=5) -> float:
    fn(*args)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best


def test_default_schedule_is_not_slower_than_no_schedule_on_dense() -> None:
    size = 256
    a = te.placeholder((size, size), "float32", name="A")
    b = te.placeholder((size, size), "float32", name="B")
    k = te.reduce_axis((0, size), name="k")
    c = te.compute((size, size), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    plain = te.create_prim_func([a, b, c])
    scheduled = default_schedule_func(plain)
    ev = Evaluator(IRModule())
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((2, size, size)).astype("float32")
    times = {}
    for label, func in (("unscheduled", plain), ("default", scheduled)):
        out = np.empty((size, size), "float32")
        kernel = ev.kernel(func, f"dense_{label}")
        times[label] = _best_time(kernel, x, y, out)
        np.testing.assert_allclose(out, x @ y, rtol=1e-3, atol=1e-3)
    print(f"dense {size}x{size}: " + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in times.items()))
    assert times["default"] <= 2 * times["unscheduled"]


_UNARY = [op.exp, op.nn.relu, op.negative, op.tanh, op.permute_dims]
_BINARY = [op.add, op.multiply, op.maximum, op.matmul]


@settings(max_examples=10, deadline=None, derandomize=True)
@given(
    choices=st.lists(
        st.tuples(st.integers(0, 8), st.integers(0, 99), st.integers(0, 99)), min_size=2, max_size=7
    )
)
def test_random_graphs_compute_the_same_after_fusion_and_scheduling(choices) -> None:
    x = relax.Var("x", T((8, 8), "float32"))
    y = relax.Var("y", T((8, 8), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            values = [x, y]
            for kind, a, b in choices:
                lhs, rhs = values[a % len(values)], values[b % len(values)]
                call = (
                    _UNARY[kind](lhs)
                    if kind < len(_UNARY)
                    else _BINARY[kind - len(_UNARY)](lhs, rhs)
                )
                values.append(bb.emit(call))
            gv = bb.emit_output(values[-1])
        bb.emit_func_output(gv)
    mod = bb.get()
    rng = np.random.default_rng(len(choices))
    args = [rng.uniform(-1, 1, (8, 8)).astype("float32") for _ in range(2)]
    np.testing.assert_allclose(
        evaluate(_default_pipeline()(mod), *args), evaluate(mod, *args), rtol=1e-4, atol=1e-4
    )


# ----------------------------------------------------------------------------- register-blocked matmul

_ds = importlib.import_module("minitvm.dlight.cpu")


def _matmul_graph(shapes, body):
    """A relax function of float32 params `shapes` whose result is `body(*params)`."""
    params = [relax.Var(f"p{k}", T(s, "float32")) for k, s in enumerate(shapes)]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            gv = bb.emit_output(body(*params))
        bb.emit_func_output(gv)
    return bb.get()


def _only_prim(mod: IRModule) -> PrimFunc:
    prims = [f for f in _prims(mod).values() if any(b.name.endswith("_local") for b in _allocs(f))]
    assert len(prims) == 1, sorted(_prims(mod))
    return prims[0]


def _allocs(func: PrimFunc):
    return func.body.block.alloc_buffers if hasattr(func.body, "block") else ()


def _block_names(func: PrimFunc) -> list[str]:
    names: list[str] = []
    post_order_visit(
        func.body, lambda n: names.append(n.block.name_hint) if hasattr(n, "iter_values") else None
    )
    return [name for name in names if name != "root"]


def test_matmul_tile_choice() -> None:
    tile = _ds.matmul_tile
    assert tile(1000, 256, 784) == _ds.MatmulTile(5, 64, 4)  # 20 of 24 accumulators
    assert tile(784, 256, 1000) == _ds.MatmulTile(4, 64, 4)
    assert tile(1000, 32, 10) == _ds.MatmulTile(8, 32, 2)
    assert tile(None, 100, None) == _ds.MatmulTile(3, 100, 1)  # 7 vectors a row: 3 rows
    assert tile(None, 64, 8) == _ds.MatmulTile(4, 64, 4)  # symbolic rows: guarded tiles
    assert tile(13, 64, 8) == _ds.MatmulTile(4, 64, 4)  # prime rows: guarded too
    assert tile(3, 64, 8) == _ds.MatmulTile(3, 64, 4)
    assert tile(6, 10, 7) == _ds.MatmulTile(6, 10, 1)  # short row: whole; 6 rows divide 6
    assert tile(16, 200, 8) == _ds.MatmulTile(16, 8, 4)  # no wide divisor: 8 lanes, one vector
    assert tile(56, 16, 576) == _ds.MatmulTile(14, 16, 4)  # a blocked conv row: one vector
    assert tile(16, 131, 8) is None  # prime columns: no guard-free tile
    assert tile(16, 131, 8, remainder=True) == _ds.MatmulTile(8, 32, 4)  # over a packed B
    assert tile(16, None, 8) is None


@pytest.mark.parametrize(
    "rows, cols, red",
    [(96, 64, 40), (40, 100, 24), (24, 10, 9), (37, 32, 12), (16, 131, 8)],
)
def test_dense_bias_relu_register_tile_matches_numpy(rows, cols, red, monkeypatch) -> None:
    monkeypatch.setattr("minitvm.dlight.cpu.utils.PARALLEL_MIN_WORK", 1)
    mod = _matmul_graph(
        [(rows, red), (red, cols), (cols,)],
        lambda x, w, b: op.nn.relu(op.add(op.matmul(x, w), b)),
    )
    scheduled = _default_pipeline()(mod)
    (func,) = _prims(scheduled).values()
    kinds = _loop_kinds(func)
    assert ForKind.PARALLEL in kinds and ForKind.VECTORIZED in kinds
    # 131 columns have no guard-free width: 32-column tiles over a packed, padded B
    remainder = _ds.matmul_tile(rows, cols, red) is None
    tiled = _ds.matmul_tile(rows, cols, red, remainder=remainder) is not None
    assert (ForKind.UNROLLED in kinds) == tiled
    assert [b.scope() for b in func.body.block.alloc_buffers] == (
        (["global", "local"] if remainder else ["local"]) if tiled else ["global"]
    )
    rng = np.random.default_rng(rows + cols)
    args = [rng.standard_normal(s).astype("float32") for s in [(rows, red), (red, cols), (cols,)]]
    np.testing.assert_allclose(
        evaluate(scheduled, *args),
        np.maximum(args[0] @ args[1] + args[2], 0),
        rtol=1e-4,
        atol=1e-4,
    )


def test_symbolic_batch_dense_gets_guarded_tiles_and_any_batch_works() -> None:
    n = tir.Var("n", "int64")
    mod = _matmul_graph([(n, 24), (24, 48), (48,)], lambda x, w, b: op.add(op.matmul(x, w), b))
    scheduled = _default_pipeline()(mod)
    (func,) = _prims(scheduled).values()
    assert [b.scope() for b in func.body.block.alloc_buffers] == ["local"]
    rng = np.random.default_rng(3)
    w, b = (
        rng.standard_normal((24, 48)).astype("float32"),
        rng.standard_normal(48).astype("float32"),
    )
    for rows in (1, 5, 37):
        x = rng.standard_normal((rows, 24)).astype("float32")
        np.testing.assert_allclose(evaluate(scheduled, x, w, b), x @ w + b, rtol=1e-4, atol=1e-4)


def test_transposed_b_is_packed_and_transposed_a_is_inlined() -> None:
    # g @ W.T: the transpose stays a block (a contiguous copy the vector loop reads)
    mod_b = _matmul_graph([(32, 24), (40, 24)], lambda g, w: op.matmul(g, op.permute_dims(w)))
    func_b = _only_prim(_default_pipeline()(mod_b))
    assert "T_transpose" in _block_names(func_b)
    # x.T @ g: reading x transposed is a row of A per k, contiguous: it is inlined
    n = tir.Var("n", "int64")
    mod_a = _matmul_graph([(n, 24), (n, 32)], lambda x, g: op.matmul(op.permute_dims(x), g))
    func_a = _only_prim(_default_pipeline()(mod_a))
    assert "T_transpose" not in _block_names(func_a)
    rng = np.random.default_rng(4)
    g, w = (
        rng.standard_normal((32, 24)).astype("float32"),
        rng.standard_normal((40, 24)).astype("float32"),
    )
    np.testing.assert_allclose(
        evaluate(_default_pipeline()(mod_b), g, w), g @ w.T, rtol=1e-4, atol=1e-4
    )
    for rows in (3, 50):  # symbolic reduction extent: k is not unrolled
        x = rng.standard_normal((rows, 24)).astype("float32")
        gg = rng.standard_normal((rows, 32)).astype("float32")
        np.testing.assert_allclose(
            evaluate(_default_pipeline()(mod_a), x, gg), x.T @ gg, rtol=1e-4, atol=1e-4
        )


def test_sgd_update_epilogue_is_folded_into_the_tile_write_back() -> None:
    lr = relax.const(np.float32(0.1))
    mod = _matmul_graph(
        [(64, 48), (64, 32), (48, 32)],
        lambda x, g, w: op.subtract(w, op.multiply(op.matmul(op.permute_dims(x), g), lr)),
    )
    scheduled = _default_pipeline()(mod)
    func = _only_prim(scheduled)
    # matmul init, matmul update (TVM names it <name>_update), and the SGD update reading the
    # tile's local accumulator as the write-back: no separate epilogue block
    assert sorted(_block_names(func)) == ["T_matmul_init", "T_matmul_update", "T_subtract"]
    assert "T_matmul_local[" in func.script().split('T.block("T_subtract")')[1]
    rng = np.random.default_rng(5)
    x, g, w = (rng.standard_normal(s).astype("float32") for s in [(64, 48), (64, 32), (48, 32)])
    np.testing.assert_allclose(
        evaluate(scheduled, x, g, w), w - np.float32(0.1) * (x.T @ g), rtol=1e-4, atol=1e-4
    )


def test_batched_matmul_register_tile_matches_numpy() -> None:
    mod = _matmul_graph([(3, 16, 12), (3, 12, 32)], lambda a, b: op.matmul(a, b))
    scheduled = _default_pipeline()(mod)
    (func,) = _prims(scheduled).values()
    assert [b.scope() for b in func.body.block.alloc_buffers] == ["local"]
    rng = np.random.default_rng(6)
    a, b = (
        rng.standard_normal((3, 16, 12)).astype("float32"),
        rng.standard_normal((3, 12, 32)).astype("float32"),
    )
    np.testing.assert_allclose(evaluate(scheduled, a, b), a @ b, rtol=1e-4, atol=1e-4)


def test_register_tile_accumulates_in_zmm_registers() -> None:
    import llvmlite.binding as llvm

    from minitvm.driver import build

    if "avx512f" not in llvm.get_host_cpu_features().flatten():
        pytest.skip("the host has no AVX-512")
    a = te.placeholder((64, 96), "float32", name="A")
    b = te.placeholder((96, 64), "float32", name="B")
    k = te.reduce_axis((0, 96), name="k")
    c = te.compute((64, 64), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    func = default_schedule_func(te.create_prim_func([a, b, c]))
    asm = build(func, target="llvm", name="dense").get_source("asm")
    fmas = [ln for ln in asm.splitlines() if "vfmadd" in ln and "ps" in ln and "zmm" in ln]
    # a 4 x 64 tile = 16 zmm accumulators, k unrolled by 4: 64 register FMAs, none on memory
    # accumulators (the tile never goes through the stack inside the reduction loop)
    assert len(fmas) >= 64
    assert not any("(%rsp)" in ln.split(",")[-1] for ln in fmas)


@pytest.mark.parametrize(
    "sa, sb",
    [
        ((5, 7), (7, 1)),  # one column
        ((1, 7), (7, 64)),  # one row
        ((6, 1), (1, 32)),  # unit reduction: the block keeps its init
        ((1, 1), (1, 1)),
        ((2, 1, 9), (2, 9, 48)),
        ((1, 4, 3), (1, 3, 17)),
    ],
)
def test_degenerate_matmul_extents_stay_correct(sa, sb) -> None:
    mod = _matmul_graph([sa, sb], lambda a, b: op.matmul(a, b))
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal(sa).astype("float32"), rng.standard_normal(sb).astype("float32")
    np.testing.assert_allclose(
        evaluate(_default_pipeline()(mod), a, b), a @ b, rtol=1e-4, atol=1e-4
    )


def test_column_sum_accumulates_vectors_and_folds_the_sgd_update() -> None:
    n = tir.Var("n", "int64")
    lr = relax.const(np.float32(0.5))
    mod = _matmul_graph(
        [(n, 40), (40,)],
        lambda g, b: op.subtract(b, op.multiply(op.sum(g, axis=[0]), lr)),
    )
    scheduled = _default_pipeline()(mod)
    (func,) = _prims(scheduled).values()
    assert [b.scope() for b in func.body.block.alloc_buffers] == ["local"]
    assert ForKind.VECTORIZED in _loop_kinds(func)
    rng = np.random.default_rng(8)
    b = rng.standard_normal(40).astype("float32")
    for rows in (1, 9, 300):
        g = rng.standard_normal((rows, 40)).astype("float32")
        np.testing.assert_allclose(
            evaluate(scheduled, g, b), b - np.float32(0.5) * g.sum(axis=0), rtol=1e-4, atol=1e-4
        )


@pytest.mark.parametrize(
    "shape, axis",
    [((300, 256), [0]), ((4, 6, 96), [0]), ((5, 7, 8), [0, 1]), ((6, 131), [0]), ((6, 20), [1])],
)
def test_sums_over_outer_axes_match_numpy(shape, axis, monkeypatch) -> None:
    monkeypatch.setattr("minitvm.dlight.cpu.utils.PARALLEL_MIN_WORK", 1)
    mod = _matmul_graph([shape], lambda x: op.sum(x, axis=axis))
    rng = np.random.default_rng(9)
    x = rng.standard_normal(shape).astype("float32")
    np.testing.assert_allclose(
        evaluate(_default_pipeline()(mod), x), x.sum(axis=tuple(axis)), rtol=1e-4, atol=1e-3
    )
