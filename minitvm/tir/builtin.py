"""TVM's builtin intrinsics as Python functions, `tvm.tir.tvm_struct_get(h, 1, 2, "int32")`.

Each name of op.BUILTINS becomes `tir.<name>(*args, dtype=None)`, building the same `Call` as
`T.<name>(...)` in TVMScript (the table gives the result dtype). Keyword arguments are TVM's
parameter names (`tir.assume(cond=x)`) and follow the positional ones. Codegen lowers only the
builtins it knows and refuses the others with a BuildError.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import op as _op
from .expr import PrimExpr


def _builtin_function(name: str) -> Callable[..., PrimExpr]:
    def call(*args: Any, dtype: Any = None, **named: Any) -> PrimExpr:
        return _op.call_builtin(name, *args, *named.values(), dtype=dtype)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"TVM's builtin `tir.{name}`: a Call whose dtype tir/op.py's BUILTINS gives."
    return call


# names op.py defines with their own checks (reinterpret, vscale) keep those definitions
__all__ = sorted(n for n in _op.BUILTINS if not hasattr(_op, n))  # noqa: PLE0605
globals().update({n: _builtin_function(n) for n in __all__})
