"""FuseOps: group op calls into functions marked `Primitive=1`, each called once in place.

Each op's fusion pattern is its relax form's (the relax op table's OpPattern), so Relay and
relax fuse alike. Calls are visited consumers first; a call joins the group of its users when
all its users are in that one group and the rule below allows it, so every group computes a
single value used outside it and no path leaves a group and comes back:

  * elementwise, broadcast and injective calls join a group when the members using them are
    elementwise, broadcast, injective or reductions (never a conv2d/dense/pool, which reads
    its input many times);
  * an anchor (OUT_EWISE_FUSABLE: conv2d, dense, pooling; or a reduction) joins a group with
    no anchor when every member its value flows into is elementwise or broadcast (its
    epilogue; side inputs of the epilogue may be computed in the group too);
  * opaque calls stay alone. fuse_opt_level 0 puts every call in a group of its own.

Tensor constants become parameters of the fused function (as TVM does); scalars stay inline.
"""

from __future__ import annotations

from typing import Any

from ...ir.transform import PassContext
from ...relax import expr as rx
from ...relax.op._table import OpPattern
from ..analysis import dataflow_operands
from ..expr import Call, Constant, Expr, Function, Op, Var
from ..expr_functor import ExprMutator
from ..type_infer import infer_type, to_struct_info

MAX_FUSE_DEPTH = 256  # calls per group; PassContext config "relay.FuseOps.max_depth" overrides

_EPILOGUE = (OpPattern.ELEMWISE, OpPattern.BROADCAST)
_ANCHORS = (OpPattern.OUT_EWISE_FUSABLE, OpPattern.COMM_REDUCE)

_PATTERN_CACHE: dict[tuple, tuple] = {}


def op_pattern(call: Call) -> tuple[OpPattern, tuple[OpPattern, ...]]:
    """The fusion pattern of a Relay op call, from its relax form: the most restrictive of
    all its relax calls, and per argument the most restrictive on that argument's paths
    (bias_add reshapes its bias, an injective step, but is a broadcast for its data)."""
    arg_types = [a.checked_type for a in call.args]
    key = (call.op.name, call.attrs, tuple(arg_types))
    cached = _PATTERN_CACHE.get(key)
    if cached is not None:
        return cached
    params = [rx.Var(f"arg{i}", to_struct_info(t)) for i, t in enumerate(arg_types)]
    out = call.op.op_def.to_relax(lambda value: value, params, call.attrs)
    calls: list[tuple[OpPattern, frozenset]] = []
    _relax_deps(out, {id(p): i for i, p in enumerate(params)}, {}, calls)
    node = max((pat for pat, _ in calls), default=OpPattern.ELEMWISE)  # none: an alias
    per_arg = tuple(
        max((pat for pat, deps in calls if i in deps), default=OpPattern.ELEMWISE)
        for i in range(len(params))
    )
    if len(_PATTERN_CACHE) > 4096:
        _PATTERN_CACHE.clear()
    _PATTERN_CACHE[key] = (OpPattern(node), per_arg)
    return _PATTERN_CACHE[key]


def _relax_deps(e: Any, index: dict, memo: dict, calls: list) -> frozenset:
    """The argument indices relax expression `e` depends on; appends (pattern, deps) of each
    relax call in it to `calls`."""
    if id(e) in memo:
        return memo[id(e)]
    if id(e) in index:
        deps = frozenset([index[id(e)]])
    elif isinstance(e, rx.Call):
        deps = frozenset().union(*(_relax_deps(a, index, memo, calls) for a in e.args))
        op_def = getattr(e.op, "op_def", None)
        calls.append((op_def.pattern if op_def is not None else OpPattern.OPAQUE, deps))
    elif isinstance(e, rx.Tuple):
        deps = frozenset().union(*(_relax_deps(f, index, memo, calls) for f in e.fields))
    elif isinstance(e, rx.TupleGetItem):
        deps = _relax_deps(e.tuple_value, index, memo, calls)
    else:
        deps = frozenset()
    memo[id(e)] = deps
    return deps


class _Group:
    __slots__ = ("anchor", "members", "patterns")

    def __init__(self) -> None:
        self.members: list[Call] = []
        self.anchor: OpPattern | None = None
        self.patterns: set[OpPattern] = set()

    def add(self, call: Call, pattern: OpPattern) -> None:
        self.members.append(call)
        self.patterns.add(pattern)
        if pattern in _ANCHORS:
            self.anchor = pattern


def _may_join(
    pattern: OpPattern, group: _Group, consumers: list, downstream: list, max_depth: int
) -> bool:
    """Whether a call of `pattern` may join `group`: `consumers` are the patterns with which
    its users read it, `downstream` those of every edge its value flows along in the group."""
    if len(group.members) >= max_depth or OpPattern.OPAQUE in group.patterns:
        return False
    if pattern <= OpPattern.INJECTIVE:
        # an input of a conv/dense/pool is read many times: it is not computed inside one
        return all(
            c <= OpPattern.COMM_REDUCE and c != OpPattern.OUT_EWISE_FUSABLE for c in consumers
        )
    if pattern in _ANCHORS:
        return group.anchor is None and all(d in _EPILOGUE for d in downstream)
    return False


