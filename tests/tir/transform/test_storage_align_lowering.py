"""Schedule.storage_align reaches the lowered code: CompactBufferAllocation gives the buffer
padded strides (stride[axis] % factor == offset) and FlattenBuffer indexes with them and sizes
the flat allocation by the padded extent; results still match numpy (llvm and OpenCL)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm.error import BuildError, ScheduleError
from minitvm.ir.node import FrozenDict
from minitvm.script import tir as T
from minitvm.tir import Allocate, DeclBuffer
from minitvm.tir.expr import IntImm
from minitvm.tir.functor import Mutator, post_order_visit
from minitvm.tir.transform import (
    compact_buffer_allocation,
    convert_blocks_to_loops,
    flatten_buffer,
    lower_init_block,
    plan_and_update_buffer_allocation_location,
)
from minitvm.tir.transform.compact_buffer_allocation import DIM_ALIGN, DimAligns, aligned_strides

_REASON = tvm.opencl(0).unavailable_reason()
requires_opencl = pytest.mark.skipif(_REASON is not None, reason=f"no OpenCL device: {_REASON}")


@T.prim_func
def double(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32")):
    for i, j in T.grid(64, 64):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * 2.0


@T.prim_func
def mirrored(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32")):
    for i, j in T.grid(64, 64):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, 63 - vj] + 1.0


def _tiled_cache_read(factor=32, offset=1):
    """16x16 tiles of `double`, each reading a cached (global) copy of A's tile, aligned."""
    sch = tvm.tir.Schedule(double)
    blk = sch.get_block("B")
    i, j = sch.get_loops(blk)
    io, ii = sch.split(i, [None, 16])
    jo, ji = sch.split(j, [None, 16])
    sch.reorder(io, jo, ii, ji)
    cache = sch.cache_read(blk, 0, "global")
    sch.compute_at(cache, jo)
    sch.storage_align(cache, 0, axis=0, factor=factor, offset=offset)
    return sch.mod["main"]


def _tiled_cache_write(scope="local"):
    """16x16 tiles of `double`, each computed into an aligned `scope` tile then copied out."""
    sch = tvm.tir.Schedule(double)
    blk = sch.get_block("B")
    i, j = sch.get_loops(blk)
    io, ii = sch.split(i, [None, 16])
    jo, ji = sch.split(j, [None, 16])
    sch.reorder(io, jo, ii, ji)
    cache = sch.cache_write(blk, 0, scope)
    sch.reverse_compute_at(cache, jo)
    sch.storage_align(blk, 0, axis=0, factor=16, offset=4)
    return sch.mod["main"]


def _shared_mirror():
    """`mirrored` on OpenCL: 4-row tiles of A staged in shared memory, rows padded to 65."""
    sch = tvm.tir.Schedule(mirrored)
    blk = sch.get_block("B")
    i, j = sch.get_loops(blk)
    io, ii = sch.split(i, [None, 4])
    sch.bind(io, "blockIdx.x")
    sch.bind(ii, "threadIdx.y")
    sch.bind(j, "threadIdx.x")
    cache = sch.cache_read(blk, 0, "shared")
    sch.compute_at(cache, io)
    a0, a1 = sch.get_loops(cache)[-2:]
    sch.bind(a0, "threadIdx.y")
    sch.bind(a1, "threadIdx.x")
    sch.storage_align(cache, 0, axis=0, factor=16, offset=1)
    return sch.mod["main"]


class _Annotate(Mutator):
    """What ConvertBlocksToLoops hands on: the Allocate of `name` carries (axis, factor, offset)."""

    def __init__(self, name, triples):
        super().__init__()
        self.name, self.triples = name, triples

    def visit_Allocate(self, alloc):
        alloc = self.generic_visit(alloc)
        if alloc.buffer_var.name != self.name:
            return alloc
        annotations = FrozenDict({**alloc.annotations, DIM_ALIGN: self.triples})
        return alloc.replace(annotations=annotations)


def _planned(func, name=None, triples=None):
    func = plan_and_update_buffer_allocation_location(
        convert_blocks_to_loops(lower_init_block(func))
    )
    return func.replace(body=_Annotate(name, triples).visit(func.body)) if name else func


