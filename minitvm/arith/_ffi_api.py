"""TVM's `tvm.arith._ffi_api` names (the C++ entry points of TVM's arith/) that have a minitvm
implementation; code written against TVM calls a few of them directly."""

from __future__ import annotations

from ..error import TVMError
from .narrow_predicate import narrow_predicate_expression as NarrowPredicateExpression

_IMPLEMENTED = ("NarrowPredicateExpression",)
__all__ = ["NarrowPredicateExpression"]


class _MissingFFIName(TVMError, AttributeError):
    """An arith FFI entry point that minitvm does not provide."""


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise _MissingFFIName(
        f"tvm.arith._ffi_api.{name} is not available in minitvm; the arith FFI names it provides "
        f"are {', '.join(_IMPLEMENTED)} (see docs/compatibility.md)"
    )


