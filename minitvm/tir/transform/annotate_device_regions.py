"""AnnotateDeviceRegions (TVM's pass): in a function whose target has a host, each device
region (a thread launch, pipeline_exec_scope or device_scope attr) is wrapped in
`T.attr(device_target, "target", 0)`, the target without its host. Regions already under a
"target" attr are left as they are; nothing inside a region is visited."""

from __future__ import annotations

from typing import Any

from ...error import BuildError
from ..function import PrimFunc
from ..functor import Mutator
from ..stmt import AttrStmt, Stmt
from ._pass import prim_func_pass

_DEVICE_REGION_KEYS = frozenset({"thread_extent", "pipeline_exec_scope", "device_scope"})


class _Annotate(Mutator):
    def __init__(self, device: Any) -> None:
        super().__init__()
        self.device = device

    def visit_AttrStmt(self, s: AttrStmt) -> Stmt:
        if s.attr_key == "target":
            return s
        if s.attr_key in _DEVICE_REGION_KEYS:
            return AttrStmt(self.device, "target", 0, s)
        return self.generic_visit(s)


def annotate_device_regions(func: PrimFunc) -> PrimFunc:
    """Mark where `func`'s device code starts (see the module docstring)."""
    from ...target import Target

    target = (func.attrs or {}).get("target")
    if target is None:
        raise BuildError(
            "AnnotateDeviceRegions: the function has no 'target' attribute; run "
            "tvm.tir.transform.BindTarget(target) first"
        )
    if target._host is None:
        return func
    return func.replace(body=_Annotate(Target(str(target))).visit(func.body))


AnnotateDeviceRegions = prim_func_pass(annotate_device_regions, "AnnotateDeviceRegions")
