"""`tvm.runtime.container`: the runtime's value containers — ADT (a VM constructor value and
its fields), String and ShapeTuple."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..error import ArgumentError
from .ndarray import NDArray
from .shape_tuple import ShapeTuple


class String(str):
    """`tvm.runtime.String`: TVM's string object; here a Python str."""

    __slots__ = ()


class ADT(tuple):
    """`ADT(tag, fields)`: a value of an algebraic data type — constructor number `tag` and
    its fields (NDArrays, ShapeTuples, Strings or other ADTs); a tuple is the ADT of tag 0."""

    def __new__(cls, tag: int, fields: Iterable[Any]) -> ADT:  # noqa: PYI034
        fields = tuple(fields)
        for i, f in enumerate(fields):
            if not isinstance(f, NDArray | ADT | ShapeTuple | str):
                raise ArgumentError(
                    f"ADT: field {i} is a {type(f).__name__}; fields are runtime objects "
                    "(NDArray, ADT, ShapeTuple, String)"
                )
        if isinstance(tag, bool) or not hasattr(tag, "__index__"):
            raise ArgumentError(f"ADT: tag must be an int, got {tag!r}")
        obj = super().__new__(cls, fields)
        obj._tag = int(tag)
        return obj

    @property
    def tag(self) -> int:
        return self._tag

    def __repr__(self) -> str:
        return f"ADT(tag={self._tag}, fields={list(self)!r})"


def tuple_object(fields: Iterable[Any] | None = None) -> ADT:
    """The runtime tuple of `fields` (an ADT of tag 0)."""
    return ADT(0, fields or ())


__all__ = ["ADT", "ShapeTuple", "String", "tuple_object"]
