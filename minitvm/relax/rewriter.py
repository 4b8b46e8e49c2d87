"""Pattern-matching rewriters written as relax functions (TVM's `R.rewriter`).

A rewriter is an IRModule with a `pattern` and a `replacement` function of the same signature.
The pattern's params are wildcards (constrained by their struct info; symbolic dims bind to
whatever the match has there), its bindings are followed through the bindings of the function
being rewritten, and every match is replaced by the replacement's body with the params bound.
Rules are applied until nothing changes; matched bindings left unused are dropped. Other
functions of the rewriter's module are private subroutines, copied into the rewritten module
(renamed on a clash) when a replacement calls them.

    @R.rewriter
    class AddToPacked:
        @R.function
        def pattern(A: R.Tensor([16], "float32"), B: R.Tensor([16], "float32")):
            return A + B

        @R.function
        def replacement(A: R.Tensor([16], "float32"), B: R.Tensor([16], "float32")):
            return R.call_pure_packed("fast_add", A, B, sinfo_args=R.Tensor([16], "float32"))

    mod = AddToPacked(mod)  # also a Pass: Sequential([AddToPacked])
"""

from __future__ import annotations

import itertools
from typing import Any

from ..error import TVMError
from ..ir.module import GlobalVar, IRModule
from ..ir.op import Op
from ..ir.structural import structural_equal
from ..ir.transform import Pass
from ..tir.expr import IntImm
from ..tir.expr import Var as TirVar
from . import expr as rx
from . import struct_info as si
from .functor import substitute_dims

_MAX_ROUNDS = 32  # rules rewrite to a fixpoint; one still matching after this many rounds raises
# calls with side effects: a match may not move work across them
_IMPURE_OPS = frozenset({"relax.print", "relax.call_packed", "relax.assert_op"})


# values a replacement may bind: `_substitute` renames inside exactly these
_REPLACEABLE = (
    rx.Call,
    rx.Tuple,
    rx.TupleGetItem,
    rx.Var,
    rx.Constant,
    rx.PrimValue,
    rx.ShapeExpr,
    rx.StringImm,
    rx.DataTypeImm,
)


class RewriterKeyError(TVMError, KeyError):
    """The rewriter's module lacks the `pattern` or `replacement` function."""


class RewriterTypeError(TVMError, TypeError):
    """`pattern` or `replacement` is not a relax function."""


class RewriterValueError(TVMError, ValueError):
    """The rewriter's functions do not fit together (signatures, public subroutines)."""


# ----------------------------------------------------------------------------- matching


class _Match:
    """The state of one match: wildcard and symbolic-dim bindings, the vars walked through."""

    def __init__(self, params: tuple, bound: dict) -> None:
        self.params = set(params)
        self.pattern_values = bound  # pattern var -> its value in the pattern function
        self.wild: dict = {}  # pattern param -> matched expression
        self.dims: dict = {}  # pattern symbolic dim -> matched PrimExpr
        self.seen: dict = {}  # pattern bound var -> target expression it matched
        self.walked: list = []  # target vars whose bindings the match went through


def _same_dim(a: Any, b: Any) -> bool:
    if isinstance(a, int | IntImm) and isinstance(b, int | IntImm):
        return int(a) == int(b)
    return structural_equal(a, b, map_free_vars=False)


def _match_dim(pat: Any, actual: Any, m: _Match) -> bool:
    if isinstance(pat, TirVar):
        if pat in m.dims:
            return _same_dim(m.dims[pat], actual)
        m.dims[pat] = actual
        return True
    return _same_dim(substitute_dims(pat, m.dims), actual)


def _match_dims(pat: Any, actual: Any, m: _Match) -> bool:
    if pat is None:
        return True
    if actual is None or len(pat) != len(actual):
        return False
    return all(_match_dim(p, a, m) for p, a in zip(pat, actual))


