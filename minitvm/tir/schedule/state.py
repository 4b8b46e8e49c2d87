"""ScheduleState: the module being scheduled, its sref tree and per-block flags.

IR nodes are immutable, so the sref tree is derived from the current module on demand: a
StmtSRef stays the same object for a Block/For node as long as that node is in the module
(its parent is refreshed when the tree around it changes); a node that left the module gets
`stmt = None`, as an expired sref in TVM.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from enum import IntFlag
from typing import Any

from ...error import ScheduleError
from ...ir.module import IRModule
from ..analysis.region import loop_domain, region_interval
from ..expr import GE, GT, LE, LT, And, IntImm, Max, Min, Sub, binary
from ..expr_build import flatten_operands
from ..function import PrimFunc
from ..functor import substitute
from ..stmt import Block, BlockRealize, For, ForKind
from .block_scope import BlockScope, Dependency, DepKind
from .common import analyzer, const_int, is_quasi_affine
from .race import Unknown, eval_int
from .tree import replace_stmt, uses_var, vars_in, walk


class UnknownRVError(ScheduleError, IndexError):
    """A random variable that this schedule does not know (removed, or from another one)."""


class StmtSRef:
    """A reference to a Block or For of the scheduled module, with its parent sref."""

    __slots__ = ("__weakref__", "parent", "seq_index", "stmt")

    def __init__(self, stmt: Any, parent: StmtSRef | None = None, seq_index: int = -1) -> None:
        self.stmt = stmt
        self.parent = parent
        self.seq_index = seq_index

    def same_as(self, other: Any) -> bool:
        return self is other

    @staticmethod
    def inline_mark() -> StmtSRef:
        """The sref that stands for "compute inline" in sample_compute_location."""
        return _INLINE_MARK

    @staticmethod
    def root_mark() -> StmtSRef:
        """The sref that stands for "compute at root" in sample_compute_location."""
        return _ROOT_MARK

    def __repr__(self) -> str:
        if self.stmt is None:
            return "StmtSRef(expired)"
        what = self.stmt.name_hint if isinstance(self.stmt, Block) else self.stmt.loop_var.name
        return f"StmtSRef({type(self.stmt).__name__} {what})"


_INLINE_MARK = StmtSRef(None)
_ROOT_MARK = StmtSRef(None)


class ScheduleDebugMask(IntFlag):
    """Extra checks a schedule may run after each change (`debug_mask=`; "all" sets both)."""

    VERIFY_SREF_TREE = 1
    VERIFY_CACHED_FLAGS = 2


def parse_debug_mask(mask: Any) -> int:
    """ "all", "none" or an int of ScheduleDebugMask bits, as TVM's Schedule takes it."""
    named = {
        "all": int(ScheduleDebugMask.VERIFY_SREF_TREE | ScheduleDebugMask.VERIFY_CACHED_FLAGS),
        "none": 0,
    }
    if isinstance(mask, str) and mask in named:
        return named[mask]
    if isinstance(mask, int) and not isinstance(mask, bool) and 0 <= mask <= named["all"]:
        return int(mask)
    raise ScheduleError(
        f"debug_mask must be 'all', 'none' or an int of ScheduleDebugMask bits, got {mask!r}"
    )


@dataclass(frozen=True)
class CachedFlags:
    """Per-block facts TVM caches: affine bindings, region cover, stage pipeline."""

    affine_binding: bool
    region_cover: bool
    stage_pipeline: bool


