"""FuseOpsByPattern and MergeCompositeFunctions: TVM's partitioning for external backends (BYOC).

FuseOpsByPattern groups the bindings of each dataflow block that a pattern matches into a
*composite* function (attrs `Composite=<pattern name>`, `Primitive=1`) called from where the
group's last binding was. Patterns are tried in list order, so earlier ones win; a binding joins
at most one group, and a match whose intermediate values are used outside it is skipped (the
group would have to export them). With `annotate_codegen=True` each composite function is also
wrapped in a function with `Codegen=<pattern prefix>` that RunCodegen hands to that backend.

MergeCompositeFunctions wraps calls of composite functions that have no such wrapper yet: a run
of consecutive calls to the same backend, where each value but the last is used only later in
the run, becomes one `Codegen` function. (TVM also merges non-adjacent groups when no cycle
results; minitvm's runs are the adjacent case, so it may offload in more pieces, never wrongly.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...error import ArgumentError
from ...ir.module import GlobalVar, IRModule
from ...ir.transform import Pass
from .. import expr as rx
from ..functor import used_vars
from ._dpl import CallPattern, DFPattern, match_expr

_SKIP_ATTRS = ("Primitive", "Composite", "Codegen")


@dataclass(frozen=True)
class PatternCheckContext:
    """What a FusionPattern's `check` sees about one match (TVM's fields)."""

    matched_expr: rx.Expr
    annotated_expr: Mapping[str, rx.Expr]
    matched_bindings: Mapping[rx.Var, rx.Expr]
    var_usages: Mapping[rx.Var, Sequence[rx.Var]]
    value_to_bound_var: Mapping[int, rx.Var]


@dataclass(frozen=True)
class FusionPattern:
    """A named pattern for FuseOpsByPattern: `name` is "<backend>.<what>", `check` may veto a match."""

    name: str
    pattern: DFPattern
    annotation_patterns: Mapping[str, DFPattern] = field(default_factory=dict)
    check: Callable[[PatternCheckContext], bool] | None = None
    attrs_getter: Callable[[dict], dict] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.pattern, DFPattern):
            raise ArgumentError(
                f"FusionPattern '{self.name}': pattern is a {type(self.pattern).__name__}, not a "
                "DFPattern; build it with wildcard() and is_op(...)"
            )


def _as_fusion_pattern(item: Any) -> FusionPattern:
    if isinstance(item, FusionPattern):
        return item
    if isinstance(item, tuple) and 2 <= len(item) <= 5:
        return FusionPattern(*item)
    raise ArgumentError(
        f"FuseOpsByPattern: pattern entry {item!r} is neither a FusionPattern nor a tuple "
        "(name, pattern[, annotation_patterns[, check]])"
    )


def _users(block: rx.DataflowBlock) -> dict[rx.Var, list[rx.Var]]:
    users: dict[rx.Var, list[rx.Var]] = {}
    for b in block.bindings:
        for v in used_vars(b.value):
            users.setdefault(v, []).append(b.var)
    return users


def _fresh(out: IRModule, base: str) -> str:
    name, n = base, 1
    while name in out:
        name, n = f"{base}{n}", n + 1
    return name


def _make_function(
    bindings: list[rx.VarBinding], inputs: list[rx.Expr], attrs: dict
) -> rx.Function:
    """A function of `inputs` computing `bindings`, returning the last one's value."""
    table: dict[rx.Expr, rx.Expr] = {}
    params = []
    for k, e in enumerate(inputs):
        name = e.name_hint if isinstance(e, rx.Var) else f"const{k}"
        params.append(rx.Var(name, e.struct_info))
        table[e] = params[-1]
    body = []
    for n, b in enumerate(bindings):
        last = n == len(bindings) - 1
        var = (rx.Var if last else rx.DataflowVar)(b.var.name_hint, b.var.struct_info)
        body.append(rx.VarBinding(var, _substitute(b.value, table)))
        table[b.var] = var
    out = body[-1].var
    block = rx.DataflowBlock(tuple(body))
    return rx.Function(tuple(params), rx.SeqExpr((block,), out), out.struct_info, attrs)


def _substitute(value: rx.Expr, table: Mapping[rx.Expr, rx.Expr]) -> rx.Expr:
    """`value` with the vars and constants in `table` replaced (through calls and tuples)."""
    if isinstance(value, rx.Tuple):
        return value.replace(fields=tuple(_substitute(f, table) for f in value.fields))
    if isinstance(value, rx.Call):
        return value.replace(args=tuple(_substitute(a, table) for a in value.args))
    return table.get(value, value)


