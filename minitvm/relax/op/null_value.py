"""`relax.op.null_value()`: TVM's op for the null object, the value of nn's IO effect
(`_io: R.Object = R.null_value()` in `_initialize_effect`). It lowers to the VM builtin
`vm.builtin.null_value` (runtime/vm_builtin.py)."""

from __future__ import annotations

from ..expr import Call, Expr, ExternFunc
from ..struct_info import ObjectStructInfo
from ._table import OpPattern, make_call, register_op
from .base import call_pure_packed
from .shape_ops import BUILTIN_LOWERING


def _infer_null_value(call: Call) -> ObjectStructInfo:
    return ObjectStructInfo()


_null_value = register_op("relax.null_value", _infer_null_value, None, None, OpPattern.OPAQUE)


def null_value() -> Call:
    """The null object (an R.Object with no value)."""
    return make_call(_null_value, ())


def _lower_null_value(call: Call) -> Expr:
    return call_pure_packed(ExternFunc("vm.builtin.null_value"), sinfo_args=ObjectStructInfo())


BUILTIN_LOWERING["relax.null_value"] = _lower_null_value