def _allocations(func):
    found = {}
    post_order_visit(
        func.body,
        lambda n: found.setdefault(n.buffer_var.name, n) if isinstance(n, Allocate) else None,
    )
    return found


def _declared(func):
    found = {}
    post_order_visit(
        func.body,
        lambda n: found.setdefault(n.buffer.name, n.buffer) if isinstance(n, DeclBuffer) else None,
    )
    return found


def _values(exprs):
    return tuple(e.value for e in exprs)


def _run_llvm(func):
    f = tvm.build(func, target="llvm")
    a = np.random.default_rng(0).random((64, 64), dtype="float32")
    b = tvm.nd.array(np.zeros((64, 64), "float32"))
    f(tvm.nd.array(a), b)
    return a, b.numpy()


# ------------------------------------------------------------------------------ the strides
@pytest.mark.parametrize(
    "shape, aligns, strides",
    [
        ((16, 16), ((0, 32, 1),), (33, 1)),  # a 16-wide row padded to 33 (== 1 mod 32)
        ((16, 16), ((0, 16, 0),), (16, 1)),  # already aligned: no padding
        ((4, 8, 8), ((1, 16, 4),), (160, 20, 1)),  # the outer stride grows with the padded one
        ((8, 6), ((0, 4, 1), (1, 4, 3)), (21, 3)),  # innermost first: 1 -> 3, then 18 -> 21
    ],
)
def test_aligned_strides_pad_from_the_innermost_dimension(shape, aligns, strides):
    got = aligned_strides(tuple(IntImm("int32", s) for s in shape), aligns)
    assert _values(got) == strides
    for axis, factor, offset in aligns:
        assert got[axis].value % factor == offset


def test_compact_gives_the_aligned_buffer_padded_strides_and_flatten_a_padded_size():
    planned = _planned(_tiled_cache_read(), "A_global", ((0, 32, 1),))
    compacted = compact_buffer_allocation(planned)
    buf = _declared(compacted)["A_global"]
    assert _values(buf.shape) == (16, 16) and _values(buf.strides) == (33, 1)
    assert DIM_ALIGN not in _allocations(compacted)["A_global"].annotations  # consumed
    flat = flatten_buffer(compacted)
    assert _values(_allocations(flat)["A_global"].extents) == (15 * 33 + 16,)  # dense: 256


def test_alignment_applies_when_nothing_shrinks():
    # the cache covers all of A (computed at the root): no compaction, the strides still come
    sch = tvm.tir.Schedule(double)
    cache = sch.cache_read(sch.get_block("B"), 0, "global")
    sch.storage_align(cache, 0, axis=0, factor=16, offset=3)
    compacted = compact_buffer_allocation(_planned(sch.mod["main"], "A_global", ((0, 16, 3),)))
    buf = _declared(compacted)["A_global"]
    assert _values(buf.shape) == (64, 64) and _values(buf.strides) == (67, 1)


def test_padded_allocation_matches_numpy_on_llvm():
    planned = _planned(_tiled_cache_read(), "A_global", ((0, 32, 1),))
    a, b = _run_llvm(planned)
    np.testing.assert_allclose(b, a * 2, rtol=1e-6)


# ---------------------------------------------------------------- from the schedule, end to end
def test_storage_align_on_cache_read_pads_the_lowered_row_pitch():
    text = tvm.lower(_tiled_cache_read()).script()
    assert "strides=(33, 1)" in text


@pytest.mark.parametrize("factor, offset", [(32, 1), (8, 0), (16, 5)])
def test_storage_align_on_cache_read_matches_numpy_on_llvm(factor, offset):
    func = _tiled_cache_read(factor, offset)
    a, b = _run_llvm(func)
    np.testing.assert_allclose(b, a * 2, rtol=1e-6)
    (lowered,) = tvm.lower(func).functions.values()
    stride = _declared(lowered)["A_global"].strides[0].value
    assert stride % factor == offset and stride >= 16


@pytest.mark.parametrize("scope", ["local", "global"])
def test_storage_align_on_cache_write_matches_numpy_on_llvm(scope):
    func = _tiled_cache_write(scope)
    a, b = _run_llvm(func)
    np.testing.assert_allclose(b, a * 2, rtol=1e-6)
    assert "strides=(20, 1)" in tvm.lower(func).script()  # 16 raised to 20 (== 4 mod 16)


