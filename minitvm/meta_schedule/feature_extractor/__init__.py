"""Feature extractors: fixed-length numbers describing a candidate schedule for the cost model.

>>> feats = ms.feature_extractor.PerStoreFeature().extract_from(context, candidates)
"""

from .feature_extractor import FeatureExtractor, PyFeatureExtractor
from .per_store_feature import (
    N_FEATURES,
    PROGRAM_FEATURES,
    STORE_FEATURES,
    PerStoreFeature,
    features_of_func,
)
from .random_feature_extractor import RandomFeatureExtractor

__all__ = [
    "N_FEATURES",
    "PROGRAM_FEATURES",
    "STORE_FEATURES",
    "FeatureExtractor",
    "PerStoreFeature",
    "PyFeatureExtractor",
    "RandomFeatureExtractor",
    "features_of_func",
]
