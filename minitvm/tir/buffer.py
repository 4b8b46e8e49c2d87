"""Buffers: typed, shaped views of memory that TIR loads from and stores to."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from ..error import MiniTVMError, ShapeError
from ..ir.dtype import DataType
from ..ir.node import Node, node, setfield
from .expr import BufferLoad, IntImm, PrimExpr, Var, as_expr, binary, Add, Mul


@node
class Buffer(Node):
    """A multi-dimensional buffer over the memory that `data` points to.

    `strides` empty means compact row-major. Buffers compare by identity; structural
    equality maps them bijectively like variables.
    """

    data: Var
    dtype: DataType
    shape: tuple
    strides: tuple = ()
    elem_offset: PrimExpr = IntImm(DataType("int32"), 0)
    name: str = ""
    storage_scope: str = "global"
    data_alignment: int = 64
    offset_factor: int = 1
    axis_separators: tuple = ()
    _is_buffer = True
    # a symbolic dim (`n` in shape (n, 128)) is defined where its buffer is first seen
    _def_fields = ("data", "shape", "strides", "elem_offset")
    # as in TVM, a buffer's name and offset_factor do not take part in structural equality
    _structural_order = (
        "data", "dtype", "shape", "strides", "axis_separators", "elem_offset", "storage_scope",
        "data_alignment",
    )  # fmt: skip

    def __post_init__(self):
        setfield(self, "dtype", DataType(self.dtype))
        shape = self.shape if isinstance(self.shape, tuple | list) else (self.shape,)
        setfield(self, "shape", tuple(_as_index(s) for s in shape))
        setfield(self, "strides", tuple(_as_index(s) for s in self.strides))
        setfield(self, "elem_offset", _as_index(self.elem_offset))
        setfield(self, "axis_separators", tuple(int(a) for a in self.axis_separators))
        _check_axis_separators(self)
        if not self.name:
            setfield(self, "name", self.data.name)
        if not self.storage_scope:  # TVM: scope "" is the global scope
            setfield(self, "storage_scope", "global")

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def get_flattened_buffer(self) -> Buffer:
        """This buffer with each group of axes between `axis_separators` flattened into one
        axis (all of them when there are none); the same buffer when nothing changes.

        `decl_buffer((16, 32)).get_flattened_buffer().shape` is `(512,)`.
        """
        cuts = (0, *self.axis_separators, len(self.shape))
        groups = [range(lo, hi) for lo, hi in pairwise(cuts)]
        if self.strides:  # each output axis spans its first input axis's stride times extent
            shape = [binary(Mul, self.strides[g.start], self.shape[g.start]) for g in groups]
        else:
            shape = []
            for g in groups:
                extent = IntImm(self.elem_offset.dtype, 1)
                for axis in g:
                    extent = _product(extent, self.shape[axis])
                shape.append(extent)
        if len(shape) == len(self.shape) and not self.strides:
            return self
        separators = tuple(range(1, len(self.axis_separators) + 1))
        return self.replace(shape=tuple(shape), strides=(), axis_separators=separators)

    def scope(self) -> str:
        return self.storage_scope

    def __getitem__(self, indices: Any) -> PrimExpr:
        """`A[i, j]` loads an element (used in TE lambdas and TVMScript)."""
        if not isinstance(indices, tuple):
            indices = (indices,)
        if any(isinstance(i, slice) for i in indices):
            from .stmt import region_from_slices

            return region_from_slices(self, indices)
        if len(indices) != len(self.shape):
            raise ShapeError(
                f"buffer '{self.name}' has {len(self.shape)} dimensions but was indexed "
                f"with {len(indices)} indices"
            )
        return BufferLoad(self, tuple(_lift(i) for i in indices))

    def access_ptr(self, access_mask: Any = "rw", ptr_type: str = "handle",
                   content_lanes: int = 1, offset: Any = 0, extent: Any = None) -> PrimExpr:  # fmt: skip
        """The address of element `offset` (a pointer for call_extern): tir/packed.py."""
        from .packed import access_ptr

        return access_ptr(self, access_mask, ptr_type, content_lanes, offset, extent)

    def vload(self, indices: Any, dtype: str | None = None) -> PrimExpr:
        if not isinstance(indices, tuple | list):
            indices = (indices,)
        return BufferLoad(self, tuple(indices), DataType(dtype) if dtype else None)

    def offset_of(self, indices: tuple) -> PrimExpr:
        """The flat element offset of `indices` (row-major unless strides are given)."""
        if len(indices) != len(self.shape):
            raise MiniTVMError(f"offset_of '{self.name}': expected {len(self.shape)} indices")
        if not indices:
            return self.elem_offset
        if self.strides:
            terms = [binary(Mul, i, s) for i, s in zip(indices, self.strides)]
            acc = terms[0]
            for t in terms[1:]:
                acc = binary(Add, acc, t)
        else:
            acc = as_expr(indices[0])
            for i, extent in zip(indices[1:], self.shape[1:]):
                acc = binary(Add, binary(Mul, acc, extent), i)
        if isinstance(self.elem_offset, IntImm) and self.elem_offset.value == 0:
            return acc
        return binary(Add, acc, self.elem_offset)


def _product(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """a * b, folded when both are constants (flattened extents stay numbers)."""
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return IntImm(b.dtype, a.value * b.value)
    if isinstance(a, IntImm) and a.value == 1:
        return b
    return binary(Mul, a, b)


def _check_axis_separators(buf: Buffer) -> None:
    """Each output axis of flattening must take at least zero input axes, in order (TVM's rule)."""
    seps = buf.axis_separators
    ordered = all(a <= b for a, b in pairwise(seps))
    if not ordered or (seps and (seps[0] < 0 or seps[-1] > len(buf.shape))):
        raise ShapeError(
            f"buffer '{buf.name}': axis_separators {list(seps)} must be non-decreasing and "
            f"within 0..{len(buf.shape)} (its number of dimensions)"
        )


def _lift(x: Any) -> Any:
    return getattr(x, "var", x) if type(x).__name__ == "IterVar" else x


def _as_index(x: Any) -> PrimExpr:
    x = as_expr(_lift(x), like=DataType("int32"))
    if not (x.dtype.is_integer and x.dtype.lanes == 1):
        raise ShapeError(f"buffer shapes and strides must be integers, got `{x}` ({x.dtype})")
    return x


def decl_buffer(
    shape: Any,
    dtype: str | DataType = "float32",
    name: str = "buffer",
    data: Var | None = None,
    strides: tuple = (),
    elem_offset: Any = 0,
    scope: str = "global",
    data_alignment: int = 64,
    offset_factor: int = 1,
    axis_separators: tuple = (),
) -> Buffer:
    """Declare a new buffer (with its own data pointer unless `data` is given)."""
    if not isinstance(shape, tuple | list):
        shape = (shape,)
    data = data if data is not None else Var(name, DataType("handle"))
    return Buffer(
        data, DataType(dtype), tuple(shape), tuple(strides), elem_offset, name, scope,
        data_alignment, offset_factor, tuple(axis_separators),
    )