class ScheduleState:
    """The state of a schedule: `mod`, srefs of its blocks/loops, block scopes and flags."""

    def __init__(
        self,
        mod: IRModule | PrimFunc | None = None,
        *,
        debug_mask: Any = "none",
        enable_check: bool = True,
        _owner: Any = None,
    ) -> None:
        if _owner is None:
            if isinstance(mod, PrimFunc):
                mod = IRModule({"main": mod})
            if not isinstance(mod, IRModule):
                raise ScheduleError(
                    f"ScheduleState takes an IRModule or a PrimFunc, got {type(mod).__name__}"
                )
        self._own_mod = mod
        self._owner = _owner
        self.debug_mask = parse_debug_mask(debug_mask)
        self.enable_check = enable_check
        self._srefs: dict[int, StmtSRef] = {}
        self._built_for: tuple = ()
        self._flags: dict[int, CachedFlags] = {}
        self._scopes: dict[int, BlockScope] = {}

    @property
    def mod(self) -> IRModule:
        return self._owner._mod if self._owner is not None else self._own_mod

    # ---------------------------------------------------------------- sref tree
    def _funcs(self) -> list[PrimFunc]:
        return [f for _, f in self.mod.items() if isinstance(f, PrimFunc)]

    def _refresh(self) -> None:
        funcs = tuple(self._funcs())
        if len(funcs) == len(self._built_for) and all(
            a is b for a, b in zip(funcs, self._built_for)
        ):
            return
        alive: dict[int, StmtSRef] = {}
        for func in funcs:
            self._build(func, alive)
        for key, sref in self._srefs.items():
            if key not in alive:
                sref.stmt = None
                sref.parent = None
        self._srefs = alive
        self._built_for = funcs
        self._flags.clear()
        self._scopes.clear()

    def _build(self, func: PrimFunc, alive: dict[int, StmtSRef]) -> None:
        for s, path in walk(func.body):
            if not isinstance(s, Block | For):
                continue
            parent = next((p for p in reversed(path) if isinstance(p, Block | For)), None)
            sref = self._srefs.get(id(s))
            if sref is None or sref.stmt is not s:
                sref = StmtSRef(s)
            sref.parent = alive.get(id(parent)) if parent is not None else None
            alive[id(s)] = sref

    def get_sref(self, stmt: Any) -> StmtSRef | None:
        """The sref of a Block or For node of the current module (None if it is not in it)."""
        if not isinstance(stmt, Block | For):
            raise ScheduleError(f"get_sref takes a Block or For node, got {type(stmt).__name__}")
        self._refresh()
        return self._srefs.get(id(stmt))

    def _realize_of(self, block_sref: StmtSRef) -> BlockRealize | None:
        parent = block_sref.parent
        for s, _ in walk(parent.stmt.body if parent is not None else self._func_of(block_sref)):
            if isinstance(s, BlockRealize) and s.block is block_sref.stmt:
                return s
        return None

    def _func_of(self, sref: StmtSRef) -> Any:
        for func in self._funcs():
            if func.body is sref.stmt or any(s is sref.stmt for s, _ in walk(func.body)):
                return func.body
        raise ScheduleError(f"{sref!r} is not in the module")

    def _check_block(self, block_sref: Any, what: str) -> Block:
        if not isinstance(block_sref, StmtSRef) or not isinstance(block_sref.stmt, Block):
            raise ScheduleError(f"{what} takes the StmtSRef of a block, got {block_sref!r}")
        self._refresh()
        if self._srefs.get(id(block_sref.stmt)) is not block_sref:
            raise ScheduleError(f"{what}: {block_sref!r} is not a block of the current module")
        return block_sref.stmt

    def child_blocks(self, scope_sref: StmtSRef) -> list[StmtSRef]:
        """Srefs of the blocks directly inside a scope block, in program order."""
        out = []
        for s, path in walk(scope_sref.stmt.body):
            if isinstance(s, BlockRealize) and not any(isinstance(p, Block) for p in path):
                out.append(self._srefs[id(s.block)])
        return out

    def get_block_scope(self, block_sref: StmtSRef) -> BlockScope:
        """The BlockScope of the scope block `block_sref`."""
        self._check_block(block_sref, "get_block_scope")
        key = id(block_sref.stmt)
        if key not in self._scopes:
            self._scopes[key] = BlockScope(self.child_blocks(block_sref))
        return self._scopes[key]

    # ---------------------------------------------------------------- cached flags
    def _get_cached_flags(self, block_sref: StmtSRef) -> CachedFlags:
        """affine_binding, region_cover and stage_pipeline of a block, computed from the IR."""
        block = self._check_block(block_sref, "_get_cached_flags")
        key = id(block)
        if key not in self._flags:
            self._compute_flags(block_sref)
        return self._flags[key]

    def _compute_flags(self, block_sref: StmtSRef) -> None:
        scope = _scope_sref(block_sref)
        if scope is None:  # the root block
            self._flags[id(block_sref.stmt)] = CachedFlags(
                affine_binding=True,
                region_cover=True,
                stage_pipeline=self._stage_pipeline(block_sref),
            )
            return
        covers = self._region_cover(scope)
        for child in self.child_blocks(scope):
            realize = self._realize_of(child)
            self._flags[id(child.stmt)] = CachedFlags(
                affine_binding=all(is_quasi_affine(v) for v in realize.iter_values),
                region_cover=covers[id(child.stmt)],
                stage_pipeline=self._stage_pipeline(child),
            )

    def _stage_pipeline(self, scope: StmtSRef) -> bool:
        if not self.child_blocks(scope):
            return True
        return self.get_block_scope(scope).stage_pipeline_deps and all(
            self._region_cover(scope).values()
        )

    def _region_cover(self, scope: StmtSRef) -> dict[int, bool]:
        """For each child block of `scope`: does what its producers write cover what it reads?"""
        deps = self.get_block_scope(scope)
        out = {}
        for child in self.child_blocks(scope):
            producers = [d.src for d in deps.get_deps_by_dst(child) if d.kind == DepKind.RAW]
            out[id(child.stmt)] = all(
                self._covered(
                    scope, child, [p for p in producers if _writes(p, region.buffer)], region
                )
                for region in child.stmt.reads
                if any(_writes(p, region.buffer) for p in producers)
            )
        return out

    def _covered(self, scope: StmtSRef, consumer: StmtSRef, producers: list, read: Any) -> bool:
        """Do the producers' writes (a lower bound) cover the consumer's read (an upper bound)
        of one buffer, both taken over the loops below their lowest common ancestor?"""
        lca = _lca([consumer, *producers], scope)
        outer = [s.stmt for s in _ancestors(lca, scope) if isinstance(s.stmt, For)]
        ana = analyzer(outer)
        consumed = self._relaxed(consumer, read, lca, ana)[0]
        pieces = []
        for p in producers:
            for region in p.stmt.writes:
                if region.buffer is read.buffer:
                    piece = self._produced(p, region, lca, ana)
                    if piece is not None:  # unknown: counted as writing nothing (a lower bound)
                        pieces.append(piece)
        if not pieces:
            return False
        for dim, extent in enumerate(read.buffer.shape):
            have = _union([piece[dim] for piece in pieces], ana)
            need = consumed[dim]
            if have is None or need is None:
                return False
            have, need = _clip(have, extent, ana), _clip(need, extent, ana)
            if not (ana.can_prove(have[0] <= need[0]) and ana.can_prove(need[1] <= have[1])):
                return False
        return True

    def _relaxed(self, block_sref: StmtSRef, region: Any, lca: StmtSRef, ana: Any) -> tuple:
        """(per-dimension intervals, bound region, relaxed loops) of `region` of a block over
        the loops between it and `lca`."""
        realize = self._realize_of(block_sref)
        binding = {iv.var: v for iv, v in zip(block_sref.stmt.iter_vars, realize.iter_values)}
        inner = [s.stmt for s in _ancestors(block_sref.parent, lca) if isinstance(s.stmt, For)]
        # threads that share the buffer's memory run the other iterations of their loops
        scope = _scope_sref(block_sref)
        inner += [
            s.stmt
            for s in _ancestors(lca, scope)
            if isinstance(s.stmt, For) and _shares_memory(s.stmt, region.buffer.scope())
        ]
        bound = substitute(region, binding)
        return region_interval(bound, loop_domain(inner), ana.simplify), bound, inner

    def _produced(self, block_sref: StmtSRef, region: Any, lca: StmtSRef, ana: Any) -> Any:
        """Intervals the block surely writes: each dimension dense in at most one relaxed loop
        (no strides, no diagonals) and cut by the bounds its predicate puts on the index;
        None when that cannot be shown."""
        from ...arith.affine import affine_coeffs  # arith imports tir: import at call time

        intervals, bound, inner = self._relaxed(block_sref, region, lca, ana)
        loop_vars = [f.loop_var for f in inner]
        predicate = self._realize_of(block_sref).predicate
        if not _dense(bound, loop_vars, ana, affine_coeffs):
            return _enumerated_box(bound, inner, predicate, ana)
        if const_int(predicate) == 1:
            return intervals
        predicate = _drop_free_guards(predicate, bound, inner, ana)
        if predicate is None:
            return None
        if const_int(predicate) == 1:
            return intervals
        mins = [r.min for r in bound.region]
        return _cut_by_predicate(intervals, mins, predicate, loop_vars, ana)

    # ---------------------------------------------------------------- replace
    def replace(self, src_sref: StmtSRef, tgt_stmt: Any, block_sref_reuse: Any = None) -> None:
        """Put `tgt_stmt` where `src_sref`'s statement is (srefs of reused blocks follow)."""
        if not isinstance(src_sref, StmtSRef) or src_sref.stmt is None:
            raise ScheduleError(f"replace: {src_sref!r} does not point into the module")
        old = src_sref.stmt
        self._refresh()
        for gv, func in self.mod.items():
            if not isinstance(func, PrimFunc) or not any(s is old for s, _ in walk(func.body)):
                continue
            new_func = replace_stmt(func, old, tgt_stmt)
            if self._owner is not None:
                self._owner._update(gv.name_hint, new_func)
            else:  # copy on write: a module the caller holds stays as it was
                self._own_mod = self._own_mod.copy()
                self._own_mod[gv.name_hint] = new_func
            for old_block, new_block in dict(block_sref_reuse or {}).items():
                sref = self._srefs.pop(id(old_block), None)
                if sref is not None:
                    sref.stmt = new_block
                    self._srefs[id(new_block)] = sref
            if type(tgt_stmt) is type(old) and isinstance(old, Block | For):
                self._srefs.pop(id(old), None)
                src_sref.stmt = tgt_stmt
                self._srefs[id(tgt_stmt)] = src_sref
            self._refresh()  # srefs of statements that left the module expire now
            return
        raise ScheduleError(f"replace: {src_sref!r} is not in any function of the module")


