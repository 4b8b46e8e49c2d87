"""Arithmetic: the simplifier, constant/symbolic bound analysis and affine index analysis."""

from . import _ffi_api  # noqa: F401 - tvm.arith._ffi_api.NarrowPredicateExpression
from .affine import affine_coeffs
from .analyzer import Analyzer, Extension
from .bound import NEG_INF, POS_INF, ConstIntBound
from .clip_bound import detect_clip_bound
from .deduce_bound import deduce_bound
from .int_set import IntervalSet, IntSet
from .linear_equation import detect_linear_equation
from .modular_set import ModularSet
from .narrow_predicate import narrow_predicate_expression
from .region_bound import (
    estimate_region_lower_bound,
    estimate_region_strict_bound,
    estimate_region_upper_bound,
)
from .simplify_stmt import simplify

__all__ = [
    "NEG_INF",
    "POS_INF",
    "Analyzer",
    "ConstIntBound",
    "Extension",
    "IntSet",
    "IntervalSet",
    "ModularSet",
    "affine_coeffs",
    "deduce_bound",
    "detect_clip_bound",
    "detect_linear_equation",
    "estimate_region_lower_bound",
    "estimate_region_strict_bound",
    "estimate_region_upper_bound",
    "narrow_predicate_expression",
    "simplify",
]

# TVM's iterator-map analysis (tvm.arith.detect_iter_map and its node classes)
from .iter_map import (
    IterMapExpr,
    IterMapLevel,
    IterMapResult,
    IterMark,
    IterSplitExpr,
    IterSumExpr,
    detect_iter_map,
    iter_map_simplify,
    normalize_iter_map_to_expr,
)

__all__ += [
    "IterMapExpr",
    "IterMapLevel",
    "IterMapResult",
    "IterMark",
    "IterSplitExpr",
    "IterSumExpr",
    "detect_iter_map",
    "iter_map_simplify",
    "normalize_iter_map_to_expr",
]
