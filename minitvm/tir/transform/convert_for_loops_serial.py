"""ConvertForLoopsToSerial: every parallel loop becomes a serial one (TVM's pass for targets
that run a function on a single core)."""

from __future__ import annotations

from ..function import PrimFunc
from ..functor import Mutator
from ..stmt import For, ForKind, Stmt
from ._pass import prim_func_pass


class _Serial(Mutator):
    def visit_For(self, loop: For) -> Stmt:
        loop = self.generic_visit(loop)
        return loop.replace(kind=ForKind.SERIAL) if loop.kind == ForKind.PARALLEL else loop


def convert_for_loops_to_serial(func: PrimFunc) -> PrimFunc:
    """`func` with its parallel loops made serial."""
    return func.replace(body=_Serial().visit(func.body))


ConvertForLoopsToSerial = prim_func_pass(convert_for_loops_to_serial, "ConvertForLoopsToSerial")
