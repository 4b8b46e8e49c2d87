"""Tensor Expression Debug Display (TEDD): three Graphviz pictures of a classic TE schedule.

    tedd.viz_dataflow_graph(s, dot_file_path="/tmp/dfg.dot")           # stages and tensors
    tedd.viz_schedule_tree(s, dot_file_path="/tmp/tree.dot")            # where stages are computed
    tedd.viz_itervar_relationship_graph(s, output_dot_string=True)      # split/fuse of each loop

Each returns the DOT text when `output_dot_string=True` and writes it to `dot_file_path`
when given; `show_svg=True` draws it in a Jupyter notebook, which needs Graphviz's `dot`
program and IPython. The text itself needs nothing installed.

Stages are listed producers first; inputs (placeholders) are stages without loops. An IterVar
shows its index among the stage's current loops (-1 once it was split or fused away), its
name, its kind (kDataPar, kCommReduce, ...) and, in the schedule tree and relationship
graph, the range InferBound gives it.
"""

from __future__ import annotations

import html
import warnings
from dataclasses import dataclass, field
from typing import Any

from ..error import ArgumentError, MiniTVMError, TVMError
from ..ir.recursion import post_order
from ..te.group import group_attachment
from ..te.operation import ComputeOp
from ..te.reduction import Reduce
from ..te.schedule import InferBound, Schedule, Stage
from ..te.schedule_relations import Fuse, Singleton, Split, _CacheOp
from ..tir.expr import IntImm, IterType
from ._dot import attr_list, quote, run_dot, write_text

# IterVar kind -> (TVM's name for it, the colour of its index cell)
ITERVAR_KINDS = {
    IterType.DataPar: ("kDataPar", "#FFFFFF"),
    IterType.ThreadIndex: ("kThreadIndex", "#5DADE2"),
    IterType.CommReduce: ("kCommReduce", "#F8C471"),
    IterType.Ordered: ("kOrdered", "#DC7633"),
    IterType.Opaque: ("kOpaque", "#BFC9CA"),
    IterType.Unrolled: ("kUnrolled", "#C39BD3"),
    IterType.Vectorized: ("kVectorized", "#85C1E9"),
    IterType.Parallelized: ("kParallelized", "#F1948A"),
}
TENSORIZED = ("kTensorized", "#82E0AA")  # minitvm's IterType has no member for it
_TABLE = '<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="4">'


# ----------------------------------------------------------------------------- the model


@dataclass
class _Iter:
    dot_id: str
    name: str
    index: int  # position among the stage's leaf loops, -1 when no longer a loop
    kind: tuple[str, str]
    range_text: str
    thread: str | None = None


@dataclass
class _Relation:
    dot_id: str
    kind: str  # "Split" | "Fuse" | "Singleton"
    inputs: list[tuple[str, int]]  # (port name, index into the stage's IterVars)
    outputs: list[tuple[str, int]]


@dataclass
class _Stage:
    dot_id: str
    name: str
    scope: str
    compute: str | None
    iters: list[_Iter] = field(default_factory=list)
    relations: list[_Relation] = field(default_factory=list)
    inputs: list[tuple[int, int]] = field(default_factory=list)  # (stage, output) read
    outputs: list[tuple[str, str]] = field(default_factory=list)  # (shape, dtype) made
    attach: tuple[int, int] | str = "root"  # "root" | "inline" | (stage, IterVar index)


def _index(items: list, x: Any) -> int:
    return next((i for i, y in enumerate(items) if y is x), -1)


def _expr_text(e: Any) -> str:
    if isinstance(e, IntImm):
        return str(e.value)
    if isinstance(e, Reduce):
        axes = ", ".join(iv.var.name for iv in e.axis)
        cond = "" if isinstance(e.condition, IntImm) else f", where={e.condition}"
        return f"{e.reducer_name}({e.source[e.value_index]}, axis=[{axes}]{cond})"
    return str(e)


