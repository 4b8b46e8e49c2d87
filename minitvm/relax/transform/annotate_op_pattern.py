"""AnnotateTIROpPattern: classify every PrimFunc by how its kernel may fuse (attr `op_pattern`);
the classification itself is `tir.analysis.op_pattern` (a TIR analysis, shared with dlight)."""

from __future__ import annotations

from ...ir.module import IRModule
from ...tir.analysis.op_pattern import block_pattern, func_pattern
from ...tir.function import PrimFunc

OP_PATTERN_ATTR = "op_pattern"


def annotate_op_pattern(mod: IRModule) -> IRModule:
    """Set `op_pattern` (an int, TVM's numbering) on every PrimFunc that has none yet."""
    out = mod.copy()
    for gv, func in mod.functions_items():
        if isinstance(func, PrimFunc) and OP_PATTERN_ATTR not in func.attrs:
            out[gv] = func.with_attr(OP_PATTERN_ATTR, int(func_pattern(func)))
    return out


__all__ = ["OP_PATTERN_ATTR", "annotate_op_pattern", "block_pattern", "func_pattern"]
