"""TVM's tensor compute: `te.compute(shape, lambda i: intrin(A[i, 0:16], B[i, 0:16]))`.

The lambda takes the outer indices only; the intrinsic computes the trailing dimensions from
regions of its inputs (slices). It becomes an ordinary compute whose body is the intrinsic's
body read through those regions, with the intrinsic's axes as the inner axes, and whose stage
is tensorized with the intrinsic at the first inner axis: tensorize checks that the loops
compute what the kernel does, so nothing is assumed.
"""

from __future__ import annotations

import inspect
from typing import Any

from ..error import TEError
from ..tir.expr import IterType, IterVar, Range, Var, as_expr
from ..tir.functor import Mutator, substitute
from .reduction import Reduce
from .tensor import ProducerLoad, Tensor

# id(op) -> (op, intrin, number of outer axes, outer reduce axes); read when a stage is made
_TENSOR_COMPUTES: dict[int, tuple] = {}


class IntrinCallError(TEError):
    """A tensor intrinsic called with wrong regions (reported as is, not as an arity error)."""


class TensorRegion:
    """`A[i, 0:16]`: a region of a tensor (some dims sliced), an argument of an intrinsic."""

    __slots__ = ("indices", "tensor")

    def __init__(self, tensor: Tensor, indices: tuple) -> None:
        self.tensor, self.indices = tensor, indices

    def sliced(self) -> list[int]:
        return [n for n, i in enumerate(self.indices) if isinstance(i, slice)]

    def asobject(self) -> Any:
        raise IntrinCallError(
            f"tensor '{self.tensor.name}' sliced as a region ({len(self.sliced())} sliced "
            "dims) is used in an expression; a region is only an argument of a tensor "
            "intrinsic call (te.decl_tensor_intrin); index one element per dimension instead"
        )


def _region_in_arithmetic(self: TensorRegion, *_: Any) -> Any:
    return self.asobject()


for _name in ("add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "floordiv",
              "rfloordiv", "mod", "rmod", "neg", "lt", "le", "gt", "ge"):  # fmt: skip
    setattr(TensorRegion, f"__{_name}__", _region_in_arithmetic)


class TensorIntrinCall:
    """`intrin(region, ...)` inside a te.compute lambda: the intrinsic over those regions."""

    def __init__(self, intrin: Any, regions: tuple, reduce_axis: tuple) -> None:
        self.intrin, self.regions, self.reduce_axis = intrin, regions, reduce_axis


def intrin_call(intrin: Any, regions: tuple, reduce_axis: Any) -> TensorIntrinCall:
    """Check the arguments of `intrin(...)` and record the call."""
    if len(regions) != len(intrin.inputs):
        raise IntrinCallError(
            f"tensor intrinsic '{intrin.name}' takes {len(intrin.inputs)} input region(s), "
            f"got {len(regions)}"
        )
    for region, placeholder in zip(regions, intrin.inputs):
        if not isinstance(region, TensorRegion):
            raise IntrinCallError(
                f"tensor intrinsic '{intrin.name}': each argument is a region of a tensor such "
                f"as A[i, 0:16], got {region!r}"
            )
        if len(region.sliced()) != len(placeholder.shape):
            raise IntrinCallError(
                f"tensor intrinsic '{intrin.name}': region of '{region.tensor.name}' slices "
                f"{len(region.sliced())} dimension(s) but the intrinsic's input "
                f"'{placeholder.name}' has {len(placeholder.shape)}"
            )
    if reduce_axis is None:
        axes: tuple = ()
    else:
        axes = tuple(reduce_axis) if isinstance(reduce_axis, list | tuple) else (reduce_axis,)
    return TensorIntrinCall(intrin, tuple(regions), axes)


def _positional(fcompute: Any) -> list[str] | None:
    try:
        params = inspect.signature(fcompute).parameters.values()
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in params if p.kind in kinds and p.default is p.empty]