def _match_sinfo(pat: si.StructInfo, actual: si.StructInfo, m: _Match) -> bool:
    """Whether `actual` is an instance of the pattern's struct info, binding its symbolic dims."""
    if isinstance(pat, si.ObjectStructInfo):
        return True
    if type(pat) is not type(actual):
        return False
    if isinstance(pat, si.TensorStructInfo):
        if pat.dtype is not None and pat.dtype != actual.dtype:
            return False
        if pat.ndim != -1 and pat.ndim != actual.ndim:
            return False
        shape = pat.shape.values if isinstance(pat.shape, rx.ShapeExpr) else pat.shape
        got = actual.shape.values if isinstance(actual.shape, rx.ShapeExpr) else actual.shape
        return shape is None or (isinstance(shape, tuple) and _match_dims(shape, got, m))
    if isinstance(pat, si.TupleStructInfo):
        return len(pat.fields) == len(actual.fields) and all(
            _match_sinfo(p, a, m) for p, a in zip(pat.fields, actual.fields)
        )
    if isinstance(pat, si.ShapeStructInfo):
        return (pat.ndim in (-1, actual.ndim)) and _match_dims(pat.values, actual.values, m)
    if isinstance(pat, si.PrimStructInfo):
        if pat.dtype != actual.dtype:
            return False
        return pat.value is None or (
            actual.value is not None and _match_dim(pat.value, actual.value, m)
        )
    return structural_equal(pat, actual, map_free_vars=False)


def _match(pat: Any, expr: Any, m: _Match, defs: dict) -> bool:
    """Match pattern expression `pat` against `expr`, following target bindings in `defs`."""
    if isinstance(pat, rx.Var) and pat in m.params:
        if pat in m.wild:
            return m.wild[pat] is expr or (
                not isinstance(expr, rx.Var) and structural_equal(m.wild[pat], expr)
            )
        if not _match_sinfo(pat.struct_info, expr.struct_info, m):
            return False
        m.wild[pat] = expr
        return True
    if isinstance(pat, rx.Var) and pat in m.pattern_values:
        if pat in m.seen:
            return m.seen[pat] is expr
        m.seen[pat] = expr
        return _match(m.pattern_values[pat], expr, m, defs)
    while isinstance(expr, rx.Var) and expr in defs:
        m.walked.append(expr)
        expr = defs[expr]
    if isinstance(pat, rx.Call):
        return (
            isinstance(expr, rx.Call)
            and _same_callee(pat.op, expr.op)
            and len(pat.args) == len(expr.args)
            and structural_equal(pat.attrs, expr.attrs)
            and len(pat.sinfo_args) == len(expr.sinfo_args)
            and all(_match_sinfo(p, a, m) for p, a in zip(pat.sinfo_args, expr.sinfo_args))
            and all(_match(p, a, m, defs) for p, a in zip(pat.args, expr.args))
        )
    if isinstance(pat, rx.Tuple):
        return (
            isinstance(expr, rx.Tuple)
            and len(pat.fields) == len(expr.fields)
            and all(_match(p, a, m, defs) for p, a in zip(pat.fields, expr.fields))
        )
    if isinstance(pat, rx.TupleGetItem):
        return (
            isinstance(expr, rx.TupleGetItem)
            and pat.index == expr.index
            and _match(pat.tuple_value, expr.tuple_value, m, defs)
        )
    if isinstance(pat, rx.ShapeExpr):
        return isinstance(expr, rx.ShapeExpr) and _match_dims(pat.values, expr.values, m)
    if isinstance(pat, rx.PrimValue):
        return isinstance(expr, rx.PrimValue) and _match_dim(pat.value, expr.value, m)
    return type(pat) is type(expr) and structural_equal(pat, expr)


def _same_callee(a: Any, b: Any) -> bool:
    if isinstance(a, Op):
        return isinstance(b, Op) and a.name == b.name
    return structural_equal(a, b)


# ----------------------------------------------------------------------------- one rule