def test_storage_align_on_a_shared_cache_lowers_with_padded_rows():
    text = tvm.lower(_shared_mirror()).script()
    assert 'strides=(65, 1), scope="shared"' in text


@requires_opencl
def test_storage_align_on_a_shared_cache_matches_numpy_on_opencl():
    f = tvm.build(_shared_mirror(), target="opencl")
    source = f.get_source() if hasattr(f, "get_source") else f.imported_modules[0].get_source()
    assert "A_shared[259]" in source  # 3 rows of 65 and one of 64, not 4 * 64
    dev = tvm.opencl(0)
    a = np.random.default_rng(1).random((64, 64), dtype="float32")
    b = tvm.nd.array(np.zeros((64, 64), "float32"), dev)
    f(tvm.nd.array(a, dev), b)
    np.testing.assert_allclose(b.numpy(), a[:, ::-1] + 1, rtol=1e-6)


# ------------------------------------------------------------------------------------ errors
def test_the_primitive_refuses_a_factor_below_one():
    sch = tvm.tir.Schedule(double)
    cache = sch.cache_read(sch.get_block("B"), 0, "global")
    with pytest.raises(ScheduleError, match="factor must be a positive int"):
        sch.storage_align(cache, 0, axis=0, factor=0, offset=0)


def test_an_offset_outside_the_factor_means_the_same_residue():
    sch = tvm.tir.Schedule(double)
    cache = sch.cache_read(sch.get_block("B"), 0, "global")
    sch.storage_align(cache, 0, axis=0, factor=16, offset=-1)
    assert sch.get(cache).annotations[DIM_ALIGN] == [[0, 0, 16, 15]]


def _annotated(entry):
    @T.prim_func
    def func(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        B = T.alloc_buffer((16, 16), "float32")
        for i, j in T.grid(16, 16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.block_attr({"buffer_dim_align": entry})
                B[vi, vj] = A[vi, vj] + 1.0
        for i, j in T.grid(16, 16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi, vj]

    blocks = []
    post_order_visit(
        func.body, lambda n: blocks.append(n) if isinstance(n, tvm.tir.Block) else None
    )
    return next(b for b in blocks if b.name_hint == "B")


@pytest.mark.parametrize(
    "entry, match",
    [
        ([[0, 0, 0, 1]], r"block 'B': buffer_dim_align entry .* factor > 0"),
        ([[1, 0, 16, 1]], r"block 'B': buffer_dim_align entry .* buffer_index < 1"),
        ([[0, 0, 16]], r"is not \[buffer_index, axis, factor, offset\]"),
        ([[0, 2, 16, 1]], r"aligns axis 2 of 'B', which has 2 dimensions"),
    ],
)
def test_a_hand_written_malformed_annotation_is_a_build_error(entry, match):
    with pytest.raises(BuildError, match=match):
        DimAligns().record(_annotated(entry))


@T.prim_func
def written_twice(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16), "float32")
    for i, j in T.grid(16, 16):
        with T.block("B0"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.block_attr({"buffer_dim_align": [[0, 0, 16, 1]]})
            B[vi, vj] = A[vi, vj]
    for i, j in T.grid(16, 16):
        with T.block("B1"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.block_attr({"buffer_dim_align": [[0, 0, 16, 2]]})
            B[vi, vj] = B[vi, vj] + 1.0
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj]


def test_two_blocks_asking_different_alignments_of_one_buffer_is_a_build_error():
    blocks = {}
    post_order_visit(
        written_twice.body,
        lambda n: blocks.setdefault(n.name_hint, n) if isinstance(n, tvm.tir.Block) else None,
    )
    aligns = DimAligns()
    aligns.record(blocks["B0"])
    with pytest.raises(BuildError, match=r"'B' axis 0: block 'B0' aligns it with factor 16, "):
        aligns.record(blocks["B1"])


def test_a_malformed_allocate_annotation_is_a_build_error():
    planned = _planned(_tiled_cache_read(), "A_global", ((0, 0, 1),))
    with pytest.raises(
        BuildError, match=r"allocation of 'A_global': buffer_dim_align .* factor > 0"
    ):
        compact_buffer_allocation(planned)
