"""`relax.call_tir_inplace`: a `call_tir` whose PrimFunc writes some results into its inputs.

    lv = R.call_tir_inplace(cls.f, (a, b, c), out_sinfo=R.Tensor((n, 4), "float32"),
                            inplace_indices=[2])

Output i is the input `args[inplace_indices[i]]`, updated in place; an index of -1 is a fresh
output that the caller allocates, as in call_tir. The PrimFunc takes the inputs, then the
fresh outputs only, then the tir_vars. The call is pure to passes (as in TVM): the inputs it
overwrites must not be read afterwards. The VM (relax/vm/codegen.py) hands the kernel a copy
of each in-place input, since its program rules let a kernel write only VM-allocated tensors:
the results are TVM's, and the caller's input keeps its value.
"""

from __future__ import annotations

from typing import Any

from ...error import MiniTVMError
from ...ir.module import GlobalVar
from ..expr import Call, ShapeExpr
from ..struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from . import _infer as I
from ._table import OpPattern, make_call, register_op
from .base import _args_tuple, _out_sinfo
from .grad import NOT_DIFFERENTIABLE, _reasons

OP_NAME = "relax.call_tir_inplace"


def _outputs(sinfo: StructInfo) -> tuple:
    return tuple(sinfo.fields) if isinstance(sinfo, TupleStructInfo) else (sinfo,)


def _check_aliases(call: Call) -> None:
    """Each in-place output has its input's dtype and (where both are known) shape."""
    inputs = call.args[1].fields
    for i, index in enumerate(call.attrs["inplace_indices"]):
        if index == -1:
            continue
        out = _outputs(call.sinfo_args[0])[i]
        arg = inputs[index].struct_info
        if not isinstance(arg, TensorStructInfo):
            raise MiniTVMError(
                f"call_tir_inplace: inplace index {index} names input {index}, a "
                f"{type(arg).__name__}; in-place outputs must be tensor inputs"
            )
        same_dtype = arg.dtype is None or out.dtype is None or arg.dtype == out.dtype
        shapes = (arg.shape, out.shape)
        same_shape = None in shapes or (
            len(shapes[0]) == len(shapes[1])
            and not any(map(I.provably_differ, shapes[0], shapes[1]))
        )
        if not (same_dtype and same_shape):
            raise MiniTVMError(
                f"call_tir_inplace: output {i} is written into input {index}, so it needs that "
                f"input's struct info: input {index} is {I.fmt(arg)}, out_sinfo gives "
                f"{I.fmt(out)}"
            )


def _infer(call: Call) -> StructInfo:
    if not call.sinfo_args:
        raise MiniTVMError("call_tir_inplace: missing out_sinfo (the struct info of the outputs)")
    _check_aliases(call)
    return call.sinfo_args[0]


_call_tir_inplace = register_op(OP_NAME, _infer, None, None, OpPattern.OPAQUE)
NOT_DIFFERENTIABLE.update(
    _reasons({"call_tir_inplace": "opaque kernel call: differentiate before legalizing"})
)


def call_tir_inplace(
    gvar: GlobalVar, args: Any, inplace_indices: Any, out_sinfo: Any, tir_vars: Any = None
) -> Call:
    """Call the PrimFunc `gvar`, which writes output i into `args[inplace_indices[i]]` (-1: a
    fresh output): `relax.op.call_tir_inplace(gv, [x, y], [0], x.struct_info)`."""
    if not isinstance(gvar, GlobalVar):
        raise MiniTVMError(
            f"call_tir_inplace: the callee must be a GlobalVar of a PrimFunc, got {gvar!r}"
        )
    inputs = _args_tuple(args)
    sinfo = _out_sinfo(out_sinfo, "call_tir_inplace")
    indices = [inplace_indices] if isinstance(inplace_indices, int) else list(inplace_indices)
    indices = [int(getattr(i, "value", i)) for i in indices]
    if len(indices) != len(_outputs(sinfo)):
        raise MiniTVMError(
            f"call_tir_inplace({gvar.name_hint}): inplace_indices {indices} has {len(indices)} "
            f"entries but out_sinfo describes {len(_outputs(sinfo))} output(s); give one index "
            "per output (-1 for a fresh one)"
        )
    n = len(inputs.fields)
    for i in indices:
        if not -1 <= i < n:
            raise MiniTVMError(
                f"call_tir_inplace({gvar.name_hint}): inplace index {i} is not -1 or an input "
                f"position below {n}"
            )
    taken = [i for i in indices if i != -1]
    if not taken or len(set(taken)) != len(taken):
        raise MiniTVMError(
            f"call_tir_inplace({gvar.name_hint}): inplace_indices {indices} must name at least "
            "one input, each at most once (a call with none in place is call_tir)"
        )
    call_args: tuple = (gvar, inputs)
    if tir_vars is not None:
        call_args += (tir_vars if isinstance(tir_vars, ShapeExpr) else ShapeExpr(tuple(tir_vars)),)
    return make_call(
        _call_tir_inplace, call_args, {"inplace_indices": indices}, sinfo_args=(sinfo,)
    )