def _flat_bindings(seq: rx.Expr) -> tuple[list, rx.Expr]:
    if not isinstance(seq, rx.SeqExpr):
        return [], seq
    return [b for block in seq.blocks for b in block.bindings], seq.body


class _Rule:
    """One pattern/replacement pair, ready to match."""

    def __init__(self, pattern: rx.Function, replacement: rx.Function, subroutines: dict):
        self.pattern, self.replacement, self.subroutines = pattern, replacement, subroutines
        bindings, self.root = _flat_bindings(pattern.body)
        self.pattern_values = {b.var: b.value for b in bindings if isinstance(b, rx.VarBinding)}

    def tuple_fields(self) -> tuple | None:
        """The field patterns when the pattern returns a tuple, else None."""
        root = self.root
        while isinstance(root, rx.Var) and root in self.pattern_values:
            root = self.pattern_values[root]
        return root.fields if isinstance(root, rx.Tuple) and root.fields else None

    def match_field(self, field: rx.Expr, var: rx.Var, defs: dict) -> _Match | None:
        """Whether the binding of `var` alone matches one field of a tuple pattern."""
        m = _Match(self.pattern.params, self.pattern_values)
        return m if _match(field, var, m, defs) else None

    def match(self, expr: rx.Expr, defs: dict) -> _Match | None:
        m = _Match(self.pattern.params, self.pattern_values)
        return m if _match(self.root, expr, m, defs) else None

    def instantiate(self, m: _Match, gvar_map: dict, var_cls: type) -> tuple[list, rx.Expr]:
        """The replacement's bindings (fresh vars) and result for match `m`."""
        vmap: dict = {p: m.wild[q] for p, q in zip(self.replacement.params, self.pattern.params)}
        dims = dict(m.dims)
        for p, q in zip(self.replacement.params, self.pattern.params):
            _bind_same_dims(p.struct_info, q.struct_info, m.dims, dims)
        bindings, result = _flat_bindings(self.replacement.body)
        out = []
        for b in bindings:
            value = _substitute(b.value, vmap, dims, gvar_map)
            if isinstance(b, rx.MatchCast):
                fresh_dims = _fresh_dims(b.struct_info, dims)
                dims.update(fresh_dims)
                sinfo = substitute_dims(b.struct_info, dims)
                var = var_cls(b.var.name_hint, substitute_dims(b.var.struct_info, dims))
                out.append(rx.MatchCast(var, value, sinfo))
            else:
                var = var_cls(b.var.name_hint, substitute_dims(b.var.struct_info, dims))
                out.append(rx.VarBinding(var, value))
            vmap[b.var] = var
        return out, _substitute(result, vmap, dims, gvar_map)


def _bind_same_dims(rep: si.StructInfo, pat: si.StructInfo, matched: dict, dims: dict) -> None:
    """Map the replacement's symbolic dims to what the pattern's dims at the same place took."""
    for r, p in zip(_dims_of(rep), _dims_of(pat)):
        if isinstance(r, TirVar) and isinstance(p, TirVar) and p in matched:
            dims[r] = matched[p]


def _dims_of(sinfo: si.StructInfo) -> list:
    """The PrimExprs of a struct info in a fixed order (shapes, prim values, tuple fields)."""
    if isinstance(sinfo, si.TensorStructInfo):
        shape = sinfo.shape.values if isinstance(sinfo.shape, rx.ShapeExpr) else sinfo.shape
        return list(shape) if isinstance(shape, tuple) else []
    if isinstance(sinfo, si.ShapeStructInfo):
        return list(sinfo.values or ())
    if isinstance(sinfo, si.PrimStructInfo):
        return [sinfo.value]
    if isinstance(sinfo, si.TupleStructInfo):
        return [d for f in sinfo.fields for d in _dims_of(f)]
    return []


