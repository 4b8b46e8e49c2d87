"""`topi.cuda`: GPU schedules of the classic API (TE schedules whose loops are bound to threads).

They follow one rule: injective stages that are not outputs are inlined; every other stage
fuses its spatial loops and splits them over `blockIdx.x` x `threadIdx.x`, keeping its
reduction loops serial inside one thread. A reduction with no spatial loop (a full sum) is
rfactored so that each thread reduces a slice and one combining stage adds the partials.
`tvm.lower` shows the bound loops; the schedules build for "opencl" (PoCL runs them on the
CPU) and "cuda" (PTX; running it needs the CUDA driver). Building a thread-bound loop for the
CPU is a TargetError.
"""

from __future__ import annotations

from typing import Any

from .. import te
from ..tir.expr import IterType
from .nn import conv2d_nchw as _conv2d_nchw

NUM_THREADS = 64  # threads per block for the spatial loops
REDUCE_THREADS = 32  # threads sharing one full reduction


def _outputs(outs: Any) -> list:
    return list(outs) if isinstance(outs, list | tuple) else [outs]


def _compute_ops(outs: list) -> list:
    """Compute operations feeding `outs`, consumers first."""
    order, seen = [], set()
    stack = [t.op for t in outs]
    while stack:
        op = stack.pop()
        if id(op) in seen or not isinstance(op, te.ComputeOp):
            continue
        seen.add(id(op))
        order.append(op)
        stack.extend(t.op for t in op.input_tensors)
    return order


def _bind_spatial(stage: Any, axes: list) -> None:
    """Fuse `axes`, split the result over blocks of NUM_THREADS threads and bind both."""
    fused = stage.fuse(*axes) if len(axes) > 1 else axes[0]
    bx, tx = stage.split(fused, factor=NUM_THREADS)
    stage.bind(bx, te.thread_axis("blockIdx.x"))
    stage.bind(tx, te.thread_axis("threadIdx.x"))


def _schedule_all_reduce(s: Any, tensor: Any) -> None:
    """A reduction to a scalar: threads reduce slices (rfactor), one stage adds them up."""
    stage = s[tensor]
    red = list(stage.op.reduce_axis)
    k = stage.fuse(*red) if len(red) > 1 else red[0]
    _, ki = stage.split(k, factor=REDUCE_THREADS)
    partial = s.rfactor(tensor, ki)
    partial = partial[0] if isinstance(partial, list) else partial
    s[partial].bind(s[partial].op.axis[0], te.thread_axis("threadIdx.x"))
    # the combining stage has no loop of its own: a unit loop gives it a one-thread kernel
    _bind_single_thread(s[tensor])


def _bind_single_thread(stage: Any) -> None:
    """Run a stage without spatial loops (a scalar) as one block of one thread."""
    unit = stage.fuse()
    stage.bind(unit, te.thread_axis("blockIdx.x"))


def _schedule(outs: Any) -> Any:
    outs = _outputs(outs)
    s = te.create_schedule([t.op for t in outs])
    out_ops = {id(t.op) for t in outs}
    for op in _compute_ops(outs):
        reduces = bool(op.reduce_axis)
        if not reduces and id(op) not in out_ops:
            s[op].compute_inline()
            continue
        spatial = [iv for iv in s[op].op.axis if iv.iter_type is IterType.DataPar]
        if spatial:
            _bind_spatial(s[op], spatial)
        elif reduces:
            _schedule_all_reduce(s, op.output(0))
        else:  # a scalar output stage
            _bind_single_thread(s[op])
    return s


def schedule_injective(outs: Any) -> Any:
    """Elementwise / broadcast / reshape outputs: spatial loops over blocks and threads."""
    return _schedule(outs)


schedule_elemwise = schedule_injective
schedule_broadcast = schedule_injective


def schedule_reduce(outs: Any) -> Any:
    """Reductions (and the injective stages feeding them, inlined)."""
    return _schedule(outs)


def schedule_softmax(outs: Any) -> Any:
    """topi.nn.softmax: rows over blocks and threads; the row max and sum stay per thread."""
    return _schedule(outs)


def conv2d_nchw(
    data: Any, kernel: Any, strides: Any, padding: Any, dilation: Any, out_dtype: Any = None
) -> Any:
    """The NCHW convolution compute (topi.nn.conv2d_nchw), as TVM's CUDA strategy names it."""
    out = _conv2d_nchw(data, kernel, strides, padding, dilation)
    if out_dtype is not None and str(out_dtype) != out.dtype:
        from .broadcast import cast

        out = cast(out, out_dtype)
    return out


def schedule_conv2d_nchw(outs: Any) -> Any:
    """Convolution (+ fused elementwise outputs): output pixels over blocks and threads."""
    return _schedule(outs)


schedule_dense = schedule_reduce
schedule_pool = schedule_reduce
schedule_adaptive_pool = schedule_reduce

__all__ = [
    "conv2d_nchw",
    "schedule_adaptive_pool",
    "schedule_broadcast",
    "schedule_conv2d_nchw",
    "schedule_dense",
    "schedule_elemwise",
    "schedule_injective",
    "schedule_pool",
    "schedule_reduce",
    "schedule_softmax",
]
