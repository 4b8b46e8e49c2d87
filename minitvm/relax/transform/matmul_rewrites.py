"""Algebraic matmul rewrites with TVM's semantics: AdjustMatmulOrder and ExpandMatmulOfSum.

Both look at each binding's value through the variables bound earlier in the function (as TVM's
`rewrite_call` does), replace it by a new expression whose inner calls become fresh bindings just
before it, and finally drop the bindings nothing reads any more. Results are equal up to float
rounding: the sums are associated differently.

- AdjustMatmulOrder: `(A @ B) @ C` or `A @ (B @ C)` (also through a transpose of the inner
  product) is evaluated in the order needing fewer multiply-adds, when that can be proven for
  every value of the symbolic dims; two operands known at compile time (`num_input`) are grouped
  so the product can be precomputed.
- ExpandMatmulOfSum: `x @ (A + B)` (or `x @ permute_dims(A + B)`) becomes `x @ A + x @ B` unless
  `A + B` is computable at compile time.
- ReorderTakeAfterMatmul: `x @ take(W, idx, axis=-1)` becomes `take(x @ W, idx, axis=-1)`, and
  for a table of 3-D weights picked per batch row (`take(W, idx, axis=0)`, batched LoRA) one
  fused matmul over the whole table followed by the pick (the same numbers).
- ReorderPermuteDimsAfterConcat: `concat([permute_dims(a, p), permute_dims(b, p)], axis)` becomes
  `permute_dims(concat([a, b], p[axis]), p)`: one transpose instead of one per operand.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...arith import Analyzer
from ...ir.op import Op
from ...ir.transform import Pass
from ...tir import expr as te
from ...tir.op import all as tir_all
from .. import expr as rx
from .. import struct_info as si
from ..compile_time import computable_at_compile_time
from ..op import add, concat, einsum, matmul, permute_dims, reshape, take
from ._util import map_functions
from .dead_code_elimination import remove_unused_bindings

Rewrite = Callable[[rx.Expr], "rx.Expr | None"]


class _Bound:
    """Looks through variables to the values they are bound to in one function."""

    def __init__(self, func: rx.Function) -> None:
        self.values: dict[rx.Var, rx.Expr] = {}
        if isinstance(func.body, rx.SeqExpr):
            for block in func.body.blocks:
                for b in block.bindings:
                    if isinstance(b, rx.VarBinding):
                        self.values[b.var] = b.value
        self.compile_time = set(computable_at_compile_time(func))

    def call(self, e: rx.Expr, name: str) -> rx.Call | None:
        """`e` (or what the var `e` is bound to) when it is a call of op `name`."""
        e = self.values.get(e, e) if isinstance(e, rx.Var) else e
        if isinstance(e, rx.Call) and isinstance(e.op, Op) and e.op.name == name:
            return e
        return None

    def plain_matmul(self, e: rx.Expr) -> rx.Call | None:
        call = self.call(e, "relax.matmul")
        return call if call is not None and call.attrs.get("out_dtype") is None else None

    def transpose_of(self, e: rx.Expr) -> rx.Expr | None:
        """The operand of a 2-D transpose `e`, else None (other permutations do not qualify)."""
        call = self.call(e, "relax.permute_dims")
        if call is None or _ndim(call.args[0]) != 2:
            return None
        axes = call.attrs.get("axes")
        return call.args[0] if axes is None or [int(a) for a in axes] == [1, 0] else None

    def is_compile_time(self, e: rx.Expr) -> bool:
        return isinstance(e, rx.Var) and e in self.compile_time


def _ndim(e: rx.Expr) -> int:
    sinfo = e.struct_info
    return sinfo.ndim if isinstance(sinfo, si.TensorStructInfo) else -1


def _shape(e: rx.Expr) -> list[Any] | None:
    sinfo = e.struct_info
    if isinstance(sinfo, si.TensorStructInfo) and sinfo.shape is not None:
        values = getattr(sinfo.shape, "values", sinfo.shape)
        return list(values)
    return None


# ----------------------------------------------------------------------------- the driver


def _emit(e: rx.Expr, out: list[rx.Binding], var_cls: type, name: str) -> rx.Expr:
    """`e` with every nested call bound to a fresh variable appended to `out` (post-order)."""
    if not isinstance(e, rx.Call):
        return e
    args = tuple(_emit_arg(a, out, var_cls, name) for a in e.args)
    return e if all(a is b for a, b in zip(args, e.args)) else e.replace(args=args)


def _emit_arg(a: rx.Expr, out: list[rx.Binding], var_cls: type, name: str) -> rx.Expr:
    if isinstance(a, rx.Tuple):  # tuples stay inline, their calls are bound (normal form)
        fields = tuple(_emit_arg(f, out, var_cls, name) for f in a.fields)
        return a if all(x is y for x, y in zip(fields, a.fields)) else rx.Tuple(fields)
    if not isinstance(a, rx.Call):
        return a
    value = _emit(a, out, var_cls, name)
    var = var_cls(f"{name}_{len(out)}", value.struct_info)
    out.append(rx.VarBinding(var, value))
    return var


def rewrite_bindings(func: rx.Function, rewrite: Rewrite) -> rx.Function:
    """`func` with each binding value `rewrite` replaces (None: kept), then unused ones dropped."""
    if not isinstance(func.body, rx.SeqExpr):
        return func
    blocks, changed = [], False
    for block in func.body.blocks:
        var_cls = rx.DataflowVar if isinstance(block, rx.DataflowBlock) else rx.Var
        bindings: list[rx.Binding] = []
        for b in block.bindings:
            new = rewrite(b.value) if isinstance(b, rx.VarBinding) else None
            if new is None:
                bindings.append(b)
                continue
            changed = True
            value = _emit(new, bindings, var_cls, b.var.name_hint)
            bindings.append(rx.VarBinding(b.var, value))
        blocks.append(type(block)(tuple(bindings)) if changed else block)
    if not changed:
        return func
    return remove_unused_bindings(func.replace(body=rx.SeqExpr(tuple(blocks), func.body.body)))


# ----------------------------------------------------------------------------- AdjustMatmulOrder


def _as_2d(shape: list[Any], vector_rows: bool) -> list[Any]:
    """A 1-D operand's shape as a row (`vector_rows`) or a column matrix, for the cost."""
    if len(shape) != 1:
        return shape
    one = te.IntImm(shape[0].dtype if hasattr(shape[0], "dtype") else "int64", 1)
    return [one, shape[0]] if vector_rows else [shape[0], one]