def _fresh_dims(sinfo: si.StructInfo, dims: dict) -> dict:
    """Fresh copies of the symbolic dims a match_cast in the replacement defines."""
    from .analysis import definable_tir_vars_in_struct_info

    return {
        v: TirVar(v.name, v.dtype)
        for v in definable_tir_vars_in_struct_info(sinfo)
        if v not in dims
    }


def _substitute(e: Any, vmap: dict, dims: dict, gvar_map: dict) -> Any:
    """`e` (a binding value in normal form) with vars, dims and subroutine names replaced."""
    if isinstance(e, rx.Var):
        return vmap.get(e, e)
    if isinstance(e, GlobalVar):
        return gvar_map.get(e, e)
    if isinstance(e, rx.Call):
        return rx.Call(
            _substitute(e.op, vmap, dims, gvar_map),
            tuple(_substitute(a, vmap, dims, gvar_map) for a in e.args),
            e.attrs,
            tuple(substitute_dims(s, dims) for s in e.sinfo_args),
        )
    if isinstance(e, rx.Tuple):
        return rx.Tuple(tuple(_substitute(f, vmap, dims, gvar_map) for f in e.fields))
    if isinstance(e, rx.TupleGetItem):
        return rx.TupleGetItem(_substitute(e.tuple_value, vmap, dims, gvar_map), e.index)
    return substitute_dims(e, dims)


# ----------------------------------------------------------------------------- applying rules


def _is_impure(value: Any) -> bool:
    if not isinstance(value, rx.Call):
        return False
    if isinstance(value.op, Op):
        return value.op.name in _IMPURE_OPS
    sinfo = getattr(value.op, "struct_info", None)
    return isinstance(value.op, rx.ExternFunc) or (
        isinstance(sinfo, si.FuncStructInfo) and not sinfo.purity
    )


