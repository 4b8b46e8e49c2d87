"""AttachExternModules: TVM links the runtime modules of `nn.ExternModule`s into the build.

minitvm's VM calls every extern function through the global function registry, so there is
nothing to link: an empty list leaves the module unchanged, and a non-empty one is refused with
what to do instead (rather than building a module whose calls would find nothing).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...error import BuildError
from ...ir.module import IRModule
from ...ir.transform import Pass


def attach_extern_modules(mod: IRModule, ext_mods: Sequence[Any]) -> IRModule:
    """`mod` itself when `ext_mods` is empty; otherwise each module's load() runs (and minitvm's
    ObjectModule / SourceModule refuse there) and linking is refused."""
    for ext in ext_mods:
        ext.load()
    if ext_mods:
        names = sorted(n for ext in ext_mods for n in getattr(ext, "_symbols", {}))
        raise BuildError(
            f"AttachExternModules: minitvm's VM finds extern functions in the global registry "
            f"and cannot link modules; register {names} with tvm.register_func and pass "
            "ext_mods=[]"
        )
    return mod


def AttachExternModules(extern_modules: Sequence[Any] | None = None) -> Pass:
    """Link `nn.ExternModule`s' code into the build (relax/transform/attach_extern_modules.py)."""
    mods = list(extern_modules or [])
    return Pass(lambda mod: attach_extern_modules(mod, mods), "AttachExternModules")


__all__ = ["AttachExternModules", "attach_extern_modules"]
