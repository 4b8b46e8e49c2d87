"""FuseOps: group op calls into functions marked `Primitive=1`, each called once in place.

Each op's fusion pattern is its relax form's (the relax op table's OpPattern), so Relay and
relax fuse alike. Calls are visited consumers first; a call joins the group of its users when
all its users are in that one group and the rule below allows it, so every group computes a
single value used outside it and no path leaves a group and comes back:

  * elementwise, broadcast and injective calls join a group when the members using them are
    elementwise, broadcast, injective or reductions (never a conv2d/dense/pool, which reads
    its input many times);
  * an anchor (OUT_EWISE_FUSABLE: conv2d, dense, pooling; or a reduction) joins a group made
    only of elementwise and broadcast calls: its epilogue;
  * opaque calls stay alone. fuse_opt_level 0 puts every call in a group of its own.

Tensor constants become parameters of the fused function (as TVM does); scalars stay inline.
"""

from __future__ import annotations

from typing import Any

from ...ir.transform import PassContext
from ...relax import expr as rx
from ...relax.op._table import OpPattern
from ..expr import Call, Constant, Expr, Function, Op, Tuple, TupleGetItem, Var
from ..expr_functor import ExprMutator
from ..type_infer import infer_type, to_struct_info

MAX_FUSE_DEPTH = 256  # calls per group, as TVM's relay.FuseOps.max_depth default

_EPILOGUE = (OpPattern.ELEMWISE, OpPattern.BROADCAST)
_ANCHORS = (OpPattern.OUT_EWISE_FUSABLE, OpPattern.COMM_REDUCE)

_PATTERN_CACHE: dict[tuple, OpPattern] = {}


def op_pattern(call: Call) -> OpPattern:
    """The fusion pattern of a Relay op call: the most restrictive of its relax calls'."""
    arg_types = [a.checked_type for a in call.args]
    key = (call.op.name, call.attrs, tuple(arg_types))
    cached = _PATTERN_CACHE.get(key)
    if cached is not None:
        return cached
    made: list[Any] = []

    def emit(value: Any) -> Any:
        made.append(value)
        return value

    params = [rx.Var(f"arg{i}", to_struct_info(t)) for i, t in enumerate(arg_types)]
    made.append(call.op.op_def.to_relax(emit, params, call.attrs))
    calls = [c for m in made for c in _relax_calls(m)]
    patterns = [
        c.op.op_def.pattern if getattr(c.op, "op_def", None) is not None else OpPattern.OPAQUE
        for c in calls
    ]
    pattern = max(patterns, default=OpPattern.ELEMWISE)  # no relax call: an alias (copy)
    if len(_PATTERN_CACHE) > 4096:
        _PATTERN_CACHE.clear()
    _PATTERN_CACHE[key] = OpPattern(pattern)
    return OpPattern(pattern)


def _relax_calls(e: Any) -> list:
    if isinstance(e, rx.Call):
        return [e]
    if isinstance(e, rx.Tuple):
        return [c for f in e.fields for c in _relax_calls(f)]
    return []


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


def _may_join(pattern: OpPattern, group: _Group, consumers: list[OpPattern]) -> bool:
    """Whether a call of `pattern` may join `group`, whose members `consumers` use it."""
    if len(group.members) >= MAX_FUSE_DEPTH or OpPattern.OPAQUE in group.patterns:
        return False
    if pattern <= OpPattern.INJECTIVE:
        # an input of a conv/dense/pool is read many times: it is not computed inside one
        return all(
            c <= OpPattern.COMM_REDUCE and c != OpPattern.OUT_EWISE_FUSABLE for c in consumers
        )
    if pattern in _ANCHORS:
        return group.anchor is None and group.patterns <= set(_EPILOGUE)
    return False


def _partition(body: Expr, level: int) -> dict[Call, _Group]:
    """The group of every op call in `body` (calls inside nested functions excluded)."""
    order: list[Call] = []
    users: dict[Call, list[Any]] = {}

    def collect(e: Any) -> None:
        if isinstance(e, Call) and isinstance(e.op, Op):
            order.append(e)
            users.setdefault(e, [])
        for child in _children(e):
            if isinstance(child, Call) and isinstance(child.op, Op):
                users.setdefault(child, []).append(e)

    _post_order(body, collect)
    group_of: dict[Call, _Group] = {}
    pattern_of = {c: op_pattern(c) for c in order}
    for call in reversed(order):  # consumers before producers
        group = _join_target(call, users[call], group_of, pattern_of, level, body)
        if group is None:
            group = _Group()
        group.add(call, pattern_of[call])
        group_of[call] = group
    return group_of


def _join_target(call, call_users, group_of, pattern_of, level, body) -> _Group | None:
    if level < 1 or call is body or not call_users:
        return None
    if not all(isinstance(u, Call) and u in group_of for u in call_users):
        return None  # used by a tuple, a projection, a function call or a nested function
    groups = {id(group_of[u]): group_of[u] for u in call_users}
    if len(groups) != 1:
        return None
    (group,) = groups.values()
    consumers = [pattern_of[u] for u in call_users]
    return group if _may_join(pattern_of[call], group, consumers) else None


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
        stack.extend((c, False) for c in reversed(_children(e)) if id(c) not in seen)


def _children(e: Any) -> tuple:
    if isinstance(e, Call):
        return e.args
    if isinstance(e, Tuple):
        return e.fields
    if isinstance(e, TupleGetItem):
        return (e.tuple_value,)
    return ()


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
    level = PassContext.current().opt_level if fuse_opt_level == -1 else fuse_opt_level
    if func.attrs.get("Primitive"):
        return func
    infer_type(func)
    group_of = _partition(func.body, level)
    body = _Fuser(group_of).visit(func.body)
    return func if body is func.body else func.replace(body=body)
