"""Postproc: a check or rewrite run on each sampled schedule; False drops the candidate."""

from __future__ import annotations

from ...tir.schedule import Schedule
from ..utils import TuneContextPart


class Postproc(TuneContextPart):
    """Base class: `apply(sch) -> bool` (False: the candidate is illegal or unfinished)."""

    def apply(self, sch: Schedule) -> bool:
        raise NotImplementedError(f"{type(self).__name__}.apply")

    @staticmethod
    def create(kind: str = "llvm") -> list:
        """The default postprocessors of target kind `kind` ("llvm", "cuda"): TVM's spelling of
        `create_default`."""
        from . import create_default

        return create_default(kind)


PyPostproc = Postproc
