"""Relay types: TensorType, TupleType, FuncType (what `checked_type` holds)."""

from __future__ import annotations

from typing import Any

from ..error import MiniTVMError
from ..ir.dtype import DataType
from ..ir.node import Node, node, setfield
from ..tir.expr import IntImm, PrimExpr


class Type(Node):
    """Base of Relay types."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        from ..ir.structural import structural_equal

        return isinstance(other, Type) and structural_equal(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        from ..ir.structural import structural_hash

        return structural_hash(self)


def _dim(d: Any) -> int | PrimExpr:
    """A static dim as a Python int; a symbolic one stays a tir expression."""
    if isinstance(d, IntImm):
        return int(d.value)
    if isinstance(d, PrimExpr):
        return d
    if isinstance(d, bool) or not hasattr(d, "__index__"):
        raise MiniTVMError(f"TensorType: a dim must be an int or a tir expression, got {d!r}")
    if int(d) < 0:
        raise MiniTVMError(f"TensorType: dim {int(d)} is negative; dims are sizes (>= 0)")
    return int(d)


@node
class TensorType(Type):
    """The type of a tensor of known rank: `relay.TensorType((1, 64, 56, 56), "float32")`."""

    shape: tuple
    dtype: str = "float32"

    def __post_init__(self):
        shape = self.shape
        if isinstance(shape, int | PrimExpr):
            shape = (shape,)
        setfield(self, "shape", tuple(_dim(d) for d in shape))
        setfield(self, "dtype", str(DataType(self.dtype)))

    @property
    def concrete_shape(self) -> tuple[int, ...]:
        """The shape as Python ints (raises for a symbolic dim)."""
        if not all(isinstance(d, int) for d in self.shape):
            raise MiniTVMError(f"TensorType {self}: shape {self.shape} has symbolic dims")
        return tuple(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)


@node
class TupleType(Type):
    """The type of a tuple: one type per field."""

    fields: tuple

    def __post_init__(self):
        setfield(self, "fields", tuple(self.fields))


@node
class FuncType(Type):
    """The type of a function: argument types and the result type."""

    arg_types: tuple
    ret_type: Type
    type_params: tuple = ()
    type_constraints: tuple = ()

    def __post_init__(self):
        setfield(self, "arg_types", tuple(self.arg_types))
        setfield(self, "type_params", tuple(self.type_params or ()))
        setfield(self, "type_constraints", tuple(self.type_constraints or ()))


def scalar_type(dtype: str) -> TensorType:
    """The type of a 0-d tensor of `dtype`."""
    return TensorType((), dtype)


def _print_type(t: Type, **_: Any) -> str:
    if isinstance(t, TensorType):
        dims = ", ".join(str(d) for d in t.shape)
        return f"Tensor[({dims}), {t.dtype}]"
    if isinstance(t, TupleType):
        return (
            "("
            + ", ".join(_print_type(f) for f in t.fields)
            + ("," if len(t.fields) == 1 else "")
            + ")"
        )
    if isinstance(t, FuncType):
        args = ", ".join(_print_type(a) for a in t.arg_types)
        return f"fn ({args}) -> {_print_type(t.ret_type)}"
    return type(t).__name__


from ..ir.node import register_printer

register_printer(Type, _print_type)