def _partition(body: Expr, level: int, max_depth: int) -> dict[Call, _Group]:
    """The group of every op call in `body` (calls inside nested functions excluded)."""
    order: list[Call] = []
    users: dict[Call, list[Any]] = {}

    def collect(e: Any) -> None:
        if isinstance(e, Call) and isinstance(e.op, Op):
            order.append(e)
            users.setdefault(e, [])
        for child in dataflow_operands(e):
            if isinstance(child, Call) and isinstance(child.op, Op):
                users.setdefault(child, []).append(e)

    _post_order(body, collect)
    group_of: dict[Call, _Group] = {}
    patterns = {c: op_pattern(c) for c in order}
    pattern_of = {c: node for c, (node, _) in patterns.items()}
    edge = {c: per_arg for c, (_, per_arg) in patterns.items()}
    for call in reversed(order):  # consumers before producers
        group = _join_target(call, users, group_of, pattern_of, edge, (level, max_depth), body)
        if group is None:
            group = _Group()
        group.add(call, pattern_of[call])
        group_of[call] = group
    return group_of


def _edge_patterns(producer: Call, user: Call, edge: dict) -> list[OpPattern]:
    """How `user` treats `producer`'s value: the pattern of each argument it is passed as."""
    return [edge[user][i] for i, a in enumerate(user.args) if a is producer]


def _downstream(call: Call, users: dict, group: _Group, edge: dict) -> list[OpPattern]:
    """The patterns of every edge `call`'s value flows along inside `group`."""
    root, out, seen = group.members[0], [], set()
    stack = [(call, u) for u in users[call]]
    while stack:
        producer, u = stack.pop()
        out += _edge_patterns(producer, u, edge)
        if id(u) not in seen:
            seen.add(id(u))
            if u is not root:
                stack.extend((u, w) for w in users[u])
    return out


def _join_target(call, users, group_of, pattern_of, edge, limits, body) -> _Group | None:
    (level, max_depth), call_users = limits, users[call]
    if level < 1 or call is body or not call_users:
        return None
    if not all(isinstance(u, Call) and u in group_of for u in call_users):
        return None  # used by a tuple, a projection, a function call or a nested function
    groups = {id(group_of[u]): group_of[u] for u in call_users}
    if len(groups) != 1:
        return None
    (group,) = groups.values()
    consumers = [p for u in call_users for p in _edge_patterns(call, u, edge)]
    downstream = []
    if pattern_of[call] in _ANCHORS:
        downstream = _downstream(call, users, group, edge)
    ok = _may_join(pattern_of[call], group, consumers, downstream, max_depth)
    return group if ok else None


def _post_order(body: Expr, fvisit: Any) -> None:
    """fvisit on each node of `body`, operands first, each once, not entering functions."""
    seen: set[int] = set()
    stack: list[tuple[Any, bool]] = [(body, False)]
    while stack:
        e, expanded = stack.pop()
        if expanded:
            fvisit(e)
            continue
        if id(e) in seen:
            continue
        seen.add(id(e))
        stack.append((e, True))
        stack.extend((c, False) for c in reversed(dataflow_operands(e)) if id(c) not in seen)




class _Fuser(ExprMutator):
    """Replaces each group's root call by a call of the group's Primitive function."""

    def __init__(self, group_of: dict[Call, _Group]) -> None:
        super().__init__()
        self.group_of = group_of

    def visit_function(self, func: Function) -> Expr:
        return func  # nested functions are fused by their own pass over them

    def visit_call(self, call: Call) -> Expr:
        group = self.group_of.get(call)
        if group is None:
            return super().visit_call(call)
        root = group.members[0]  # the first member added is the one used outside
        assert call is root, "a group member reached from outside its group"
        return self._outline(group)

    def _outline(self, group: _Group) -> Expr:
        members = set(group.members)
        params: list[Var] = []
        args: list[Expr] = []
        inputs: dict[Any, Var] = {}

        def param_for(e: Any) -> Expr:
            if isinstance(e, Constant) and e.data.numpy().ndim == 0:
                return e
            if e not in inputs:
                p = Var(f"p{len(params)}", e.checked_type)
                inputs[e] = p
                params.append(p)
                args.append(self.visit(e))
            return inputs[e]

        rebuilt: dict[Call, Call] = {}
        for call in reversed(group.members):  # producers first
            new_args = [rebuilt[a] if a in members else param_for(a) for a in call.args]
            rebuilt[call] = Call(call.op, new_args, call.attrs, call.type_args)
        root = group.members[0]
        func = Function(params, rebuilt[root], root.checked_type).with_attr("Primitive", 1)
        return Call(func, args)


def fuse_ops(func: Function, fuse_opt_level: int = -1) -> Function:
    """`func` with its op calls grouped into Primitive functions (see the module docstring)."""
    ctx = PassContext.current()
    level = ctx.opt_level if fuse_opt_level == -1 else fuse_opt_level
    max_depth = int(ctx.config.get("relay.FuseOps.max_depth", MAX_FUSE_DEPTH))
    if func.attrs.get("Primitive"):
        return func
    infer_type(func)
    group_of = _partition(func.body, level, max_depth)
    body = _Fuser(group_of).visit(func.body)
    return func if body is func.body else func.replace(body=body)
