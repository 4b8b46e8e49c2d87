"""Arithmetic: the simplifier, constant/symbolic bound analysis and affine index analysis."""

from . import _ffi_api  # noqa: F401 - tvm.arith._ffi_api.NarrowPredicateExpression
from .affine import affine_coeffs
from .analyzer import Analyzer
from .bound import NEG_INF, POS_INF, ConstIntBound
from .int_set import IntervalSet
from .linear_equation import detect_linear_equation
from .modular_set import ModularSet
from .narrow_predicate import narrow_predicate_expression
from .simplify_stmt import simplify

__all__ = [
    "NEG_INF",
    "POS_INF",
    "Analyzer",
    "ConstIntBound",
    "IntervalSet",
    "ModularSet",
    "affine_coeffs",
    "detect_linear_equation",
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
