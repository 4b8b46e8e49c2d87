"""FeatureExtractor: the base of what turns candidate schedules into numbers for a cost model
(TVM's meta_schedule.feature_extractor.FeatureExtractor / PyFeatureExtractor)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...error import TuningError
from ..utils import default_str


class FeatureExtractor:
    """Base class: `extract_from(context, candidates)` gives one 2-D array per candidate."""

    def extract_from(self, context: Any, candidates: list) -> list[np.ndarray]:
        raise NotImplementedError(f"{type(self).__name__}.extract_from")

    @staticmethod
    def create(kind: str, *args: Any, **kwargs: Any) -> FeatureExtractor:
        """An extractor by TVM's kind name ("per-store-feature")."""
        from .per_store_feature import PerStoreFeature

        if kind == "per-store-feature":
            return PerStoreFeature(*args, **kwargs)
        raise TuningError(
            f"FeatureExtractor.create: unknown kind {kind!r}; use 'per-store-feature'"
        )

    def __str__(self) -> str:
        return default_str(self)


PyFeatureExtractor = FeatureExtractor  # TVM's base for an extractor written in Python