def _bounds(func: rx.Function) -> Any:
    """Facts about the symbolic dims from the `tir_var_upper_bound` attribute (or None)."""
    from ..analysis import tir_vars_in_struct_info

    bounds = func.attrs.get("tir_var_upper_bound")
    if not bounds:
        return None
    by_name = {v.name: v for v in tir_vars_in_struct_info(func.struct_info)}
    facts = [v >= 0 for v in by_name.values()]
    for name, bound in dict(bounds).items():
        v = by_name.get(str(name))
        if v is not None:
            facts.append(v < bound)
    return tir_all(*facts) if facts else None


def _reorder(value: rx.Expr, bound: _Bound, facts: Any) -> rx.Expr | None:
    outer = bound.plain_matmul(value)
    if outer is None:
        return None
    lhs, rhs = outer.args
    inner_l, inner_r = bound.plain_matmul(lhs), bound.plain_matmul(rhs)
    if inner_l is not None:
        (a, b), c, form = inner_l.args, rhs, "lhs"
    elif inner_r is not None:
        a, (b, c), form = lhs, inner_r.args, "rhs"
    else:
        t_l, t_r = bound.transpose_of(lhs), bound.transpose_of(rhs)
        prod_l = bound.plain_matmul(t_l) if t_l is not None else None
        prod_r = bound.plain_matmul(t_r) if t_r is not None else None
        if prod_l is not None:  # (B @ A)^T @ C = (A^T @ B^T) @ C
            (b, a), c, form = prod_l.args, rhs, "lhs^T"
        elif prod_r is not None:  # A @ (C @ B)^T = A @ (B^T @ C^T)
            a, (c, b), form = lhs, prod_r.args, "rhs^T"
        else:
            return None
    ct = bound.is_compile_time
    if ct(a) and ct(b) and ct(c):
        return None  # all of it is precomputed anyway
    shapes = [_shape(a), _shape(b), _shape(c)]
    if any(s is None for s in shapes):
        return None
    sa, sb, sc = shapes
    if form == "lhs^T":
        if len(sa) != 2 or len(sb) != 2:
            return None
        a, b, sa, sb = permute_dims(a), permute_dims(b), sa[::-1], sb[::-1]
    elif form == "rhs^T":
        if len(sb) != 2 or len(sc) != 2:
            return None
        b, c, sb, sc = permute_dims(b), permute_dims(c), sb[::-1], sc[::-1]
    left_first = matmul(matmul(a, b), c)
    right_first = matmul(a, matmul(b, c))
    keep_left = None if form == "lhs" else left_first
    keep_right = None if form == "rhs" else right_first
    if ct(a) and ct(b):
        return keep_left
    if ct(b) and ct(c):
        return keep_right
    sa, sc = _as_2d(sa, True), _as_2d(sc, False)
    n, r, m, k = sa[-2], sa[-1], sc[-2], sc[-1]
    left_cost = (r + k) * n * m  # (N x R @ R x M) then N x M @ M x K
    right_cost = (m + n) * r * k  # R x M @ M x K then N x R @ R x K
    analyzer = Analyzer()
    positive = tir_all(n > 0, r > 0, m > 0, k > 0)
    with analyzer.constraint_scope(positive if facts is None else tir_all(facts, positive)):
        if analyzer.can_prove(left_cost < right_cost):
            return keep_left
        if analyzer.can_prove(right_cost < left_cost):
            return keep_right
    return None  # the better order is not provable: the product stays as written


