"""What the CPU rules read off a block: its kind, its loads, whether it is a matmul, whether it
calls an op or tests a condition."""

from __future__ import annotations

import enum

from ...tir.analysis.op_pattern import OpPattern, block_pattern
from ...tir.expr import Add, BufferLoad, Call, Cast, IterType, Op, Select, Var
from ...tir.functor import post_order_visit
from ...tir.stmt import Block, BufferStore

_IF_THEN_ELSE = Op.get("if_then_else")


_EXP = Op.get("tir.exp")


# calls far dearer than the load of a stored result (tens of instructions each): a stage
# computing one is not inlined into a consumer that reads each of its elements many times
_TRANSCENDENTAL = frozenset(
    Op.get(f"tir.{name}")
    for name in ("exp", "exp2", "log", "log1p", "erf", "tanh", "sigmoid", "pow", "sin", "cos")
)


class BlockKind(enum.Enum):
    SPATIAL = "spatial"
    PRODUCT = "product"  # a reduction accumulating products: matmul, dense, conv
    REDUCTION = "reduction"


def _kind(block: Block) -> BlockKind | None:
    pattern = block_pattern(block)
    if pattern <= OpPattern.INJECTIVE:
        return BlockKind.SPATIAL
    return {
        OpPattern.OUT_EWISE_FUSABLE: BlockKind.PRODUCT,
        OpPattern.COMM_REDUCE: BlockKind.REDUCTION,
    }.get(pattern)


def _loads(e) -> list[BufferLoad]:
    found: list[BufferLoad] = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, BufferLoad) else None)
    return found


def _uses(e, var: Var) -> bool:
    found: list = []
    post_order_visit(e, lambda n: found.append(n) if n is var else None)
    return bool(found)


def _last_spatial_var(block: Block, min_spatial: int = 2) -> Var | None:
    """The iterator of the last spatial axis (the output column j) of a block with at least
    `min_spatial` spatial iterators followed by at least one reduction iterator; None for any
    other block."""
    types = [iv.iter_type for iv in block.iter_vars]
    n_spatial = next((k for k, t in enumerate(types) if t != IterType.DataPar), len(types))
    if n_spatial < min_spatial or n_spatial == len(types):
        return None
    if any(t != IterType.CommReduce for t in types[n_spatial:]):
        return None
    return block.iter_vars[n_spatial - 1].var


def _product_term(block: Block):
    """`X * Y` of `C[..] = C[..] + X * Y`, or None when `block` is not a product accumulation."""
    store = block.body
    if (
        not isinstance(store, BufferStore)
        or block_pattern(block) is not OpPattern.OUT_EWISE_FUSABLE
    ):
        return None
    value = store.value
    if not isinstance(value, Add):
        return None
    acc_first = isinstance(value.a, BufferLoad) and value.a.buffer is store.buffer
    return value.b if acc_first else value.a


def _contiguous_along(load: BufferLoad, var: Var) -> bool:
    """`load` indexes `var` exactly in its last dimension and nowhere else (a 0-d load, a
    scalar operand, does not)."""
    if not load.indices:
        return False
    *outer, last = load.indices
    return last is var and not any(_uses(i, var) for i in outer)


def _contiguous_in_panel(load: BufferLoad, var: Var, block: Block) -> bool:
    """`_contiguous_along`, or `var` plus an offset made of the block's other spatial
    iterators in the last dimension (`v[.., k, h * 64 + j]`: head h's columns of a
    projection holding all heads, once the reshape's divisions fold): still consecutive
    elements along `var`, from a column panel fixed for each output tile. An offset with a
    reduction iterator (a conv's sliding `x + rx`) is not one: those blocks keep their rules."""
    if _contiguous_along(load, var):
        return True
    if not load.indices:
        return False
    *outer, last = load.indices
    if not isinstance(last, Add) or any(_uses(i, var) for i in outer):
        return False
    a, b = _widened(last.a), _widened(last.b)
    offset = last.b if a is var else last.a if b is var else None
    if offset is None or _uses(offset, var):
        return False
    spatial = {id(iv.var) for iv in block.iter_vars if iv.iter_type == IterType.DataPar}
    found: list = []
    post_order_visit(offset, lambda n: found.append(n) if isinstance(n, Var) else None)
    return all(id(v) in spatial for v in found)


def _widened(e):
    """`x` for a cast of the integer `x` to an integer type at least as wide (TE's int32
    iterators indexing an int64 reshape): the same value; `e` itself otherwise."""
    widening = (
        isinstance(e, Cast)
        and e.dtype.is_int
        and e.value.dtype.is_int
        and e.dtype.bits >= e.value.dtype.bits
    )
    return e.value if widening else e


def _transposed_along(load: BufferLoad, var: Var, block: Block) -> bool:
    """`load` reads `B[.., var, k]`: `var` exactly in the second-to-last dimension and nowhere
    else, a reduction iterator k in the last (the weight of `x @ W.T` in [N, K] layout)."""
    if len(load.indices) < 2:
        return False
    *outer, row, last = load.indices
    return row is var and _is_reduce_var((last,), block) and not any(_uses(i, var) for i in outer)


def _is_reduce_var(exprs: tuple, block: Block) -> bool:
    """`exprs` is one reduction iterator of `block`, alone."""
    return (
        len(exprs) == 1
        and isinstance(exprs[0], Var)
        and any(iv.var is exprs[0] for iv in block.iter_vars if iv.iter_type == IterType.CommReduce)
    )


def is_matmul(block: Block) -> bool:
    """`C[.., i, j] = C[.., i, j] + A[..] * B[.., j]` with spatial loops first: the loads
    that depend on the last spatial iterator j (B) read it contiguously, or transposed
    (`B[.., j, k]`, packed into column panels before the tile reads it), the others (A) are
    broadcast along j, and the output is contiguous along j; a vector along j then reads and
    writes contiguous memory. With no A (a blocked depthwise conv
    `Y[.., ow, ci] += X[.., ow + kw, ci] * W[.., kw, ci]`) the tile multiplies vectors."""
    j = _last_spatial_var(block)
    term = _product_term(block)
    if j is None or term is None or not _contiguous_along(block.body, j):
        return False
    by_j = [_uses(ld, j) for ld in _loads(term)]
    if not any(by_j):
        return False
    return all(
        _contiguous_in_panel(ld, j, block) or _transposed_along(ld, j, block)
        for ld, uses in zip(_loads(term), by_j)
        if uses
    )


def _calls(block: Block, op: Op) -> bool:
    """`block`'s body calls `op`."""
    return _calls_any(block, frozenset((op,)))


def _calls_any(block: Block, ops: frozenset) -> bool:
    """`block`'s body calls one of `ops`."""
    found: list = []
    post_order_visit(
        block.body, lambda n: found.append(n) if isinstance(n, Call) and n.op in ops else None
    )
    return bool(found)


def _is_conditional(e) -> bool:
    """`e` holds a Select or an if_then_else (a padding producer's border test)."""
    found: list = []
    post_order_visit(
        e,
        lambda n: (
            found.append(n)
            if isinstance(n, Select) or isinstance(n, Call) and n.op is _IF_THEN_ELSE
            else None
        ),
    )
    return bool(found)
