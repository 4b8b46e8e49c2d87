"""Arithmetic: the simplifier, constant/symbolic bound analysis and affine index analysis."""

from .affine import affine_coeffs
from .analyzer import Analyzer
from .bound import NEG_INF, POS_INF, ConstIntBound
from .int_set import IntervalSet
from .simplify_stmt import simplify

__all__ = [
    "NEG_INF",
    "POS_INF",
    "Analyzer",
    "ConstIntBound",
    "IntervalSet",
    "affine_coeffs",
    "simplify",
]
