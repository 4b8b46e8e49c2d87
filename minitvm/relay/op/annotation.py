"""`relay.annotation`: on_device, checkpoint and stop_fusion. Each is the identity on values
(its row passes the argument through); the annotations matter only to passes that read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...error import MiniTVMError, TargetError
from ...runtime import Device
from ...runtime import device as make_device
from ..expr import Expr
from ._registry import call, register

_INVALID_DEVICE_TYPE = -1  # kInvalidDeviceType: no device constraint


@dataclass(frozen=True)
class VirtualDevice:
    """Where a value lives: a DLPack device type and id, a target and a memory scope."""

    device_type_int: int = _INVALID_DEVICE_TYPE
    virtual_device_id: int = 0
    target: Any = None
    memory_scope: str = ""

    def __str__(self) -> str:
        return f"VirtualDevice(device_type={self.device_type_int}, id={self.virtual_device_id})"


def _identity(emit, args, attrs):
    return args[0]


for _name in ("on_device", "annotation.checkpoint", "annotation.stop_fusion"):
    register(_name, _identity)


def _virtual_device(device: Any) -> VirtualDevice:
    if isinstance(device, VirtualDevice):
        return device
    if isinstance(device, str | int | Device):
        try:
            dev = make_device(device)
        except MiniTVMError as err:
            raise TargetError(f"relay.annotation.on_device: {err}") from err
        return VirtualDevice(dev.device_type, dev.device_id)
    raise TargetError(
        f"relay.annotation.on_device: device {device!r}; give a name ('cuda'), a tvm.device "
        "or a VirtualDevice"
    )


def on_device(
    body: Expr, device: Any, constrain_result: bool = False, constrain_body: bool = True
) -> Expr:
    """`body` annotated to be computed on `device` (constrain_body) and/or to leave its result
    there (constrain_result); with neither, the device is left free."""
    virtual = _virtual_device(device)
    if not constrain_body and not constrain_result:
        virtual = VirtualDevice()
    attrs = {
        "virtual_device": virtual,
        "constrain_result": bool(constrain_result),
        "constrain_body": bool(constrain_body),
    }
    return call("on_device", (body,), attrs)


def checkpoint(data: Expr) -> Expr:
    """Mark `data` for recomputation in the backward pass (the identity on values)."""
    return call("annotation.checkpoint", (data,))


def stop_fusion(data: Expr) -> Expr:
    """Keep `data`'s producer out of the fused group of its consumers (identity on values)."""
    return call("annotation.stop_fusion", (data,))


__all__ = ["VirtualDevice", "checkpoint", "on_device", "stop_fusion"]
