"""Types of IR values (`tvm.ir.PrimType`, `tvm.ir.PointerType`): a scalar of a dtype, and a
pointer to values of a type in a storage scope; `==` is structural."""

from __future__ import annotations

from typing import Any

from ..error import DTypeError
from .dtype import DataType
from .node import Node, node, register_printer, setfield


class Type(Node):
    """Base of IR types."""

    __slots__ = ()

    def __hash__(self) -> int:  # consistent with the structural `==`
        from .structural import structural_hash

        return structural_hash(self)

    def __eq__(self, other: object) -> bool:
        from .structural import structural_equal

        return isinstance(other, Type) and structural_equal(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)


@node
class PrimType(Type):
    """The type of a scalar (or vector) of `dtype`: `PrimType("float32")`."""

    dtype: DataType

    def __post_init__(self):
        setfield(self, "dtype", DataType(self.dtype))


@node
class PointerType(Type):
    """A pointer to `element_type` values in `storage_scope` ("" is the default, global)."""

    element_type: Type
    storage_scope: str = ""

    def __post_init__(self):
        if not isinstance(self.element_type, Type):
            raise DTypeError(
                f"PointerType: element_type must be an IR type such as PrimType('float32'), "
                f"got {self.element_type!r}"
            )
        if not isinstance(self.storage_scope, str):
            raise DTypeError(
                f"PointerType: storage_scope must be a string, got {self.storage_scope!r}"
            )


def _print_type(t: Type, **_: Any) -> str:
    if isinstance(t, PrimType):
        return f"T.{t.dtype}"
    element = t.element_type
    inner = f'"{element.dtype}"' if isinstance(element, PrimType) else _print_type(element)
    return f'T.handle({inner}, "{t.storage_scope}")' if t.storage_scope else f"T.handle({inner})"


register_printer(PrimType, _print_type)
register_printer(PointerType, _print_type)

__all__ = ["PointerType", "PrimType", "Type"]
