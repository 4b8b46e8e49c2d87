"""BlockDependenceInfo: block-only srefs (a block's parent is its scope block) and the RAW /
WAW / WAR dependencies between sibling blocks, without building a Schedule."""

import pytest

from minitvm import tir
from minitvm.error import ScheduleError
from minitvm.script import tir as T
from minitvm.tir import BlockDependenceInfo
from minitvm.tir.schedule.block_scope import DepKind


@T.prim_func
def _chain(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,), "float32")
    for i in range(8):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] * 2.0
    for i in range(8):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi] + 1.0
    for i in range(8):
        with T.block("A"):
            vi = T.axis.remap("S", [i])
            A[vi] = C[vi]


def _blocks(func):
    out = {}
    tir.post_order_visit(
        func.body, lambda n: out.setdefault(n.name_hint, n) if isinstance(n, tir.Block) else None
    )
    return out


def test_dependencies_between_sibling_blocks():
    info = BlockDependenceInfo(_chain)
    blocks = _blocks(_chain)
    b, c, a = (info.get_sref(blocks[n]) for n in "BCA")
    assert b.parent is c.parent is a.parent and b.parent.stmt is blocks["root"]
    scope = info.get_block_scope(b.parent)
    kinds = {(d.src.stmt.name_hint, d.dst.stmt.name_hint, d.kind) for d in scope.get_deps_by_src(b)}
    assert ("B", "C", DepKind.RAW) in kinds
    assert ("B", "A", DepKind.WAR) in kinds  # B reads A, then block "A" overwrites it
    by_dst = {(d.src.stmt.name_hint, d.kind) for d in scope.get_deps_by_dst(a)}
    assert by_dst >= {("C", DepKind.RAW), ("B", DepKind.WAR)}
    assert info.get_sref(blocks["B"]) is b


def test_tir_block_scope_is_the_schedule_module():
    import importlib

    alias = importlib.import_module("minitvm.tir.block_scope")
    assert alias.DepKind is DepKind  # one module under TVM's name, not a copy


def test_scope_of_a_foreign_sref_is_an_error():
    info = BlockDependenceInfo(_chain)
    with pytest.raises(ScheduleError, match="not the sref of a block of this module"):
        info.get_block_scope(tir.StmtSRef(_blocks(_chain)["B"]))
    with pytest.raises(ScheduleError, match="takes an IRModule or a PrimFunc"):
        BlockDependenceInfo("main")