def _compute_text(op: Any) -> str | None:
    """`C[i, j] = A[i, j] + 1` for a compute, a copy for a cache stage, None for an input."""
    if isinstance(op, _CacheOp):
        idx = ", ".join(iv.var.name for iv in op.axis)
        return f"{op.name}[{idx}] = {op.source.op.name}[{idx}]"
    if isinstance(op, ComputeOp):
        idx = ", ".join(iv.var.name for iv in op.axis)
        return "\n".join(f"{op.name}[{idx}] = {_expr_text(b)}" for b in op.body)
    return None


def _range_text(ranges: dict | None, iv: Any) -> str:
    r = ranges.get(iv) if ranges is not None else None
    if r is None:
        return "range(N/A)"
    return f"range(min={_expr_text(r.min)}, ext={_expr_text(r.extent)})"


def _relation(rel: Any, ivs: list, dot_id: str) -> _Relation:
    """A Split/Fuse/Singleton record as ports on IterVar indices."""

    def pos(iv: Any) -> int:
        return _index(ivs, iv)

    if isinstance(rel, Split):
        outs = [("Outer", pos(rel.outer)), ("Inner", pos(rel.inner))]
        return _Relation(dot_id, "Split", [("Input", pos(rel.parent))], outs)
    if isinstance(rel, Fuse):
        n = len(rel.fused_from)
        names = ["Outer", *(f"Mid{k}" for k in range(1, n - 1)), "Inner"]
        ins = [(p, pos(iv)) for p, iv in zip(names, rel.fused_from)]
        return _Relation(dot_id, "Fuse", ins, [("Fused", pos(rel.fused))])
    if isinstance(rel, Singleton):
        return _Relation(dot_id, "Singleton", [], [("Iter", pos(rel.iter))])
    raise TVMError(f"tedd: unknown IterVar relation {type(rel).__name__}")


def _scopes(sch: Schedule) -> dict[int, str]:
    """id(stage) -> storage scope that set_scope / cache_read / cache_write gave it."""
    out = {}
    for rec in sch._structural:
        if rec[0] == "set_scope":
            out[id(rec[1])] = rec[2]
        elif rec[0] in ("cache_read", "cache_write"):
            out[id(rec[4])] = rec[2]
    return out


def _inputs(sch: Schedule, stage: Stage) -> list:
    """The tensors `stage` reads now: a cache_read redirects a reader to the copy, and a
    cache_write'd stage only copies its cache back. (The schedule keeps these redirections
    in its own records, which lowering replays; te has no public view of them.)"""
    written = sch._cache_written.get(id(stage))
    if written is not None:
        return [written]
    return [sch._resolve(sch._cached_reads.get((id(stage), t), t)) for t in sch._inputs_of(stage)]


def _attach_point(stage: Stage) -> tuple[Any, Any] | str:
    kind, parent, iv = stage.attach.kind, stage.attach.parent, stage.attach.iv
    if kind == "root" and stage.group is not None:
        placed = group_attachment(stage)
        if placed is not None:
            kind, (parent, iv) = "at", placed
    if kind != "at":
        return kind
    # a loop split or fused after compute_at: the stage sits at its inner part / fused loop
    while _index(parent.leaf_iter_vars, iv) < 0:
        nxt = None
        for rel in parent.relations:
            if isinstance(rel, Split) and rel.parent is iv:
                nxt = rel.inner
            elif isinstance(rel, Fuse) and _index(list(rel.fused_from), iv) >= 0:
                nxt = rel.fused
        if nxt is None:
            break
        iv = nxt
    return parent, iv


def _ranges(sch: Schedule, need: bool) -> dict | None:
    if not need:
        return None
    try:
        return InferBound(sch)
    except MiniTVMError as err:
        warnings.warn(f"tedd: ranges are not shown, InferBound failed: {err}", stacklevel=3)
        return None


def _outputs(op: Any) -> list[tuple[str, str]]:
    return [
        ("[" + ", ".join(_expr_text(d) for d in op.output(n).shape) + "]", str(op.output(n).dtype))
        for n in range(op.num_outputs)
    ]


