"""TVM's tir.Layout and tir.BijectiveLayout: layout strings ("NCHW16c") as axes, and the
index/shape conversion between two layouts of the same primal axes.

An upper-case letter is a primal axis, a number plus a lower-case letter a block of it (its
inner part): "NCHW16c" stores [N, C // 16, H, W, C % 16]. Conversions are written out with
floordiv/floormod; constant inputs give constants.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..error import DTypeError, TVMError
from ..ir.dtype import DataType
from .expr import IntImm, IterVar, PrimExpr, Range, Var
from .expr_build import const_value
from .op import floordiv, floormod

UNDEF = "__undef__"  # TVM's name of the undefined layout (tir.layout gives None for it)


def _check_dtype(dtype: Any) -> DataType:
    try:
        dt = DataType(dtype) if dtype is not None else None
    except TVMError:
        dt = None
    if dt is None or not dt.is_int:
        raise DTypeError(f"tir.layout: the axes' dtype must be an integer type, got {dtype!r}")
    return dt


class Layout:
    """A parsed layout string: `axes` are IterVars named by their letter, a primal axis
    ranging over [0, <letter>_shape), a block over [0, factor)."""

    def __init__(self, name: str, dtype: Any = "int32") -> None:
        dt = _check_dtype(dtype)
        self.name = name
        axes: list[IterVar] = []
        factor = 0
        for c in name:
            if c.isdigit():
                factor = factor * 10 + int(c)
            elif "A" <= c <= "Z":
                if factor:
                    raise TVMError(
                        f"layout {name!r}: a size ({factor}) precedes the primal axis {c}"
                    )
                axes.append(IterVar(Range(IntImm(dt, 0), Var(c + "_shape", dt)), Var(c, dt)))
            elif "a" <= c <= "z":
                if factor <= 0:
                    raise TVMError(f"layout {name!r}: the block {c} needs a size, e.g. '16{c}'")
                axes.append(IterVar(Range(IntImm(dt, 0), IntImm(dt, factor)), Var(c, dt)))
                factor = 0
            else:
                raise TVMError(f"layout {name!r}: {c!r} is not an axis letter or a digit")
        letters = [iv.var.name for iv in axes]
        for c in letters:
            if letters.count(c) > 1:
                raise TVMError(f"layout {name!r}: axis {c} appears twice")
            if c.islower() and c.upper() not in letters:
                raise TVMError(f"layout {name!r}: block {c} has no primal axis {c.upper()}")
        self.axes = tuple(axes)

    def __len__(self) -> int:
        return len(self.axes)

    def __contains__(self, axis: str) -> bool:
        return len(axis) == 1 and axis.isalpha() and axis in self.name

    def __getitem__(self, index: int) -> str:
        if not -len(self.axes) <= index < len(self.axes):
            raise IndexError(f"layout {self.name!r} has {len(self.axes)} axes, no axis {index}")
        return self.axes[index].var.name

    def index_of(self, axis: str) -> int:
        """Position of `axis` (a primal or block letter); -1 when absent."""
        return next((i for i, iv in enumerate(self.axes) if iv.var.name == axis), -1)

    def factor_of(self, axis: str) -> int:
        """The block size of `axis`'s block ("c" or "C" of "NCHW16c" → 16); -1 if unblocked."""
        pos = self.index_of(axis.lower())
        return -1 if pos < 0 else int(const_value(self.axes[pos].dom.extent))

    def _dtype(self) -> DataType:
        return self.axes[0].var.dtype if self.axes else DataType("int32")

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Layout({self.name})"


def _const(x: Any, dtype: DataType) -> PrimExpr:
    return x if isinstance(x, PrimExpr) else IntImm(dtype, int(x))


def _fold(x: PrimExpr, dtype: DataType) -> PrimExpr:
    v = const_value(x)
    return IntImm(dtype, int(v)) if isinstance(v, int) else x


def _logical(layout: Layout, values: Sequence[PrimExpr], primal: str) -> PrimExpr | None:
    """The full index (or extent) of `primal` from a layout's per-axis values."""
    outer = layout.index_of(primal)
    if outer < 0:
        return None
    value = values[outer]
    inner = layout.index_of(primal.lower())
    if inner >= 0:
        value = value * layout.factor_of(primal) + values[inner]
    return value


class BijectiveLayout:
    """Index and shape conversion from `src_layout` to `dst_layout` and back."""

    def __init__(self, src_layout: Layout, dst_layout: Layout) -> None:
        self.src_layout, self.dst_layout = src_layout, dst_layout

    @staticmethod
    def _convert(src: Layout, dst: Layout, values: Sequence[Any], shape: bool) -> list:
        if len(values) != len(src):
            raise TVMError(
                f"layout {src.name!r} has {len(src)} axes, got {len(values)} values: {values}"
            )
        dtype = src._dtype()
        vals = [_const(v, dtype) for v in values]
        if shape:  # a block's extent is its size; the primal's full extent is outer * size
            vals = [
                v if iv.var.name.isupper() else IntImm(dtype, 0) for v, iv in zip(vals, src.axes)
            ]
        out = []
        for iv in dst.axes:
            letter = iv.var.name
            value = _logical(src, vals, letter.upper())
            f = dst.factor_of(letter)
            if letter.islower():
                value = iv.dom.extent if shape else floormod(value, f)
            elif f > 0:
                value = floordiv(value + (f - 1), f) if shape else floordiv(value, f)
            out.append(_fold(value, dtype))
        return out

    def forward_index(self, index: Sequence[Any]) -> list:
        """The dst-layout index of a src-layout index."""
        return self._convert(self.src_layout, self.dst_layout, index, shape=False)

    def backward_index(self, index: Sequence[Any]) -> list:
        """The src-layout index of a dst-layout index."""
        return self._convert(self.dst_layout, self.src_layout, index, shape=False)

    def forward_shape(self, shape: Sequence[Any]) -> list:
        """The dst-layout shape of a src-layout shape (blocks round up)."""
        return self._convert(self.src_layout, self.dst_layout, shape, shape=True)

    def backward_shape(self, shape: Sequence[Any]) -> list:
        """The src-layout shape of a dst-layout shape."""
        return self._convert(self.dst_layout, self.src_layout, shape, shape=True)

    def __repr__(self) -> str:
        return f"BijectiveLayout({self.src_layout.name}->{self.dst_layout.name})"


def layout(layout_str: str, dtype: Any = "int32") -> Layout | None:
    """`tvm.tir.layout("NCHW16c")`: a Layout; None for TVM's undefined layout "__undef__"."""
    _check_dtype(dtype)
    return None if layout_str == UNDEF else Layout(layout_str, dtype)


def bijective_layout(src_layout: str | Layout, dst_layout: str | Layout) -> BijectiveLayout | None:
    """The conversion between two layouts, or None when they are not convertible (undefined
    or empty, or with different primal axes)."""
    src = layout(src_layout) if isinstance(src_layout, str) else src_layout
    dst = layout(dst_layout) if isinstance(dst_layout, str) else dst_layout
    if src is None or dst is None or not src.name or not dst.name:
        return None
    primals = [{iv.var.name.upper() for iv in lay.axes} for lay in (src, dst)]
    if primals[0] != primals[1]:
        return None
    return BijectiveLayout(src, dst)


__all__ = ["BijectiveLayout", "Layout", "bijective_layout", "layout"]
