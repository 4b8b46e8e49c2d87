"""StructInfo: what a graph-level value is (tensor of shape and dtype, tuple, shape, function).

Shapes are tuples of int64 PrimExprs; a symbolic dimension is a `tir.Var`. A tensor whose shape
is unknown has `shape=None` and, when known, its rank in `ndim` (-1 when even that is unknown).
"""

from __future__ import annotations

import warnings
from typing import Any

from ..error import ArgumentError, MiniTVMError, ShapeError
from ..ir.dtype import DataType
from ..ir.node import Node, node, set_tuple_field, setfield
from ..ir.vdevice import VDevice
from ..tir.expr import IntImm, PrimExpr, Var, as_expr, cast

INDEX_DTYPE = DataType("int64")


class StructInfo(Node):
    """Base of all struct infos."""

    __slots__ = ()

    def __hash__(self) -> int:  # consistent with the structural `==`
        from ..ir.structural import structural_hash

        return structural_hash(self)

    def same_as(self, other: Any) -> bool:
        from ..ir.structural import structural_equal

        return structural_equal(self, other)

    def __eq__(self, other: object) -> bool:
        """Structural equality, as TVM's StructInfo (free tir vars compare by identity)."""
        return isinstance(other, StructInfo) and self.same_as(other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def is_base_of(self, derived: StructInfo) -> bool:
        """Whether every value of `derived` is also an instance of this struct info."""
        from .analysis_struct_info import BaseCheckResult, struct_info_base_check

        return struct_info_base_check(self, derived) == BaseCheckResult.PASS


def as_dim(value: Any) -> PrimExpr:
    """A shape dimension as an int64 PrimExpr (ints become IntImm; int32 expressions are widened)."""
    if isinstance(value, bool) or not isinstance(value, int | PrimExpr):
        if hasattr(value, "as_tir_var"):  # `n = T.int64()` written outside a parsed function
            value = value.as_tir_var()
        elif hasattr(value, "__index__"):
            value = int(value)
        else:
            raise MiniTVMError(
                f"shape dimension {value!r} (a {type(value).__name__}) is not an int or a tir "
                "expression; use an int or a tir.Var such as te.var('n', 'int64')"
            )
    if isinstance(value, int):
        if value < 0:
            raise MiniTVMError(f"shape dimension {value} is negative; dimensions are >= 0")
        return IntImm(INDEX_DTYPE, value)
    expr = as_expr(value)
    if not expr.dtype.is_integer:
        raise MiniTVMError(f"shape dimension {expr} has dtype {expr.dtype}; it must be an integer")
    if isinstance(expr, IntImm) and expr.dtype != INDEX_DTYPE:
        return IntImm(INDEX_DTYPE, expr.value)
    return expr


def as_shape(values: Any) -> tuple[PrimExpr, ...]:
    """A shape tuple of int64 dims from a list/tuple of ints and tir expressions."""
    if isinstance(values, int | PrimExpr):
        values = (values,)
    if hasattr(values, "values") and not isinstance(values, tuple | list):  # ShapeExpr
        values = values.values
    return tuple(as_dim(v) for v in values)


def _as_dtype(dtype: Any) -> DataType | None:
    if dtype is None or dtype == "" or dtype == "void":
        return None
    return DataType(dtype)


def _is_relax_expr(value: Any) -> bool:
    """Whether `value` is a graph-level expression (such as a Var of R.Shape), not dims."""
    return hasattr(value, "struct_info") and not isinstance(value, PrimExpr | tuple | list)


def _shape_of_expr(shape: Any, ndim: int) -> tuple[Any, int]:
    """(dims, ndim) of a relax shape value; dims is None when only its rank is known."""
    if hasattr(shape, "values") and not callable(shape.values):  # ShapeExpr
        return shape.values, ndim
    sinfo = shape.struct_info
    if not isinstance(sinfo, ShapeStructInfo):
        raise ArgumentError(
            f"TensorStructInfo: shape {getattr(shape, 'name_hint', shape)!r} has struct info "
            f"{type(sinfo).__name__}; give a ShapeExpr, a Var of R.Shape, or a list of dims"
        )
    if sinfo.values is not None:
        return sinfo.values, ndim
    if -1 not in (ndim, sinfo.ndim) and ndim != sinfo.ndim:
        raise MiniTVMError(
            f"TensorStructInfo: ndim={ndim} disagrees with shape of {sinfo.ndim} dims"
        )
    return None, sinfo.ndim if ndim == -1 else ndim


def _check_ndim(what: str, ndim: Any) -> None:
    if isinstance(ndim, bool) or not isinstance(ndim, int) or ndim < -1:
        raise ShapeError(f"{what}: ndim={ndim!r} must be a non-negative int, or -1 when unknown")


@node
class ObjectStructInfo(StructInfo):
    """Any value (nothing is known)."""


@node
class PrimStructInfo(StructInfo):
    """A scalar of `dtype`; `value` is the known value when there is one.

    As in TVM, `PrimStructInfo(value=n)` alone takes the dtype from the value (a Python int is
    an int64 value).
    """

    dtype: Any = None
    value: Any = None
    _def_fields = ("value",)  # a symbolic value is defined where the struct info is first seen

    def __post_init__(self):
        if self.dtype is None:
            if self.value is None:
                raise ArgumentError(
                    "PrimStructInfo needs a dtype or a value: PrimStructInfo('int64') or "
                    "PrimStructInfo(value=n)"
                )
            value = self.value
            if isinstance(value, int) and not isinstance(value, bool):
                value = IntImm(INDEX_DTYPE, value)
            setfield(self, "value", as_expr(value))
            setfield(self, "dtype", self.value.dtype)
            return
        setfield(self, "dtype", DataType(self.dtype))
        if self.value is not None:
            setfield(self, "value", as_expr(self.value, like=self.dtype))


@node
class ShapeStructInfo(StructInfo):
    """A shape value (`R.Shape`); `values` is None when only the rank (`ndim`) is known."""

    values: Any = None
    ndim: int = -1
    _def_fields = ("values",)  # symbolic dims are defined where the shape is first seen

    def __post_init__(self):
        _check_ndim("ShapeStructInfo", self.ndim)
        if self.values is not None:
            if isinstance(self.values, int | PrimExpr):
                raise ArgumentError(
                    f"ShapeStructInfo: values must be a list of dims, got {self.values!r}; "
                    f"write ShapeStructInfo([{self.values!r}]) or ShapeStructInfo(ndim=...)"
                )
            setfield(self, "values", as_shape(self.values))
            # TVM refuses ndim beside values outright; `replace` and the JSON loader rebuild
            # nodes with every field, so here only a contradiction is refused
            if self.ndim not in (-1, len(self.values)):
                raise ShapeError(
                    f"ShapeStructInfo: ndim={self.ndim} disagrees with {len(self.values)} "
                    "values; give values or ndim, not both"
                )
            setfield(self, "ndim", len(self.values))


@node
class TensorStructInfo(StructInfo):
    """A tensor: `relax.TensorStructInfo((n, 784), "float32")`.

    `shape` None means unknown shape (then `ndim` may still be known); `dtype` None means unknown.
    `shape` may also be a relax shape value, as in TVM: a `ShapeExpr`, or a Var whose struct
    info is `R.Shape` (its known values become the dims; with none known, only its ndim is kept).
    `vdevice` is the `tvm.ir.VDevice` the tensor lives on (None: unspecified). TVM's signature
    is `(shape, dtype, vdevice, ndim)`; minitvm's third positional parameter was `ndim`, so an
    int there still means ndim, and anything else (a VDevice or None) means vdevice.
    The first occurrence of a symbolic dim in a function defines it (structural equality maps
    such vars bijectively, hence `_def_fields`).
    """

    shape: Any = None
    dtype: Any = "float32"
    ndim: Any = -1
    vdevice: Any = None
    _def_fields = ("shape",)

    def __post_init__(self):
        ndim = getattr(self.ndim, "value", self.ndim)  # IntImm, numpy ints: still ndim
        if not isinstance(ndim, int | VDevice | None) and hasattr(ndim, "__index__"):
            ndim = int(ndim)
        setfield(self, "ndim", ndim)
        if not isinstance(self.ndim, int):  # TVM order: (shape, dtype, vdevice, ndim)
            if self.vdevice is not None:
                raise ArgumentError(
                    f"TensorStructInfo: ndim must be an int, got {self.ndim!r} (vdevice is "
                    "given by keyword)"
                )
            setfield(self, "vdevice", self.ndim)
            setfield(self, "ndim", -1)
        if self.vdevice is not None and not isinstance(self.vdevice, VDevice):
            raise ArgumentError(
                f"TensorStructInfo: vdevice must be a tvm.ir.VDevice or None, got "
                f"{self.vdevice!r}; make one with tvm.ir.VDevice('llvm', 0, 'global')"
            )
        _check_ndim("TensorStructInfo", self.ndim)
        setfield(self, "dtype", _as_dtype(self.dtype))
        if self.shape is not None and _is_relax_expr(self.shape):
            dims, ndim = _shape_of_expr(self.shape, self.ndim)
            setfield(self, "shape", dims)
            if dims is None:
                setfield(self, "ndim", ndim)
        if self.shape is not None:
            shape = as_shape(self.shape)
            if self.ndim not in (-1, len(shape)):
                raise MiniTVMError(
                    f"TensorStructInfo: ndim={self.ndim} disagrees with shape of {len(shape)} dims"
                )
            setfield(self, "shape", shape)
            setfield(self, "ndim", len(shape))

    @property
    def is_static(self) -> bool:
        return self.shape is not None and all(isinstance(d, IntImm) for d in self.shape)

    def static_shape(self) -> tuple[int, ...] | None:
        """The shape as Python ints, or None when a dim is symbolic or the shape unknown."""
        return tuple(d.value for d in self.shape) if self.is_static else None


@node
class TupleStructInfo(StructInfo):
    fields: tuple

    def __post_init__(self):
        set_tuple_field(self, "fields", StructInfo, "StructInfo")


@node
class FuncStructInfo(StructInfo):
    """A function from `params` (struct infos, or None for opaque) to `ret`."""

    params: Any
    ret: StructInfo
    purity: bool = True

    def __post_init__(self):
        if self.params is not None:
            setfield(self, "params", tuple(self.params))

    @property
    def derive_func(self) -> None:
        """TVM's hook deriving an opaque function's result per call; minitvm has none."""
        return None

    @staticmethod
    def opaque_func(
        ret: StructInfo | None = None, derive_func: Any = None, purity: bool = True
    ) -> FuncStructInfo:
        """A function whose params are unknown, returning `ret` (default: R.Object)."""
        if derive_func is not None:
            raise ArgumentError(
                "FuncStructInfo.opaque_func: derive_func is not supported by minitvm; give the "
                "result as ret=..."
            )
        return FuncStructInfo(None, ret or ObjectStructInfo(), purity)


def tensor_sinfo(shape: Any, dtype: Any = "float32") -> TensorStructInfo:
    """Shorthand: a TensorStructInfo with known shape."""
    return TensorStructInfo(shape, dtype)


def shape_vars(sinfo: StructInfo) -> list[Var]:
    """The symbolic tir.Vars appearing in a struct info, in first-appearance order."""
    from ..tir.functor import post_order_visit

    seen: list[Var] = []

    def visit(n: Any) -> None:
        if isinstance(n, Var) and all(n is not s for s in seen):
            seen.append(n)

    post_order_visit(sinfo, visit)
    return seen


def widen_index(expr: PrimExpr) -> PrimExpr:
    """An index expression in int64."""
    return expr if expr.dtype == INDEX_DTYPE else cast(INDEX_DTYPE, expr)


__all__ = [
    "FuncStructInfo",
    "ObjectStructInfo",
    "PrimStructInfo",
    "ShapeStructInfo",
    "StructInfo",
    "TensorStructInfo",
    "TupleStructInfo",
    "as_dim",
    "as_shape",
    "shape_vars",
    "tensor_sinfo",
]


class DynTensorType:
    """The 2022 spelling of a tensor annotation: `relax.Var("x", (n, 4), relax.DynTensorType(2,
    "float32"))`. Deprecated: use `relax.TensorStructInfo((n, 4), "float32")`."""

    def __init__(self, ndim: int = -1, dtype: Any = "float32") -> None:
        warnings.warn(
            "relax.DynTensorType is the 2022 spelling; use relax.TensorStructInfo(shape, dtype)",
            DeprecationWarning,
            stacklevel=2,
        )
        self.ndim, self.dtype = int(ndim), dtype

    def struct_info(self, shape: Any = None) -> TensorStructInfo:
        """The TensorStructInfo this annotation and `shape` (None: unknown) describe."""
        return TensorStructInfo(shape, self.dtype, self.ndim)

    def __repr__(self) -> str:
        return f"DynTensorType(ndim={self.ndim}, dtype={self.dtype!r})"