def _model(sch: Any, what: str, need_range: bool = True) -> list[_Stage]:
    """The schedule's stages, inputs included, producers first."""
    if not isinstance(sch, Schedule):
        raise ArgumentError(
            f"tedd.{what}: expected a te schedule (te.create_schedule(...)), got "
            f"{type(sch).__name__}"
        )
    ranges, scopes = _ranges(sch, need_range), _scopes(sch)
    computed = {id(st.op): st for st in sch.stages}
    # rfactor swapped these stages' operations; tensors of the old ones stand for the new
    computed.update({old_id: st for old_id, (_, st) in sch._alias.items()})

    def producers(item: Any) -> list:
        if not isinstance(item, Stage):
            return []
        return [computed.get(id(t.op), t.op) for t in _inputs(sch, item)]

    # a Stage, or the operation of an input (a stage without loops), producers first
    order = post_order(sch.stages, producers)
    number = {id(item): k for k, item in enumerate(order)}

    def producer(op: Any) -> int:
        return number[id(computed.get(id(op), op))]

    out = []
    for k, item in enumerate(order):
        if not isinstance(item, Stage):
            out.append(_Stage(f"Stage_{k}", item.name, "global", None, outputs=_outputs(item)))
            continue
        node = _Stage(f"Stage_{k}", item.op.name, scopes.get(id(item), "global"), None)
        node.compute, node.outputs = _compute_text(item.op), _outputs(item.op)
        node.inputs = [(producer(t.op), t.value_index) for t in _inputs(sch, item)]
        _fill_loops(item, node, ranges)
        attach = _attach_point(item)
        if isinstance(attach, tuple):
            parent, iv = attach
            attach = (number[id(parent)], _index(parent.all_iter_vars, iv))
            assert attach[1] >= 0, f"{item.op.name} is attached at a loop its parent lacks"
        node.attach = attach
        out.append(node)
    return out


def _fill_loops(st: Stage, node: _Stage, ranges: dict | None) -> None:
    k = node.dot_id.split("_", 1)[1]
    attrs = st.iter_var_attrs
    ivs = list(st.all_iter_vars)
    for j, iv in enumerate(ivs):
        attr = attrs.get(iv)
        kind_id = attr.iter_type if attr is not None else iv.iter_type
        kind = TENSORIZED if attr is not None and attr.tensor_intrin is not None else None
        node.iters.append(
            _Iter(
                f"IterVar_{k}_{j}",
                iv.var.name,
                _index(st.leaf_iter_vars, iv),
                kind or ITERVAR_KINDS[IterType(kind_id)],
                _range_text(ranges, iv),
                str(attr.bind_thread) if attr is not None and attr.bind_thread else None,
            )
        )
    for r, rel in enumerate(st.relations):
        node.relations.append(_relation(rel, ivs, f"{type(rel).__name__}_{k}_{r}"))


# ----------------------------------------------------------------------------- DOT text


def _esc(text: str) -> str:
    """Text for an HTML-like label: escaped, line breaks as <br/>."""
    return html.escape(text, quote=True).replace("\n", "<br/>")


def _graph(name: str, rankdir: str, body: list[str]) -> str:
    head = [f"digraph {quote(name)} {{", f"  graph{attr_list({'rankdir': rankdir})}"]
    return "\n".join([*head, *body, "}"]) + "\n"


def _legend() -> list[str]:
    rows = "".join(
        f'<TR><TD BGCOLOR="{color}"></TD><TD BGCOLOR="white">{name}</TD></TR>'
        for name, color in [*ITERVAR_KINDS.values(), TENSORIZED]
    )
    label = f"<{_TABLE}{rows}</TABLE>>"
    node = f"    {quote('legend')}{attr_list({'label': label, 'shape': 'none', 'margin': '0'})}"
    return ['  subgraph "cluster_legend" {', '    label="Legend"', node, "  }"]


