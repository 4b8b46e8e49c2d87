"""Pictures of Relay modules: `RelayVisualizer(mod).render()` prints each function as a tree.

    viz = relay_viz.RelayVisualizer(mod)                      # text tree (TermPlotter)
    viz = relay_viz.RelayVisualizer(mod, params, relay_viz.DotPlotter(), relay_viz.DotVizParser())
    viz.render("graph")                                       # graph.dot (+ graph.pdf)

A parser (interface.VizParser) turns each expression into a node and edges; a plotter
(interface.Plotter) collects one graph per function, `main` first, and draws them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...error import ArgumentError
from ...ir.module import IRModule
from ...relay.expr import Function
from ...relay.expr_functor import post_order_visit
from .dot import DotPlotter, DotVizParser
from .interface import (
    DefaultVizParser,
    Plotter,
    VizEdge,
    VizGraph,
    VizNode,
    VizParser,
)
from .terminal import TermPlotter, TermVizParser


def _check_has(obj: Any, method: str, arg: str, base: str) -> None:
    if obj is not None and not callable(getattr(obj, method, None)):
        raise ArgumentError(
            f"RelayVisualizer: {arg} {type(obj).__name__} has no {method}() method; pass an "
            f"instance of a relay_viz.interface.{base} subclass"
        )


def _number_nodes(func: Function, first: int) -> dict[Any, str]:
    """Every expression of `func` (post-order, each once) -> its id, counting from `first`."""
    node_to_id: dict[Any, str] = {}

    def number(node: Any) -> None:
        node_to_id[node] = str(first + len(node_to_id))

    post_order_visit(func, number)
    return node_to_id


class RelayVisualizer:
    """Builds one graph per function of `relay_mod` with `parser` and `plotter`.

    `relay_param` (name -> array) marks which variables are bound parameters; the plotter
    defaults to `TermPlotter()` and the parser to `TermVizParser()`. Node ids are unique
    across the whole module.
    """

    def __init__(
        self,
        relay_mod: IRModule,
        relay_param: Mapping[str, Any] | None = None,
        plotter: Plotter | None = None,
        parser: VizParser | None = None,
    ):
        if not isinstance(relay_mod, IRModule):
            raise ArgumentError(
                f"RelayVisualizer: relay_mod must be a tvm.IRModule of relay functions, got "
                f"{type(relay_mod).__name__}; wrap a function with tvm.IRModule.from_expr(func)"
            )
        _check_has(plotter, "create_graph", "plotter", "Plotter")
        _check_has(parser, "get_node_edges", "parser", "VizParser")
        self._plotter = plotter if plotter is not None else TermPlotter()
        self._relay_param = dict(relay_param) if relay_param is not None else {}
        self._parser = parser if parser is not None else TermVizParser()

        # main is drawn first, then the other functions in the module's order
        names = sorted(relay_mod, key=lambda n: n != "main")
        next_id = 0
        for name in names:
            func = relay_mod[name]
            if not isinstance(func, Function):
                raise ArgumentError(
                    f"RelayVisualizer: function '{name}' of the module is a "
                    f"{type(func).__name__}, not a relay.Function; relay_viz draws Relay "
                    "modules only (print other functions with mod.script())"
                )
            node_to_id = _number_nodes(func, next_id)
            next_id += len(node_to_id)
            self._add_nodes(self._plotter.create_graph(name), node_to_id)

    def _add_nodes(self, graph: VizGraph, node_to_id: dict[Any, str]) -> None:
        """Parse every expression (in post-order) into the graph's nodes and edges."""
        for node in node_to_id:
            viz_node, viz_edges = self._parser.get_node_edges(node, self._relay_param, node_to_id)
            if viz_node is not None:
                graph.node(viz_node)
            for edge in viz_edges:
                graph.edge(edge)

    def render(self, filename: str | None = None) -> Any:
        """Draw the graphs; what `filename` means (and what comes back) is the plotter's."""
        return self._plotter.render(filename=filename)


__all__ = [
    "DefaultVizParser",
    "DotPlotter",
    "DotVizParser",
    "Plotter",
    "RelayVisualizer",
    "TermPlotter",
    "TermVizParser",
    "VizEdge",
    "VizGraph",
    "VizNode",
    "VizParser",
]
