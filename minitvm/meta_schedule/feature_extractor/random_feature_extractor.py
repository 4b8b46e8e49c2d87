"""RandomFeatureExtractor: random features of a random number of blocks, from a seeded
generator (TVM's test extractor for cost models)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...error import TuningError
from .feature_extractor import FeatureExtractor


class RandomFeatureExtractor(FeatureExtractor):
    """Each candidate gets a (blocks, feature_size) array of uniform [0, 1) numbers, with
    1 <= blocks <= max_block_num. `random_state` is the generator's state, a plain dict a
    caller may save and put back to replay the same features."""

    def __init__(self, *, feature_size: int = 30, max_block_num: int = 5, seed: int = 0):
        if max_block_num < 1:
            raise TuningError(
                f"RandomFeatureExtractor: max_block_num must be at least 1, got {max_block_num}"
            )
        self.feature_size = feature_size
        self.max_block_num = max_block_num
        self.random_state = np.random.default_rng(seed).bit_generator.state

    def extract_from(self, context: Any, candidates: list) -> list[np.ndarray]:
        rng = np.random.default_rng()
        rng.bit_generator.state = self.random_state
        out = [
            rng.random((int(rng.integers(1, self.max_block_num + 1)), self.feature_size))
            for _ in candidates
        ]
        self.random_state = rng.bit_generator.state
        return out
