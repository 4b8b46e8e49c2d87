"""The fusion kind of a TIR block or PrimFunc (TVM's OpPatternKind), read from its stores.

Each block is classified from its single BufferStore and the loads in it, the function takes
the strongest kind of its blocks:
  elementwise  every load indexes like the store           T[i, j] = A[i, j] + B[i, j]
  broadcast    loads index with a subsequence of the store  T[i, j] = A[i, j] + B[j]
  injective    any other spatial block                      T[i, j] = A[j, i]
  out-ewise    a reduction accumulating a product           C[i, j] += A[i, k] * B[k, j]
  reduce       any other reduction                          S[i] += A[i, k]
  opaque       no blocks, a block that is not one store, or an opaque call
"""

from __future__ import annotations

import enum

from ..expr import Add, BufferLoad, Call, IntImm, IterType, Mul, Var
from ..function import PrimFunc
from ..functor import post_order_visit
from ..stmt import Block, BlockRealize, BufferStore


class OpPattern(enum.IntEnum):
    """How an op's kernel may fuse (TVM's numbering, used by AnnotateTIROpPattern / FuseOps)."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_EWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


def _loads(e) -> list[BufferLoad]:
    found: list[BufferLoad] = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, BufferLoad) else None)
    return found


def _is_opaque_call(n) -> bool:
    """An extern symbol or an impure intrinsic: nothing may be fused around it."""
    return isinstance(n, Call) and (isinstance(n.op, str) or not n.op.pure)


def _has_opaque_call(e) -> bool:
    found: list = []
    post_order_visit(e, lambda n: found.append(n) if _is_opaque_call(n) else None)
    return bool(found)


def _is_subsequence(indices: tuple, of: tuple) -> bool:
    """Every index is a var of `of`, in the same order (constant 0s index size-1 dims)."""
    pos = 0
    for idx in indices:
        if isinstance(idx, IntImm) and idx.value == 0:
            continue
        if not isinstance(idx, Var):
            return False
        while pos < len(of) and of[pos] is not idx:
            pos += 1
        if pos == len(of):
            return False
        pos += 1
    return True


def _same_indices(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _has_mul(e) -> bool:
    found: list = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, Mul) else None)
    return bool(found)


def _is_product_accumulation(store: BufferStore) -> bool:
    """`C[..] = C[..] + X * Y` (possibly with casts): the shape of matmul, dense and conv."""
    value = store.value
    if not isinstance(value, Add):
        return False
    for acc, term in ((value.a, value.b), (value.b, value.a)):
        if isinstance(acc, BufferLoad) and acc.buffer is store.buffer:
            return _has_mul(term) and len(_loads(term)) >= 2
    return False


def block_pattern(block: Block) -> OpPattern:
    """The fusion kind of one block (see the module docstring)."""
    store = block.body
    if not isinstance(store, BufferStore) or _has_opaque_call(store.value):
        return OpPattern.OPAQUE
    if any(iv.iter_type == IterType.CommReduce for iv in block.iter_vars):
        if _is_product_accumulation(store):
            return OpPattern.OUT_EWISE_FUSABLE
        return OpPattern.COMM_REDUCE
    if any(iv.iter_type != IterType.DataPar for iv in block.iter_vars):
        return OpPattern.OPAQUE
    if not all(isinstance(i, Var) for i in store.indices):
        return OpPattern.INJECTIVE
    kind = OpPattern.ELEMWISE
    for load in _loads(store.value):
        if _same_indices(load.indices, store.indices):
            continue
        if _is_subsequence(load.indices, store.indices):
            kind = max(kind, OpPattern.BROADCAST)
        else:
            return OpPattern.INJECTIVE
    return kind


def func_pattern(func: PrimFunc) -> OpPattern:
    """The fusion kind of a PrimFunc: the strongest kind of its (non-root) blocks."""
    blocks: list[Block] = []

    def collect(n) -> None:
        if isinstance(n, BlockRealize):
            blocks.append(n.block)

    post_order_visit(func.body, collect)
    root = func.body.block if isinstance(func.body, BlockRealize) else None
    inner = [b for b in blocks if b is not root]
    if not inner:
        return OpPattern.OPAQUE
    return max(block_pattern(b) for b in inner)


__all__ = ["OpPattern", "block_pattern", "func_pattern"]
