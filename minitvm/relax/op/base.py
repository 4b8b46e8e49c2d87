"""Calls into lower levels: `call_tir` (a PrimFunc in the module) and `call_dps_packed`
(a registered packed function), both in destination-passing style behind a pure interface."""

from __future__ import annotations

from typing import Any

from ...error import MiniTVMError
from ...ir.module import GlobalVar
from ...tir.expr import FloatImm, IntImm
from ..expr import Call, Expr, ExternFunc, PrimValue, ShapeExpr, StringImm, Tuple
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
    return Tuple(tuple(_scalar_arg(a) for a in args))


def _scalar_arg(value: Any) -> Any:
    """A Python number among packed-call arguments becomes a PrimValue, by TVM's rule for
    converting arguments (bool and int: int64, float: float64), e.g. a flag `[x, True]`."""
    if isinstance(value, bool | int):
        return PrimValue(IntImm("int64", int(value)))
    if isinstance(value, float):
        return PrimValue(FloatImm("float64", value))
    return value


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


# ----------------------------------------------------------------------------- packed calls
# A plain `Call(ExternFunc(name), args, sinfo_args=...)` (TVMScript's `R.call_packed`) may have
# side effects: passes keep it and never merge it. These two ops wrap such a call for a function
# the user vouches for: `call_pure_packed` is a pure call, `call_inplace_packed` is pure except
# that it writes into the arguments named by `inplace_indices` and returns them.


def _infer_packed(call: Call) -> StructInfo:
    if not call.sinfo_args:
        raise MiniTVMError(
            f"{call.op.name}: missing sinfo_args (the struct info of the result), e.g. "
            'sinfo_args=R.Tensor((4,), "float32")'
        )
    return call.sinfo_args[0]


_call_pure_packed = register_op(
    "relax.call_pure_packed", _infer_packed, None, None, OpPattern.OPAQUE
)
_call_inplace_packed = register_op(
    "relax.call_inplace_packed", _infer_packed, None, None, OpPattern.OPAQUE
)


def _packed_callee(func: Any, what: str) -> ExternFunc:
    if isinstance(func, ExternFunc):
        return ExternFunc(func.global_symbol)
    if isinstance(func, str) and func:
        return ExternFunc(func)
    raise MiniTVMError(
        f"{what}: the callee must be a registered function's name (a str) or an ExternFunc, "
        f"got {func!r}"
    )


def _sinfo_args(sinfo_args: Any, what: str) -> tuple:
    if sinfo_args is None:
        raise MiniTVMError(
            f'{what}: give sinfo_args, the struct info of the result (R.Tensor((4,), "float32"))'
        )
    items = tuple(sinfo_args) if isinstance(sinfo_args, list | tuple) else (sinfo_args,)
    items = tuple(s() if callable(s) and not isinstance(s, StructInfo) else s for s in items)
    for s in items:
        if not isinstance(s, StructInfo):
            raise MiniTVMError(f"{what}: sinfo_args entries must be struct infos, got {s!r}")
    if len(items) != 1:
        raise MiniTVMError(
            f"{what}: sinfo_args holds one struct info (an R.Tuple for several results), "
            f"got {len(items)}"
        )
    return items