class _Applier:
    """Rewrites the bindings of one function with a list of rules, tracking used subroutines."""

    def __init__(self, rules: list, gvar_maps: list) -> None:
        self.rules, self.gvar_maps = rules, gvar_maps
        self.changed = False

    def seq(self, seq: rx.Expr) -> rx.Expr:
        if not isinstance(seq, rx.SeqExpr):
            return seq
        positions, defs, order = {}, {}, []
        for block in seq.blocks:
            for b in block.bindings:
                positions[b.var] = len(order)
                order.append(b)
                if isinstance(b, rx.VarBinding):
                    defs[b.var] = b.value
        impure = [i for i, b in enumerate(order) if _is_impure(b.value)]
        changed_before, self.changed = self.changed, False
        new_seq = self._sweep(seq, positions, defs, order, impure)
        if not self.changed:
            new_seq = self._implicit_tuple(new_seq, positions, defs, impure)
        self.changed = self.changed or changed_before
        return new_seq

    def _sweep(self, seq, positions, defs, order, impure) -> rx.SeqExpr:
        """Rewrite each binding (and the body) whose value matches a rule."""
        new_blocks, walked_all = [], set()
        for block in seq.blocks:
            bindings = []
            for b in block.bindings:
                value = self._nested(b.value)
                if isinstance(b, rx.VarBinding):
                    var_cls = rx.DataflowVar if isinstance(block, rx.DataflowBlock) else rx.Var
                    hit = self._rewrite(value, defs, positions[b.var], positions, impure, var_cls)
                    if hit is not None:
                        pre, value, walked = hit
                        bindings.extend(pre)
                        walked_all.update(walked)
                        defs[b.var] = value  # later matches see the rewritten value
                bindings.append(b.replace(value=value))
            new_blocks.append(block.replace(bindings=tuple(bindings)))
        body = seq.body
        hit = None
        if not isinstance(body, rx.Var):  # a var body was rewritten where it is bound
            hit = self._rewrite(body, defs, len(order), positions, impure, rx.Var)
        if hit is not None:
            pre, body, walked = hit
            walked_all.update(walked)
            if new_blocks and type(new_blocks[-1]) is rx.BindingBlock:
                last = new_blocks.pop()
                pre = [*last.bindings, *pre]
            new_blocks.append(rx.BindingBlock(tuple(pre)))
        new_blocks = _drop_unused(new_blocks, body, walked_all)
        return seq.replace(blocks=tuple(new_blocks), body=body)

    def _implicit_tuple(self, seq, positions, defs, impure) -> rx.SeqExpr:
        """Rules whose pattern returns a tuple also match separate bindings, one per field,
        when no use of those bindings comes before the last of them: the replacement is
        emitted there and each binding becomes an item of its result."""
        for rule, gvar_map in zip(self.rules, self.gvar_maps):
            fields = rule.tuple_fields()
            if fields is None:
                continue
            found = _find_tuple_match(rule, fields, seq, positions, defs, impure)
            if found is None:
                continue
            m, chosen = found
            last = max(chosen, key=positions.__getitem__)
            var_cls = type(last) if isinstance(last, rx.DataflowVar) else rx.Var
            pre, result = rule.instantiate(m, gvar_map, var_cls)
            pre, result = _bind_nested_calls(pre, result, var_cls)
            if isinstance(result, rx.Call):  # its items are read below: bind it once
                var = var_cls("tuple", result.struct_info)
                pre, result = [*pre, rx.VarBinding(var, result)], var
            self.changed = True
            return _splice_tuple(seq, pre, result, chosen, m.walked, positions)
        return seq

    def _nested(self, value: Any) -> Any:
        if isinstance(value, rx.If):
            return value.replace(
                true_branch=self.seq(value.true_branch), false_branch=self.seq(value.false_branch)
            )
        return value

    def _rewrite(self, value, defs, at, positions, impure, var_cls):
        """(bindings to emit, new value, vars matched through) for the first rule matching
        `value` (bound at position `at`), or None."""
        for rule, gvar_map in zip(self.rules, self.gvar_maps):
            m = rule.match(value, defs)
            if m is None:
                continue
            spots = [positions[v] for v in m.walked] + [at]
            lo, hi = min(spots), max(spots)
            if any(lo < i < hi for i in impure):
                continue
            pre, result = rule.instantiate(m, gvar_map, var_cls)
            pre, result = _bind_nested_calls(pre, result, var_cls)
            at_body = at == len(positions)  # a SeqExpr's body takes the replacement as written
            folds = pre and isinstance(pre[-1], rx.VarBinding) and result is pre[-1].var
            if folds and not at_body:  # `out = f(..)`, not `t = f(..); out = t`
                pre, result = pre[:-1], pre[-1].value
            self.changed = True
            return pre, result, m.walked
        return None


_MAX_TUPLE_TRIES = 4096  # combinations of candidate bindings tried for one implicit tuple


def _find_tuple_match(rule, fields, seq, positions, defs, impure):
    """(match, vars chosen per field) for an implicit tuple, or None."""
    candidates = [[v for v in defs if rule.match_field(f, v, defs) is not None] for f in fields]
    uses = _use_positions(seq, positions)
    for combo in itertools.islice(itertools.product(*candidates), _MAX_TUPLE_TRIES):
        if len(set(combo)) != len(combo):
            continue
        at = max(positions[v] for v in combo)
        if any(p <= at for v in combo for p in uses.get(v, ())):
            continue  # a use before the tuple exists: matching would compute a field twice
        m = _Match(rule.pattern.params, rule.pattern_values)
        if not all(_match(f, v, m, defs) for f, v in zip(fields, combo)):
            continue
        spots = [positions[v] for v in m.walked]
        if any(min(spots) < i < max(spots) for i in impure):
            continue
        return m, combo
    return None


def _use_positions(seq: rx.SeqExpr, positions: dict) -> dict:
    """Var -> positions of the bindings that read it (the body counts as the last position)."""
    from .analysis_vars import free_vars

    uses: dict = {}
    for block in seq.blocks:
        for b in block.bindings:
            for v in free_vars(b.value):
                uses.setdefault(v, []).append(positions[b.var])
    for v in free_vars(seq.body):
        uses.setdefault(v, []).append(len(positions))
    return uses