_SHARING_THREADS = {  # storage scope -> thread tags whose threads all see one copy of it
    "global": ("blockIdx", "threadIdx", "vthread"),
    "shared": ("threadIdx", "vthread"),
    "shared.dyn": ("threadIdx", "vthread"),
    "warp": ("threadIdx.x",),
}


def _shares_memory(loop: For, storage_scope: str) -> bool:
    """Is `loop` bound to a thread axis whose threads share buffers of this storage scope?"""
    if loop.kind != ForKind.THREAD_BINDING or loop.thread_binding is None:
        return False
    tag = loop.thread_binding.thread_tag
    return any(tag.startswith(t) for t in _SHARING_THREADS.get(storage_scope, ()))


def _dense(bound: Any, loop_vars: list, ana: Any, affine_coeffs: Any) -> bool:
    """Is each dimension's index `c * v + rest` with |c| <= the access extent, in at most one
    relaxed loop variable, and no variable shared by two dimensions (no stride, no diagonal)?"""
    taken: set[int] = set()
    for r in bound.region:
        form = affine_coeffs(r.min, loop_vars, ana)
        extent = const_int(r.extent)
        if form is None or extent is None:
            return False
        used = [(v, c) for v, c in form[0].items() if c]
        if len(used) > 1 or (used and (abs(used[0][1]) > extent or id(used[0][0]) in taken)):
            return False
        taken.update(id(v) for v, _ in used)
    return True


