"""`tvm.runtime.ShapeTuple` (TVM 0.20+ `tvm_ffi.Shape`): a shape value as the VM holds one, a
tuple of non-negative ints. The VM's shape builtins take and give plain tuples, so a ShapeTuple
goes wherever a shape goes."""

from __future__ import annotations

from collections.abc import Iterable

from ..error import ArgumentError


class ShapeTuple(tuple):
    """`ShapeTuple([1, 2048])`: an immutable shape of non-negative ints."""

    def __new__(cls, dims: Iterable = ()) -> ShapeTuple:  # noqa: PYI034
        values = []
        for d in dims:
            if isinstance(d, bool) or not hasattr(d, "__index__"):
                raise ArgumentError(
                    f"ShapeTuple: dims must be ints, got {d!r} ({type(d).__name__})"
                )
            if int(d) < 0:
                raise ArgumentError(f"ShapeTuple: dim {int(d)} is negative; dims are >= 0")
            values.append(int(d))
        return super().__new__(cls, values)

    def __repr__(self) -> str:
        return f"ShapeTuple({list(self)})"


__all__ = ["ShapeTuple"]