def _splice_tuple(
    seq: rx.SeqExpr, pre: list, result: Any, chosen: tuple, walked: list, positions: dict
) -> rx.SeqExpr:
    """`seq` with the replacement emitted after the last chosen binding, each chosen var
    rebound to its item of the result (in the order they were bound)."""
    last = max(chosen, key=positions.__getitem__)
    index = {v: j for j, v in enumerate(chosen)}
    blocks = []
    for block in seq.blocks:
        bindings = []
        for b in block.bindings:
            if b.var not in index:
                bindings.append(b)
            if b.var is last:
                bindings.extend(pre)
                for v in sorted(chosen, key=positions.__getitem__):
                    item = (
                        result.fields[index[v]]
                        if isinstance(result, rx.Tuple)
                        else rx.TupleGetItem(result, index[v])
                    )
                    bindings.append(rx.VarBinding(v, item))
        blocks.append(block.replace(bindings=tuple(bindings)))
    blocks = _drop_unused(blocks, seq.body, set(walked) - set(chosen))
    return seq.replace(blocks=tuple(blocks))


def _bind_nested_calls(pre: list, result: Any, var_cls: type) -> tuple[list, Any]:
    """The replacement in normal form: calls nested in call arguments get bindings of their
    own (as TVM's BlockBuilder emits them), so later rounds can match them."""
    out: list = []

    def leaf(e: Any) -> Any:
        if not isinstance(e, rx.Call):
            return e
        e = flat(e)
        var = var_cls("lv", e.struct_info)
        out.append(rx.VarBinding(var, e))
        return var

    def flat(e: Any) -> Any:
        if isinstance(e, rx.Call):
            return e.replace(args=tuple(leaf(a) for a in e.args))
        if isinstance(e, rx.Tuple):
            return e.replace(fields=tuple(leaf(f) for f in e.fields))
        return e

    for b in pre:
        out.append(b.replace(value=flat(b.value)))
    return out, flat(result)


def _drop_unused(blocks: list, body: Any, candidates: set) -> list:
    """`blocks` without the bindings of `candidates` (vars a match went through) that are no
    longer used; one backward sweep."""
    from .analysis_vars import free_vars

    used = set(free_vars(body))
    out = []
    for block in reversed(blocks):
        kept = []
        for b in reversed(block.bindings):
            if b.var in candidates and b.var not in used and not _is_impure(b.value):
                continue
            kept.append(b)
            used.update(free_vars(b.value))
        out.append(block.replace(bindings=tuple(reversed(kept))))
    return [blk for blk in reversed(out) if blk.bindings]


def _rewrite_function(
    func: rx.Function, rules: list, gvar_maps: list, mod: IRModule | None = None
) -> rx.Function:
    """`func` with the rules applied until none matches."""
    for _ in range(_MAX_ROUNDS):
        applier = _Applier(rules, gvar_maps)
        body = applier.seq(func.body)
        if not applier.changed:
            return func
        func = func.replace(body=body)
    raise TVMError(
        f"PatternMatchingRewriter: still matching after {_MAX_ROUNDS} rounds; a replacement "
        "matches its own pattern (or rules undo each other), so the rewrite never converges"
    )


# ----------------------------------------------------------------------------- public API


