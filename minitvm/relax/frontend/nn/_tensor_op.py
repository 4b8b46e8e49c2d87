"""Operators and methods of nn.Tensor (`x + 1`, `x @ w`, `x.reshape(...)`), each one nn.op call.

Python scalars take the dtype of the tensor they meet, as in TVM.
"""

from __future__ import annotations

from typing import Any


def _op() -> Any:
    from . import op

    return op


def _scalar(value: Any, like: Any) -> Any:
    """`value` as a tensor of `like`'s dtype when it is a Python number."""
    if isinstance(value, bool | int | float):
        from .core import Tensor

        return Tensor.from_scalar(value, like.dtype)
    return value


# method name -> (nn.op function, operands swapped); `2 + x` and `2 * x` keep the tensor first,
# as TVM emits them (both ops commute, so the value is the same)
_BINARY = {
    "__add__": ("add", False), "__radd__": ("add", False),
    "__sub__": ("subtract", False), "__rsub__": ("subtract", True),
    "__mul__": ("multiply", False), "__rmul__": ("multiply", False),
    "__truediv__": ("divide", False), "__rtruediv__": ("divide", True),
    "__lt__": ("less", False), "__le__": ("less_equal", False),
    "__gt__": ("greater", False), "__ge__": ("greater_equal", False),
    "__matmul__": ("matmul", False), "__rmatmul__": ("matmul", True),
}  # fmt: skip


def _binary_method(op_name: str, swap: bool) -> Any:
    def method(self: Any, other: Any) -> Any:
        other = _scalar(other, self)
        a, b = (other, self) if swap else (self, other)
        return getattr(_op(), op_name)(a, b)

    method.__name__ = op_name
    return method


class TensorOpMixin:
    """The operator overloads and methods nn.Tensor shares with TVM's."""

    __hash__ = object.__hash__  # comparisons build ops, so hashing stays by identity

    def __neg__(self) -> Any:
        return _op().negative(self)

    def astype(self, dtype: str) -> Any:
        return _op().astype(self, dtype)

    def maximum(self, other: Any) -> Any:
        return _op().maximum(self, _scalar(other, self))

    def minimum(self, other: Any) -> Any:
        return _op().minimum(self, _scalar(other, self))

    def reshape(self, *shape: Any) -> Any:
        if len(shape) == 1 and isinstance(shape[0], list | tuple):
            shape = tuple(shape[0])
        return _op().reshape(self, shape)

    def permute_dims(self, *axes: Any) -> Any:
        if len(axes) == 1 and isinstance(axes[0], list | tuple):
            axes = tuple(axes[0])
        return _op().permute_dims(self, list(axes) or None)

    def repeat(self, repeats: int, axis: int | None = None) -> Any:
        return _op().repeat(self, repeats, axis)


for _name, (_fn, _swap) in _BINARY.items():
    setattr(TensorOpMixin, _name, _binary_method(_fn, _swap))