def _iter_row(it: _Iter) -> str:
    thread = f'<br/><font color="#2E86C1">({_esc(it.thread)})</font>' if it.thread else ""
    text = _esc(f"{it.name}({it.kind[0]})") + thread + "<br/>" + _esc(it.range_text)
    return (
        f'<TR><TD PORT="{it.dot_id}" BGCOLOR="{it.kind[1]}">{it.index}</TD>'
        f'<TD BGCOLOR="white" PORT="itervar">{text}</TD></TR>'
    )


def _stage_title(st: _Stage) -> str:
    return f"{_esc(st.name)}<br/>Scope: {_esc(st.scope)}"


def _node(node_id: str, label: str, **attrs: str) -> str:
    return f"  {quote(node_id)}{attr_list({'label': label, **attrs})}"


def _edge(src: str, dst: str, **attrs: str) -> str:
    def end(x: str) -> str:
        return ":".join(quote(p) for p in x.split(":", 1))

    return f"  {end(src)} -> {end(dst)}{attr_list(attrs)}"


def _dataflow_source(stages: list[_Stage]) -> str:
    body = []
    for st in stages:
        rows = max(1, len(st.inputs), len(st.outputs))
        cells = []
        for i in range(rows):
            left = (
                f'<TD BGCOLOR="lightgrey" PORT="I_{i}">{i}</TD>'
                if i < len(st.inputs)
                else '<TD BGCOLOR="white"></TD>'
            )
            mid = f'<TD BGCOLOR="white" ROWSPAN="{rows}">{_stage_title(st)}</TD>' if i == 0 else ""
            right = (
                f'<TD BGCOLOR="lightgrey" PORT="O_{i}">{i}</TD>'
                if i < len(st.outputs)
                else '<TD BGCOLOR="white"></TD>'
            )
            cells.append(f"<TR>{left}{mid}{right}</TR>")
        body.append(
            _node(st.dot_id, f"<{_TABLE}{''.join(cells)}</TABLE>>", shape="none", margin="0")
        )
        for n, (shape, dtype) in enumerate(st.outputs):
            body.append(_node(f"Tensor_{st.dot_id[6:]}_{n}", f"{shape}\n{dtype}", shape="oval"))
    for st in stages:
        for i, (src, n) in enumerate(st.inputs):
            body.append(_edge(f"Tensor_{src}_{n}", f"{st.dot_id}:I_{i}"))
        for n in range(len(st.outputs)):
            body.append(_edge(f"{st.dot_id}:O_{n}", f"Tensor_{st.dot_id[6:]}_{n}"))
    return _graph("Dataflow Graph", "LR", body)


def _schedule_tree_source(stages: list[_Stage]) -> str:
    body = _legend()
    for st in stages:
        rows = [
            f'<TR><TD BGCOLOR="lightgrey" COLSPAN="2" PORT="stage">{_stage_title(st)}</TD></TR>'
        ]
        rows += [_iter_row(it) for it in sorted(st.iters, key=lambda it: it.index) if it.index >= 0]
        if st.compute is not None:
            rows.append(f'<TR><TD COLSPAN="2">{_esc(st.compute)}</TD></TR>')
        body.append(
            _node(st.dot_id, f"<{_TABLE}{''.join(rows)}</TABLE>>", shape="none", margin="0")
        )
    for st in stages:
        if isinstance(st.attach, tuple):
            parent, j = st.attach
            iv = stages[parent].iters[j]
            body.append(_edge(st.dot_id, f"{stages[parent].dot_id}:{iv.dot_id}"))
        elif st.attach == "inline":
            body.append(_edge(st.dot_id, "ROOT", style="dashed", label="inlined"))
        else:
            body.append(_edge(st.dot_id, "ROOT"))
    body.append(_node("ROOT", "ROOT", shape="oval", margin="0"))
    return _graph("Schedule Tree", "BT", body)


def _relation_label(rel: _Relation) -> str:
    width = max(len(rel.inputs), len(rel.outputs), 1)

    def port_row(ports: list[tuple[str, int]]) -> str:
        cells = [f'<TD BGCOLOR="lightgrey" PORT="{p}">{p}</TD>' for p, _ in ports]
        cells += ['<TD BGCOLOR="white"></TD>'] * (width - len(ports))
        return "<TR>" + "".join(cells) + "</TR>"

    mid = f'<TR><TD BGCOLOR="white" COLSPAN="{width}" PORT="relation">{rel.kind}</TD></TR>'
    return f"<{_TABLE}{port_row(rel.inputs)}{mid}{port_row(rel.outputs)}</TABLE>>"


