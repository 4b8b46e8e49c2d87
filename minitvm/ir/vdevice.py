"""Module-level global infos (`IRModule.global_infos`): `tvm.ir.VDevice`, a virtual device
(target, device index, memory scope) that graph-level values can be placed on, and
`tvm.ir.DummyGlobalInfo`, a placeholder entry."""

from __future__ import annotations

import contextvars
from typing import Any

from ..error import ArgumentError
from .node import Node, node, setfield


class GlobalInfo(Node):
    """Base of what an IRModule lists under a name in `global_infos`; `==` is structural."""

    __slots__ = ()

    def __hash__(self) -> int:  # consistent with the structural `==`
        from .structural import structural_hash

        return structural_hash(self)

    def __eq__(self, other: object) -> bool:
        from .structural import structural_equal

        return isinstance(other, GlobalInfo) and structural_equal(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)


@node
class DummyGlobalInfo(GlobalInfo):
    """An entry carrying no data (`I.dummy_global_info()`)."""


@node
class VDevice(GlobalInfo):
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


def target_kind_name(vdev: VDevice) -> str | None:
    """The target kind of `vdev` ("cuda" for a Target or for the text "cuda -arch=sm_80")."""
    target = vdev.target
    if target is None:
        return None
    kind = getattr(target, "kind", None)
    if kind is not None:
        return getattr(kind, "name", str(kind))
    return str(target).split()[0] if str(target).strip() else None


def lookup_vdevice(vdevices: Any, spec: str) -> VDevice:
    """The VDevice that TVMScript's text `spec` names in a module's "vdevice" list:
    "vdevice:3" is entry 3, "cuda:1" the second entry whose target kind is cuda, "llvm" the
    first llvm entry (as TVM's `lookup_vdevice`)."""
    kind, _, index = spec.partition(":")
    try:
        position = int(index) if index else 0
    except ValueError:
        raise ArgumentError(
            f"vdevice {spec!r}: the part after ':' must be an index, as in 'cuda:0'"
        ) from None
    vdevices = tuple(vdevices or ())
    if not vdevices:
        raise ArgumentError(
            f"vdevice {spec!r} names an entry of the module's global infos, but the module has "
            'no "vdevice" list; add I.module_global_infos({"vdevice": [I.vdevice(\'llvm\')]}) '
            "above the functions, or pass a tvm.ir.VDevice"
        )
    if kind == "vdevice":
        matches = list(vdevices)
    else:
        matches = [v for v in vdevices if target_kind_name(v) == kind]
    if not 0 <= position < len(matches):
        kinds = [f"{target_kind_name(v)}" for v in vdevices]
        raise ArgumentError(
            f"vdevice {spec!r}: the module's vdevice list {kinds} has {len(matches)} "
            f"entr{'y' if len(matches) == 1 else 'ies'} of kind {kind!r}; index {position} "
            "is out of range"
        )
    return matches[position]


# the "vdevice" list of the module being printed: a tensor's vdevice prints as its place there
printing_vdevices: contextvars.ContextVar[tuple] = contextvars.ContextVar(
    "printing_vdevices", default=()
)


def vdevice_text(vdev: VDevice) -> str:
    """How TVMScript names `vdev` in an annotation: "cuda:1" is the second cuda entry of the
    module's vdevice list (see `lookup_vdevice`); outside a printed module, its vdevice_id."""
    kind = target_kind_name(vdev)
    same_kind = [v for v in printing_vdevices.get() if target_kind_name(v) == kind]
    index = next((i for i, v in enumerate(same_kind) if v == vdev), vdev.vdevice_id)
    return f"{kind}:{index}"


def _info_text(info: GlobalInfo) -> str:
    if isinstance(info, VDevice):
        target = getattr(info.target, "kind", None) and str(info.target) or info.target
        return f'I.vdevice("{target}", {info.vdevice_id}, "{info.memory_scope}")'
    return "I.dummy_global_info()"


def global_infos_script(global_infos: Any) -> str | None:
    """The `I.module_global_infos({...})` line of a module's `global_infos` (None if empty)."""
    if not global_infos:
        return None
    items = ", ".join(
        f'"{name}": [{", ".join(_info_text(i) for i in infos)}]'
        for name, infos in global_infos.items()
    )
    return f"I.module_global_infos({{{items}}})"


__all__ = [
    "DummyGlobalInfo",
    "GlobalInfo",
    "VDevice",
    "global_infos_script",
    "lookup_vdevice",
    "printing_vdevices",
    "vdevice_text",
]
