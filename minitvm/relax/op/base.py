"""Calls into lower levels: `call_tir` (a PrimFunc in the module) and `call_dps_packed`
(a registered packed function), both in destination-passing style behind a pure interface."""

from __future__ import annotations

from typing import Any

from ...error import MiniTVMError
from ...ir.module import GlobalVar
from ..expr import Call, Expr, ExternFunc, ShapeExpr, Tuple
from ..struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from ._table import OpPattern, make_call, register_op


def _infer_from_sinfo_args(call: Call) -> StructInfo:
    if not call.sinfo_args:
        raise MiniTVMError(f"{call.op.name}: missing out_sinfo (the struct info of the outputs)")
    return call.sinfo_args[0]


_call_tir = register_op("relax.call_tir", _infer_from_sinfo_args, None, None, OpPattern.OPAQUE)
_call_dps_packed = register_op(
    "relax.call_dps_packed", _infer_from_sinfo_args, None, None, OpPattern.OPAQUE
)


def _out_sinfo(out_sinfo: Any, what: str) -> StructInfo:
    if isinstance(out_sinfo, list | tuple):
        items = list(out_sinfo)
        for s in items:
            if not isinstance(s, TensorStructInfo):
                raise MiniTVMError(f"{what}: out_sinfo entries must be TensorStructInfo, got {s!r}")
        return items[0] if len(items) == 1 else TupleStructInfo(tuple(items))
    if not isinstance(out_sinfo, TensorStructInfo | TupleStructInfo):
        raise MiniTVMError(
            f"{what}: out_sinfo must be a TensorStructInfo or a list of them, e.g. "
            "relax.TensorStructInfo((n, 128), 'float32'); got {out_sinfo!r}"
        )
    return out_sinfo


def _args_tuple(args: Any) -> Tuple:
    if isinstance(args, Tuple):
        return args
    if isinstance(args, Expr):
        return Tuple((args,))
    return Tuple(tuple(args))


def call_tir(gvar: GlobalVar, args: Any, out_sinfo: Any, tir_vars: Any = None) -> Call:
    """Call the PrimFunc `gvar` on `args`; the outputs (described by `out_sinfo`) are allocated
    by the caller: `relax.call_tir(mod.get_global_var("mm"), [x, w], R.Tensor((n, 4), "float32"))`."""
    if not isinstance(gvar, GlobalVar):
        raise MiniTVMError(f"call_tir: the callee must be a GlobalVar of a PrimFunc, got {gvar!r}")
    call_args: tuple = (gvar, _args_tuple(args))
    if tir_vars is not None:
        call_args += (tir_vars if isinstance(tir_vars, ShapeExpr) else ShapeExpr(tuple(tir_vars)),)
    return make_call(_call_tir, call_args, sinfo_args=(_out_sinfo(out_sinfo, "call_tir"),))


def call_dps_packed(func: Any, args: Any, out_sinfo: Any) -> Call:
    """Call the registered packed function `func` (a name) in destination-passing style."""
    callee = ExternFunc(func) if isinstance(func, str) else func
    if not isinstance(callee, ExternFunc):
        raise MiniTVMError(f"call_dps_packed: the callee must be a function name, got {func!r}")
    return make_call(
        _call_dps_packed,
        (callee, _args_tuple(args)),
        sinfo_args=(_out_sinfo(out_sinfo, "call_dps_packed"),),
    )
