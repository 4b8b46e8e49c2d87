"""An arith.Analyzer that knows the ranges of the loops enclosing the statement being visited."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..expr import PrimExpr, Range
from ..stmt import For


class ScopedAnalyzer:
    """Binds each loop var to its range while its body is visited (loop vars are unique)."""

    def __init__(self) -> None:
        from ...arith import Analyzer  # arith sits below tir.transform in the pipeline

        self.ana = Analyzer()

    @contextmanager
    def loop(self, loop: For) -> Iterator[None]:
        self.ana.bind(loop.loop_var, Range.from_min_extent(loop.min, loop.extent), allow_override=True)
        yield

    @contextmanager
    def assume(self, cond: PrimExpr) -> Iterator[None]:
        with self.ana.constraint_scope(cond):
            yield

    def can_prove(self, cond: PrimExpr) -> bool:
        return bool(self.ana.can_prove(cond))

    def simplify(self, e: PrimExpr) -> PrimExpr:
        return self.ana.simplify(e)
