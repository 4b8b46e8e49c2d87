"""Stage groups of the classic schedule: `s.create_group(outputs, inputs)` and a scan's body.

A group gathers the stages between `inputs` and `outputs`; `g.compute_at(s[C], axis)` computes
every member that is not placed elsewhere at that loop of C. Groups nest (a group made inside a
scan's body belongs to the scan's group), and a member may be computed only at a loop of a stage
of its own group or one nested in it: its values are needed only there.
"""

from __future__ import annotations

from typing import Any

from ..error import ScheduleError
from .tensor import Tensor


class Group:
    """A group of stages (`s.create_group(...)`); it has no operation of its own."""

    op = None

    def __init__(self, sch: Any, name: str, parent: Group | None) -> None:
        self._sch, self.name, self.group = sch, name, parent
        self.attach_stage: Any = None
        self.attach_ivar: Any = None
        self.num_child_stages = 0

    def compute_at(self, parent: Any, scope: Any) -> None:
        """Compute the group's stages at loop `scope` of stage `parent`."""
        if not any(scope is iv for iv in getattr(parent, "all_iter_vars", ())):
            raise ScheduleError(
                f"compute_at of group '{self.name}': the loop is not a loop of the stage given; "
                "pass a loop of that stage (e.g. s[C].op.axis[1])"
            )
        check_same_group(self, parent, f"compute_at of group '{self.name}'")
        self.attach_stage, self.attach_ivar = parent, scope

    def __repr__(self) -> str:
        return f"Group({self.name})"


def _within(inner: Any, outer: Group | None) -> bool:
    """True when `inner` (a group or None) is `outer` or nested inside it."""
    if outer is None:
        return True
    while inner is not None:
        if inner is outer:
            return True
        inner = inner.group
    return False


def check_same_group(member: Any, parent: Any, what: str) -> None:
    """A stage of a group may only be computed at a stage of that group (or nested in it)."""
    home = member.group
    if home is not None and not _within(parent.group, home):
        raise ScheduleError(
            f"{what}: stage '{parent.name}' is outside group '{home.name}', and the group's "
            "stages are computed only within it; attach to a stage of the group"
        )


def _member_ops(outputs: list, inputs: list, include_inputs: bool) -> list:
    """Operations on the paths from `inputs` to `outputs` (outputs included)."""
    stop = {id(t.op) for t in inputs}
    reaches: dict[int, bool] = {}
    found: list = []

    def visit(op: Any) -> bool:
        if id(op) in reaches:
            return reaches[id(op)]
        reaches[id(op)] = id(op) in stop
        if id(op) in stop:
            if include_inputs:
                found.append(op)
            return True
        hit = [visit(t.op) for t in op.input_tensors]
        reaches[id(op)] = any(hit) or not inputs
        if reaches[id(op)]:
            found.append(op)
        return reaches[id(op)]

    for t in outputs:
        visit(t.op)
    return found


def _as_tensors(x: Any) -> list:
    items = list(x) if isinstance(x, list | tuple) else [x]
    return [i if isinstance(i, Tensor) else i.output(0) for i in items]


def create_group(sch: Any, outputs: Any, inputs: Any, include_inputs: bool = False) -> Group:
    """A group of the stages between `inputs` and `outputs` (inputs too when asked)."""
    members = [
        sch.stage_map[id(op)]
        for op in _member_ops(_as_tensors(outputs), _as_tensors(inputs or []), include_inputs)
        if id(op) in sch.stage_map
    ]
    if not members:
        raise ScheduleError("create_group: no stage lies between the given inputs and outputs")
    parent = members[0].group  # the innermost group holding every member
    while not all(_within(st.group, parent) for st in members):
        parent = parent.group
    group = Group(sch, f"group{len(sch_groups(sch))}", parent)
    for st in members:
        if st.group is parent:
            st.group = group
            continue
        inner = st.group  # a group already inside `parent` moves inside the new one
        while inner.group is not parent:
            inner = inner.group
        inner.group = group
    group.num_child_stages = len(members)
    sch_groups(sch).append(group)
    return group


def sch_groups(sch: Any) -> list:
    """The schedule's groups (made on first use)."""
    if not hasattr(sch, "_groups"):
        sch._groups = []
    return sch._groups


def add_scan_groups(sch: Any) -> None:
    """Each scan's body stages form a group (TVM places them inside the scan's step loop)."""
    from .graph import CreateReadGraph

    for op in CreateReadGraph(list(sch.outputs)):
        if hasattr(op, "body_ops"):
            body = [sch.stage_map[id(b)] for b in op.body_ops() if id(b) in sch.stage_map]
            if not body:
                continue
            group = Group(sch, f"{op.name}.body", None)
            for member in body:
                member.group = group
            group.num_child_stages = len(body)
            sch_groups(sch).append(group)


def group_attachment(stage: Any) -> tuple[Any, Any] | None:
    """(parent stage, loop) where the innermost attached group of `stage` is computed."""
    group = stage.group
    while group is not None:
        if group.attach_stage is not None:
            return group.attach_stage, group.attach_ivar
        group = group.group
    return None
