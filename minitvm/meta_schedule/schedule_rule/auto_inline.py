"""AutoInline: inline elementwise blocks that write intermediates into their consumers."""

from __future__ import annotations

from ...error import ScheduleError
from ...tir.schedule import BlockRV, Schedule
from ._block import func_of, is_root, is_spatial, realize_of, writes_output
from .schedule_rule import ScheduleRule


class AutoInline(ScheduleRule):
    """compute_inline a spatial block writing an intermediate (into_consumer), and optionally
    reverse_compute_inline an elementwise output block into its producer (into_producer)."""

    def __init__(
        self,
        into_producer: bool = False,
        into_consumer: bool = True,
        inline_const_tensor: bool = True,
        disallow_if_then_else: bool = False,
        require_injective: bool = True,
        require_ordered: bool = True,
        disallow_op: list | None = None,
    ) -> None:
        self.into_producer = into_producer
        self.into_consumer = into_consumer
        self.inline_const_tensor = inline_const_tensor
        self.disallow_if_then_else = disallow_if_then_else
        self.require_injective = require_injective
        self.require_ordered = require_ordered
        self.disallow_op = list(disallow_op or [])

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        _, func = func_of(sch)
        block_node = sch.get(block)
        if is_root(func, block_node.name_hint) or not is_spatial(block_node):
            return [sch]
        if self._calls_disallowed(realize_of(sch, block).block):
            return [sch]
        # the primitives check legality (one consumer per element, no cycles...) and refuse
        # without changing the schedule, so trying is the check
        if self.into_consumer and not writes_output(func, block_node):
            try:
                sch.compute_inline(block)
                return [sch]
            except ScheduleError:
                pass
        if self.into_producer:
            try:
                sch.reverse_compute_inline(block)
            except ScheduleError:
                pass
        return [sch]

    def _calls_disallowed(self, block) -> bool:
        if not self.disallow_op:
            return False
        from ...tir.expr import Call
        from ...tir.functor import post_order_visit

        names = {str(getattr(op, "name", op)) for op in self.disallow_op}
        found: list = []
        post_order_visit(
            block.body,
            lambda n: (
                found.append(n)
                if isinstance(n, Call) and getattr(n.op, "name", None) in names
                else None
            ),
        )
        return bool(found)


class InlineConstantScalars(ScheduleRule):
    """compute_inline a block that reads nothing and writes one 0-d intermediate (a constant
    scalar, e.g. a quantisation zero point), so later inlining sees one buffer per consumer."""

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        _, func = func_of(sch)
        node = realize_of(sch, block).block
        scalar = not node.reads and len(node.writes) == 1 and not node.writes[0].buffer.shape
        if scalar and not is_root(func, node.name_hint) and not writes_output(func, node):
            sch.compute_inline(block)
        return [sch]
