"""Tensor layouts named by TVM's layout strings ("NCHW", "NHWC", "NCHW16c", "OIHW16i16o", ...).

An upper-case letter is a primal axis; a number followed by a lower-case letter is a block of
that primal axis (its inner part): "NCHW16c" holds data [N, C/16, H, W, 16] whose element
[n, co, h, w, ci] is channel co * 16 + ci. `Layout` parses a string once; `layout_index_map`
gives the IndexMap from one layout to another and `layout_transform` the TE compute.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .. import te
from ..error import ShapeError, TEError
from ..tir import op as tir_op
from ..tir.expr import IntImm, Var, make_const
from ..tir.index_map import IndexMap
from .utils import const_int, fmt_dim, fmt_shape, prove_equal, simplify

_TOKEN = re.compile(r"(\d*)([A-Za-z])")


@dataclass(frozen=True)
class Layout:
    """A parsed layout string: `axes` are (letter, block factor or None), in storage order."""

    name: str
    axes: tuple[tuple[str, int | None], ...]

    @staticmethod
    def parse(name: str) -> Layout:
        """Parse and validate a layout string; ShapeError names the bad part."""
        if not isinstance(name, str) or not name:
            raise ShapeError(f"layout {name!r}: expected a layout string such as 'NCHW16c'")
        axes, pos = [], 0
        for m in _TOKEN.finditer(name):
            if m.start() != pos:
                break
            pos = m.end()
            digits, letter = m.groups()
            axes.append((letter, int(digits) if digits else None))
        if pos != len(name):
            raise ShapeError(
                f"layout {name!r}: cannot read {name[pos:]!r}; a layout is upper-case axes, each "
                "optionally followed later by a block such as '16c'"
            )
        _validate(name, axes)
        return Layout(name, tuple(axes))

    def __str__(self) -> str:
        return self.name

    @property
    def ndim(self) -> int:
        return len(self.axes)

    @property
    def primals(self) -> tuple[str, ...]:
        """The upper-case axes in storage order."""
        return tuple(a for a, _ in self.axes if a.isupper())

    def index_of(self, axis: str) -> int:
        """Position of `axis` (an upper-case primal or lower-case block letter), -1 if absent."""
        for pos, (a, _) in enumerate(self.axes):
            if a == axis:
                return pos
        return -1

    def block(self, primal: str) -> int | None:
        """The block factor of `primal` ("C" of "NCHW16c" → 16), None when not blocked."""
        pos = self.index_of(primal.lower())
        return None if pos < 0 else self.axes[pos][1]

    def logical_dim(self, shape: Sequence[Any], primal: str) -> Any:
        """The full extent of `primal` in a tensor of `shape` (outer * block)."""
        outer = shape[self.index_of(primal)]
        f = self.block(primal)
        if f is None:
            return outer
        c = const_int(outer)
        return c * f if c is not None else simplify(outer * f)

    def logical_of(self, indices: Sequence[Any], primal: str) -> Any:
        """The primal axis' full index from this layout's `indices` (outer * block + inner)."""
        outer = indices[self.index_of(primal)]
        f = self.block(primal)
        if f is None:
            return outer
        inner = indices[self.index_of(primal.lower())]
        return outer + inner if f == 1 else outer * f + inner

    def split_index(self, logical: dict[str, Any]) -> list[Any]:
        """This layout's indices from each primal's full index (// block, % block)."""
        out = []
        for a, f in self.axes:
            if a.isupper():
                b = self.block(a)
                out.append(logical[a] if b in (None, 1) else logical[a] // b)
            else:
                out.append(logical[a.upper()] % f if f != 1 else 0)  # a block of 1 is index 0
        return out

    def shape_of(self, logical: dict[str, Any], what: str) -> tuple[Any, ...]:
        """This layout's shape for the primal extents `logical`; every block must divide."""
        out = []
        for a, f in self.axes:
            if a.islower():
                out.append(f)
                continue
            b, d = self.block(a), logical[a]
            if b is None:
                out.append(d)
            elif const_int(d) is not None and const_int(d) % b == 0:
                out.append(const_int(d) // b)
            else:
                raise ShapeError(
                    f"{what}: axis {a} has extent {fmt_dim(d)}, which the block {b}{a.lower()} of "
                    f"layout {self.name!r} does not divide; pick a block size that divides "
                    f"{fmt_dim(d)}"
                )
        return tuple(out)


def _validate(name: str, axes: list) -> None:
    seen = set()
    for letter, factor in axes:
        if letter.isupper() and factor is not None:
            raise ShapeError(
                f"layout {name!r}: primal axis {letter!r} has a factor {factor}; only blocks "
                f"(lower-case, e.g. '{factor}{letter.lower()}') take one"
            )
        if letter in seen:
            raise ShapeError(f"layout {name!r}: axis {letter!r} appears twice")
        seen.add(letter)
        if letter.islower() and not factor:
            raise ShapeError(
                f"layout {name!r}: block {letter!r} needs a positive size, e.g. '16{letter}'"
            )
    for letter, _ in axes:
        if letter.islower() and letter.upper() not in seen:
            raise ShapeError(
                f"layout {name!r}: block {letter!r} has no primal axis {letter.upper()!r}"
            )


def as_layout(layout: str | Layout) -> Layout:
    return layout if isinstance(layout, Layout) else Layout.parse(layout)


def _check_compatible(src: Layout, dst: Layout) -> None:
    if sorted(src.primals) != sorted(dst.primals):
        raise ShapeError(
            f"layouts {src.name!r} and {dst.name!r} have different axes "
            f"({''.join(sorted(src.primals))} vs {''.join(sorted(dst.primals))}); a layout "
            "transform only reorders and blocks the same axes"
        )


def layout_index_map(src: str | Layout, dst: str | Layout) -> IndexMap:
    """The IndexMap from indices in layout `src` to indices in layout `dst`.

    >>> layout_index_map("NCHW", "NCHW16c")  # lambda n, c, h, w: (n, c // 16, h, w, c % 16)
    """
    src, dst = as_layout(src), as_layout(dst)
    _check_compatible(src, dst)
    # primal "C" reads as index c, its block "16c" as ci (inner)
    ivars = [Var(a.lower() if a.isupper() else a + "i", "int64") for a, _ in src.axes]
    logical = {p: src.logical_of(ivars, p) for p in src.primals}
    return IndexMap(ivars, dst.split_index(logical))


def transformed_shape(
    shape: Sequence[Any], src: str | Layout, dst: str | Layout, what: str = "layout_transform"
) -> tuple[Any, ...]:
    """The shape in `dst` of a tensor of `shape` in `src`; blocks must divide the axes."""
    src, dst = as_layout(src), as_layout(dst)
    _check_compatible(src, dst)
    _check_rank(shape, src, what)
    logical = {p: src.logical_dim(shape, p) for p in src.primals}
    return dst.shape_of(logical, what)


def _check_rank(shape: Sequence[Any], layout: Layout, what: str) -> None:
    if len(shape) != layout.ndim:
        raise ShapeError(
            f"{what}: a tensor of shape {fmt_shape(shape)} (rank {len(shape)}) cannot be in "
            f"layout {layout.name!r} (rank {layout.ndim})"
        )
    for (a, f), d in zip(layout.axes, shape):
        if f is not None and not prove_equal(d, f):
            raise ShapeError(
                f"{what}: shape {fmt_shape(shape)} does not match layout {layout.name!r}: the "
                f"block axis {a!r} must have extent {f}, got {fmt_dim(d)}"
            )


def layout_transform(
    data: te.Tensor, src_layout: str, dst_layout: str, pad_value: float | None = None
) -> te.Tensor:
    """`data` in layout `src_layout` rewritten in `dst_layout` (TVM's topi.layout_transform).

    A block that does not divide its axis pads the tail with `pad_value` (required then)."""
    src, dst = as_layout(src_layout), as_layout(dst_layout)
    _check_compatible(src, dst)
    try:
        _check_rank(data.shape, src, f"topi.layout_transform of '{data.name}'")
    except ShapeError as err:
        raise TEError(str(err)) from err
    logical = {p: src.logical_dim(data.shape, p) for p in src.primals}
    padded = {p for p in dst.primals if _needs_pad(logical[p], dst.block(p))}
    if padded and pad_value is None:
        raise TEError(
            f"topi.layout_transform of '{data.name}' {fmt_shape(data.shape)} to {dst.name!r}: "
            f"axes {sorted(padded)} are not divisible by their blocks; pass pad_value"
        )
    shape = []
    for a, f in dst.axes:
        b = dst.block(a) if a.isupper() else None
        d = f if a.islower() else logical[a] if b is None else _ceil_div(logical[a], b)
        shape.append(d)

    def body(*idx: Any):
        full = {p: dst.logical_of(idx, p) for p in dst.primals}
        value = data[tuple(src.split_index(full))]
        if not padded:
            return value
        inside = tir_op.all(*(full[p] < logical[p] for p in sorted(padded)))
        return tir_op.if_then_else(inside, value, make_const(data.dtype, pad_value))

    return te.compute(
        index_dims(shape, data.shape),
        body,
        name="T_layout_trans",
        tag="injective",
        attrs={"src_layout": src.name, "dst_layout": dst.name},
    )


def index_dims(shape: Sequence[Any], like: Sequence[Any]) -> tuple[Any, ...]:
    """`shape` with its constant dims in the index dtype of `like` (a tensor's shape), so that
    an int64-shaped input gives an int64-shaped output and fused index arithmetic agrees."""
    dtype = next((d.dtype for d in like if hasattr(d, "dtype")), None)
    if dtype is None:
        return tuple(shape)
    return tuple(d if const_int(d) is None else IntImm(dtype, const_int(d)) for d in shape)


def _needs_pad(extent: Any, block: int | None) -> bool:
    if block is None:
        return False
    c = const_int(extent)
    return c is None or c % block != 0


def _ceil_div(extent: Any, block: int) -> Any:
    c = const_int(extent)
    return -(-c // block) if c is not None else simplify((extent + block - 1) // block)


__all__ = [
    "Layout",
    "as_layout",
    "index_dims",
    "layout_index_map",
    "layout_transform",
    "transformed_shape",
]
