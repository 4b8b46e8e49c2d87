"""The TIR names that several stages test for, in one place: intrinsics (the `name` of an Op)
and function attributes. Tables keyed by many intrinsics (codegen's lowering tables, the TIR
interpreter's) stay tables in their own modules; the names here are the ones passes match one
at a time (`is_call(e, LIKELY)`), so a spelling lives once."""

from __future__ import annotations

from typing import Any

from .expr import Call

# intrinsics (Op names)
IF_THEN_ELSE = "tir.if_then_else"
LIKELY = "tir.likely"
REINTERPRET = "tir.reinterpret"
FABS = "tir.fabs"
SHIFT_RIGHT = "tir.shift_right"
BITWISE_AND = "tir.bitwise_and"
TVM_CALL_PACKED = "tir.tvm_call_packed"
TVM_STACK_MAKE_ARRAY = "tir.tvm_stack_make_array"
TVM_ACCESS_PTR = "tir.tvm_access_ptr"
TVM_STORAGE_SYNC = "tir.tvm_storage_sync"

# PrimFunc attributes
ATTR_NOALIAS = "tir.noalias"
ATTR_IS_GLOBAL_FUNC = "tir.is_global_func"
ATTR_KERNEL_LAUNCH_PARAMS = "tir.kernel_launch_params"
ATTR_IS_SCHEDULED = "tir.is_scheduled"


def is_call(e: Any, name: str) -> bool:
    """Whether `e` is a Call of the intrinsic `name` (an Op, or an op given by its name)."""
    return isinstance(e, Call) and getattr(e.op, "name", e.op) == name
