"""A small reader of Graphviz DOT text for the picture tests: it checks the grammar the
pictures use (graphs, subgraphs, attribute lists, node and edge statements with ports) and
returns what was declared, so a test can ask which nodes and edges a picture has."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

_TOKEN = re.compile(
    r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<arrow>->)|(?P<id>[A-Za-z0-9_.]+)|(?P<punct>[{}\[\]=;:,<]))',
    re.DOTALL,
)


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        assert m, f"DOT: cannot read {text[pos : pos + 40]!r}"
        if m.group("punct") == "<":  # an HTML-like string: balanced angle brackets
            depth, i = 0, m.start("punct")
            while True:
                depth += {"<": 1, ">": -1}.get(text[i], 0)
                i += 1
                if depth == 0:
                    break
                assert i < len(text), "DOT: unterminated <...> string"
            out.append(("html", text[m.start("punct") : i]))
            pos = i
            continue
        kind = m.lastgroup
        value = m.group(kind)
        if kind == "str":
            value = re.sub(
                r"\\(.)", lambda g: "\n" if g.group(1) == "n" else g.group(1), value[1:-1]
            )
        out.append((kind, value))
        pos = m.end()
    return out


@dataclass
class Dot:
    name: str | None = None
    nodes: dict[str, dict] = field(default_factory=dict)
    edges: list[tuple[str, str | None, str, str | None, dict]] = field(default_factory=list)
    clusters: dict[str, set[str]] = field(default_factory=dict)  # subgraph name -> its nodes
    labels: dict[str | None, str] = field(default_factory=dict)  # (sub)graph name -> its label
    defaults: dict[str, dict] = field(default_factory=dict)  # "graph"/"node"/"edge" -> attrs


def parse(text: str) -> Dot:
    """Read a `digraph { ... }`; asserts on any syntax error."""
    toks, dot = _tokens(text), Dot()
    i = 0

    def peek(k: int = 0) -> tuple[str, str]:
        return toks[i + k] if i + k < len(toks) else ("eof", "")

    def take(value: str | None = None) -> str:
        nonlocal i
        kind, v = peek()
        assert kind != "eof", "DOT: unexpected end of text"
        assert value is None or v == value, f"DOT: expected {value!r}, got {v!r}"
        i += 1
        return v

    def is_id() -> bool:
        return peek()[0] in ("id", "str", "html")

    def attrs() -> dict:
        out = {}
        while peek()[1] == "[":
            take("[")
            while peek()[1] != "]":
                key = take()
                take("=")
                assert is_id(), f"DOT: attribute {key} has no value"
                out[key] = take()
                if peek()[1] in (",", ";"):
                    take()
            take("]")
        return out

    def endpoint() -> tuple[str, str | None]:
        assert is_id(), f"DOT: expected a node id, got {peek()[1]!r}"
        node, port = take(), None
        if peek()[1] == ":":
            take(":")
            port = take()
        return node, port

    def body(members: set[str], graph: str | None) -> None:
        take("{")
        while peek()[1] != "}":
            kind, v = peek()
            assert kind != "eof", "DOT: unbalanced braces"
            if kind == "id" and v == "subgraph":
                take()
                name = take() if is_id() else f"anon{i}"
                inner: set[str] = set()
                body(inner, name)
                dot.clusters[name] = inner
                members |= inner
            elif kind == "id" and v in ("graph", "node", "edge") and peek(1)[1] == "[":
                take()
                dot.defaults.setdefault(v, {}).update(attrs())
            elif is_id() and peek(1)[1] == "=":
                key = take()
                take("=")
                value = take()
                if key == "label":
                    dot.labels[graph] = value
            else:
                chain = [endpoint()]
                while peek()[0] == "arrow":
                    take()
                    chain.append(endpoint())
                a = attrs()
                if len(chain) == 1:
                    dot.nodes.setdefault(chain[0][0], {}).update(a)
                    members.add(chain[0][0])
                for (s, sp), (d, dp) in itertools.pairwise(chain):
                    dot.edges.append((s, sp, d, dp, a))
            if peek()[1] == ";":
                take(";")
        take("}")

    take("digraph")
    if is_id():
        dot.name = take()
    body(set(), None)
    assert peek()[0] == "eof", f"DOT: text after the graph: {peek()[1]!r}"
    return dot


def check_declared(dot: Dot) -> None:
    """Every edge joins declared nodes (DOT would silently invent a node otherwise)."""
    for s, _, d, _, _ in dot.edges:
        assert s in dot.nodes, f"edge from undeclared node {s}"
        assert d in dot.nodes, f"edge to undeclared node {d}"