def adjust_matmul_order_function(func: rx.Function) -> rx.Function:
    bound, facts = _Bound(func), _bounds(func)
    return rewrite_bindings(func, lambda v: _reorder(v, bound, facts))


def AdjustMatmulOrder() -> Pass:
    """Reassociate chains of two matmuls to the cheaper order (matmul_rewrites.py)."""
    return Pass(lambda mod: map_functions(mod, adjust_matmul_order_function), "AdjustMatmulOrder")


# ----------------------------------------------------------------------------- ExpandMatmulOfSum


def _expand(value: rx.Expr, bound: _Bound) -> rx.Expr | None:
    mm = bound.plain_matmul(value)
    if mm is None:
        return None
    x, rhs = mm.args
    permute = bound.call(rhs, "relax.permute_dims")
    total = bound.call(permute.args[0] if permute is not None else rhs, "relax.add")
    if total is None:
        return None
    a, b = total.args
    if bound.is_compile_time(a) and bound.is_compile_time(b):
        return None  # A + B is precomputed; one matmul stays cheaper
    if not (_shape(a) is not None and _same_dims(_shape(a), _shape(total))):
        return None  # a broadcast sum: x @ A + x @ B would not have x @ (A + B)'s shape
    if not _same_dims(_shape(b), _shape(total)):
        return None
    if permute is not None:
        axes = permute.attrs.get("axes")
        a, b = permute_dims(a, axes), permute_dims(b, axes)
    return add(matmul(x, a), matmul(x, b))


def _same_dims(s1: list[Any] | None, s2: list[Any] | None) -> bool:
    if s1 is None or s2 is None or len(s1) != len(s2):
        return False
    analyzer = Analyzer()
    return all(analyzer.can_prove_equal(d1, d2) for d1, d2 in zip(s1, s2))


def expand_matmul_of_sum_function(func: rx.Function) -> rx.Function:
    bound = _Bound(func)
    return rewrite_bindings(func, lambda v: _expand(v, bound))


