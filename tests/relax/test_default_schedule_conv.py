"""DefaultSchedule on blocked (NCHW{c}c) convolutions: the register tile over output pixels x
one vector of output channels fires, the padding stays a parallel vectorized stage, the fused
epilogue is folded into the tile's write-back, and every odd shape matches numpy."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, tir
from minitvm.testing.workloads import (
    conv2d_nchwc_ref,
    conv2d_nchwc_te,
    depthwise_conv2d_nchwc_ref,
    depthwise_conv2d_nchwc_te,
)
from minitvm.tir.function import PrimFunc
from minitvm.tir.stmt import Block, BlockRealize, For, ForKind, SeqStmt

_ds = importlib.import_module("minitvm.dlight.cpu")


def loops_above_blocks(func: PrimFunc) -> dict[str, list[For]]:
    """Each block's name -> the For loops enclosing it, outermost first."""
    found: dict[str, list[For]] = {}

    def walk(stmt, loops: list[For]) -> None:
        if isinstance(stmt, For):
            walk(stmt.body, [*loops, stmt])
        elif isinstance(stmt, SeqStmt):
            for s in stmt.seq:
                walk(s, loops)
        elif isinstance(stmt, BlockRealize):
            found.setdefault(stmt.block.name_hint, loops)
            walk(stmt.block, loops)
        elif isinstance(stmt, Block):
            for s in (stmt.init, stmt.body):
                if s is not None:
                    walk(s, loops)
        elif hasattr(stmt, "body"):
            walk(stmt.body, loops)

    walk(func.body, [])
    return found


def scheduled_conv(n, c, hw, o, k, stride, pad, cb, ob, epilogue):
    tensors = conv2d_nchwc_te(n, c, hw, o, k, stride, pad, cb, ob, epilogue)
    return tensors, _ds.default_schedule_func(te.create_prim_func(list(tensors)))


def run_against_numpy(tensors, func, batch, stride, pad, epilogue, seed=0, ref=conv2d_nchwc_ref):
    rng = np.random.default_rng(seed)
    shapes = [[batch if isinstance(d, tir.Var) else int(d) for d in t.shape] for t in tensors]
    args = [rng.standard_normal(s).astype("float32") for s in shapes[:-1]]
    out = tvm.nd.array(np.zeros(shapes[-1], "float32"))
    tvm.build(func, target="llvm")(*[tvm.nd.array(a) for a in args], out)
    extra = {t.name: a for t, a in zip(tensors[2:-1], args[2:])}
    want = ref(args[0], args[1], stride, pad, extra, epilogue)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)


# (c, hw, o, k, stride, pad, cb, ob): primes, 1, channel blocks that are not 16
SHAPES = [
    (32, 11, 32, 3, 1, 1, 16, 16),  # prime width: 11 rows, one tile
    (16, 13, 16, 3, 2, 1, 16, 16),  # stride 2, prime width
    (3, 17, 16, 7, 2, 3, 3, 16),  # first layer: a channel block of 3, 7x7 s2
    (24, 9, 16, 1, 1, 0, 8, 8),  # 1x1, blocks of 8
    (5, 6, 8, 3, 1, 0, 5, 8),  # no padding, 5 input channels
    (16, 1, 16, 3, 1, 1, 16, 16),  # 1x1 image: a one-row tile
    (48, 7, 32, 3, 1, 1, 16, 16),  # the 7x7 stage of ResNet, small
]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "c{}h{}o{}k{}s{}p{}b{}x{}".format(*s))
@pytest.mark.parametrize("epilogue", ["", "bias+relu", "residual+relu"])
def test_blocked_conv_register_tile_matches_numpy(shape, epilogue, monkeypatch) -> None:
    monkeypatch.setattr("minitvm.dlight.cpu.utils.PARALLEL_MIN_WORK", 1)
    c, hw, o, k, stride, pad, cb, ob = shape
    tensors, func = scheduled_conv(1, c, hw, o, k, stride, pad, cb, ob, epilogue)
    scopes = {b.name: b.scope() for b in func.body.block.alloc_buffers}
    assert scopes.get("conv2d_NCHWc_local") == "local"  # the register tile fired
    loops = loops_above_blocks(func)
    # the epilogue is the tile's write-back: init, update and one block writing the result
    # from the local accumulator, no intermediate result in memory
    assert len(set(loops) - {"root", "data_pad"}) == 3 and "conv2d_NCHWc" not in scopes
    write_back = [n for n in loops if n not in ("root", "data_pad") and "NCHWc_" not in n]
    assert write_back == ([epilogue.split("+")[-1].replace("relu", "T_relu")] if epilogue else [])
    if pad:  # a stage of its own, not a border test in the tile
        assert scopes.get("data_pad") == "global"
        assert ForKind.VECTORIZED in [lp.kind for lp in loops["data_pad"]]
    tile = [lp.kind for lp in loops["conv2d_NCHWc_update"]]
    assert tile[-1] == ForKind.VECTORIZED and ForKind.UNROLLED in tile
    run_against_numpy(tensors, func, 1, stride, pad, epilogue)


