"""Relay functions as a Graphviz DOT picture: one cluster per function, edges from each
expression to the ones that read it.

The DOT source is plain text and is always written; turning it into PDF/SVG/PNG needs
Graphviz's `dot` program, and without it `render` says so and leaves the source.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from ...error import ArgumentError
from .._dot import attr_list, defaults, find_dot, quote, run_dot, write_text
from .interface import DefaultVizParser, Plotter, VizEdge, VizGraph, VizNode

# TVM's DOT plotter takes the default parser's labels as they are
DotVizParser = DefaultVizParser

# graphviz.Digraph.render's keywords that mean something without a viewer
_RENDER_KEYS = {"filename", "directory", "format", "engine", "cleanup"}


class DotGraph(VizGraph):
    """The DOT cluster of one function; `source` is its text (a `subgraph cluster_...`)."""

    def __init__(
        self,
        name: str,
        graph_attr: Mapping[str, str] | None = None,
        node_attr: Mapping[str, str] | None = None,
        edge_attr: Mapping[str, str] | None = None,
        get_node_attr: Callable[[VizNode], Mapping[str, str]] | None = None,
    ):
        self._name = name
        self._graph_attr, self._node_attr, self._edge_attr = graph_attr, node_attr, edge_attr
        self._get_node_attr = get_node_attr or self._default_get_node_attr
        self._nodes: list[str] = []
        self._edges: list[str] = []

    def node(self, viz_node: VizNode) -> None:
        attrs = {"label": f"{viz_node.type_name}\n{viz_node.detail}".rstrip("\n")}
        attrs.update(self._get_node_attr(viz_node) or {})
        self._nodes.append(f"    {quote(viz_node.identity)}{attr_list(attrs)}")

    def edge(self, viz_edge: VizEdge) -> None:
        self._edges.append(f"    {quote(viz_edge.start)} -> {quote(viz_edge.end)}")

    @property
    def source(self) -> str:
        # a subgraph whose name starts with "cluster" is drawn boxed (Graphviz's convention)
        lines = [
            f"  subgraph {quote('cluster_' + self._name)} {{",
            f"    label={quote(self._name)}",
        ]
        lines += defaults("graph", self._graph_attr, "    ")
        lines += defaults("node", self._node_attr, "    ")
        lines += defaults("edge", self._edge_attr, "    ")
        return "\n".join([*lines, *self._nodes, *self._edges, "  }"])

    @staticmethod
    def _default_get_node_attr(node: VizNode) -> dict[str, str]:
        return {"shape": "ellipse" if "Var" in node.type_name else "box"}


class DotPlotter(Plotter):
    """Draws every function as a cluster of one DOT graph.

    `graph_attr`, `node_attr`, `edge_attr` are Graphviz attributes for all graphs, nodes and
    edges; `get_node_attr(viz_node)` gives attributes for one node; `render_kwargs` takes
    `format` (default "pdf"), `engine` (default "dot"), `directory` and `filename`.

    >>> viz = relay_viz.RelayVisualizer(mod, plotter=DotPlotter(), parser=DotVizParser())
    >>> viz.render("graph")  # writes graph.dot, and graph.pdf where Graphviz is installed
    """

    def __init__(
        self,
        graph_attr: Mapping[str, str] | None = None,
        node_attr: Mapping[str, str] | None = None,
        edge_attr: Mapping[str, str] | None = None,
        get_node_attr: Callable[[VizNode], Mapping[str, str]] | None = None,
        render_kwargs: Mapping[str, Any] | None = None,
    ):
        self._name_to_graph: dict[str, DotGraph] = {}
        self._graph_attr, self._node_attr, self._edge_attr = graph_attr, node_attr, edge_attr
        self._get_node_attr = get_node_attr
        self._render_kwargs = dict(render_kwargs or {})
        unknown = sorted(set(self._render_kwargs) - _RENDER_KEYS)
        if unknown:
            raise ArgumentError(
                f"DotPlotter: render_kwargs {unknown} are not supported; use "
                f"{sorted(_RENDER_KEYS)} (open the rendered file yourself instead of view=True)"
            )

    def create_graph(self, name: str) -> DotGraph:
        graph = DotGraph(
            name, self._graph_attr, self._node_attr, self._edge_attr, self._get_node_attr
        )
        self._name_to_graph[name] = graph
        return graph

    @property
    def source(self) -> str:
        """The whole picture as DOT text: one cluster per function."""
        parts = [g.source for g in self._name_to_graph.values()]
        return "\n".join(["digraph {", *parts, "}"]) + "\n"

    def render(self, filename: str | None = None) -> str:
        """Write `<filename>.dot`, then `<filename>.<format>` where Graphviz's program is
        installed (a warning says where the source is when it is not); returns the path of
        the file written last. `filename` defaults to "Digraph".
        The DOT source is kept even with `cleanup=True`: it is the picture's one artefact
        that needs nothing installed.
        """
        kw = self._render_kwargs
        name = filename if filename is not None else kw.get("filename", "Digraph")
        stem = os.path.join(kw.get("directory") or "", os.fspath(name))
        if os.path.splitext(stem)[1] in (".dot", ".gv"):
            stem = os.path.splitext(stem)[0]
        if os.path.dirname(stem):
            os.makedirs(os.path.dirname(stem), exist_ok=True)
        source_path = write_text(stem + ".dot", self.source, "DotPlotter.render")
        fmt, engine = str(kw.get("format", "pdf")), str(kw.get("engine", "dot"))
        if find_dot(engine) is None:
            warnings.warn(
                f"DotPlotter.render: wrote the DOT source {source_path!r} but not "
                f"{stem}.{fmt}: Graphviz's `{engine}` program is not on PATH. Install Graphviz "
                f"and run `{engine} -T{fmt} {source_path} -o {stem}.{fmt}`.",
                stacklevel=2,
            )
            return source_path
        out = stem + "." + fmt
        with open(out, "wb") as f:
            f.write(run_dot(self.source, fmt, engine, "DotPlotter.render"))
        return out


__all__ = ["DotGraph", "DotPlotter", "DotVizParser"]
