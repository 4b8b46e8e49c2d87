"""Tag names of the operator library (`topi.tag.ELEMWISE`, ...), the categories schedules test.

A tag may be composed ("injective,pad"); the generic category comes first.
"""

from __future__ import annotations

ELEMWISE = "elemwise"
BROADCAST = "broadcast"
INJECTIVE = "injective"
COMM_REDUCE = "comm_reduce"
COMM_REDUCE_IDX = "comm_reduce_idx"

# each category also counts as every broader one: elementwise is a broadcast is injective
_WITHIN = {
    ELEMWISE: (ELEMWISE,),
    BROADCAST: (ELEMWISE, BROADCAST),
    INJECTIVE: (ELEMWISE, BROADCAST, INJECTIVE),
}


def _category(tag: str) -> str:
    return tag.split(",", 1)[0]


def is_broadcast(tag: str) -> bool:
    """Whether `tag` names an elementwise or broadcast operator."""
    return _category(tag) in _WITHIN[BROADCAST]


def is_injective(tag: str) -> bool:
    """Whether `tag` names an elementwise, broadcast or injective operator."""
    return _category(tag) in _WITHIN[INJECTIVE]


__all__ = [
    "BROADCAST", "COMM_REDUCE", "COMM_REDUCE_IDX", "ELEMWISE", "INJECTIVE", "is_broadcast",
    "is_injective",
]  # fmt: skip
