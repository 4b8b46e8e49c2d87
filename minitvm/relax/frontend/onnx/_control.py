"""ONNX subgraphs (GRAPH attributes) and the If op.

A subgraph is converted by the same node machinery as the main graph, in a scope of its own:
its formal inputs and its values shadow, and it reads the enclosing graphs' values by name
(ONNX's lexical scoping), so a value computed outside the subgraph is shared, not copied.

An If whose condition is known at import converts only the branch it picks, so its outputs stay
foldable. Otherwise it becomes a relax If whose branches are the two subgraphs. relax keeps
control flow out of dataflow blocks: the first such If met while importing into a dataflow
block raises `ControlFlowFound`, and the import restarts without dataflow blocks (`_dataflow`
regroups the bindings afterwards). Branch outputs whose shapes differ are widened to their
rank inside each branch and given fresh symbolic dims after the If, so later converters see a
shape; the VM binds those dims when the If has run. A sequence output leaves the If item by item
(both branches must give it with one length) and is gathered again after it.

Loop and Scan (`_unroll`) run their body through `run_body` once per iteration.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ....error import FrontendError, MiniTVMError, OpAttributeInvalid, OpNotImplemented
from ....tir.expr import IntImm, PrimExpr
from ....tir.expr import Var as TirVar
from ...expr import BindingBlock, Expr, If, SeqExpr, Tuple, TupleGetItem
from ...struct_info import TensorStructInfo
from . import _checks
from ._helpers import _required

MAX_NESTING = 16  # subgraphs inside subgraphs; exported models nest two or three deep
MAX_UNROLLED_NODES = 100_000  # subgraph nodes converted in one import, all iterations counted
_BODY_TYPES = (None, "tensor_type", "sequence_type", "optional_type")


class ControlFlowFound(Exception):
    """An If that runs at run time was met while importing into a dataflow block."""


# ----------------------------------------------------------------------------- subgraphs


def walk_nodes(graph: Any) -> Iterator[tuple[Any, str]]:
    """Every node of `graph` and of its subgraphs, with where it sits ("" in `graph` itself).

    Iterative, and bounded by MAX_NESTING, so a hostile model cannot exhaust the stack here.
    """
    from .onnx_frontend import node_label

    todo = [(graph, "", 0)]
    while todo:
        g, where, depth = todo.pop()
        for node in g.node:
            yield node, where
            for a in node.attribute:
                subs = ([a.g] if a.HasField("g") else []) + list(a.graphs)
                if subs and depth + 1 > MAX_NESTING:
                    raise FrontendError(
                        f"from_onnx: {node_label(node)}{where} holds a subgraph nested more than "
                        f"{MAX_NESTING} deep; flatten the model's control flow"
                    )
                todo += [(s, f" in {a.name} of {node_label(node)}{where}", depth + 1) for s in subs]


@dataclass
class Body:
    """A subgraph checked once, converted once per use by `run_body`."""

    graph: Any
    name: str  # the attribute holding it: "then_branch", "body", ...
    inputs: list[str]
    outputs: list[str]
    initializers: dict[str, Any]


def body_of(ctx: Any, attrs: dict, name: str) -> Body:
    """The subgraph in attribute `name`, its names checked (one producer each) and its
    initializers read; inputs and outputs must be tensors, sequences or optionals."""
    from .onnx_frontend import _require_onnx

    onnx = _require_onnx()
    graph = _required(attrs, name)
    if not isinstance(graph, onnx.GraphProto):
        raise OpAttributeInvalid(f"attribute {name!r} is not a graph")
    try:
        _checks.check_ssa(graph)
    except FrontendError as err:
        raise FrontendError(f"in its {name}: {str(err).removeprefix('from_onnx: ')}") from err
    for kind, infos in (("input", graph.input), ("output", graph.output)):
        for info in infos:
            # sequences and optionals are import-time values (`_sequence`); a sequence leaves
            # an If that runs at run time item by item (`_branch`)
            if info.type.WhichOneof("value") not in _BODY_TYPES:
                raise OpNotImplemented(
                    f"its {name} has the {kind} {info.name!r} of type "
                    f"{info.type.WhichOneof('value')}; minitvm imports tensors, sequences and "
                    "optionals only"
                )
    outputs = [o.name for o in graph.output]
    if not all(outputs):
        raise OpAttributeInvalid(f"its {name} has an output without a name")
    inits = {
        t.name: ctx.initializer(
            t.name, _checks.tensor_array(onnx, t, f"initializer {t.name!r} of its {name}")
        )
        for t in graph.initializer
    }
    return Body(graph, name, [i.name for i in graph.input], outputs, inits)


def run_body(ctx: Any, body: Body, bound: list, what: str) -> list:
    """Convert `body` with its formal inputs bound to `bound`; the values of its outputs.

    `what` names this use in messages ("then_branch", "body (iteration 3)").
    """
    from .onnx_frontend import _convert_node

    if len(bound) != len(body.inputs):
        raise OpAttributeInvalid(
            f"its {body.name} declares {len(body.inputs)} inputs, the node gives it {len(bound)}"
        )
    depth = ctx.graph_depth
    if depth >= MAX_NESTING:
        raise FrontendError(f"subgraphs nest more than {MAX_NESTING} deep")
    ctx.subgraph_nodes += len(body.graph.node)
    if ctx.subgraph_nodes > MAX_UNROLLED_NODES:
        raise FrontendError(
            f"converting its {what} brings the subgraph nodes converted (every loop iteration "
            f"counted) past {MAX_UNROLLED_NODES}; export the model with fewer iterations"
        )
    outer_values, outer_node = ctx.values, ctx.node
    scope = ChainMap(dict(body.initializers), outer_values)
    scope.update(zip(body.inputs, bound))
    ctx.values, ctx.graph_depth = scope, depth + 1
    try:
        for node in body.graph.node:
            _convert_node(ctx, node)
        missing = [n for n in body.outputs if n not in scope]
        if missing:
            raise FrontendError(f"its outputs {missing} are produced by no node")
        from ._sequence import check_declared_kind

        for info in body.graph.output:
            check_declared_kind(info, scope[info.name])
        return [scope[n] for n in body.outputs]
    except MiniTVMError as err:
        raise type(err)(f"in its {what}: {str(err).removeprefix('from_onnx: ')}") from err
    finally:
        ctx.values, ctx.node, ctx.graph_depth = outer_values, outer_node, depth


# ----------------------------------------------------------------------------- If


def convert_if(ctx: Any, inputs: list, attrs: dict) -> list:
    """If: the picked branch's outputs (condition known), else the outputs of a relax If."""
    branches = [body_of(ctx, attrs, "then_branch"), body_of(ctx, attrs, "else_branch")]
    if len(branches[0].outputs) != len(branches[1].outputs):
        raise OpAttributeInvalid(
            f"then_branch gives {len(branches[0].outputs)} outputs, else_branch "
            f"{len(branches[1].outputs)}; both must give one per output of the If"
        )
    cond = inputs[0]
    known = ctx.known_or_none(cond)
    if isinstance(known, np.ndarray):
        if known.size != 1:
            raise OpAttributeInvalid(f"the condition has shape {known.shape}; If takes one value")
        picked = branches[0] if bool(known.reshape(-1)[0]) else branches[1]
        return run_body(ctx, picked, [], picked.name)
    if ctx.dataflow:
        raise ControlFlowFound
    cond = ctx.expr(cond)
    _check_condition(cond)
    built = [_branch(ctx, b) for b in branches]
    names = [*ctx.node.output, *[""] * len(branches[0].outputs)]
    layout = _same_layout(built[0][2], built[1][2], names)
    flat_names = [
        f"{name or f'output {i}'}" + ("" if n is None else f"[{j}]")
        for i, (name, n) in enumerate(zip(names, layout))
        for j in range(1 if n is None else n)
    ]
    joined = [
        _join(ctx, a, b, flat_names[i]) for i, (a, b) in enumerate(zip(built[0][1], built[1][1]))
    ]
    if not joined:  # only empty sequences: nothing is computed
        return _regroup([], layout)
    seqs = [_seq(ctx, bindings, exprs, joined) for bindings, exprs, _ in built]
    result = ctx.emit(If(cond, seqs[0], seqs[1]))
    items = (
        [result]
        if len(joined) == 1
        else [ctx.emit(TupleGetItem(result, i)) for i in range(len(joined))]
    )
    flat = [
        ctx.bb.match_cast(item, sinfo) if widen else item
        for item, (sinfo, widen) in zip(items, joined)
    ]
    return _regroup(flat, layout)


