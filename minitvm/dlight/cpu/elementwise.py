"""ElementWise: parallel outer loops and a vectorized inner loop for spatial blocks."""

from __future__ import annotations

from ...tir.expr import FloorDiv, FloorMod, IntImm
from ...tir.functor import post_order_visit
from ...tir.schedule import BlockRV, LoopRV, Schedule
from .analysis import BlockKind, _is_conditional
from .base import BlockRule
from .elementwise_transpose import tile_transposed, transposed_partner
from .elementwise_vector import vector_loops
from .utils import VECTOR_LANES, _extent, _parallel, _parallel_widest, _vectorize_inner, _work


def schedule_spatial(sch: Schedule, block: BlockRV, loops: list[LoopRV]) -> None:
    """Parallel outer loops, vectorized inner loop."""
    work = _work(sch, loops)
    if not _is_conditional(sch.get(block).body) and not _writes_intermediate(sch, block):
        # an input read transposed: tiles that reuse its gathered cache lines
        # (elementwise_transpose.py)
        pos = transposed_partner(sch, block, loops)
        if pos is not None:
            _parallel(sch, tile_transposed(sch, loops, pos), work)
            return
    if not _is_conditional(sch.get(block).body):
        # a short innermost loop (a 3x3 kernel's 3) is fused with the trailing loops the
        # buffers are contiguous over, so the vector fills a register (elementwise_vector.py)
        k = vector_loops(sch, block, loops)
        if k > 1:
            loops = loops[:-k] + [sch.fuse(*loops[-k:])]
    inner = _extent(sch, loops[-1])
    outer = _vectorize_inner(sch, loops[-1])
    par = loops[:-1] + ([outer] if outer is not None else [])
    if outer is not None and inner is not None and inner % VECTOR_LANES and len(par) > 1:
        # a guarded last vector (ViT's 197 tokens): its loop stays serial under the parallel
        # rows, where the guard is affine in it and lowering's loop partition takes the tail
        # off; fused with the rows the guard (a `% 13`) would stay in every vector and keep it
        # a scalar loop, with exp a libm call per lane (softmax 4 x 197 x 197: 1.6 -> 0.3 ms)
        par = par[:-1]
    if _is_conditional(sch.get(block).body):
        # a border test (padding): its loops stay unfused, so lowering's bound check sees
        # each index as a loop variable (through a fused loop's div/mod it enumerates points:
        # ~1 s for one conv's padding); the widest static loop runs in parallel
        static = [lp for lp in par if _extent(sch, lp) is not None]
        _parallel_widest(sch, static or par, work)
        return
    symbolic_div = _divides_by_symbolic(sch.get(block).body)
    if len(par) > 1 and symbolic_div and not _writes_intermediate(sch, block):
        # an index divided by a symbolic size (a reshape across a batch dim n: `(c * n *
        # 128 + r) // n`) costs an int64 division per vector; in loops of their own, the
        # parts that depend only on outer loops are computed once per row, and no fused
        # loop adds its own div/mod by n (qkv split 3 x 128 x 8 x 256: 0.63 -> 0.08 ms);
        # the leading static loops (else the first alone) run in parallel
        rows = loops[:-1]
        static, product = 0, 1
        while static < len(rows) and _extent(sch, rows[static]) is not None:
            product *= _extent(sch, rows[static])
            static += 1
        if static == 0 or product >= _MIN_PARALLEL_ROWS:  # else too few rows to share out
            _parallel(sch, rows[: max(static, 1)], work)
            return
    if _writes_intermediate(sch, block):
        # a staged intermediate (`data_pad`): its symbolic batch loop stays serial outside
        # the fused static loops, so lowering can still bound the buffer by the batch (a fused
        # `n * 242` loop's `// 242` is not bounded by n there)
        while par and _extent(sch, par[0]) is None and len(par) > 1:
            par = par[1:]
    _parallel(sch, par, work)


_MIN_PARALLEL_ROWS = 8  # leading static rows the symbolic-division schedule needs to run parallel


def _divides_by_symbolic(body) -> bool:
    """`body` divides (floordiv / floormod) by something other than a constant."""
    found: list = []
    post_order_visit(
        body,
        lambda n: (
            found.append(n)
            if isinstance(n, (FloorDiv, FloorMod)) and not isinstance(n.b, IntImm)
            else None
        ),
    )
    return bool(found)


def _writes_intermediate(sch: Schedule, block: BlockRV) -> bool:
    """`block` writes a buffer that is not a parameter of the function."""
    params = {id(b) for b in sch.mod["main"].buffer_map.values()}
    return any(id(w.buffer) not in params for w in sch.get(block).writes)


class ElementWise(BlockRule):
    """Spatial blocks (elementwise, broadcast, injective, padding): `schedule_spatial`.

    dl.ApplyDefaultSchedule(dl.cpu.ElementWise())
    """

    kinds = frozenset({BlockKind.SPATIAL})
    steps = (schedule_spatial,)
