"""InstrumentProfileIntrinsics (TVM's light-weight profiling pass): chosen loops are wrapped
in `start_profile_intrinsic(id)` / `end_profile_intrinsic(id)` calls, as is each function
unless "tir.lwp_disable_func_prof" is set.

Ids come from one counter shared by all runs (TVM's; "tir.reset_start_id" restarts it at 0):
each function takes one, then its loops take one each in program order. A loop is
instrumented when it is not inside (or under) a parallel loop, its height (loop levels
below it, counting the tallest sibling met so far) is at least "tir.lwp_min_height"
(default 1), and either it has sibling loops ("tir.instr_siblings", the default) or, with
siblings off, its depth is at most "tir.lwp_max_depth" (default 0). Loops inside blocks are
not looked at.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...ir.module import IRModule
from ...ir.transform import Pass
from ..expr import Call, IntImm, Op
from ..function import PrimFunc
from ..functor import Mutator, Visitor
from ..stmt import Allocate, AttrStmt, Evaluate, For, ForKind, IfThenElse, LetStmt, SeqStmt, Stmt


class _Counter:
    """TVM's process-wide start id."""

    next_id = 0

    @classmethod
    def take(cls) -> int:
        cls.next_id += 1
        return cls.next_id - 1


@dataclass
class _LoopInfo:
    id: int
    depth: int
    height: int = 0
    has_siblings: bool = False
    has_parallel: bool = False


class _Loops(Visitor):
    """Ids, depths and heights of the loops, following TVM's numbering exactly."""

    def __init__(self) -> None:
        self.loops: dict[int, _LoopInfo] = {}
        self.keep: list[For] = []

    def visit_For(self, loop: For) -> None:  # an outermost loop: nothing above it is traversed
        info = _LoopInfo(_Counter.take(), 0)
        info.height = self._traverse(loop.body, 0)
        self._record(loop, info)

    def _record(self, loop: For, info: _LoopInfo) -> None:
        self.loops[id(loop)] = info
        self.keep.append(loop)

    def _loop(self, loop: For, depth: int, in_parallel: bool) -> tuple[_LoopInfo, int]:
        info = _LoopInfo(_Counter.take(), depth + 1)
        if in_parallel:
            info.has_parallel = True
        parallel_below = in_parallel or loop.kind == ForKind.PARALLEL
        return info, self._traverse(loop.body, depth + 1, parallel_below)

    def _traverse(self, s: Stmt, depth: int, in_parallel: bool = False) -> int:
        if isinstance(s, SeqStmt):
            height, siblings = 0, []
            for part in s.seq:
                if isinstance(part, For):
                    info, below = self._loop(part, depth, in_parallel)
                    height = max(height, below)
                    info.height = height  # TVM's running maximum over the siblings so far
                    self._record(part, info)
                    siblings.append(info)
            if len(siblings) > 1:
                for info in siblings:
                    info.has_siblings = True
            return height + 1 if siblings else height
        if isinstance(s, IfThenElse):
            height = self._traverse(s.then_case, depth, in_parallel)
            if s.else_case is not None:
                height = max(height, self._traverse(s.else_case, depth, in_parallel))
            return height
        if isinstance(s, For):
            info, below = self._loop(s, depth, in_parallel)
            info.height = below
            self._record(s, info)
            return below + 1
        if isinstance(s, LetStmt | AttrStmt | Allocate):
            return self._traverse(s.body, depth, in_parallel)
        return 0  # blocks, stores, ...: the innermost level


@dataclass(frozen=True)
class _Options:
    max_depth: int = 0
    min_height: int = 1
    siblings: bool = True
    no_func: bool = False


def _marks(uid: int) -> tuple[Stmt, Stmt]:
    args = (IntImm("int32", uid),)
    start = Call("handle", Op.get("start_profile_intrinsic"), args)
    end = Call("handle", Op.get("end_profile_intrinsic"), args)
    return Evaluate(start), Evaluate(end)


class _Instrument(Mutator):
    def __init__(self, loops: dict[int, _LoopInfo], opts: _Options) -> None:
        super().__init__()
        self.loops, self.opts = loops, opts

    def visit_SeqStmt(self, s: SeqStmt) -> Stmt:
        parts: list[Stmt] = []
        for part in s.seq:
            new = self.visit(part)
            parts.extend(new.seq if isinstance(new, SeqStmt) else [new])
        same = len(parts) == len(s.seq) and all(a is b for a, b in zip(parts, s.seq))
        return s if same else s.replace(seq=tuple(parts))

    def visit_For(self, loop: For) -> Stmt:
        out = self.generic_visit(loop)
        info = self.loops.get(id(loop))
        opts = self.opts
        if info is None or info.has_parallel or info.height < opts.min_height:
            return out
        if opts.siblings and not info.has_siblings:
            return out
        if not opts.siblings and info.depth > opts.max_depth:
            return out
        start, end = _marks(info.id)
        return SeqStmt((start, out, end))


def _instrument(func: PrimFunc, opts: _Options) -> PrimFunc:
    uid = _Counter.take()
    body = func.body
    if not opts.no_func:
        start, end = _marks(uid)
        body = SeqStmt((start, body, end))
    finder = _Loops()
    finder.visit(body)
    return func.replace(body=_Instrument(finder.loops, opts).visit(body))


def instrument_profile_intrinsics(mod: IRModule) -> IRModule:
    """Add the profiling calls to every PrimFunc (options from the PassContext config)."""
    from ...ir.transform import PassContext

    config: dict[str, Any] = PassContext.current().config
    opts = _Options(
        max_depth=int(config.get("tir.lwp_max_depth", 0)),
        min_height=int(config.get("tir.lwp_min_height", 1)),
        siblings=bool(config.get("tir.instr_siblings", True)),
        no_func=bool(config.get("tir.lwp_disable_func_prof", False)),
    )
    if config.get("tir.reset_start_id", False):
        _Counter.next_id = 0
    return mod.map_functions(PrimFunc, lambda f: _instrument(f, opts))


def InstrumentProfileIntrinsics() -> Pass:
    """`tvm.tir.transform.InstrumentProfileIntrinsics()(mod)`: see the module docstring."""
    return Pass(instrument_profile_intrinsics, "InstrumentProfileIntrinsics")
