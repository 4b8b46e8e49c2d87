"""DecorateDeviceScope: mark a whole function body as device code (`device_scope` attribute),
as TVM does for functions that run entirely on an accelerator."""

from __future__ import annotations

from ..expr import IntImm
from ..function import PrimFunc
from ..stmt import AttrStmt
from ._pass import prim_func_pass


def decorate_device_scope(func: PrimFunc) -> PrimFunc:
    """`func` with its body wrapped in `T.attr(0, "device_scope", 0)`."""
    zero = IntImm("int32", 0)
    return func.replace(body=AttrStmt(zero, "device_scope", zero, func.body))


DecorateDeviceScope = prim_func_pass(decorate_device_scope, "DecorateDeviceScope")
