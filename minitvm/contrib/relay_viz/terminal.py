"""Relay functions as text trees in the style of `clang -ast-dump` (RelayVisualizer's default).

    @main([Var(x, ty=TensorType([1, 4], float32))])
    `--Call
       |--nn.relu
       `--Var(Input) name_hint: x, shape: (1, 4), dtype: float32

Each function is a tree rooted at its Function node; a node's children are the nodes it
reads. An expression read by several others is drawn in full once; its later occurrences
print the same line marked `(repeated, see above)`, so the text grows with the number of
nodes, not with the number of paths through the graph.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ...error import ArgumentError
from ...ir.module import GlobalVar
from ...relay.expr import Call, Function, If, Let, Op
from .._dot import write_text
from .interface import (
    DefaultVizParser,
    Plotter,
    VizEdge,
    VizGraph,
    VizNode,
    VizParser,
    dispatch,
    param_text,
)

REPEATED = "(repeated, see above)"


class TermVizParser(VizParser):
    """Nodes and edges for TermPlotter: calls link their callee (op, function or GlobalVar)
    as a child, and ops and GlobalVars get nodes; other kinds are DefaultVizParser's."""

    _RULES: ClassVar[dict[type, str]] = {
        Call: "_call",
        Let: "_let",
        GlobalVar: "_global_var",
        If: "_if",
        Op: "_op",
        Function: "_function",
    }

    def __init__(self) -> None:
        self._default_parser = DefaultVizParser()

    def get_node_edges(
        self,
        node: Any,
        relay_param: Mapping[str, Any],
        node_to_id: Mapping[Any, str],
    ) -> tuple[VizNode | None, list[VizEdge]]:
        rule = dispatch(self._RULES, node)
        if rule is None:
            return self._default_parser.get_node_edges(node, relay_param, node_to_id)
        return getattr(self, rule)(node, node_to_id)

    def _call(self, node: Call, node_to_id: Mapping) -> tuple[VizNode, list[VizEdge]]:
        node_id = node_to_id[node]
        edges = [VizEdge(node_to_id[x], node_id) for x in (node.op, *node.args)]
        return VizNode(node_id, "Call", ""), edges

    def _let(self, node: Let, node_to_id: Mapping) -> tuple[VizNode, list[VizEdge]]:
        node_id = node_to_id[node]
        edges = [VizEdge(node_to_id[x], node_id) for x in (node.var, node.value, node.body)]
        return VizNode(node_id, "Let", "(var, val, body)"), edges

    def _global_var(self, node: GlobalVar, node_to_id: Mapping) -> tuple[VizNode, list]:
        return VizNode(node_to_id[node], "GlobalVar", node.name_hint), []

    def _if(self, node: If, node_to_id: Mapping) -> tuple[VizNode, list[VizEdge]]:
        node_id = node_to_id[node]
        parts = (node.cond, node.true_branch, node.false_branch)
        edges = [VizEdge(node_to_id[x], node_id) for x in parts]
        return VizNode(node_id, "If", "(cond, true, false)"), edges

    def _op(self, node: Op, node_to_id: Mapping) -> tuple[VizNode, list]:
        return VizNode(node_to_id[node], node.name, ""), []

    def _function(self, node: Function, node_to_id: Mapping) -> tuple[VizNode, list[VizEdge]]:
        node_id = node_to_id[node]
        params = "[" + ", ".join(param_text(p) for p in node.params) + "]"
        return VizNode(node_id, "Func", params), [VizEdge(node_to_id[node.body], node_id)]


class TermNode:
    """A VizNode as one line of text: its type, then its detail on the same line."""

    def __init__(self, viz_node: VizNode):
        self.type = viz_node.type_name
        self.other_info = viz_node.detail.replace("\n", ", ")

    def line(self) -> str:
        return f"{self.type} {self.other_info}".rstrip()


class TermGraph(VizGraph):
    """The text tree of one function (`name`); `render()` returns it."""

    def __init__(self, name: str):
        self._name = name
        # node id -> the ids of the nodes it reads, in the order the parser gave the edges
        self._graph: dict[str, list[str]] = {}
        self._id_to_term_node: dict[str, TermNode] = {}
        # nodes arrive children first, so the last one added is the function: the root
        self._node_ids: list[str] = []

    def node(self, viz_node: VizNode) -> None:
        self._node_ids.append(viz_node.identity)
        self._graph.setdefault(viz_node.identity, [])
        self._id_to_term_node[viz_node.identity] = TermNode(viz_node)

    def edge(self, viz_edge: VizEdge) -> None:
        # the tree shows a consumer above what it reads, so children are an edge's starts
        self._graph.setdefault(viz_edge.end, []).append(viz_edge.start)

    def _term(self, node_id: str) -> TermNode:
        term = self._id_to_term_node.get(node_id)
        if term is None:
            raise ArgumentError(
                f"relay_viz: graph '{self._name}' has an edge to or from node id {node_id!r}, "
                "but no node with that id was added; a parser must return a VizNode for "
                "every id its VizEdges name"
            )
        return term

    def render(self) -> str:
        """The tree as text, the function first (`@name(params)`), then what it reads."""
        if not self._node_ids:
            return f"@{self._name}()"
        root = self._node_ids[-1]
        lines = [f"@{self._name}({self._term(root).other_info})"]
        expanded = {root}
        # (node id, indent, is last child); a stack, not recursion: deep models stay safe
        stack = [(c, "", i == 0) for i, c in enumerate(reversed(self._graph.get(root, [])))]
        while stack:
            node_id, indent, last = stack.pop()
            children = self._graph.get(node_id, [])
            repeated = bool(children) and node_id in expanded
            text = self._term(node_id).line() + (f" {REPEATED}" if repeated else "")
            lines.append(f"{indent}{'`--' if last else '|--'}{text}")
            if repeated:
                continue
            expanded.add(node_id)
            inner = indent + ("   " if last else "|  ")
            stack += [(c, inner, i == 0) for i, c in enumerate(reversed(children))]
        return "\n".join(lines)


class TermPlotter(Plotter):
    """Collects one TermGraph per function; `render()` prints them (or writes a file)."""

    def __init__(self) -> None:
        self._name_to_graph: dict[str, VizGraph] = {}

    def create_graph(self, name: str) -> VizGraph:
        self._name_to_graph[name] = TermGraph(name)
        return self._name_to_graph[name]

    def render(self, filename: str | None = None) -> str:
        """Print every function's tree (to the file `filename` instead, when given); returns
        the text as well."""
        text = "\n".join(g.render() for g in self._name_to_graph.values())
        if filename is None:
            print(text)  # printing is what render() without a filename is for
        else:
            write_text(filename, text, "TermPlotter.render")
        return text


__all__ = ["TermGraph", "TermNode", "TermPlotter", "TermVizParser"]
