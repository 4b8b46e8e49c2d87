"""Cost models that rank candidate schedules for the search (higher score = faster).

>>> model = ms.cost_model.create("xgb")
"""

from __future__ import annotations

from typing import Any

from ...error import TuningError
from .cost_model import CostModel, PyCostModel, RandomModel, XGBModel, candidate_vector
from .gbdt import NumpyGBDT

_KINDS = {"xgb": XGBModel, "random": RandomModel}


def create(kind: str = "xgb", *args: Any, **kwargs: Any) -> CostModel:
    """A cost model by TVM's kind name: "xgb" (gradient-boosted trees) or "random"."""
    if isinstance(kind, CostModel):
        return kind
    if kind not in _KINDS:
        raise TuningError(
            f"cost_model.create: unknown kind {kind!r}; use one of {sorted(_KINDS)} or pass a "
            "CostModel"
        )
    return _KINDS[kind](*args, **kwargs)


__all__ = [
    "CostModel",
    "NumpyGBDT",
    "PyCostModel",
    "RandomModel",
    "XGBModel",
    "candidate_vector",
    "create",
]