def _same_layout(a: list, b: list, names: list) -> list:
    """The branches' output layouts (None: a tensor, n: a sequence of n items), which must agree:
    a relax If gives one structure."""
    for i, (la, lb) in enumerate(zip(a, b)):
        if la != lb:
            what = {None: "a tensor"}
            raise OpNotImplemented(
                f"output {names[i] or i!r} is {what.get(la, f'a sequence of {la} items')} in "
                f"then_branch and {what.get(lb, f'a sequence of {lb} items')} in else_branch; "
                "an If whose condition is computed at run time must give one structure"
            )
    return a


def _regroup(flat: list, layout: list) -> list:
    """The If's outputs from its flat items: a sequence output gathers its items again."""
    from ._sequence import SequenceValue

    out, k = [], 0
    for n in layout:
        if n is None:
            out.append(flat[k])
            k += 1
        else:
            out.append(SequenceValue(tuple(flat[k : k + n])))
            k += n
    return out


def _check_condition(cond: Expr) -> None:
    sinfo = cond.struct_info
    if not isinstance(sinfo, TensorStructInfo):
        raise OpAttributeInvalid(f"the condition is a {type(sinfo).__name__}, not a tensor")
    static = sinfo.static_shape()
    if static is not None and int(np.prod(static)) != 1:
        raise OpAttributeInvalid(f"the condition has shape {static}; If takes one value")


