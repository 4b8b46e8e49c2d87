"""2022 module name: `relax.vm_build.build(mod, target)` is `relax.build` (deprecated spelling)."""

from __future__ import annotations

import warnings
from typing import Any

from .vm import Executable
from .vm import build as _build


def build(mod: Any, target: Any = "llvm", *args: Any, **kwargs: Any) -> Executable:
    """`relax.build` under its 2022 name; warns (DeprecationWarning) and forwards."""
    warnings.warn(
        "relax.vm_build.build is the 2022 spelling; use relax.build(mod, target) or "
        "tvm.compile(mod, target)",
        DeprecationWarning,
        stacklevel=2,
    )
    return _build(mod, target, *args, **kwargs)


__all__ = ["Executable", "build"]
