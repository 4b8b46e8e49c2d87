"""More elementwise ops: tan/sinh/cosh, inverse trig and hyperbolic functions, trunc, isnan/isinf/isfinite, bitwise ops.

Names follow TVM's relax.op (relax.op.asin, relax.op.isnan, relax.op.bitwise_and,
relax.op.left_shift, ...); each is one op-table row over `topi.math`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ... import te
from ...error import DTypeError
from ...tir import op as tir_op
from ...topi import math as tmath
from ..expr import Call, Expr
from ..struct_info import StructInfo, TensorStructInfo
from . import _infer as I
from ._table import OpPattern, make_call, register_op
from .elementwise import _infer_binary, _np_float, make_binary, make_unary


def _infer_float_class(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x")
    return TensorStructInfo(x.shape, "bool", x.ndim)


def _require_integer(call: Call, sinfo: TensorStructInfo, pname: str) -> None:
    if sinfo.dtype is not None and not (sinfo.dtype.is_int or sinfo.dtype.is_uint):
        raise DTypeError(
            f"{I.op_name(call)}: {pname} has dtype {sinfo.dtype}, but bitwise ops take integer "
            f"tensors; convert it first with relax.op.astype({pname}, 'int32')"
        )


def _infer_bitwise_unary(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x")
    _require_integer(call, x, "x")
    return x


def _infer_bitwise(call: Call) -> StructInfo:
    for k in range(2):
        _require_integer(call, I.tensor_arg(call, k, f"x{k + 1}"), f"x{k + 1}")
    return _infer_binary(call)


def _float_class(name: str, te_fn: Callable, np_fn: Callable, doc: str) -> Callable:
    op = register_op(f"relax.{name}", _infer_float_class, te_fn, np_fn, OpPattern.ELEMWISE)

    def build(x: Expr) -> Call:
        return make_call(op, (x,))

    build.__name__, build.__doc__ = name, doc
    return build


def _bitwise(name: str, te_fn: Callable, np_fn: Callable) -> Callable:
    doc = f"Elementwise {name} of integer tensors (numpy broadcasting)."
    return make_binary(name, _infer_bitwise, te_fn, np_fn, doc)


def _np_shift(fn: Callable) -> Callable:
    return lambda a, b: fn(a, b.astype(a.dtype)).astype(a.dtype)


tan = make_unary("tan", tmath.tan, _np_float(np.tan), True, "Elementwise tangent.")
sinh = make_unary("sinh", tmath.sinh, _np_float(np.sinh), True, "Elementwise sinh.")
cosh = make_unary("cosh", tmath.cosh, _np_float(np.cosh), True, "Elementwise cosh.")
asin = make_unary("asin", tmath.asin, _np_float(np.arcsin), True, "Elementwise arcsine.")
acos = make_unary("acos", tmath.acos, _np_float(np.arccos), True, "Elementwise arccosine.")
atan = make_unary("atan", tmath.atan, _np_float(np.arctan), True, "Elementwise arctangent.")


def _te_formula(name: str, formula: Callable) -> Callable:
    """A TE elementwise op from a formula over tir scalars (no tir intrinsic exists for it)."""

    def build(x: te.Tensor) -> te.Tensor:
        return te.compute(x.shape, lambda *i: formula(x[i]), name=f"T_{name}", tag="elemwise")

    return build


# the textbook logarithmic forms of the inverse hyperbolic functions (as topi's legalization)
_te_asinh = _te_formula("asinh", lambda v: tir_op.log(v + tir_op.sqrt(v * v + 1.0)))
_te_acosh = _te_formula("acosh", lambda v: tir_op.log(v + tir_op.sqrt(v * v - 1.0)))
_te_atanh = _te_formula("atanh", lambda v: 0.5 * tir_op.log((1.0 + v) / (1.0 - v)))
asinh = make_unary("asinh", _te_asinh, _np_float(np.arcsinh), True, "Elementwise asinh.")
acosh = make_unary("acosh", _te_acosh, _np_float(np.arccosh), True, "Elementwise acosh.")
atanh = make_unary("atanh", _te_atanh, _np_float(np.arctanh), True, "Elementwise atanh.")
trunc = make_unary(
    "trunc", tmath.trunc, _np_float(np.trunc), False, "Elementwise round toward zero."
)
isnan = _float_class("isnan", tmath.isnan, np.isnan, "Elementwise x != x, as bool.")
isinf = _float_class("isinf", tmath.isinf, np.isinf, "Elementwise |x| == inf, as bool.")
isfinite = _float_class("isfinite", tmath.isfinite, np.isfinite, "Neither NaN nor inf, as bool.")
_bitwise_not = register_op(
    "relax.bitwise_not", _infer_bitwise_unary, tmath.bitwise_not, np.invert, OpPattern.ELEMWISE
)


def bitwise_not(x: Expr) -> Call:
    """Elementwise ~x of an integer tensor."""
    return make_call(_bitwise_not, (x,))


bitwise_and = _bitwise("bitwise_and", tmath.bitwise_and, np.bitwise_and)
bitwise_or = _bitwise("bitwise_or", tmath.bitwise_or, np.bitwise_or)
bitwise_xor = _bitwise("bitwise_xor", tmath.bitwise_xor, np.bitwise_xor)
left_shift = _bitwise("left_shift", tmath.left_shift, _np_shift(np.left_shift))
right_shift = _bitwise("right_shift", tmath.right_shift, _np_shift(np.right_shift))


def _infer_reinterpret(call: Call) -> StructInfo:
    from ...ir.dtype import DataType

    x = I.tensor_arg(call, 0, "x")
    dst = DataType(call.attrs["dtype"])
    if x.dtype is not None:
        width = {True: 8}.get(x.dtype.is_bool, x.dtype.bits)
        if width != {True: 8}.get(dst.is_bool, dst.bits):
            raise DTypeError(
                f"relax.reinterpret: {x.dtype} and {dst} differ in width; reinterpret keeps the "
                "bits of each element, so the widths must match (use astype to convert values)"
            )
    return TensorStructInfo(x.shape, dst, x.ndim)


def _np_reinterpret(x, dtype):
    return x.view(np.uint8 if x.dtype == np.bool_ else x.dtype).view(dtype)


_reinterpret = register_op(
    "relax.reinterpret",
    _infer_reinterpret,
    lambda x, dtype: tmath.reinterpret(x, dtype),
    _np_reinterpret,
    OpPattern.ELEMWISE,
)


def reinterpret(x: Expr, dtype: str) -> Call:
    """Each element's bits read as `dtype` (same width): `relax.op.reinterpret(x, "int32")`."""
    from ...ir.dtype import DataType

    return make_call(_reinterpret, (x,), {"dtype": str(DataType(dtype))})


# one relax op over each compute of topi.math, under the same name
__all__ = list(tmath.__all__) + ["asinh", "acosh", "atanh"]
