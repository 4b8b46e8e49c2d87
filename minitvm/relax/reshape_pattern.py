"""`relax.analysis.has_reshape_pattern`: is a PrimFunc a pure reshape (every output element is
the input element at the same row-major position)? Such kernels can become free views."""

from __future__ import annotations

from typing import Any

from ..arith import Analyzer, iter_map_simplify
from ..error import MiniTVMError
from ..tir.expr import BufferLoad, IterType, PrimExpr
from ..tir.function import PrimFunc
from ..tir.functor import post_order_visit
from ..tir.stmt import Block, BufferStore


def _flat_index(indices: tuple, shape: tuple) -> PrimExpr:
    flat: Any = 0
    for i, d in zip(indices, shape):
        flat = flat * d + i
    return flat


def has_reshape_pattern(func: PrimFunc) -> bool:
    """True when `func` has one block, spatial only, whose body is `Out[idx] = In[idx2]` with
    the row-major positions of idx in Out and idx2 in In provably equal on the block's domain.
    Anything it cannot prove (a bias, several blocks, a reduction, data-dependent loops) is
    False: a false negative only loses an optimisation."""
    if not isinstance(func, PrimFunc):
        raise MiniTVMError(
            f"relax.analysis.has_reshape_pattern: expected a tir.PrimFunc, got {type(func).__name__}"
        )
    blocks: list[Block] = []
    stores: list[BufferStore] = []
    post_order_visit(
        func.body,
        lambda n: (
            blocks.append(n)
            if isinstance(n, Block)
            else (stores.append(n) if isinstance(n, BufferStore) else None)
        ),
    )
    inner = [b for b in blocks if b.iter_vars]  # the root block has no iterators
    if len(inner) != 1 or len(stores) != 1:
        return False
    block, store = inner[0], stores[0]
    if block.init is not None or not isinstance(store.value, BufferLoad):
        return False
    if any(iv.iter_type != IterType.DataPar or iv.dom is None for iv in block.iter_vars):
        return False
    load = store.value
    dom = {iv.var: iv.dom for iv in block.iter_vars}
    out_flat = _flat_index(store.indices, store.buffer.shape)
    in_flat = _flat_index(load.indices, load.buffer.shape)
    ana = Analyzer()
    for var, rng in dom.items():
        ana.bind(var, rng)
    if ana.can_prove_equal(out_flat, in_flat):
        return True
    # positions written as fused/split digits ((i*3 + j) // 24 * 24 + ...) first fold back
    out_s, in_s = iter_map_simplify([out_flat, in_flat], dom, check_level="no_check")
    return ana.can_prove_equal(out_s, in_s)


__all__ = ["has_reshape_pattern"]
