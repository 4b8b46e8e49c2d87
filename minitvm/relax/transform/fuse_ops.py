"""FuseOps: group `call_tir` bindings of each dataflow block into primitive relax functions.

Run after LegalizeOps and AnnotateTIROpPattern (a PrimFunc without `op_pattern` is opaque).
Grouping is post-dominator based, as in TVM: a node is fused with its immediate post-dominator
`d` (the first node every use of it flows through) together with every node on the paths
between them, so each group has exactly one output and nothing leaves it half-way. Rules:

  phase 0  a matmul/conv (out-ewise) or reduce group takes `d` when every node on the paths,
           `d` included, is elementwise/broadcast (its epilogue: `matmul → add → relu`);
  phase 1  an elementwise/broadcast/injective group joins `d` when the nodes in between are at
           most injective; `d` may be a reduction (injective prologues fuse into it).

A group never holds two reductions. Each group of two or more calls becomes a relax Function
with attr `Primitive=1` named `fused_<callee names>`, called from the original function.
"""

from __future__ import annotations

from typing import Any

from ...error import MiniTVMError
from ...ir.module import GlobalVar, IRModule
from ...ir.transform import PassContext
from ...tir.expr import Var as TirVar
from ...tir.function import PrimFunc
from ...tir.functor import post_order_visit
from .. import expr as rx
from ..functor import ExprMutator, used_vars
from ..op._table import OpPattern
from ..struct_info import ShapeStructInfo, TensorStructInfo
from .annotate_op_pattern import OP_PATTERN_ATTR
from .fuse_scalars import ScalarMemo, inlinable_scalars
from .fuse_tir import call_dims

MAX_GROUP_SIZE = 256  # as TVM's max_fuse_depth
_SINK = -1  # the virtual consumer of every value used outside its dataflow block
_ANCHORS = (OpPattern.OUT_EWISE_FUSABLE, OpPattern.COMM_REDUCE)


def _callee(mod: IRModule, value: rx.Expr) -> tuple[GlobalVar, PrimFunc] | None:
    """The PrimFunc of a fusable `call_tir` (one tensor output, leaf arguments, dims provably
    consistent)."""
    if not (isinstance(value, rx.Call) and getattr(value.op, "name", None) == "relax.call_tir"):
        return None
    gv, args = value.args[:2]
    if not isinstance(value.sinfo_args[0], TensorStructInfo):
        return None
    if not (isinstance(args, rx.Tuple) and all(rx.is_leaf(a) for a in args.fields)):
        return None  # a nested call (the parser keeps `R.add(R.exp(y), x)`) is no graph node
    func = mod[gv] if isinstance(gv, GlobalVar) and gv in mod else None
    if not isinstance(func, PrimFunc) or not _dims_agree(func, value):
        return None
    return gv, func


def _dims_agree(func: PrimFunc, call: rx.Call) -> bool:
    """Whether the callee's buffer dims provably equal the call's tensors' (given its
    tir_vars); a call that fails stays alone, where the VM checks its shapes at run time."""
    sinfos = [a.struct_info for a in call.args[1].fields] + [call.sinfo_args[0]]
    shapes = [getattr(s, "shape", None) for s in sinfos]
    if any(not isinstance(s, tuple) for s in shapes):
        return True  # FuseTIR names the tensor whose shape is unknown
    tir_vars = call.args[2].values if len(call.args) > 2 else ()
    try:
        call_dims(func, shapes, tir_vars, func.attrs.get("global_symbol", "call_tir"))
    except MiniTVMError:
        return False
    return True


class _Graph:
    """The dataflow graph of one block: nodes are bindings, edges producer → consumer."""

    def __init__(self, mod: IRModule, block: rx.DataflowBlock):
        self.bindings = list(block.bindings)
        index = {b.var: i for i, b in enumerate(self.bindings)}
        n = len(self.bindings)
        self.pattern: list[OpPattern] = []
        self.consumers: list[list[int]] = [[] for _ in range(n)]
        for i, b in enumerate(self.bindings):
            found = _callee(mod, b.value) if isinstance(b, rx.VarBinding) else None
            attr = found[1].attrs.get(OP_PATTERN_ATTR) if found else None
            self.pattern.append(OpPattern(attr) if attr is not None else OpPattern.OPAQUE)
            for j in sorted({index[v] for v in used_vars(b.value) if v in index}):
                self.consumers[j].append(i)
        # a non-dataflow var is visible after the block: its value escapes
        self.escapes = [not isinstance(b.var, rx.DataflowVar) for b in self.bindings]
        self._post_dominators()

    def _post_dominators(self) -> None:
        n = len(self.bindings)
        self.ipdom = [_SINK] * n
        depth = {_SINK: 0}

        def lca(a: int, b: int) -> int:
            while a != b:
                if depth[a] < depth[b]:
                    a, b = b, a
                a = self.ipdom[a]  # the deeper one moves up; both end at _SINK (depth 0)
            return a

        for i in reversed(range(n)):
            targets = list(self.consumers[i]) + ([_SINK] if self.escapes[i] else [])
            d = targets[0] if targets else _SINK
            for t in targets[1:]:
                d = lca(d, t)
            self.ipdom[i] = d
            depth[i] = depth[d] + 1

    def path_to(self, start: int, dom: int) -> list[int]:
        """Every node on a path from `start` to its post-dominator `dom` (`dom` included)."""
        seen, stack = {dom}, [start]
        while stack:
            for c in self.consumers[stack.pop()]:
                if c not in seen:
                    seen.add(c)
                    stack.append(c)
        return sorted(seen)


