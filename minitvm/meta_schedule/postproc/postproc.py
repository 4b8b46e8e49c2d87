"""Postproc: a check or rewrite run on each sampled schedule; False drops the candidate."""

from __future__ import annotations

from typing import Any

from ...tir.schedule import Schedule
from ..schedule_rule._block import target_of


class Postproc:
    """Base class: `apply(sch) -> bool` (False: the candidate is illegal or unfinished)."""

    target: Any = None

    def _initialize_with_tune_context(self, context: Any) -> None:
        self.target = target_of(context)

    def apply(self, sch: Schedule) -> bool:
        raise NotImplementedError(f"{type(self).__name__}.apply")

    def clone(self) -> Postproc:
        out = object.__new__(type(self))
        out.__dict__.update(self.__dict__)
        return out

    def __repr__(self) -> str:
        return f"meta_schedule.{type(self).__name__}"


PyPostproc = Postproc