class _BlockMatcher:
    """Matches the patterns against one dataflow block, in priority order."""

    def __init__(self, block: rx.DataflowBlock, bind_constants: bool):
        self.block, self.bind_constants = block, bind_constants
        self.bound = {b.var: b.value for b in block.bindings}
        self.index = {b.var: i for i, b in enumerate(block.bindings)}
        self.users = _users(block)
        self.claimed: set[int] = set()

    def groups(self, patterns: list[FusionPattern]) -> list[tuple[FusionPattern, list[int], list]]:
        found = []
        for fp in patterns:
            for i, b in enumerate(self.block.bindings):
                if i in self.claimed:
                    continue
                group = self._try(fp, i, b)
                if group is not None:
                    self.claimed.update(group[0])
                    found.append((fp, *group))
        return found

    def _try(self, fp: FusionPattern, i: int, b: rx.VarBinding) -> tuple[list[int], list] | None:
        m = match_expr(fp.pattern, b.value, self.bound)
        if m is None or not isinstance(fp.pattern, CallPattern):
            return None
        members = sorted(
            {i}
            | {
                self.index[e]
                for p, e in m.items()
                if isinstance(p, CallPattern) and e in self.index
            }
        )
        if self.claimed.intersection(members):
            return None
        inside = {self.block.bindings[k].var for k in members}
        for k in members[:-1]:  # an intermediate used outside would have to leave the group
            var = self.block.bindings[k].var
            if not isinstance(var, rx.DataflowVar) or set(self.users.get(var, ())) - inside:
                return None
        if members[-1] != i:
            return None
        inputs = self._inputs(m, inside)
        if fp.check is not None and not fp.check(self._context(fp, m, members)):
            return None
        return members, inputs

    def _inputs(self, m: dict, inside: set) -> list[rx.Expr]:
        """What the group reads from outside: vars (and constants unless bound), in order of
        first use. Every such value is a wildcard's match or part of one (a tuple's field)."""
        out: list[rx.Expr] = []
        for k in sorted(self.index[v] for v in inside):
            for arg in _leaf_args(self.block.bindings[k].value):
                is_input = isinstance(arg, rx.Var) or (
                    isinstance(arg, rx.Constant) and not self.bind_constants
                )
                if is_input and arg not in inside and arg not in out:
                    out.append(arg)
        return out

    def _context(self, fp: FusionPattern, m: dict, members: list[int]) -> PatternCheckContext:
        root = self.block.bindings[members[-1]]
        return PatternCheckContext(
            matched_expr=root.value,
            annotated_expr={k: m[p] for k, p in fp.annotation_patterns.items() if p in m},
            matched_bindings={
                self.block.bindings[k].var: self.block.bindings[k].value for k in members
            },
            var_usages=self.users,
            value_to_bound_var={id(b.value): b.var for b in self.block.bindings},
        )


def _leaf_args(value: rx.Expr) -> list[rx.Expr]:
    """The leaves a value reads, through tuples and calls nested in it (unnormalised IR)."""
    out: list[rx.Expr] = []
    stack = [value]
    while stack:
        e = stack.pop()
        if isinstance(e, rx.Call):
            stack.extend(reversed(e.args))
        elif isinstance(e, rx.Tuple):
            stack.extend(reversed(e.fields))
        elif e is not value:
            out.append(e)
    return out


def _op_names(bindings: list[rx.VarBinding]) -> str:
    return "_".join(b.value.op.name.replace(".", "_") for b in bindings)


def fuse_ops_by_pattern(
    mod: IRModule,
    patterns: Sequence[Any],
    bind_constants: bool = True,
    annotate_codegen: bool = False,
    entry_functions: Sequence[str] | None = None,
) -> IRModule:
    """Group each match of `patterns` (earlier wins) into a composite function; see the module
    docstring."""
    fps = [_as_fusion_pattern(p) for p in patterns]
    out = mod.copy()
    for gv, func in mod.functions_items():
        if not isinstance(func, rx.Function) or any(func.attrs.get(a) for a in _SKIP_ATTRS):
            continue
        if entry_functions and gv.name_hint not in entry_functions:
            continue
        blocks = []
        for block in func.body.blocks:
            if isinstance(block, rx.DataflowBlock):
                block = _fuse_block(block, fps, out, bind_constants, annotate_codegen)
            blocks.append(block)
        if any(a is not b for a, b in zip(blocks, func.body.blocks, strict=True)):
            out[gv] = func.replace(body=func.body.replace(blocks=tuple(blocks)))
    return out


def _fuse_block(block, fps, out: IRModule, bind_constants: bool, annotate: bool):
    found = _BlockMatcher(block, bind_constants).groups(fps)
    if not found:
        return block
    replace: dict[int, rx.VarBinding] = {}
    for fp, members, inputs in found:
        bindings = [block.bindings[k] for k in members]
        composite = _make_function(bindings, inputs, {"Composite": fp.name, "Primitive": 1})
        gv = GlobalVar(_fresh(out, f"fused_{_op_names(bindings)}"))
        out[gv] = composite
        callee = gv
        if annotate:
            call = [(gv, inputs, bindings[-1].var)]
            callee = _wrap_for_codegen(out, call, fp.name.split(".")[0], gv.name_hint)
        root = bindings[-1]
        replace[members[-1]] = rx.VarBinding(root.var, rx.Call(callee, tuple(inputs)))
        replace.update({k: None for k in members[:-1]})
    new = [replace.get(i, b) for i, b in enumerate(block.bindings)]
    return rx.DataflowBlock(tuple(b for b in new if b is not None))