class PatternMatchingRewriter(Pass):
    """Rewrites matches of relax-function patterns; call it on a Function or an IRModule."""

    def __init__(self, rules: list) -> None:
        self.rules = list(rules)
        super().__init__(self._apply_module, "PatternMatchingRewriter")

    @staticmethod
    def from_module(mod: IRModule) -> PatternMatchingRewriter:
        """A rewriter from a module holding `pattern`, `replacement` and private subroutines."""
        funcs = {gv.name_hint: f for gv, f in mod.functions_items()}
        for name in ("pattern", "replacement"):
            if name not in funcs:
                raise RewriterKeyError(
                    f"R.rewriter: the class defines no function named '{name}'; add "
                    f"`@R.function def {name}(...)` (found: {sorted(funcs)})"
                )
            if not isinstance(funcs[name], rx.Function):
                raise RewriterTypeError(
                    f"R.rewriter: '{name}' must be a relax function (@R.function), got "
                    f"{type(funcs[name]).__name__}"
                )
        pattern, replacement = funcs["pattern"], funcs["replacement"]
        for b in _flat_bindings(replacement.body)[0]:
            if not isinstance(b.value, _REPLACEABLE):
                raise RewriterValueError(
                    f"R.rewriter: 'replacement' binds '{b.var.name_hint}' to a "
                    f"{type(b.value).__name__}; only calls, tuples, tuple items and leaves are "
                    "supported there, move control flow into a private subroutine"
                )
        sig_p = [p.struct_info for p in pattern.params]
        sig_r = [p.struct_info for p in replacement.params]
        if not structural_equal(sig_p, sig_r, map_free_vars=True):
            raise RewriterValueError(
                "R.rewriter: 'pattern' and 'replacement' must have the same signature; params "
                f"are {sig_p} and {sig_r}"
            )
        subroutines = {}
        for gv, func in mod.functions_items():
            if gv.name_hint in ("pattern", "replacement"):
                continue
            if func.attrs.get("global_symbol") is not None:
                raise RewriterValueError(
                    f"R.rewriter: subroutine '{gv.name_hint}' is publicly exposed; a rewriter "
                    "may only add private functions, declare it with private=True"
                )
            subroutines[gv] = func
        return PatternMatchingRewriter([_Rule(pattern, replacement, subroutines)])

    def __or__(self, other: PatternMatchingRewriter) -> PatternMatchingRewriter:
        """A rewriter trying this one's rules first, then `other`'s."""
        return PatternMatchingRewriter(self.rules + other.rules)

    def __call__(self, obj: Any) -> Any:
        if isinstance(obj, rx.Function):
            return _rewrite_function(obj, self.rules, [{} for _ in self.rules])
        return super().__call__(obj)

    def _apply_module(self, mod: IRModule) -> IRModule:
        out = mod.copy()
        names = {gv.name_hint for gv, _ in mod.functions_items()}
        gvar_maps = []
        for rule in self.rules:
            gmap = {}
            for gv in rule.subroutines:
                name, k = gv.name_hint, 0
                while name in names:
                    k += 1
                    name = f"{gv.name_hint}_{k}"
                names.add(name)
                gmap[gv] = GlobalVar(name)
            gvar_maps.append(gmap)
        for gv, func in mod.functions_items():
            if isinstance(func, rx.Function):
                new = _rewrite_function(func, self.rules, gvar_maps, mod)
                if new is not func:
                    out[gv] = new
        _add_used_subroutines(out, self.rules, gvar_maps)
        return out


def _add_used_subroutines(mod: IRModule, rules: list, gvar_maps: list) -> None:
    from .analysis_vars import all_global_vars

    used = {
        g
        for _, f in mod.functions_items()
        if isinstance(f, rx.Function)
        for g in all_global_vars(f)
    }
    for rule, gmap in zip(rules, gvar_maps):
        for old, new in gmap.items():
            if new in used:
                func = rule.subroutines[old]
                mod[new] = _renamed_calls(func, gmap) if isinstance(func, rx.Function) else func


def _renamed_calls(func: rx.Function, gmap: dict) -> rx.Function:
    """A subroutine with its calls to sibling subroutines renamed as they were copied."""
    from .analysis_vars import all_global_vars

    if not any(g in gmap for g in all_global_vars(func)):
        return func
    raise TVMError(
        "R.rewriter: a subroutine that calls another subroutine of the rewriter is not "
        "supported; inline the inner call into it"
    )
