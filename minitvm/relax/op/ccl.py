"""Collective communication ops (`relax.op.ccl`): allreduce, allgather, broadcast and scatter
across the workers of a distributed (disco) session.

minitvm has no disco session. LegalizeOps turns allreduce, allgather and broadcast into
`call_dps_packed` of the `runtime.disco.*` functions, as TVM does; none is registered by
default, so running such a module stops at the missing function instead of pretending that one
process is a group (an allreduce on one worker is not an allreduce). scatter_from_worker0 is
left as is. `minitvm.training.DataParallel` registers `runtime.disco.allreduce` for the life of
its torch.distributed process group (and it refuses to run without one).

allreduce also takes a Tuple of tensors (minitvm's extension; TVM's takes one tensor): each
field is reduced, and the runtime may move them all in one flat buffer per dtype (a
data-parallel step's gradients: one collective instead of one per parameter, and no
compiled concatenation).
"""

from __future__ import annotations

from ...error import ShapeError
from ...tir import expr as tir_expr
from ...topi.utils import const_int, fmt_shape
from ..expr import Call, Expr, PrimValue, ShapeExpr, Tuple
from ..struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from . import _infer as I
from ._table import OpPattern, make_call, register_op
from .base import call_dps_packed
from .shape_ops import BUILTIN_LOWERING

_REDUCTIONS = ("sum", "prod", "min", "max", "avg")


def _infer_same(call: Call) -> StructInfo:
    return I.tensor_arg(call, 0, "x")


def _infer_allreduce(call: Call) -> StructInfo:
    """A tensor, or a Tuple of tensors: the same struct info."""
    sinfo = call.args[0].struct_info
    if isinstance(sinfo, TupleStructInfo):
        bad = [k for k, f in enumerate(sinfo.fields) if not isinstance(f, TensorStructInfo)]
        if bad or not sinfo.fields:
            raise ShapeError(
                f"relax.ccl.allreduce: x is a tuple whose field(s) {bad} are not tensors (or it "
                "is empty); pass a tensor or a non-empty Tuple of tensors"
            )
        return sinfo
    return I.tensor_arg(call, 0, "x")


def _infer_allgather(call: Call) -> StructInfo:
    """Worker results are stacked along axis 0: dim 0 grows num_workers times."""
    x = I.tensor_arg(call, 0, "x")
    if x.shape is None:
        return x
    n = call.attrs["num_workers"]
    first = I.dim_arith(lambda d: d * n, x.shape[0])
    return TensorStructInfo((first, *x.shape[1:]), x.dtype)


def _infer_scatter(call: Call) -> StructInfo:
    """Each worker gets one of num_workers equal chunks along `axis`."""
    x = I.tensor_arg(call, 0, "x")
    n, axis = call.attrs["num_workers"], call.attrs["axis"]
    if x.shape is None:
        raise ShapeError(
            "relax.ccl.scatter_from_worker0: x needs a known shape to be chunked; match_cast it"
        )
    axis = I.axis_of(call, axis, len(x.shape))
    d = const_int(x.shape[axis])
    if d is not None and d % n:
        raise ShapeError(
            f"relax.ccl.scatter_from_worker0: x has shape {fmt_shape(x.shape)}; dim {axis} ({d}) "
            f"is not divisible by num_workers={n}"
        )
    chunk = I.dim(d // n) if d is not None else tir_expr.Div(x.shape[axis], I.dim(n))
    return TensorStructInfo((*x.shape[:axis], chunk, *x.shape[axis + 1 :]), x.dtype)


_allreduce = register_op("relax.ccl.allreduce", _infer_allreduce, None, None, OpPattern.OPAQUE)
_allgather = register_op("relax.ccl.allgather", _infer_allgather, None, None, OpPattern.OPAQUE)
_broadcast = register_op(
    "relax.ccl.broadcast_from_worker0", _infer_same, None, None, OpPattern.OPAQUE
)
_scatter = register_op(
    "relax.ccl.scatter_from_worker0", _infer_scatter, None, None, OpPattern.OPAQUE
)


def _flag(value: bool) -> PrimValue:
    """A flag argument, as TVM's argument conversion makes it from a Python bool (int64)."""
    return PrimValue(tir_expr.IntImm("int64", int(value)))


def _lower_allreduce(call: Call) -> Expr:
    code = ShapeExpr((_REDUCTIONS.index(call.attrs["op_type"]),))
    args = [call.args[0], code, _flag(call.attrs["in_group"])]
    return call_dps_packed("runtime.disco.allreduce", args, call.struct_info)


def _lower_allgather(call: Call) -> Expr:
    args = [call.args[0], _flag(call.attrs["in_group"])]
    return call_dps_packed("runtime.disco.allgather", args, call.struct_info)


def _lower_broadcast(call: Call) -> Expr:
    args = [call.args[0], _flag(False)]
    return call_dps_packed("runtime.disco.broadcast_from_worker0", args, call.struct_info)


BUILTIN_LOWERING.update(
    {
        "relax.ccl.allreduce": _lower_allreduce,
        "relax.ccl.allgather": _lower_allgather,
        "relax.ccl.broadcast_from_worker0": _lower_broadcast,
    }
)


def _positive(value: int, what: str, op: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ShapeError(f"relax.ccl.{op}: {what} must be a positive int, got {value!r}")
    return value


def allreduce(x: Expr, op_type: str = "sum", in_group: bool = True) -> Call:
    """Reduce `x` (a tensor, or a Tuple / list of tensors, each reduced) elementwise over all
    workers (op_type: sum, prod, min, max, avg)."""
    if isinstance(x, list | tuple):
        x = Tuple(tuple(x))
    if op_type not in _REDUCTIONS:
        raise ShapeError(f"relax.ccl.allreduce: op_type {op_type!r} is not one of {_REDUCTIONS}")
    return make_call(_allreduce, (x,), {"op_type": op_type, "in_group": bool(in_group)})


def allgather(x: Expr, num_workers: int, in_group: bool = True) -> Call:
    """Concatenate every worker's `x` along axis 0."""
    n = _positive(num_workers, "num_workers", "allgather")
    return make_call(_allgather, (x,), {"num_workers": n, "in_group": bool(in_group)})


def broadcast_from_worker0(x: Expr) -> Call:
    """Worker 0's `x`, on every worker."""
    return make_call(_broadcast, (x,))


def scatter_from_worker0(x: Expr, num_workers: int, axis: int = 0) -> Call:
    """Worker 0's `x` cut into num_workers equal chunks along `axis`, one per worker."""
    n = _positive(num_workers, "num_workers", "scatter_from_worker0")
    return make_call(_scatter, (x,), {"num_workers": n, "axis": int(axis)})


__all__ = ["allgather", "allreduce", "broadcast_from_worker0", "scatter_from_worker0"]
