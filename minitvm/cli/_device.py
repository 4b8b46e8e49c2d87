"""--target of `compile`/`tune` and --device of `run`/`bench`: the kinds minitvm compiles for
(read from minitvm.target and relax.pipeline), and the device an artifact runs on."""

from __future__ import annotations

import difflib
from typing import Any

from ._common import UsageError

# --device values: the devices minitvm.runtime has a runtime for
DEVICES = ("cpu", "opencl", "cuda")


def compilable_kinds() -> tuple[str, ...]:
    """The target kinds relax.build compiles for, from the one target registry."""
    from ..target.kinds import compilable_kinds as registered

    return registered()


def parse_target(text: str) -> Any:
    """The Target of --target, checked (a kind minitvm compiles for) before any model is read."""
    from ..error import TargetError
    from ..target import Target

    kinds = compilable_kinds()
    listed = f"minitvm compiles for {', '.join(kinds)} (e.g. --target llvm, --target opencl)"
    try:
        target = Target(text)
    except TargetError as err:
        kind = text.split()[0] if text.split() else ""
        if kind in kinds or "/" in kind:  # a known kind or a tag, with a wrong option
            raise UsageError(f"--target {text!r}: {err}") from err
        close = difflib.get_close_matches(kind, kinds, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise UsageError(
            f"--target {text!r}: unknown target kind {kind!r}; {hint}{listed}"
        ) from err
    if target.kind.name not in kinds:
        raise UsageError(
            f"--target {text!r}: minitvm has no code generator for {target.kind.name}; {listed}"
        )
    return target


def device_of_target(target_text: str) -> str:
    """The --device name an artifact compiled for `target_text` runs on."""
    from ..runtime import Device
    from ..target import Target

    return Device(Target(target_text).get_target_device_type()).name


def open_device(art: Any, wanted: str | None) -> Any:
    """The runtime Device for --device `wanted` (None: the artifact's own), checked against
    the artifact's target and present on this machine."""
    from .. import runtime

    built_for = device_of_target(art.meta["target"])
    name = wanted or built_for
    if name != built_for:
        raise UsageError(
            f"--device {name}: '{art.path}' was compiled for target '{art.meta['target']}', "
            f"which runs on --device {built_for}; pass --device {built_for}, or compile it "
            f"again with --target {_target_for(name)}"
        )
    device = runtime.device(name, 0)
    reason = device.unavailable_reason()
    if reason is not None:
        raise UsageError(f"--device {name}: {_why_absent(name, reason)}")
    return device


def _target_for(device: str) -> str:
    """The --target whose artifacts run on `device`."""
    return next(k for k in compilable_kinds() if device_of_target(k) == device)


# device -> what to install so it works (the runtime's own reason names what is missing)
_INSTALL = {
    "opencl": "install an OpenCL runtime (the pyopencl package and a driver, e.g. "
    "pocl-opencl-icd on a CPU-only machine)",
    "cuda": "run on a machine with an NVIDIA GPU and its driver",
}


def _why_absent(name: str, reason: str) -> str:
    """The runtime's reason, its first clause only (its advice is for Python callers), and
    what to do from the command line."""
    what = reason.split(";")[0].rstrip(".")
    todo = _INSTALL.get(name, "use --device cpu")
    return (
        f"{what}; {todo}, or compile with --target llvm and run with --device cpu"
        if name != "cpu"
        else f"{what}"
    )