_MAX_POINTS = 1 << 16


def _enumerated_box(bound: Any, inner: list, predicate: Any, ana: Any) -> list | None:
    """The box a constant loop nest writes, found by running its iterations, when what it
    writes is exactly a box (shifted by terms of the outer loops); else None."""
    inner_ids = _ids([f.loop_var for f in inner])
    ranges = [(const_int(f.min), const_int(f.extent)) for f in inner]
    total = 1
    for lo, ext in ranges:
        if lo is None or ext is None:
            return None
        total *= ext
    extents = [const_int(r.extent) for r in bound.region]
    if total * max([1, *[e or 0 for e in extents]]) > _MAX_POINTS or None in extents:
        return None
    if uses_var(predicate, {id(v) for v in vars_in(predicate)} - inner_ids):
        return None
    inner_parts, offsets = [], []
    for r in bound.region:  # index = (terms of inner loops) + (terms of outer loops only)
        outer = {v: IntImm(v.dtype, 0) for v in vars_in(r.min) if id(v) not in inner_ids}
        part = ana.simplify(substitute(r.min, outer))
        offset = ana.simplify(r.min - part)
        if uses_var(offset, inner_ids):
            return None
        inner_parts.append(part)
        offsets.append(offset)
    points = set()
    try:
        for values in itertools.product(*(range(lo, lo + ext) for lo, ext in ranges)):
            env = {id(f.loop_var): v for f, v in zip(inner, values)}
            if not eval_int(predicate, env):
                continue
            starts = [eval_int(p, env) for p in inner_parts]
            for delta in itertools.product(*(range(e) for e in extents)):
                points.add(tuple(a + d for a, d in zip(starts, delta)))
    except Unknown:
        return None
    if not points:
        return None
    lows = [min(p[d] for p in points) for d in range(len(extents))]
    highs = [max(p[d] for p in points) for d in range(len(extents))]
    size = 1
    for lo, hi in zip(lows, highs):
        size *= hi - lo + 1
    if size != len(points):
        return None
    return [
        (ana.simplify(off + lo), ana.simplify(off + hi))
        for off, lo, hi in zip(offsets, lows, highs)
    ]


_BOUND_FORMS = {  # comparison class -> (side the index is on, bound kind, offset to inclusive)
    LT: (("a", "hi", -1), ("b", "lo", 1)),
    LE: (("a", "hi", 0), ("b", "lo", 0)),
    GT: (("a", "lo", 1), ("b", "hi", -1)),
    GE: (("a", "lo", 0), ("b", "hi", 0)),
}