def ExpandMatmulOfSum() -> Pass:
    """x @ (A + B) -> x @ A + x @ B when A + B is not a compile-time value (matmul_rewrites.py)."""
    return Pass(lambda mod: map_functions(mod, expand_matmul_of_sum_function), "ExpandMatmulOfSum")


# ----------------------------------------------------------------------------- ReorderTakeAfterMatmul


def _take_late(value: rx.Expr, bound: _Bound) -> rx.Expr | None:
    mm = bound.plain_matmul(value)
    if mm is None:
        return None
    x, rhs = mm.args
    picked = bound.call(rhs, "relax.take")
    if picked is None or picked.attrs.get("axis") is None:
        return None
    weights, indices = picked.args
    axis, mode = int(picked.attrs["axis"]), picked.attrs.get("mode", "clip")
    nx, nw, ni, nout = _ndim(x), _ndim(weights), _ndim(indices), _ndim(value)
    if min(nx, nw, ni, nout) < 0:
        return None
    if ni == 1 and nw >= 2 and axis == nw - 1:  # picks output features: pick them afterwards
        return take(matmul(x, weights), indices, axis=nout - 1, mode=mode)
    sx, sw = _shape(x), _shape(weights)
    if nx == 3 and nw == 3 and ni == 1 and axis == 0 and sx is not None and sw is not None:
        # out[i, j, k] = (x @ W[idx[i]])[i, j, k]: all table entries in one matmul, then pick
        table, fin, fout = sw
        fused = reshape(permute_dims(weights, [1, 0, 2]), [fin, table * fout])
        per_entry = reshape(matmul(x, fused), [sx[0], sx[1], table, fout])
        return einsum([take(per_entry, indices, axis=2, mode=mode)], "ijik->ijk")
    return None


def reorder_take_after_matmul_function(func: rx.Function) -> rx.Function:
    bound = _Bound(func)
    return rewrite_bindings(func, lambda v: _take_late(v, bound))


def ReorderTakeAfterMatmul() -> Pass:
    """x @ take(W, idx) -> take(x @ W, idx) (matmul_rewrites.py)."""
    return Pass(
        lambda mod: map_functions(mod, reorder_take_after_matmul_function),
        "ReorderTakeAfterMatmul",
    )


# ----------------------------------------------------------------------------- ReorderPermuteDims...


def _permutation(call: rx.Call) -> list[int] | None:
    axes = call.attrs.get("axes")
    if axes is not None:
        return [int(a) for a in axes]
    ndim = _ndim(call.args[0])
    return list(range(ndim - 1, -1, -1)) if ndim >= 0 else None


def _concat_first(value: rx.Expr, bound: _Bound) -> rx.Expr | None:
    cat = bound.call(value, "relax.concat")
    if cat is None:
        return None
    parts = cat.args[0]
    parts = bound.values.get(parts, parts) if isinstance(parts, rx.Var) else parts
    if not isinstance(parts, rx.Tuple) or len(parts.fields) < 2:
        return None
    perms = [bound.call(f, "relax.permute_dims") for f in parts.fields]
    if any(p is None for p in perms):
        return None
    order = _permutation(perms[0])
    if order is None or any(_permutation(p) != order for p in perms[1:]):
        return None  # operands permuted differently: no single transpose afterwards
    axis = int(cat.attrs.get("axis") or 0) % len(order)
    joined = concat(rx.Tuple(tuple(p.args[0] for p in perms)), axis=order[axis])
    return permute_dims(joined, perms[0].attrs.get("axes"))


def reorder_permute_dims_after_concat_function(func: rx.Function) -> rx.Function:
    bound = _Bound(func)
    return rewrite_bindings(func, lambda v: _concat_first(v, bound))


def ReorderPermuteDimsAfterConcat() -> Pass:
    """concat of equally permuted tensors -> one permute of their concat (matmul_rewrites.py)."""
    return Pass(
        lambda mod: map_functions(mod, reorder_permute_dims_after_concat_function),
        "ReorderPermuteDimsAfterConcat",
    )