def _branch(ctx: Any, body: Body) -> tuple[list, list[Expr], list]:
    """The bindings a branch emits (in a block of its own), its outputs as expressions with
    each sequence's items in its place, and the layout (None: a tensor, n: n items)."""
    from ._sequence import sequence_items

    bb = ctx.bb
    bb._begin_rewrite_block(dataflow=False)
    exprs, layout, names = [], [], []
    try:
        values = run_body(ctx, body, [], body.name)
        for name, v in zip(body.outputs, values):
            items = sequence_items(ctx, v, f"its {body.name}'s output {name!r}")
            if items is None:
                exprs.append(ctx.expr(v))
                names.append(name)
            else:
                exprs += [ctx.expr(x) for x in items]
                names += [f"{name}[{j}]" for j in range(len(items))]
            layout.append(None if items is None else len(items))
    finally:
        bindings = bb._end_rewrite_block()
    for name, e in zip(names, exprs):
        if not isinstance(e.struct_info, TensorStructInfo):
            raise OpNotImplemented(
                f"its {body.name} gives {name!r} as a {type(e.struct_info).__name__}; only "
                "tensors and sequences of tensors can leave an If"
            )
    return bindings, exprs, layout


def _same_dim(a: Any, b: Any) -> bool:
    from ....ir.structural import structural_equal

    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value == b.value
    return isinstance(a, PrimExpr) and isinstance(b, PrimExpr) and structural_equal(a, b)


def _join(ctx: Any, a: Expr, b: Expr, name: str) -> tuple[TensorStructInfo, bool]:
    """The struct info both branches' outputs fit, and whether they must be widened to it
    (their shapes differ: the differing dims become fresh symbolic dims, bound after the If)."""
    sa, sb = a.struct_info, b.struct_info
    if str(sa.dtype) != str(sb.dtype):
        raise OpAttributeInvalid(
            f"output {name!r} is {sa.dtype} in then_branch and {sb.dtype} in else_branch; "
            "both branches must give one type"
        )
    if sa.ndim != sb.ndim or sa.ndim < 0:
        raise OpNotImplemented(
            f"output {name!r} has rank {sa.ndim} in then_branch and {sb.ndim} in else_branch; "
            "a relax If gives one rank (reshape the branches to a common rank)"
        )
    if sa.shape is not None and sb.shape is not None:
        pairs = list(zip(sa.shape, sb.shape))
    else:
        pairs = [(None, None)] * sa.ndim
    if all(_same_dim(da, db) for da, db in pairs):
        return sa, False
    ctx.if_dims += 1
    dims = tuple(
        da if _same_dim(da, db) else TirVar(f"{_ident(name)}_{ctx.if_dims}_dim{i}", "int64")
        for i, (da, db) in enumerate(pairs)
    )
    return TensorStructInfo(dims, sa.dtype), True


def _ident(name: str) -> str:
    from .onnx_frontend import _sanitize

    return _sanitize(name)


def _seq(ctx: Any, bindings: list, exprs: list, joined: list) -> SeqExpr:
    """A branch as a SeqExpr; an output whose shape differs from the other branch's is cast to
    its rank alone, so both branches give one struct info."""
    bb = ctx.bb
    bb._begin_rewrite_block(dataflow=False)
    try:
        for b in bindings:
            bb._append_binding(b)
        outs = [
            bb.match_cast(e, TensorStructInfo(None, sinfo.dtype, sinfo.ndim)) if widen else e
            for e, (sinfo, widen) in zip(exprs, joined)
        ]
    finally:
        bindings = bb._end_rewrite_block()
    body = outs[0] if len(outs) == 1 else Tuple(tuple(outs))
    return SeqExpr((BindingBlock(tuple(bindings)),) if bindings else (), body)
