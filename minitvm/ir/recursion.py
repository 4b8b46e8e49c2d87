"""Deep IR walks: raise Python's recursion limit, within what the C stack can take; or walk a
graph with an explicit stack (`post_order`) and need no deep recursion at all."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import Any, TypeVar

from ..error import ExpressionTooDeep

# IR is walked recursively, a few Python frames per level. Entry points that walk user IR
# (parse, print, lower, simplify, codegen) raise the interpreter's limit to this while they run.
# Not every frame stays off the C stack (hashing, node construction and dunder calls recurse in
# C), and a C-stack overflow is a segfault: structural_hash of a 20,000-level sum crashed the
# process with a limit of 200,000. 20,000 frames keeps every walk inside an 8 MB stack
# (about 5,000 levels); deeper IR ends in ExpressionTooDeep, a clean error.
DEEP_RECURSION_LIMIT = 20_000

_deep_lock = threading.Lock()
_deep_users = [0, 0]  # [active entry points, limit to restore when the last one leaves]


@contextmanager
def deep_recursion() -> Iterator[None]:
    """Allow deep recursion (DEEP_RECURSION_LIMIT frames) inside the `with` block."""
    with _deep_lock:
        if _deep_users[0] == 0:
            _deep_users[1] = sys.getrecursionlimit()
            if _deep_users[1] < DEEP_RECURSION_LIMIT:
                sys.setrecursionlimit(DEEP_RECURSION_LIMIT)
        _deep_users[0] += 1
    try:
        yield
    except RecursionError as err:
        if isinstance(err, ExpressionTooDeep):
            raise
        raise ExpressionTooDeep(
            f"the program nests expressions or statements more than minitvm can walk "
            f"({DEEP_RECURSION_LIMIT} Python frames); break a very long expression (such as a "
            "sum of thousands of terms) into intermediate tensors or a reduction"
        ) from err
    finally:
        with _deep_lock:
            _deep_users[0] -= 1
            if _deep_users[0] == 0:
                sys.setrecursionlimit(_deep_users[1])


def allows_deep_recursion(fn: Callable) -> Callable:
    """Decorator form of `deep_recursion` for entry points that walk IR."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with deep_recursion():
            return fn(*args, **kwargs)

    return wrapper


_N = TypeVar("_N")


def post_order(
    roots: Iterable[_N],
    children: Callable[[_N], Iterable[_N]],
    key: Callable[[_N], Hashable] = id,
) -> list[_N]:
    """The nodes reachable from `roots`, each after all of its children (producers before
    consumers), the first child explored first; a node `key` has seen is listed once. Iterative,
    so a chain of thousands of operations needs no deep recursion."""
    order: list[_N] = []
    seen: set[Hashable] = set()
    for root in roots:
        stack = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
                continue
            if key(node) in seen:
                continue
            seen.add(key(node))
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(list(children(node))))
    return order
