"""The pieces RelayVisualizer is built from: VizNode, VizEdge, VizParser, VizGraph, Plotter,
and DefaultVizParser (labels and edges for each kind of Relay expression).

A parser turns one Relay expression into at most one VizNode plus the VizEdges that connect
it to the expressions it reads (edges run producer -> consumer); a Plotter makes one VizGraph
per function of the module and renders them all.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any, ClassVar

from ...ir.module import GlobalVar
from ...relay.expr import Call, Constant, Function, If, Let, Op, Tuple, TupleGetItem, Var
from ...relay.ty import TensorType

UNKNOWN_TYPE = "unknown"


class VizNode:
    """One node of a picture: a unique `identity`, a `type_name` and a `detail` text."""

    def __init__(self, node_id: str, node_type: str, node_detail: str):
        self._id = str(node_id)
        self._type = str(node_type)
        self._detail = str(node_detail)

    @property
    def identity(self) -> str:
        return self._id

    @property
    def type_name(self) -> str:
        return self._type

    @property
    def detail(self) -> str:
        return self._detail

    def __repr__(self) -> str:
        one_line = self._detail.replace("\n", ", ")
        return f"VizNode(identity: {self._id}, type_name: {self._type}, detail: {one_line})"


class VizEdge:
    """An edge from the node `start_node` (a producer) to the node `end_node` (its consumer)."""

    def __init__(self, start_node: str, end_node: str):
        self._start_node = str(start_node)
        self._end_node = str(end_node)

    @property
    def start(self) -> str:
        return self._start_node

    @property
    def end(self) -> str:
        return self._end_node

    def __repr__(self) -> str:
        return f"VizEdge({self._start_node} -> {self._end_node})"


class VizParser(abc.ABC):
    """Turns a Relay expression into a VizNode (or None: no node) and a list of VizEdges."""

    @abc.abstractmethod
    def get_node_edges(
        self,
        node: Any,
        relay_param: Mapping[str, Any],
        node_to_id: Mapping[Any, str],
    ) -> tuple[VizNode | None, list[VizEdge]]:
        """The node and edges for `node`; `node_to_id` gives every expression of the function
        its unique id, `relay_param` the names of bound parameters."""


class VizGraph(abc.ABC):
    """A graph of VizNodes and VizEdges for one function; nodes arrive in post-order."""

    @abc.abstractmethod
    def node(self, viz_node: VizNode) -> None:
        """Add a node (a function's nodes arrive children first, the function last)."""

    @abc.abstractmethod
    def edge(self, viz_edge: VizEdge) -> None:
        """Add an edge between two nodes."""


class Plotter(abc.ABC):
    """Makes one VizGraph per function and renders all of them."""

    @abc.abstractmethod
    def create_graph(self, name: str) -> VizGraph:
        """A new, empty graph for the function called `name`."""

    @abc.abstractmethod
    def render(self, filename: str | None) -> Any:
        """Draw every graph made so far (what `filename` means is the plotter's to say)."""


def dispatch(table: Mapping[type, str], node: Any) -> str | None:
    """The method name `table` gives the nearest class of `node` (None when no class matches)."""
    for klass in type(node).__mro__:
        name = table.get(klass)
        if name is not None:
            return name
    return None


def value_text(value: Any) -> str:
    """An attribute value as TVM prints it: sequences as `[a, b]`."""
    if isinstance(value, list | tuple):
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    return str(value)


def shape_text(shape: Any) -> str:
    """A shape as a Python tuple of its dims (a symbolic dim prints as its expression)."""
    dims = tuple(d if isinstance(d, int) else str(d) for d in shape)
    return str(dims)


def var_type(var: Var) -> Any:
    """The type written on `var`, else the one InferType found, else None."""
    if var.type_annotation is not None:
        return var.type_annotation
    return getattr(var, "_checked_type_", None)


def param_text(var: Var) -> str:
    """`Var(x)` or `Var(x, ty=TensorType([1, 3], float32))`, as TVM prints a parameter."""
    ty = var_type(var)
    if isinstance(ty, TensorType):
        dims = ", ".join(str(d) for d in ty.shape)
        return f"Var({var.name_hint}, ty=TensorType([{dims}], {ty.dtype}))"
    if ty is not None:
        return f"Var({var.name_hint}, ty={ty})"
    return f"Var({var.name_hint})"


def attrs_lines(attrs: Mapping | None) -> list[str]:
    return [f"{k}: {value_text(v)}" for k, v in (attrs or {}).items()]


class DefaultVizParser(VizParser):
    """Labels for every kind of Relay expression, with edges from what it reads.

    Calls show their op and attributes, variables their name, shape and dtype (`Var(Param)`
    when `relay_param` binds them), constants their shape and dtype. Ops and GlobalVars make
    no node: a call names its callee.
    """

    _RULES: ClassVar[dict[type, str]] = {
        Function: "_function",
        Call: "_call",
        Var: "_var",
        Tuple: "_tuple",
        TupleGetItem: "_tuple_get_item",
        Constant: "_constant",
        Let: "_let",
        If: "_if",
        GlobalVar: "_no_node",
        Op: "_no_node",
    }

    def get_node_edges(
        self,
        node: Any,
        relay_param: Mapping[str, Any],
        node_to_id: Mapping[Any, str],
    ) -> tuple[VizNode | None, list[VizEdge]]:
        rule = dispatch(self._RULES, node)
        if rule is None:
            what = f"don't know how to parse {type(node).__name__}"
            return VizNode(node_to_id[node], UNKNOWN_TYPE, what), []
        return getattr(self, rule)(node, relay_param, node_to_id)

    # each rule takes (node, relay_param, node_to_id) and returns (VizNode | None, [VizEdge])
    def _no_node(self, node: Any, relay_param: Mapping, node_to_id: Mapping) -> tuple[None, list]:
        return None, []

    def _var(self, node: Var, relay_param: Mapping, node_to_id: Mapping):
        kind = "Var(Param)" if node.name_hint in relay_param else "Var(Input)"
        lines = [f"name_hint: {node.name_hint}"]
        ty = var_type(node)
        if isinstance(ty, TensorType):
            lines += [f"shape: {shape_text(ty.shape)}", f"dtype: {ty.dtype}"]
        elif ty is not None:
            lines.append(f"type_annotation: {ty}")
        return VizNode(node_to_id[node], kind, "\n".join(lines)), []

    def _function(self, node: Function, relay_param: Mapping, node_to_id: Mapping):
        name = str(node.attrs.get("Composite", "")) if node.attrs else ""
        viz = VizNode(node_to_id[node], f"Func {name}".rstrip(), "\n".join(attrs_lines(node.attrs)))
        return viz, [VizEdge(node_to_id[node.body], node_to_id[node])]

    def _call(self, node: Call, relay_param: Mapping, node_to_id: Mapping):
        callee, lines = node.op, []
        if isinstance(callee, Op):
            name, lines = callee.name, attrs_lines(node.attrs)
        elif isinstance(callee, Function):
            name, lines = "Anonymous Func", attrs_lines(callee.attrs)
            if callee.attrs and "Composite" in callee.attrs:
                name = str(callee.attrs["Composite"])
        elif isinstance(callee, GlobalVar):
            name, lines = "GlobalVar", [f"GlobalVar.name_hint: {callee.name_hint}"]
        else:
            name = type(callee).__name__
        node_id = node_to_id[node]
        edges = [VizEdge(node_to_id[a], node_id) for a in node.args]
        if not isinstance(callee, Op | GlobalVar):
            # a called function or closure variable has a node of its own: link it in
            edges.insert(0, VizEdge(node_to_id[callee], node_id))
        return VizNode(node_id, f"Call {name}", "\n".join(lines)), edges

    def _tuple(self, node: Tuple, relay_param: Mapping, node_to_id: Mapping):
        node_id = node_to_id[node]
        return VizNode(node_id, "Tuple", ""), [VizEdge(node_to_id[f], node_id) for f in node.fields]

    def _tuple_get_item(self, node: TupleGetItem, relay_param: Mapping, node_to_id: Mapping):
        node_id = node_to_id[node]
        edges = [VizEdge(node_to_id[node.tuple_value], node_id)]
        return VizNode(node_id, "TupleGetItem", f"idx: {node.index}"), edges

    def _constant(self, node: Constant, relay_param: Mapping, node_to_id: Mapping):
        detail = f"shape: {tuple(node.data.shape)}, dtype: {node.data.dtype}"
        return VizNode(node_to_id[node], "Const", detail), []

    def _let(self, node: Let, relay_param: Mapping, node_to_id: Mapping):
        node_id = node_to_id[node]
        parts = (node.var, node.value, node.body)
        edges = [VizEdge(node_to_id[p], node_id) for p in parts]
        return VizNode(node_id, "Let", f"var: {node.var.name_hint}"), edges

    def _if(self, node: If, relay_param: Mapping, node_to_id: Mapping):
        node_id = node_to_id[node]
        parts = (node.cond, node.true_branch, node.false_branch)
        edges = [VizEdge(node_to_id[p], node_id) for p in parts]
        return VizNode(node_id, "If", "(cond, true, false)"), edges


__all__ = [
    "UNKNOWN_TYPE",
    "DefaultVizParser",
    "Plotter",
    "VizEdge",
    "VizGraph",
    "VizNode",
    "VizParser",
]
