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


__all__ = ["IterVarAttr", "iter_var_attrs"]