class _ReadRegions(Mutator):
    """Loads of the intrinsic's placeholders become loads of the regions they stand for."""

    def __init__(self, regions: dict) -> None:
        super().__init__()
        self.regions = regions

    def visit_ProducerLoad(self, n: ProducerLoad) -> Any:
        indices = tuple(self.visit(i) for i in n.indices)
        region = self.regions.get(n.producer)
        if region is None:
            return ProducerLoad(n.producer, indices)
        inner = iter(indices)
        full = []
        for i in region.indices:
            if isinstance(i, slice):
                start = 0 if i.start is None else i.start
                full.append(as_expr(start) + next(inner))
            else:
                full.append(i)
        return ProducerLoad(region.tensor, tuple(full))


def try_tensor_compute(dims: tuple, fcompute: Any, name: str, tag: str, attrs: Any) -> Any:
    """The compute of `fcompute` when it takes fewer indices than dims and calls a tensor
    intrinsic; None when it does not (the caller reports its own error)."""
    from .operation import ComputeOp

    names = _positional(fcompute)
    if names is None or len(names) >= len(dims):
        return None
    outer = [IterVar(Range.from_min_extent(0, d), Var(n, d.dtype), IterType.DataPar) for n, d in zip(names, dims)]
    try:
        call = fcompute(*(iv.var for iv in outer))
    except IntrinCallError:
        raise
    except Exception:  # noqa: BLE001 - not a tensor compute; the caller's error says why
        return None
    if not isinstance(call, TensorIntrinCall):
        return None
    intrin = call.intrin
    iop = intrin.op
    inner_dims = dims[len(names) :]
    if len(iop.axis) != len(inner_dims) or iop.num_outputs != 1:
        raise TEError(
            f"compute '{name}': the intrinsic '{intrin.name}' computes {len(iop.axis)} "
            f"dimension(s) but the shape leaves {len(inner_dims)} after the lambda's "
            f"{len(names)} index(es)"
        )
    taken = set(names)
    inner = []
    for iv, d in zip(iop.axis, inner_dims):
        label = iv.var.name + ("_i" if iv.var.name in taken else "")
        inner.append(IterVar(Range.from_min_extent(0, d), Var(label, d.dtype), IterType.DataPar))
    vmap = {old.var: new.var for old, new in zip(iop.axis, inner)}
    body = iop.body[0]
    regions = dict(zip(intrin.inputs, call.regions))
    if isinstance(body, Reduce):
        inner_red = [IterVar(a.dom, Var(a.var.name + "_i", a.var.dtype), a.iter_type)
                     for a in body.axis]  # fmt: skip
        vmap.update({old.var: new.var for old, new in zip(body.axis, inner_red)})
        source = tuple(_ReadRegions(regions).visit(substitute(s, vmap)) for s in body.source)
        body = Reduce(
            body.combiner, source, tuple(call.reduce_axis) + tuple(inner_red),
            substitute(body.condition, vmap), body.value_index, body.init,
        )  # fmt: skip
    elif call.reduce_axis:
        raise TEError(
            f"compute '{name}': reduce_axis= is given but the intrinsic '{intrin.name}' does "
            "not reduce"
        )
    else:
        body = _ReadRegions(regions).visit(substitute(body, vmap))
    op = ComputeOp(name, tag, attrs, tuple(outer) + tuple(inner), (body,))
    _TENSOR_COMPUTES[id(op)] = (op, intrin, len(outer), tuple(call.reduce_axis))
    return op.output(0)


def setup_stage(stage: Any) -> None:
    """A tensor compute's stage: outer loops (spatial, then the call's reduce axes) around
    the intrinsic's loops, tensorized with it."""
    entry = _TENSOR_COMPUTES.get(id(stage.op))
    if entry is None or entry[0] is not stage.op:
        return
    op, intrin, n_outer, outer_red = entry
    axes = list(op.axis)
    inner_red = [a for a in op.reduce_axis if not any(a is r for r in outer_red)]
    order = axes[:n_outer] + list(outer_red) + axes[n_outer:] + inner_red
    if any(a is not b for a, b in zip(order, stage.leaf_iter_vars)):
        stage.reorder(*order)
    stage.tensorize(axes[n_outer], intrin)


__all__ = ["TensorIntrinCall", "TensorRegion", "intrin_call", "setup_stage", "try_tensor_compute"]