class _Groups:
    """Union-find over graph nodes; each root keeps its group's pattern and size."""

    def __init__(self, graph: _Graph):
        n = len(graph.bindings)
        self.parent = list(range(n))
        self.pattern = list(graph.pattern)
        self.size = [1] * n

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def merge_all(self, nodes: list[int]) -> None:
        roots = sorted({self.find(i) for i in nodes})
        top = roots[-1]
        for r in roots[:-1]:
            self.parent[r] = top
            self.pattern[top] = max(self.pattern[top], self.pattern[r])
            self.size[top] += self.size[r]


def _try_fuse(graph: _Graph, groups: _Groups, i: int, phase: int) -> None:
    d = graph.ipdom[i]
    gi = groups.find(i)
    if d == _SINK or groups.find(d) == gi:
        return
    path = graph.path_to(i, d)
    if any(graph.pattern[p] == OpPattern.OPAQUE for p in path):
        return
    others = {groups.find(p) for p in path} - {gi}
    if groups.size[gi] + sum(groups.size[g] for g in others) > MAX_GROUP_SIZE:
        return
    mine = groups.pattern[gi]
    if phase == 0:
        ok = (
            mine in _ANCHORS
            and all(graph.pattern[p] <= OpPattern.BROADCAST for p in path)
            and all(groups.pattern[g] <= OpPattern.INJECTIVE for g in others)
        )
    else:
        sink_group = groups.find(d)
        ok = (
            mine <= OpPattern.INJECTIVE
            and all(groups.pattern[g] <= OpPattern.INJECTIVE for g in others if g != sink_group)
            and groups.pattern[sink_group] <= OpPattern.OUT_EWISE_FUSABLE
        )
    if ok:
        groups.merge_all([i, *path])


def partition(mod: IRModule, block: rx.DataflowBlock) -> list[list[int]]:
    """The groups (binding indices, in order) of a dataflow block with two or more members."""
    graph = _Graph(mod, block)
    groups = _Groups(graph)
    for phase in (0, 1):
        for i in range(len(graph.bindings)):
            if graph.pattern[i] != OpPattern.OPAQUE:
                _try_fuse(graph, groups, i, phase)
    members: dict[int, list[int]] = {}
    for i in range(len(graph.bindings)):
        members.setdefault(groups.find(i), []).append(i)
    return [m for m in members.values() if len(m) > 1]


class _Remap(ExprMutator):
    """Replace vars and constants (by identity) inside a call's arguments."""

    def __init__(self, table: dict[int, rx.Expr]):
        super().__init__()
        self.table = table

    def visit_expr(self, e):
        hit = self.table.get(id(e))
        return hit if hit is not None else super().visit_expr(e)


def _group_inputs(mod: IRModule, bindings: list[rx.VarBinding], memo: ScalarMemo) -> list[rx.Expr]:
    """Vars defined outside the group and constants, in order of first use; a scalar constant
    that its callee only reads as a value stays inside (FuseTIR makes it an immediate)."""
    defined = {b.var for b in bindings}
    out: list[rx.Expr] = []
    seen: set[int] = set()
    for b in bindings:
        gv, args = b.value.args[:2]
        inline = inlinable_scalars(mod[gv], args.fields, memo)
        for k, arg in enumerate(args.fields):
            if k in inline:
                continue
            if isinstance(arg, rx.Constant | rx.Var) and arg not in defined and id(arg) not in seen:
                seen.add(id(arg))
                out.append(arg)
    return out


def _fresh_name(mod: IRModule, taken: set[str], base: str) -> str:
    name, n = base, 1
    while name in mod or name in taken:
        name, n = f"{base}{n}", n + 1
    taken.add(name)
    return name


