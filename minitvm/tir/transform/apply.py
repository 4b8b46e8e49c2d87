"""tir.transform.Apply: a pass from a plain `PrimFunc -> PrimFunc` function (TVM's helper,
`Apply(lambda f: f.with_attr("target", target))(mod)`)."""

from __future__ import annotations

from collections.abc import Callable

from ...ir.transform import Pass
from ..function import PrimFunc
from ._pass import prim_func_pass


def Apply(ftransform: Callable[[PrimFunc], PrimFunc]) -> Pass:
    """A pass running `ftransform` on every PrimFunc of a module."""
    return prim_func_pass(ftransform, "Apply")()
