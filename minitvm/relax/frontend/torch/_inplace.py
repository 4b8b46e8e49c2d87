"""In-place torch ops: which operand a call overwrites, and whether the importers may apply it.

The importers functionalize a call that writes its first operand: its result becomes the
operand's value for every later use and for the outputs. That is exact unless another tensor
shares the operand's memory and is read after the write (a view taken before it, or the base
the operand is a view of); such calls are refused with OpNotImplemented, never imported with
their effect dropped.

Two kinds of edge link fx nodes that share memory: a view edge (`y = x.view(...)`: y and x
overlap) and an identity edge (`y = x.add_(1)`: y *is* x). Writing a node rebinds the nodes
tied to it by identity edges; every other node tied to it, made before the write and read
after it, makes the write unfaithful.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...expr import Expr
from ...struct_info import TensorStructInfo

# Tensor methods and torch functions that may return a view of, or the very tensor of, their
# first operand (conservative: reshape, contiguous and the casts alias only sometimes).
FX_VIEWS = frozenset(
    {
        "view",
        "view_as",
        "reshape",
        "reshape_as",
        "flatten",
        "unflatten",
        "transpose",
        "permute",
        "t",
        "select",
        "narrow",
        "squeeze",
        "unsqueeze",
        "expand",
        "expand_as",
        "split",
        "split_with_sizes",
        "chunk",
        "unbind",
        "tensor_split",
        "diagonal",
        "detach",
        "alias",
        "contiguous",
        "as_strided",
        "movedim",
        "moveaxis",
        "swapaxes",
        "swapdims",
        "unfold",
        "getitem",
        "getattr",
        "to",
        "type",
        "type_as",
        "float",
        "half",
        "double",
        "int",
        "long",
        "bool",
        "dropout",  # the identity in inference, which returns its input itself
    }
)

# Python operators that update a tensor left operand in place (`x += y`).
FX_INPLACE_OPERATORS = frozenset(
    {"iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow", "iand", "ior", "ixor"}
)


def is_inplace_name(name: str | None) -> bool:
    """`add_`, `masked_fill_`: torch's naming for ops that write their first operand."""
    return bool(name) and name.endswith("_") and not name.startswith("_")


def first_operand(node: Any) -> Any:
    """A call's first operand, positional or passed as input= / self=; None if it has none."""
    if node.args:
        return node.args[0]
    return node.kwargs.get("input", node.kwargs.get("self"))


# ----------------------------------------------------------------------------- aten schemas


def aten_writes(node: Any) -> tuple[Any, ...]:
    """The operands an aten call writes: those its schema marks `Tensor(a!)`."""
    schema = node.target._schema
    written = []
    for i, arg in enumerate(schema.arguments):
        if arg.alias_info is None or not arg.alias_info.is_write:
            continue
        value = node.args[i] if i < len(node.args) else node.kwargs.get(arg.name)
        if value is not None:
            written.append(value)
    return tuple(written)


def aten_is_view(node: Any) -> bool:
    """An aten call whose result aliases its first operand without writing it (`view`)."""
    if node.op != "call_function":
        return False
    schema = getattr(node.target, "_schema", None)
    if schema is None:  # operator.getitem of a split: an element of a list of views
        return getattr(node.target, "__name__", None) == "getitem"
    return any(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns)


# ----------------------------------------------------------------------------- the check


def shared_memory(
    node: Any,
    order: dict,
    writers: set,
    is_view: Callable[[Any], bool],
    is_tensor: Callable[[Any], bool],
) -> tuple[list[Any], list[Any]]:
    """(same, overlapping) for the call `node` writing its first operand: the nodes made before
    it that are that very tensor, and the other tensors sharing its memory.

    `order` numbers the graph's nodes; `writers` holds the calls that write (and return) their
    first operand. Every node has at most one edge towards its first operand, so the edges form
    a forest and each node is reached by one path: identity edges only, or not.
    """
    from torch import fx

    def edges(n):
        """(neighbour, is_identity_edge) pairs of n."""
        base = first_operand(n) if n.op not in ("placeholder", "get_attr") else None
        if isinstance(base, fx.Node):
            if n in writers:
                yield base, True
            elif is_view(n):
                yield base, False
        for user in n.users:
            if first_operand(user) is n:
                if user in writers:
                    yield user, True
                elif is_view(user):
                    yield user, False

    target = first_operand(node)
    same, overlapping = {target}, set()
    stack = [(target, True)]
    while stack:
        n, identity = stack.pop()
        for m, edge_identity in edges(n):
            if m in same or m in overlapping or order[m] >= order[node] or not is_tensor(m):
                continue
            (same if identity and edge_identity else overlapping).add(m)
            stack.append((m, identity and edge_identity))
    return sorted(same, key=order.get), sorted(overlapping, key=order.get)


def read_after(node: Any, order: dict, nodes: list[Any]) -> list[Any]:
    """Those of `nodes` read after `node` (by a later node or by the graph's output)."""
    return [m for m in nodes if any(order[u] > order[node] for u in m.users)]


def is_tensor_value(value: Any) -> bool:
    return isinstance(value, Expr) and isinstance(value.struct_info, TensorStructInfo)
