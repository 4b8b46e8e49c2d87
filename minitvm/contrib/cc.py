"""`tvm.contrib.cc`: TVM's C-compiler driver. minitvm never runs a compiler or a linker:
`create_shared` packs an object that `Module.save` wrote (a checked minitvm export) into the
library file `tvm.runtime.load_module` reads; any other object file is refused."""

from __future__ import annotations

import os
from typing import Any

from ..error import BuildError, RuntimeError_


def create_shared(
    output: str,
    objects: str | list[str] | tuple[str, ...],
    options: Any = None,
    cc: Any = None,
    cwd: str | None = None,
    ccache_env: Any = None,
) -> None:
    """Write the library `output` from the object `objects` written by `Module.save`.

    >>> fadd.save("add.o"); cc.create_shared("add.so", ["add.o"]); load_module("add.so")
    """
    from ..runtime.module import Module, load_module, write_module_zip

    paths = [objects] if isinstance(objects, str | os.PathLike) else list(objects)
    if len(paths) != 1:
        raise BuildError(
            f"create_shared('{output}'): got {len(paths)} objects; minitvm links exactly one "
            "object per library. Build all functions in one tvm.build (an IRModule) and save it"
        )
    path = os.fspath(paths[0])
    if cwd is not None:
        path = os.path.join(cwd, path)
    try:
        module = load_module(path)  # every check the loader makes: zip, checksums, signature
    except RuntimeError_ as err:
        raise BuildError(
            f"create_shared('{output}'): '{path}' is not an object written by minitvm's "
            "Module.save / export_library, and minitvm never runs a C compiler or linker, so "
            f"foreign object files cannot be linked ({err})"
        ) from err
    if not isinstance(module, Module):
        raise BuildError(
            f"create_shared('{output}'): '{path}' holds a {type(module).__name__}, not compiled "
            "TIR functions; load it with tvm.runtime.load_module directly"
        )
    write_module_zip(os.fspath(output), module)


create_shared.output_format = "so"

__all__ = ["create_shared"]