def _packed_arg(value: Any, what: str, position: int) -> Expr:
    """An argument as a relax expression: Python scalars become PrimValues, strings StringImms,
    sequences Tuples (TVM converts them the same way)."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool | int | float):
        return PrimValue(value)
    if isinstance(value, str):
        return StringImm(value)
    if isinstance(value, list | tuple):
        return Tuple(tuple(_packed_arg(v, what, position) for v in value))
    raise MiniTVMError(
        f"{what}: argument {position} is a {type(value).__name__}, not a relax expression; wrap "
        "arrays with relax.const(...)"
    )


def _packed_args(args: tuple, what: str) -> tuple:
    return tuple(_packed_arg(a, what, i) for i, a in enumerate(args))


def call_pure_packed(func: Any, *args: Any, sinfo_args: Any = None) -> Call:
    """Call the registered function `func` (a name) and treat the call as pure: passes may
    remove, merge or reorder it. `relax.op.call_pure_packed("vm.builtin.copy", x,
    sinfo_args=R.Tensor((4,), "float32"))`."""
    what = "call_pure_packed"
    callee = _packed_callee(func, what)
    return make_call(
        _call_pure_packed,
        (callee, *_packed_args(args, what)),
        sinfo_args=_sinfo_args(sinfo_args, what),
    )


def call_inplace_packed(
    func: Any, *args: Any, inplace_indices: Any = None, sinfo_args: Any = None
) -> Call:
    """Call the registered function `func`, which writes its results into the arguments at
    `inplace_indices` (output i aliases `args[inplace_indices[i]]`; -1: a fresh result)."""
    what = "call_inplace_packed"
    callee = _packed_callee(func, what)
    call_args = _packed_args(args, what)
    sinfo = _sinfo_args(sinfo_args, what)
    if inplace_indices is None:
        raise MiniTVMError(f"{what}('{callee.global_symbol}'): give inplace_indices, e.g. [0]")
    indices = [inplace_indices] if isinstance(inplace_indices, int) else list(inplace_indices)
    outputs = len(sinfo[0].fields) if isinstance(sinfo[0], TupleStructInfo) else 1
    if len(indices) != outputs:
        raise MiniTVMError(
            f"{what}('{callee.global_symbol}'): inplace_indices {indices} has {len(indices)} "
            f"entries but sinfo_args describes {outputs} result(s); give one index per result"
        )
    for i in indices:
        if not isinstance(i, int) or not -1 <= i < len(call_args):
            raise MiniTVMError(
                f"{what}('{callee.global_symbol}'): inplace index {i!r} is not -1 or an argument "
                f"position below {len(call_args)}"
            )
    if all(i == -1 for i in indices):
        raise MiniTVMError(
            f"{what}('{callee.global_symbol}'): every inplace index is -1; at least one result "
            "must be an argument updated in place (else use call_pure_packed)"
        )
    return make_call(
        _call_inplace_packed, (callee, *call_args), {"inplace_indices": indices}, sinfo_args=sinfo
    )


_call_py_func = register_op(
    "relax.call_py_func", _infer_from_sinfo_args, None, None, OpPattern.OPAQUE
)


def call_py_func(func_name: Any, args: Any, out_sinfo: Any) -> Call:
    """Call the `@I.pyfunc` method `func_name` of the module on `args`; its result is described
    by `out_sinfo` (tensors with known shapes). BasePyModule runs it."""
    name = func_name.value if isinstance(func_name, StringImm) else func_name
    if not isinstance(name, str) or not name.isidentifier():
        raise MiniTVMError(
            f"call_py_func: the callee is the name of a @I.pyfunc method (a str), got {func_name!r}"
        )
    sinfo = _out_sinfo(out_sinfo, f"call_py_func('{name}')")
    return make_call(_call_py_func, (StringImm(name), _args_tuple(args)), sinfo_args=(sinfo,))


# the ops that call into another level instead of computing: no TE, no numpy reference
STRUCTURAL_OPS = (
    "relax.call_tir",
    "relax.call_tir_inplace",  # call_tir_inplace.py: the VM runs it directly
    "relax.call_dps_packed",
    "relax.call_pure_packed",
    "relax.call_inplace_packed",
    "relax.call_py_func",
    # shape values: VM builtins, no TE (tests/relax/test_op_tensor_to_shape.py checks them)
    "relax.shape_of",
    "relax.tensor_to_shape",
    "relax.shape_to_tensor",
    # bounds read at run time: a checked VM builtin (tests/relax/test_op_dynamic_strided_slice.py)
    "relax.dynamic_strided_slice",
    # data-dependent result shapes: checked VM builtins (tests/relax/test_op_data_dependent.py)
    "relax.nonzero",
    "relax.unique",
    "relax.vision.all_class_non_max_suppression",
    # collectives across disco workers: shape rules only, refused at build (ccl.py)
    "relax.ccl.allreduce",
    "relax.ccl.allgather",
    "relax.ccl.broadcast_from_worker0",
    "relax.ccl.scatter_from_worker0",
    "relax.null_value",  # the null object of nn's IO effect: a VM builtin (null_value.py)
    # a call_tir with a TE gradient: built as call_tir (tests/relax/test_grad_tvm_api.py)
    "relax.call_tir_with_grad",
    # a view of a tensor's memory: a checked VM builtin (tests/relax/test_a4_memory_view.py)
    "relax.memory.view",
    "relax.print",  # effects, lowered to packed calls (effects_a10.py)
    "relax.assert_op",
    # markers for relax.transform.Gradient's recomputation, built as aliases (grad_checkpoint.py)
    "relax.grad.start_checkpoint",
    "relax.grad.end_checkpoint",
)
