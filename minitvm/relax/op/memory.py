"""`relax.op.memory.view` (`R.memory.view`): a tensor's memory seen with another shape, dtype or
byte offset, without a copy (TVM's op of the same name).

The arguments left out are the empty tuple, as in TVM: `view(A)` is `view(A, (), (), ())`. The
view must lie inside the bytes of its argument: the struct info rule refuses a view that is
provably larger, and the VM builtin (runtime/vm_builtin_view.py) checks every view at run time,
so a view whose size depends on dims known only then is still safe. LegalizeOps leaves the op
alone; relax.build calls the builtin `runtime.TVMArrayCreateView` for it (vm/codegen.py).
"""

from __future__ import annotations

from typing import Any

from ...arith import Analyzer
from ...error import ShapeError
from ...ir.dtype import DataType
from ...runtime import vm_builtin_view  # registers runtime.TVMArrayCreateView
from ...tir.expr import IntImm, PrimExpr, as_expr
from ..expr import Call, DataTypeImm, Expr, PrimValue, ShapeExpr, Tuple
from ..struct_info import (
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
)
from . import _infer as I
from ._table import OpPattern, make_call, register_op
from .grad import NOT_DIFFERENTIABLE, _reasons

_NAME = "relax.memory.view"


def _is_void(arg: Expr) -> bool:
    return isinstance(arg, Tuple) and not arg.fields


def _view_shape(arg: Expr, x: TensorStructInfo) -> tuple[Any, int]:
    """(dims or None, ndim) of the view: the argument's when no shape is given."""
    if _is_void(arg):
        return x.shape, x.ndim
    sinfo = arg.struct_info
    if not isinstance(sinfo, ShapeStructInfo):
        raise ShapeError(
            f"{_NAME}: shape must be a shape (R.shape([...]) or an R.Shape value), got "
            f"{I.fmt(sinfo)}"
        )
    return sinfo.values, sinfo.ndim


def _view_dtype(arg: Expr, x: TensorStructInfo) -> DataType | None:
    """The view's dtype (None: unknown until run time)."""
    if _is_void(arg):
        return x.dtype
    if isinstance(arg, DataTypeImm):
        return arg.value
    if isinstance(arg.struct_info, ObjectStructInfo):  # a dtype held in a variable
        return None
    raise ShapeError(
        f"{_NAME}: dtype must be a dtype (R.dtype('float32')), got {I.fmt(arg.struct_info)}"
    )


def _view_offset(arg: Expr) -> PrimExpr | None:
    """The relative byte offset (None: unknown until run time)."""
    if _is_void(arg):
        return IntImm("int64", 0)
    sinfo = arg.struct_info
    if not isinstance(sinfo, PrimStructInfo) or not str(sinfo.dtype).startswith(("int", "uint")):
        raise ShapeError(
            f"{_NAME}: relative_byte_offset must be an integer R.Prim value, got {I.fmt(sinfo)}"
        )
    return sinfo.value


def _count(dims: Any) -> PrimExpr:
    size = as_expr(IntImm("int64", 1))
    for d in dims:
        size = size * as_expr(d)
    return size


def _nbytes(dims: Any, dtype: DataType) -> PrimExpr:
    return _count(dims) * IntImm("int64", dtype.numpy_dtype().itemsize)


def _text(value: Any) -> str:
    """A dim, offset or shape as the user wrote it (16, not T.int64(16))."""
    if isinstance(value, tuple | list):
        return "(" + ", ".join(_text(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return str(value.value) if isinstance(value, IntImm) else str(value)


def _infer_view(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "data")
    shape_arg, dtype_arg, offset_arg = call.args[1:4]
    dims, ndim = _view_shape(shape_arg, x)
    dtype = _view_dtype(dtype_arg, x)
    offset = _view_offset(offset_arg)
    analyzer = Analyzer()
    same_bytes = _is_void(shape_arg) and _is_void(dtype_arg)
    # the same bytes, moved on by `offset`: any offset above 0 runs past the end
    if same_bytes and offset is not None and analyzer.can_prove(offset > 0):
        raise ShapeError(
            f"{_NAME}: a view with relative_byte_offset {_text(offset)} and the same shape and "
            "dtype as data ends past data's last byte; give a smaller shape or dtype too"
        )
    # the same element type, known or not: more elements than data has cannot fit
    same_type = _is_void(dtype_arg) and x.shape is not None and dims is not None
    if same_type and analyzer.can_prove(_count(dims) > _count(x.shape)):
        raise ShapeError(
            f"{_NAME}: a view of shape {_text(dims)} has more elements than data "
            f"{I.fmt(x)}; a view must lie inside the tensor it views"
        )
    known = (x.shape, x.dtype, dims, dtype, offset)
    if all(k is not None for k in known):
        need = _nbytes(dims, dtype) + offset
        have = _nbytes(x.shape, x.dtype)
        if analyzer.can_prove(need > have):
            raise ShapeError(
                f"{_NAME}: a view of shape {_text(dims)} and dtype {dtype} at byte offset "
                f"{_text(offset)} needs {_text(analyzer.simplify(need))} bytes, but data "
                f"{I.fmt(x)} has {_text(analyzer.simplify(have))}; a view must lie inside the "
                "tensor it views"
            )
    if dims is not None:
        return TensorStructInfo(tuple(dims), dtype)
    return TensorStructInfo(None, dtype, ndim)


_view = register_op(_NAME, _infer_view, None, None, OpPattern.OPAQUE)

# op -> the VM builtin that runs it, argument for argument (vm/codegen.py; TVM's
# LowerRuntimeBuiltin does this after LegalizeOps has left the op alone)
VM_BUILTINS = {_NAME: vm_builtin_view.CREATE_VIEW}
NOT_DIFFERENTIABLE.update(_reasons({"memory.view": "reinterprets memory (no tensor math)"}))


def _as_arg(value: Any, make: Any, what: str) -> Expr:
    if value is None or (isinstance(value, tuple) and not value and what != "shape"):
        return Tuple(())  # left out; `()` is how a left-out argument prints
    if isinstance(value, tuple) and not value:
        # printed IR shows a left-out shape as `()`: reading it as a 0-d shape would change
        # the program, so neither reading is guessed
        raise ShapeError(
            f"{_NAME}: shape=() is ambiguous; write R.shape([]) for a 0-d view, or leave "
            "shape out to keep data's shape"
        )
    return value if isinstance(value, Expr) else make(value)


def view(
    data: Expr,
    shape: Any = None,
    dtype: Any = None,
    relative_byte_offset: Any = None,
) -> Call:
    """`data`'s memory as a tensor of `shape` and `dtype` from `relative_byte_offset` on (each
    None: unchanged); the view must lie inside data's bytes.

    >>> B = relax.op.memory.view(A, shape=(16, 64), dtype="float16", relative_byte_offset=2048)
    """
    args = (
        data,
        _as_arg(shape, ShapeExpr, "shape"),
        _as_arg(dtype, DataTypeImm, "dtype"),
        _as_arg(relative_byte_offset, PrimValue, "relative_byte_offset"),
    )
    return make_call(_view, args)


__all__ = ["view"]
