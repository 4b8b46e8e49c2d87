"""What the design-space rules ask of a block: its kind, its loops' kinds, where it writes."""

from __future__ import annotations

from typing import Any

from ...error import MiniTVMError
from ...target import Target
from ...target.target import enabled_features
from ...tir.expr import IterType, Var
from ...tir.function import PrimFunc
from ...tir.schedule import BlockRV, Schedule
from ...tir.schedule.common import const_int
from ...tir.schedule.tree import block_realizes, find_block
from ...tir.stmt import Block, BlockRealize

TILING_KEY = "meta_schedule.tiling_structure"  # set on tiled blocks: later rules leave them
SKIP_KEY = "schedule_rule"  # a block annotated "None" is left to its author, as in TVM


def func_of(sch: Schedule) -> tuple[str, PrimFunc]:
    """The name and current PrimFunc the schedule works on."""
    gv = sch.func_working_on
    if gv is None:
        raise ValueError("the schedule works on several PrimFuncs; call sch.work_on(name)")
    name = gv.name_hint
    return name, sch.mod[name]


def realize_of(sch: Schedule, block: BlockRV) -> BlockRealize:
    """The BlockRealize of `block` in the schedule's current function."""
    name = sch.get(block).name_hint
    found = find_block(func_of(sch)[1], name)
    assert found is not None, name
    return found[0]


def block_names(func: PrimFunc) -> list[str]:
    """Names of every block (the root first), in program order."""
    return [r.block.name_hint for r, _ in block_realizes(func.body)]


def is_root(func: PrimFunc, name: str) -> bool:
    return isinstance(func.body, BlockRealize) and func.body.block.name_hint == name


def is_subroot(func: PrimFunc, name: str) -> bool:
    """The block sits directly in the root scope (no enclosing block but the root)."""
    found = find_block(func, name)
    if found is None:
        return False
    return sum(isinstance(s, Block) for s in found[1]) <= 1


def is_spatial(block: Block) -> bool:
    return block.init is None and all(iv.iter_type == IterType.DataPar for iv in block.iter_vars)


def has_reduction(block: Block) -> bool:
    return any(iv.iter_type == IterType.CommReduce for iv in block.iter_vars)


def loop_kinds(sch: Schedule, block: BlockRV, loops: list) -> list[str] | None:
    """'S' or 'R' per loop when each loop binds exactly one block iterator directly (the
    trivial binding te.create_prim_func makes); None for any other binding."""
    r = realize_of(sch, block)
    by_var: dict[int, IterType] = {}
    for iv, value in zip(r.block.iter_vars, r.iter_values):
        if const_int(value) is not None and const_int(iv.dom.extent) == 1:
            continue  # a unit iterator bound to 0
        if not isinstance(value, Var) or id(value) in by_var:
            return None
        if iv.iter_type not in (IterType.DataPar, IterType.CommReduce):
            return None
        by_var[id(value)] = iv.iter_type
    kinds = []
    for lp in loops:
        kind = by_var.pop(id(sch.get(lp).loop_var), None)
        if kind is None:
            return None
        kinds.append("S" if kind == IterType.DataPar else "R")
    return kinds if not by_var else None


def param_buffers(func: PrimFunc) -> set[int]:
    return {id(b) for b in func.buffer_map.values()}


def writes_output(func: PrimFunc, block: Block) -> bool:
    params = param_buffers(func)
    return any(id(w.buffer) in params for w in block.writes)


def consumers_of(func: PrimFunc, block: Block) -> list[Block]:
    """Blocks (other than `block`) that read a buffer `block` writes."""
    written = {id(w.buffer) for w in block.writes}
    return [
        r.block
        for r, _ in block_realizes(func.body)
        if r.block is not block and any(id(rd.buffer) in written for rd in r.block.reads)
    ]


_VECTOR_BITS = (("avx512f", 512), ("avx", 256), ("sse2", 128), ("neon", 128))


def vector_bits(target: Target | None) -> int:
    """The widest vector register of the target's CPU, read from its features (128 if unknown)."""
    if target is None:
        target = Target("llvm")
    try:
        features = target.required_features or enabled_features(target.features)
    except MiniTVMError:  # a non-CPU target has no CPU features: the portable width
        return 128
    return next((bits for name, bits in _VECTOR_BITS if name in features), 128)


def vector_lanes(target: Target | None, dtype_bits: int = 32) -> int:
    return max(1, vector_bits(target) // dtype_bits)


def num_cores(target: Target | None) -> int:
    """`--num-cores` of the target, else the cores of this machine."""
    n = getattr(target, "num_cores", None)
    if n:
        return int(n)
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def as_target(target: Any) -> Target | None:
    """A Target from a Target or string; TVM's `--num-cores=N` spelling is accepted."""
    if isinstance(target, str):
        target = Target(target.replace("--num-cores", "-num-cores"))
    return target


def target_of(context: Any) -> Target | None:
    return as_target(getattr(context, "target", None))
