"""FoldConstant: calls whose arguments are all constants are computed at compile time with the
same compiled kernels the program would run (the op's TE definition, built by the driver).

Data-movement ops (pattern INJECTIVE: layout_transform, reshape, permute_dims, ...) run their
numpy reference instead: it moves the same bits, and packing every weight of a model must not
cost one LLVM build per weight shape."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.module import IRModule
from ...tir.expr import IntImm
from ...tir.function import PrimFunc
from ..block_builder import BlockBuilder
from ..expr import (
    Binding,
    BindingBlock,
    Call,
    Constant,
    Expr,
    Function,
    Op,
    PrimValue,
    ShapeExpr,
    Tuple,
    TupleGetItem,
)
from ..functor import ExprMutator
from ..op._table import OpPattern
from ..struct_info import TensorStructInfo, TupleStructInfo


class _Folder(ExprMutator):
    def __init__(self, mod: IRModule) -> None:
        super().__init__()
        self.mod = mod
        self.scratch = BlockBuilder()
        self.kernels: dict[int, Any] = {}
        self._keep: list[PrimFunc] = []

    def visit_binding(self, b: Binding, block: BindingBlock) -> list[Binding]:
        value = self.visit_expr(b.value)
        folded = self.fold(value)
        if folded is not None:
            value = folded
        if isinstance(value, Constant) or (isinstance(value, Tuple) and _all_const(value.fields)):
            self.var_map[b.var] = value  # uses see the constant itself
        return [b.replace(value=value)]

    def visit_expr(self, e: Any) -> Any:
        e = super().visit_expr(e)
        if isinstance(e, TupleGetItem) and isinstance(e.tuple_value, Tuple):
            return e.tuple_value.fields[e.index]
        return e

    # ------------------------------------------------------------------ folding
    def fold(self, value: Expr) -> Expr | None:
        if not isinstance(value, Call) or not isinstance(value.op, Op):
            return None
        if _expands(value):
            return None
        op = value.op
        if op.name == "relax.call_tir":
            gv, args = value.args[0], value.args[1]
            if len(value.args) > 2 or not _all_const(args.fields):
                return None
            prim = self.mod[gv]
            return self.run(prim, [_array(a) for a in args.fields], value.sinfo_args[0])
        if op.op_def is None or op.op_def.te is None or not _all_const(value.args):
            return None
        if not any(isinstance(a, Constant | Tuple) for a in value.args):
            return None  # creation ops (zeros, full) would only materialise big constants
        if op.op_def.pattern == OpPattern.INJECTIVE and op.op_def.numpy is not None:
            folded = _run_numpy(value)
            if folded is not None:
                return folded
        call = self.scratch.call_te(
            op.op_def.te,
            *value.args,
            **dict(value.attrs),
            primfunc_name_hint="fold",
            _canonical_names=True,
        )
        prim = self.scratch.get()[call.args[0]]
        return self.run(prim, [_array(a) for a in call.args[1].fields], call.sinfo_args[0])

    def run(self, prim: PrimFunc, inputs: list[np.ndarray], out_sinfo: Any) -> Expr | None:
        fields = list(out_sinfo.fields) if isinstance(out_sinfo, TupleStructInfo) else [out_sinfo]
        if not all(isinstance(s, TensorStructInfo) and s.is_static for s in fields):
            return None
        kernel = self.kernels.get(id(prim))
        if kernel is None:
            from ...driver import build

            kernel = build(prim, target="llvm", name="fold_constant").get_function("fold_constant")
            self.kernels[id(prim)] = kernel
            self._keep.append(prim)  # ids stay valid while cached
        outs = [np.empty(s.static_shape(), dtype=s.dtype.numpy_dtype()) for s in fields]
        kernel(*inputs, *outs)
        consts = [Constant(o) for o in outs]
        return Tuple(tuple(consts)) if isinstance(out_sinfo, TupleStructInfo) else consts[0]


# A fold may not make a constant this many elements larger than its constant inputs: a model
# (a file) can ask for `full(2**30, 0.0)` or broadcast a scalar to gigabytes; folded, that
# would be built at compile time and embedded in the executable. Left alone, it runs (and
# allocates) only when the program does. Same-size work (a transposed or cast weight) folds.
FOLD_GROWTH_ELEMENTS = 1 << 22


def _expands(call: Call) -> bool:
    """Whether `call`'s outputs exceed its constant inputs by more than FOLD_GROWTH_ELEMENTS."""
    sinfo = call.struct_info
    fields = list(sinfo.fields) if isinstance(sinfo, TupleStructInfo) else [sinfo]
    out = 0
    for s in fields:
        if not (isinstance(s, TensorStructInfo) and s.is_static):
            return False  # not folded anyway (run() needs static outputs)
        out += int(np.prod(s.static_shape(), dtype=np.int64))
    return out - _const_elements(call.args) > FOLD_GROWTH_ELEMENTS


def _const_elements(args: Any) -> int:
    total = 0
    for a in args:
        if isinstance(a, Tuple):
            total += _const_elements(a.fields)
        elif isinstance(a, Constant):
            total += int(a.data.numpy().size)
    return total


def _run_numpy(call: Call) -> Expr | None:
    """A data-movement call of constants computed by its numpy reference."""
    out_sinfo = call.struct_info
    if not (isinstance(out_sinfo, TensorStructInfo) and out_sinfo.is_static):
        return None
    args = [_numpy_arg(a) for a in call.args]
    if any(a is None for a in args):
        return None
    out = np.asarray(call.op.op_def.numpy(*args, **dict(call.attrs)))
    assert out.shape == out_sinfo.static_shape(), (
        f"FoldConstant: the numpy reference of {call.op.name} gave shape {out.shape}, its "
        f"struct info says {out_sinfo.static_shape()}"
    )
    return Constant(np.array(out, dtype=out_sinfo.dtype.numpy_dtype(), order="C"))  # keeps 0-d


def _numpy_arg(a: Expr) -> Any:
    """A constant argument as the numpy reference takes it (None: not a plain constant)."""
    if isinstance(a, Constant):
        return a.data.numpy()
    if isinstance(a, ShapeExpr):
        return tuple(d.value for d in a.values)
    if isinstance(a, PrimValue):
        return a.value.value
    return None


def _all_const(args: Any) -> bool:
    for a in args:
        if isinstance(a, Tuple):
            if not _all_const(a.fields):
                return False
        elif isinstance(a, ShapeExpr):
            if not all(isinstance(d, IntImm) for d in a.values):
                return False
        elif isinstance(a, PrimValue):
            if not hasattr(a.value, "value"):
                return False
        elif not isinstance(a, Constant):
            return False
    return True


def _array(a: Expr) -> np.ndarray:
    return np.array(a.data.numpy(), order="C")


def fold_constant_function(func: Function, mod: IRModule | None = None) -> Function:
    return _Folder(mod or IRModule()).visit_function(func)


def fold_constant(mod: IRModule) -> IRModule:
    """Fold every all-constant call in every relax function (then DCE removes what became unused)."""
    folder = _Folder(mod)
    out = mod.copy()
    for gv, func in mod.functions_items():
        if isinstance(func, Function):
            out[gv] = folder.visit_function(func)
    return out
