"""Read-only views of a classic Stage in TVM's shapes (`Stage.iter_var_attrs`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..tir.expr import IterType, StringImm

# the loop kind a Stage method gives, as TVM's IterVar kind constants
_KIND_OF = {
    "vectorize": IterType.Vectorized,
    "unroll": IterType.Unrolled,
    "parallel": IterType.Parallelized,
    "bind": IterType.ThreadIndex,
}


@dataclass
class IterVarAttr:
    """What a stage's methods said about one loop: its kind, pragmas and tensor intrinsic."""

    iter_type: IterType = IterType.DataPar
    bind_thread: Any = None
    pragma_keys: list = field(default_factory=list)
    pragma_values: list = field(default_factory=list)
    tensor_intrin: Any = None


def iter_var_attrs(stage: Any) -> dict:
    """IterVar -> IterVarAttr for every loop of `stage` that a method annotated."""
    out: dict = {}
    for action in stage.actions:
        if action[0] == "kind":
            _, method, iv, extra = action
            attr = out.setdefault(iv, IterVarAttr(iv.iter_type))
            if method in _KIND_OF:
                attr.iter_type = _KIND_OF[method]
            if method == "bind":
                attr.bind_thread = extra[0]
            if method == "annotate" and str(extra[0]).startswith("pragma_"):
                attr.pragma_keys.append(StringImm(str(extra[0])[len("pragma_") :]))
                attr.pragma_values.append(extra[1])
        elif action[0] == "tensorize":
            attr = out.setdefault(action[1], IterVarAttr(action[1].iter_type))
            attr.iter_type = (
                IterType.Tensorized if hasattr(IterType, "Tensorized") else attr.iter_type
            )
            attr.tensor_intrin = action[2]
    return out


# ----------------------------------------------------------------------------- auto inline
def _reads_exactly(op: Any, allow: Any) -> bool:
    """Every load in `op`'s body passes `allow(indices, axis vars)`."""
    from .bound import loads_of

    axis = [iv.var for iv in op.axis]
    return all(allow(idx, axis) for idx in loads_of(op.body, list(op.input_tensors)))


def _elemwise(idx: tuple, axis: list) -> bool:
    return len(idx) == len(axis) and all(a is b for a, b in zip(idx, axis))


def _broadcast(idx: tuple, axis: list) -> bool:
    """Indices are axis variables in increasing order, or constants."""
    pos = [next((k for k, a in enumerate(axis) if a is i), None) for i in idx]
    order = [p for p in pos if p is not None]
    consts = all(p is not None or hasattr(i, "value") for p, i in zip(pos, idx))
    return consts and order == sorted(order)


def _auto_inline(sch: Any, keep: Any) -> None:
    from .operation import ComputeOp

    outputs = {id(op) for op in sch.outputs}
    for stage in sch.stages:
        op = stage.op
        if id(op) in outputs or not isinstance(op, ComputeOp) or op.reduce_axis:
            continue
        if keep(op):
            stage.compute_inline()


def AutoInlineElemWise(sch: Any) -> None:
    """Inline every non-output stage that reads its inputs at exactly its own index."""
    _auto_inline(sch, lambda op: _reads_exactly(op, _elemwise))


def AutoInlineBroadcast(sch: Any) -> None:
    """Inline every non-output broadcast stage (tag "broadcast" or broadcasting reads)."""
    _auto_inline(sch, lambda op: op.tag == "broadcast" or _reads_exactly(op, _broadcast))


def AutoInlineInjective(sch: Any) -> None:
    """Inline every non-output stage without a reduction."""
    _auto_inline(sch, lambda op: True)


__all__ = [
    "AutoInlineBroadcast",
    "AutoInlineElemWise",
    "AutoInlineInjective",
    "IterVarAttr",
    "iter_var_attrs",
]