def _make_group_function(
    mod: IRModule, bindings: list[rx.VarBinding], memo: ScalarMemo
) -> tuple[rx.Function, list[rx.Expr]]:
    """The primitive Function computing `bindings` and the arguments to call it with."""
    inputs = _group_inputs(mod, bindings, memo)
    table: dict[int, rx.Expr] = {}
    params = []
    for k, e in enumerate(inputs):
        name = e.name_hint if isinstance(e, rx.Var) else f"const{k}"
        params.append(rx.Var(name, e.struct_info))
        table[id(e)] = params[-1]
    body = []
    for n, b in enumerate(bindings):
        last = n == len(bindings) - 1
        var = (rx.Var if last else rx.DataflowVar)(b.var.name_hint, b.var.struct_info)
        body.append(rx.VarBinding(var, _Remap(table).visit_expr(b.value)))
        table[id(b.var)] = var
    out = body[-1].var
    # symbolic ints the members' tir_vars use that no tensor param has as a plain dim come in
    # through one shape param, so the primitive function defines every var it uses
    extra = _unbound_tir_vars(params, bindings)
    if extra:
        params.append(rx.Var("tir_vars", ShapeStructInfo(tuple(extra))))
        inputs = [*inputs, rx.ShapeExpr(tuple(extra))]
    func = rx.Function(
        tuple(params),
        rx.SeqExpr((rx.DataflowBlock(tuple(body)),), out),
        out.struct_info,
        {"Primitive": 1},
    )
    return func, inputs


def _unbound_tir_vars(params: list[rx.Var], bindings: list[rx.VarBinding]) -> list[TirVar]:
    """Vars of the members' tir_vars and shapes that no param's shape holds as a plain dim."""
    plain = {
        id(d)
        for p in params
        if isinstance(p.struct_info, TensorStructInfo)
        for d in (p.struct_info.shape or ())
        if isinstance(d, TirVar)
    }
    found: dict[int, TirVar] = {}
    for b in bindings:
        exprs = [*b.value.args[2:], b.var.struct_info]
        for v in (v for e in exprs for v in _tir_vars_in(e)):
            if id(v) not in plain:
                found.setdefault(id(v), v)
    for p in params:
        for v in _tir_vars_in(p.struct_info):
            if id(v) not in plain:
                found.setdefault(id(v), v)
    return list(found.values())


def _tir_vars_in(node: Any) -> list[TirVar]:
    seen: list[TirVar] = []
    post_order_visit(node, lambda n: seen.append(n) if isinstance(n, TirVar) else None)
    return seen


def _users(block: rx.DataflowBlock) -> dict[int, set[int]]:
    """id(var) -> the positions of the bindings of `block` that use it (one walk per binding;
    checking each group against every binding made FuseOps quadratic in the block's size)."""
    users: dict[int, set[int]] = {}
    for k, b in enumerate(block.bindings):
        for v in used_vars(b.value):
            users.setdefault(id(v), set()).add(k)
    return users


def _check_single_output(block: rx.DataflowBlock, group: list[int], users: dict) -> None:
    """Only the group's last binding (its post-dominator) may be used outside the group."""
    inside = set(group)
    sink = block.bindings[group[-1]].var
    for i in group[:-1]:
        var = block.bindings[i].var
        used_outside = not isinstance(var, rx.DataflowVar) or bool(
            users.get(id(var), set()) - inside
        )
        assert not used_outside, (
            f"FuseOps internal error: '{var.name_hint}' is used outside the group ending in "
            f"'{sink.name_hint}'"
        )


class _Fuser(ExprMutator):
    def __init__(self, mod: IRModule, out: IRModule, taken: set[str], memo: ScalarMemo):
        super().__init__()
        self.mod, self.out, self.taken, self.memo = mod, out, taken, memo

    def visit_block(self, block):
        if not isinstance(block, rx.DataflowBlock):
            return block
        groups = partition(self.mod, block)
        if not groups:
            return block
        replace: dict[int, rx.VarBinding] = {}
        dropped: set[int] = set()
        users = _users(block)
        for group in groups:
            _check_single_output(block, group, users)
            bindings = [block.bindings[i] for i in group]
            func, args = _make_group_function(self.mod, bindings, self.memo)
            names = "_".join(b.value.args[0].name_hint.rstrip("0123456789") for b in bindings)
            gv = GlobalVar(_fresh_name(self.out, self.taken, f"fused_{names}"))
            self.out[gv] = func
            sink = bindings[-1]
            replace[group[-1]] = rx.VarBinding(sink.var, rx.Call(gv, tuple(args)))
            dropped.update(group[:-1])
        new = [replace.get(i, b) for i, b in enumerate(block.bindings) if i not in dropped]
        return rx.DataflowBlock(tuple(new))


def fuse_ops(mod: IRModule, fuse_opt_level: int = -1) -> IRModule:
    """Fuse call_tir chains of every relax Function (not already primitive) into primitive
    Functions; `fuse_opt_level` -1 takes the PassContext's opt_level, below 1 fuses nothing."""
    level = PassContext.current().opt_level if fuse_opt_level == -1 else fuse_opt_level
    if level < 1:
        return mod
    out = mod.copy()
    taken: set[str] = set()
    memo = ScalarMemo()  # one shared kernel is called with the same constant from many groups
    for gv, func in mod.functions_items():
        if isinstance(func, rx.Function) and not func.attrs.get("Primitive"):
            new = _Fuser(mod, out, taken, memo).visit_function(func)
            if new is not func:
                out[gv] = new
    return out


__all__ = ["MAX_GROUP_SIZE", "fuse_ops", "partition"]
