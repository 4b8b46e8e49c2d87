"""`tvm.ir.VDevice`: a virtual device (target, device index, memory scope) that graph-level
values can be placed on, as in TVM's `tvm.ir.VDevice(target, vdevice_id, memory_scope)`."""

from __future__ import annotations

from typing import Any

from ..error import ArgumentError
from .node import Node, node, setfield


@node
class VDevice(Node):
    """Where a tensor lives: `target` (a Target or its text, e.g. "cuda"; None: unspecified),
    the device index among devices of that kind, and a memory scope.

    The target is kept as given: this base layer cannot parse targets, and the layers that
    place data read its kind from it.

    >>> VDevice("cuda", 0, "global")
    """

    target: Any = None
    vdevice_id: int = 0
    memory_scope: str = "global"

    def __post_init__(self):
        given = self.target
        if given is not None and not isinstance(given, str) and not hasattr(given, "kind"):
            raise ArgumentError(
                f"VDevice: target must be a Target or its text (e.g. 'llvm'), got {given!r}"
            )
        if isinstance(self.vdevice_id, bool) or not isinstance(self.vdevice_id, int):
            vid = getattr(self.vdevice_id, "value", self.vdevice_id)
            if not isinstance(vid, int) or isinstance(vid, bool):
                raise ArgumentError(f"VDevice: vdevice_id must be an int, got {self.vdevice_id!r}")
            setfield(self, "vdevice_id", vid)
        if not isinstance(self.memory_scope, str):
            raise ArgumentError(
                f"VDevice: memory_scope must be a string like 'global', got {self.memory_scope!r}"
            )

    def __repr__(self) -> str:
        return f"VDevice({str(self.target)!r}, {self.vdevice_id}, {self.memory_scope!r})"

    __str__ = __repr__


__all__ = ["VDevice"]