def test_blocked_conv_tile_rows_fill_half_the_register_file() -> None:
    assert _ds.tile_max_rows(1) == 16  # one vector of output channels a row
    assert _ds.tile_max_rows(2) == _ds.MATMUL_MAX_ROWS
    assert _ds.tile_max_rows(4) == 6  # 24 accumulators of 32 registers
    regs = _ds.RegisterFile(lanes=8, registers=16)  # AVX2
    assert _ds.tile_max_rows(1, regs) == 8 and _ds.tile_max_rows(2, regs) == 6
    _, func = scheduled_conv(1, 64, 56, 64, 3, 1, 1, 16, 16, "")
    tile = loops_above_blocks(func)["conv2d_NCHWc_update"]
    assert [lp.extent.value for lp in tile[-2:]] == [14, 16]  # 14 pixels x 16 channels


def test_blocked_conv_with_symbolic_batch_works_for_any_batch(monkeypatch) -> None:
    monkeypatch.setattr("minitvm.dlight.cpu.utils.PARALLEL_MIN_WORK", 1)
    n = tir.Var("n", "int32")
    tensors, func = scheduled_conv(n, 32, 9, 16, 3, 1, 1, 16, 16, "bias+relu")
    assert {b.scope() for b in func.body.block.alloc_buffers} == {"global", "local"}
    kinds = {lp.kind for loops in loops_above_blocks(func).values() for lp in loops}
    assert ForKind.PARALLEL in kinds
    for batch in (1, 3):
        run_against_numpy(tensors, func, batch, 1, 1, "bias+relu", seed=batch)


# (c, hw, k, stride, pad, cb): MobileNet's depthwise layers, small, with odd sizes
DEPTHWISE = [
    (32, 13, 3, 1, 1, 16),
    (48, 11, 3, 2, 1, 16),  # stride 2, prime width
    (24, 7, 5, 1, 2, 8),  # 5x5, blocks of 8
    (16, 1, 3, 1, 1, 16),  # 1x1 image
    (5, 6, 3, 1, 0, 5),  # no padding, 5 channels
]


@pytest.mark.parametrize("shape", DEPTHWISE, ids=lambda s: "c{}h{}k{}s{}p{}b{}".format(*s))
@pytest.mark.parametrize("epilogue", ["", "bias+relu"])
def test_blocked_depthwise_tile_and_padding_per_tile_match_numpy(
    shape, epilogue, monkeypatch
) -> None:
    monkeypatch.setattr("minitvm.dlight.cpu.utils.PARALLEL_MIN_WORK", 1)
    c, hw, k, stride, pad, cb = shape
    tensors = depthwise_conv2d_nchwc_te(1, c, hw, k, stride, pad, cb, epilogue)
    func = _ds.default_schedule_func(te.create_prim_func(list(tensors)))
    scopes = {b.name: b.scope() for b in func.body.block.alloc_buffers}
    assert scopes.get("depthwise_conv2d_NCHWc_local") == "local"
    loops = loops_above_blocks(func)
    tile = loops["depthwise_conv2d_NCHWc_update"]
    assert tile[-1].kind == ForKind.VECTORIZED
    assert (ForKind.UNROLLED in [lp.kind for lp in tile]) == (hw > 1)  # rows of output pixels
    if pad:  # the padded rows one tile reads are written under the tile's outer loops
        outer = [lp for lp in tile if lp.kind != ForKind.UNROLLED][:-3]
        assert loops["data_pad"][: len(outer)] == outer
        assert loops["data_pad"][-1].kind == ForKind.VECTORIZED
    run_against_numpy(tensors, func, 1, stride, pad, epilogue, ref=depthwise_conv2d_nchwc_ref)


def test_dense_conv_padding_stays_one_whole_stage_with_unfused_loops(monkeypatch) -> None:
    monkeypatch.setattr("minitvm.dlight.cpu.utils.PARALLEL_MIN_WORK", 1)
    # every tile of a dense conv reads all input channel blocks: padding per tile would redo it
    _, func = scheduled_conv(1, 32, 9, 32, 3, 1, 1, 16, 16, "")
    loops = loops_above_blocks(func)
    assert not set(loops["data_pad"]) & set(loops["conv2d_NCHWc_update"])
    # one loop per index (a fused loop's div/mod would make lowering enumerate the border
    # test's points), the widest (a row of 11) parallel, the channels vectorized
    pad = loops["data_pad"]
    assert [lp.kind for lp in pad].count(ForKind.PARALLEL) == 1 and len(pad) == 5
    assert [lp.extent.value for lp in pad if lp.kind == ForKind.PARALLEL] == [11]
    assert pad[-1].kind == ForKind.VECTORIZED