def _itervar_graph_source(stages: list[_Stage]) -> str:
    body = _legend()
    for st in stages:
        inner = [f"  subgraph {quote('cluster_' + st.dot_id)} {{", f"    label={quote(st.name)}"]
        for it in st.iters:
            label = f"<{_TABLE}{_iter_row(it)}</TABLE>>"
            inner.append("  " + _node(it.dot_id, label, shape="none", margin="0"))
        for rel in st.relations:
            inner.append("  " + _node(rel.dot_id, _relation_label(rel), shape="none", margin="0"))
            for port, j in rel.inputs:
                inner.append("  " + _edge(f"{st.iters[j].dot_id}:itervar", f"{rel.dot_id}:{port}"))
            for port, j in rel.outputs:
                inner.append("  " + _edge(f"{rel.dot_id}:{port}", f"{st.iters[j].dot_id}:itervar"))
        if not st.iters:  # an input has no loops; keep its (empty) cluster visible by name
            inner.append("  " + _node(f"{st.dot_id}_placeholder", "", style="invis"))
        body += [*inner, "  }"]
    return _graph("IterVar Relationship Graph", "TB", body)


# ----------------------------------------------------------------------------- public API


def _dump(source: str, show_svg: bool, dot_file_path: str, output_dot_string: bool, what: str):
    if dot_file_path:
        write_text(dot_file_path, source, f"tedd.{what}(dot_file_path=...)")
    if show_svg:
        svg = run_dot(source, "svg", what=f"tedd.{what}(show_svg=True)")
        try:
            from IPython.display import SVG, display
        except ImportError as err:
            raise TVMError(
                f"tedd.{what}(show_svg=True) shows the picture in a Jupyter notebook and needs "
                "IPython; outside a notebook pass dot_file_path=... or output_dot_string=True"
            ) from err
        display(SVG(svg))
    return source if output_dot_string else None


def viz_dataflow_graph(
    sch: Schedule, show_svg: bool = False, dot_file_path: str = "", output_dot_string: bool = False
) -> str | None:
    """The stages as boxes with numbered input/output ports, linked through their tensors
    (ovals showing shape and dtype).

    >>> dot = tedd.viz_dataflow_graph(s, output_dot_string=True)
    """
    stages = _model(sch, "viz_dataflow_graph", need_range=False)
    return _dump(
        _dataflow_source(stages), show_svg, dot_file_path, output_dot_string, "viz_dataflow_graph"
    )


def viz_schedule_tree(
    sch: Schedule, show_svg: bool = False, dot_file_path: str = "", output_dot_string: bool = False
) -> str | None:
    """Each stage as a block of its loops (outermost first) and its compute, linked to the
    loop of the stage it is computed at, or to ROOT.

    >>> tedd.viz_schedule_tree(s, dot_file_path="/tmp/tree.dot")
    """
    stages = _model(sch, "viz_schedule_tree")
    return _dump(
        _schedule_tree_source(stages),
        show_svg,
        dot_file_path,
        output_dot_string,
        "viz_schedule_tree",
    )


def viz_itervar_relationship_graph(
    sch: Schedule, show_svg: bool = False, dot_file_path: str = "", output_dot_string: bool = False
) -> str | None:
    """Each stage's IterVars linked through its Split / Fuse / Singleton relations.

    >>> tedd.viz_itervar_relationship_graph(s, output_dot_string=True)
    """
    stages = _model(sch, "viz_itervar_relationship_graph")
    source = _itervar_graph_source(stages)
    return _dump(
        source, show_svg, dot_file_path, output_dot_string, "viz_itervar_relationship_graph"
    )


__all__ = ["viz_dataflow_graph", "viz_itervar_relationship_graph", "viz_schedule_tree"]