def _wrap_for_codegen(out: IRModule, calls: list, codegen: str, base: str) -> GlobalVar:
    """A `Codegen=codegen` function running the composite calls `(gv, args, caller var)` in
    order (a later call may use an earlier one's var); its params are `_wrapper_args(calls)`."""
    bindings = [rx.VarBinding(var, rx.Call(gv, tuple(args))) for gv, args, var in calls]
    name = _fresh(out, base)
    func = _make_function(
        bindings, _wrapper_args(calls), {"Codegen": codegen, "global_symbol": name}
    )
    wrapper = GlobalVar(name)
    out[wrapper] = func
    return wrapper


def _wrapper_args(calls: list) -> list[rx.Expr]:
    defined = {var for _, _, var in calls}
    out: list[rx.Expr] = []
    for _, args, _ in calls:
        out += [a for a in args if a not in defined and a not in out]
    return out


def merge_composite_functions(mod: IRModule) -> IRModule:
    """Wrap runs of composite calls of one backend into `Codegen` functions; see the docstring."""
    out = mod.copy()
    for gv, func in mod.functions_items():
        if not isinstance(func, rx.Function) or any(func.attrs.get(a) for a in _SKIP_ATTRS):
            continue
        blocks = [
            _merge_block(b, mod, out) if isinstance(b, rx.DataflowBlock) else b
            for b in func.body.blocks
        ]
        if any(a is not b for a, b in zip(blocks, func.body.blocks, strict=True)):
            out[gv] = func.replace(body=func.body.replace(blocks=tuple(blocks)))
    return out


def _backend(mod: IRModule, value: rx.Expr) -> str | None:
    """The backend of a call of a composite function, else None."""
    if not (isinstance(value, rx.Call) and isinstance(value.op, GlobalVar)):
        return None
    callee = mod[value.op] if value.op in mod else None  # noqa: SIM401 (IRModule has no .get)
    name = callee.attrs.get("Composite") if isinstance(callee, rx.Function) else None
    return name.split(".")[0] if name else None


def _merge_block(block: rx.DataflowBlock, mod: IRModule, out: IRModule) -> rx.DataflowBlock:
    users = _users(block)
    runs: list[list[int]] = []
    for i, b in enumerate(block.bindings):
        backend = _backend(mod, b.value)
        if backend is None:
            continue
        prev = runs[-1] if runs else None
        if prev and prev[-1] == i - 1 and _backend(mod, block.bindings[prev[0]].value) == backend:
            prev.append(i)
        else:
            runs.append([i])
    runs = [_split_run(block, run, users) for run in runs]
    pieces = [piece for run in runs for piece in run]
    if not pieces:
        return block
    replace: dict[int, Any] = {}
    for piece in pieces:
        members = [block.bindings[k] for k in piece]
        calls = [(b.value.op, b.value.args, b.var) for b in members]
        backend = _backend(mod, members[0].value)
        base = "fused_" + "_".join(b.value.op.name_hint.removeprefix("fused_") for b in members)
        wrapper = _wrap_for_codegen(out, calls, backend, base)
        args = _wrapper_args(calls)
        replace[piece[-1]] = rx.VarBinding(members[-1].var, rx.Call(wrapper, tuple(args)))
        replace.update({k: None for k in piece[:-1]})
    new = [replace.get(i, b) for i, b in enumerate(block.bindings)]
    return rx.DataflowBlock(tuple(b for b in new if b is not None))


def _split_run(block: rx.DataflowBlock, run: list[int], users: dict) -> list[list[int]]:
    """Cut a run where a value is used after the run or outside the dataflow block."""
    pieces, cur = [], []
    for k in run:
        cur.append(k)
        var = block.bindings[k].var
        later = {block.bindings[j].var for j in run if j > k}
        if not isinstance(var, rx.DataflowVar) or set(users.get(var, ())) - later:
            pieces.append(cur)
            cur = []
    if cur:  # only reached when the run's last value is used nowhere: keep it anyway
        pieces.append(cur)
    return pieces


def FuseOpsByPattern(
    patterns: Sequence[Any],
    bind_constants: bool = True,
    annotate_codegen: bool = False,
    entry_functions: Sequence[str] | None = None,
) -> Pass:
    """Group matches of `patterns` into composite functions (relax/transform/fuse_ops_by_pattern.py)."""
    fps = [_as_fusion_pattern(p) for p in patterns]  # a bad entry is reported here
    return Pass(
        lambda mod: fuse_ops_by_pattern(
            mod, fps, bind_constants, annotate_codegen, entry_functions
        ),
        "FuseOpsByPattern",
    )


def MergeCompositeFunctions() -> Pass:
    """Wrap composite calls into `Codegen` functions per backend (fuse_ops_by_pattern.py)."""
    return Pass(merge_composite_functions, "MergeCompositeFunctions")


__all__ = [
    "FuseOpsByPattern",
    "FusionPattern",
    "MergeCompositeFunctions",
    "PatternCheckContext",
    "fuse_ops_by_pattern",
    "merge_composite_functions",
]
