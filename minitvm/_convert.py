"""`tvm.runtime.convert`: a Python value as the IR value TVM would make of it."""

from __future__ import annotations

from typing import Any

from .error import TVMError
from .ir.container import Array, Map
from .ir.node import Node


def convert(value: Any) -> Any:
    """ints, floats and bools become TIR constants, lists/tuples an `Array`, dicts a `Map`;
    IR nodes and strings stay as they are; anything else is a TVMError naming its type."""
    from .tir import const

    if isinstance(value, Node | str) or value is None:
        return value
    if isinstance(value, bool):
        return const(value, "bool")
    if isinstance(value, int):
        return const(value, "int32" if -(2**31) <= value < 2**31 else "int64")
    if isinstance(value, float):
        return const(value, "float32")
    if isinstance(value, list | tuple):
        return Array(convert(v) for v in value)
    if isinstance(value, dict):
        return Map((convert(k), convert(v)) for k, v in value.items())
    if hasattr(value, "asobject"):
        return value.asobject()
    raise TVMError(
        f"tvm.runtime.convert: cannot convert a {type(value).__name__} to an IR value; pass "
        "numbers, strings, lists, dicts or IR nodes"
    )