def _drop_free_guards(predicate: Any, bound: Any, inner: list, ana: Any) -> Any:
    """`predicate` without its conjuncts over relaxed loops that index nothing written (the
    guard of a reduction loop split by a factor that does not divide it): they choose which
    iterations run, not which elements are written, so they are dropped when each holds with
    those loops at their first iteration for every value of the others (each element is then
    written at least once); None when one might not."""
    conjs = flatten_operands(predicate, And)
    region_ids = {id(v) for r in bound.region for v in vars_in((r.min, r.extent))}
    free = [f for f in inner if id(f.loop_var) not in region_ids]
    free_ids = {id(f.loop_var) for f in free}
    kept = [c for c in conjs if not uses_var(c, free_ids)]
    if len(kept) == len(conjs):
        return predicate
    at_min = {f.loop_var: f.min for f in free}
    inner_ana = analyzer(inner)  # `ana` knows only the loops above: bind these in a new one
    for c in conjs:
        if uses_var(c, free_ids) and not inner_ana.can_prove(substitute(c, at_min)):
            return None
    out: Any = IntImm("bool", 1)
    for c in kept:
        out = c if const_int(out) == 1 else And(out, c)
    return out


def _cut_by_predicate(intervals: list, mins: list, predicate: Any, loop_vars: list, ana: Any):
    """Intersect per-dimension intervals with the bounds each conjunct of `predicate` puts on
    one index (`c <= idx + k`, `idx + k < c`, ...); None if a conjunct bounds no index."""
    out = list(intervals)
    for conj in flatten_operands(predicate, And):
        forms = _BOUND_FORMS.get(type(conj))
        if forms is None:
            return None
        for side, kind, shift in forms:
            expr, other = (conj.a, conj.b) if side == "a" else (conj.b, conj.a)
            if uses_var(other, {id(v) for v in loop_vars}):
                continue
            dim = next(
                (
                    d
                    for d, m in enumerate(mins)
                    if out[d] is not None and not uses_var(ana.simplify(expr - m), _ids(loop_vars))
                ),
                None,
            )
            if dim is None:
                continue
            bound = ana.simplify(other - (expr - mins[dim]) + shift)
            lo, hi = out[dim]
            out[dim] = (
                (binary(Max, lo, bound), hi) if kind == "lo" else (lo, binary(Min, hi, bound))
            )
            break
        else:
            return None
    return out


def _ids(vars_: list) -> set[int]:
    return {id(v) for v in vars_}


def _writes(sref: StmtSRef, buffer: Any) -> bool:
    return any(w.buffer is buffer for w in sref.stmt.writes)


def _scope_sref(sref: StmtSRef) -> StmtSRef | None:
    p = sref.parent
    while p is not None and not isinstance(p.stmt, Block):
        p = p.parent
    return p


def _ancestors(sref: StmtSRef | None, stop: StmtSRef) -> list[StmtSRef]:
    """Srefs from `sref` up to (excluding) `stop`."""
    out = []
    while sref is not None and sref is not stop:
        out.append(sref)
        sref = sref.parent
    return out


def _lca(srefs: list[StmtSRef], scope: StmtSRef) -> StmtSRef:
    paths = [list(reversed(_ancestors(s.parent, scope))) for s in srefs]
    lca = scope
    for level in zip(*paths):
        if all(x is level[0] for x in level):
            lca = level[0]
        else:
            break
    return lca


def _union(intervals: list, ana: Any) -> tuple | None:
    """One interval equal to the union of `intervals`, or None when they leave a gap."""
    if not intervals or any(i is None for i in intervals):
        return None
    consts = [(const_int(lo), const_int(hi)) for lo, hi in intervals]
    if all(lo is not None and hi is not None for lo, hi in consts):
        consts.sort()
        lo, hi = consts[0]
        for a, b in consts[1:]:
            if a > hi + 1:
                return None
            hi = max(hi, b)
        first = intervals[0][0]
        return (
            type(first)(first.dtype, lo) if hasattr(first, "dtype") else lo,
            type(first)(first.dtype, hi) if hasattr(first, "dtype") else hi,
        )
    first = intervals[0]
    if all(
        ana.can_prove_equal(i[0], first[0]) and ana.can_prove_equal(i[1], first[1])
        for i in intervals
    ):
        return first
    return None


def _clip(interval: tuple, extent: Any, ana: Any) -> tuple:
    lo, hi = interval
    return (ana.simplify(binary(Max, lo, 0)), ana.simplify(binary(Min, hi, binary(Sub, extent, 1))))


__all__ = [
    "BlockScope",
    "CachedFlags",
    "DepKind",
    "Dependency",
    "ScheduleDebugMask",
    "ScheduleState",
    "StmtSRef",
]
