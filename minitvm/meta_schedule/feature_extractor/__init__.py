"""Feature extractors: fixed-length numbers describing a candidate schedule for the cost model.

>>> feats = ms.feature_extractor.PerStoreFeature().extract_from(context, candidates)
"""

from .per_store_feature import (
    N_FEATURES,
    PROGRAM_FEATURES,
    STORE_FEATURES,
    PerStoreFeature,
    features_of_func,
)

FeatureExtractor = PerStoreFeature  # the one extractor; TVM's base-class name

__all__ = [
    "N_FEATURES",
    "PROGRAM_FEATURES",
    "STORE_FEATURES",
    "FeatureExtractor",
    "PerStoreFeature",
    "features_of_func",
]
