"""ONNX ops defined by a function body (Swish, Attention, NegativeLogLikelihoodLoss, ...).

An op that has no converter of its own but whose schema, at the model's opset, gives a function
body is imported as that body: its nodes are renamed into the graph (formal inputs and outputs
become the node's, every other value gets a prefix unique to this node), attribute references
take the node's attributes (or the schema's defaults), and each body node is converted in turn
at the body's own opset. A body using an op that minitvm does not support is refused whole.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....error import FrontendError, MiniTVMError, OpNotImplemented
from ...expr import Expr
from ...struct_info import TensorStructInfo
from ._control import walk_nodes
from ._shape import SymTensor

_DEFAULT_DOMAINS = ("", "ai.onnx")
_MAX_DEPTH = 8  # bodies that use other function ops; ONNX's nest two or three deep


def _schema(onnx: Any, node: Any, opset: int) -> Any:
    try:
        return onnx.defs.get_schema(node.op_type, opset, node.domain)
    except onnx.defs.SchemaError:
        return None


def _body_version(schema: Any, opset: int) -> tuple[int, bool] | None:
    """(the newest body version at or before `opset`, whether it depends on the node's types)."""
    found = [(v, False) for v in schema.function_opset_versions if v <= opset]
    found += [(v, True) for v in schema.context_dependent_function_opset_versions if v <= opset]
    return max(found) if found else None


def has_body(onnx: Any, node: Any, opset: int) -> bool:
    """Whether `node`'s op, at `opset`, is defined by a function body."""
    if node.domain not in _DEFAULT_DOMAINS:
        return False
    schema = _schema(onnx, node, opset)
    return schema is not None and _body_version(schema, opset) is not None


def _with_defaults(onnx: Any, node: Any, schema: Any) -> Any:
    """A copy of `node` carrying every attribute the schema gives a default for."""
    full = onnx.NodeProto()
    full.CopyFrom(node)
    given = {a.name for a in node.attribute}
    for name, attr in schema.attributes.items():
        if name not in given and attr.default_value.name:
            full.attribute.append(attr.default_value)
    return full


def _type_proto(onnx: Any, value: Any) -> Any:
    """The ONNX TypeProto of an input value (an empty one for an omitted input)."""
    helper = onnx.helper
    if value is None:
        return onnx.TypeProto()
    if isinstance(value, np.ndarray):
        return helper.make_tensor_type_proto(
            helper.np_dtype_to_tensor_dtype(value.dtype), value.shape
        )
    if isinstance(value, SymTensor):
        return helper.make_tensor_type_proto(onnx.TensorProto.INT64, value.values.shape)
    sinfo = value.struct_info if isinstance(value, Expr) else None
    if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None:
        raise FrontendError(f"an input of this function op is not a tensor of known rank ({sinfo})")
    dims = [int(d.value) if hasattr(d, "value") else str(d) for d in sinfo.shape]
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(str(sinfo.dtype)))
    return helper.make_tensor_type_proto(elem, dims)


def body_of(ctx: Any, onnx: Any, node: Any, inputs: list) -> tuple[Any, int]:
    """(FunctionProto, its default-domain opset) defining `node` at the model's opset."""
    schema = _schema(onnx, node, ctx.opset)
    version, contextual = _body_version(schema, ctx.opset)
    if contextual:
        types = [_type_proto(onnx, v).SerializeToString() for v in inputs]
        full = _with_defaults(onnx, node, schema)
        text = schema.get_context_dependent_function_with_opset_version(
            version, full.SerializeToString(), types
        )
    else:
        text = schema.get_function_with_opset_version(version)
    func = onnx.FunctionProto()
    func.ParseFromString(text)
    opsets = [o.version for o in func.opset_import if o.domain in _DEFAULT_DOMAINS]
    return func, (opsets[0] if opsets else ctx.opset)


def _renamed_nodes(onnx: Any, node: Any, func: Any, schema: Any, prefix: str) -> list:
    """The body's nodes with the node's value names and attributes substituted in."""
    names = {f: (node.input[i] if i < len(node.input) else "") for i, f in enumerate(func.input)}
    names.update({f: node.output[i] for i, f in enumerate(func.output) if i < len(node.output)})
    names = {k: v for k, v in names.items() if v or k in func.input}
    attrs = {a.name: a for a in _with_defaults(onnx, node, schema).attribute}

    def rename(name: str) -> str:
        if not name:
            return ""
        return names[name] if name in names else prefix + name

    return [_renamed_node(onnx, inner, rename, attrs) for inner in func.node]


def _renamed_node(onnx: Any, inner: Any, rename: Any, attrs: dict) -> Any:
    """A copy of a body node with its names renamed and attribute references resolved; the
    same, recursively, inside its subgraphs (If, Loop and Scan read the body's values by name)."""
    copy = onnx.NodeProto()
    copy.CopyFrom(inner)
    del copy.input[:]
    copy.input.extend(rename(n) for n in inner.input)
    del copy.output[:]
    copy.output.extend(rename(n) for n in inner.output)
    del copy.attribute[:]
    for a in inner.attribute:
        if a.ref_attr_name:
            if a.ref_attr_name not in attrs:
                continue  # unset and without default: the inner op's own default applies
            ref = onnx.AttributeProto()
            ref.CopyFrom(attrs[a.ref_attr_name])
            ref.name = a.name
            copy.attribute.append(ref)
            continue
        attr = copy.attribute.add()
        attr.CopyFrom(a)
        if a.HasField("g"):
            _rename_graph(onnx, attr.g, rename, attrs)
        for g in attr.graphs:
            _rename_graph(onnx, g, rename, attrs)
    return copy


def _rename_graph(onnx: Any, graph: Any, rename: Any, attrs: dict) -> None:
    """Rename every value of a subgraph of a function body in place (schema bodies are ONNX's
    own and nest a level or two, so recursion is bounded)."""
    for infos in (graph.input, graph.output, graph.value_info, graph.initializer):
        for info in infos:
            info.name = rename(info.name)
    nodes = [_renamed_node(onnx, n, rename, attrs) for n in graph.node]
    del graph.node[:]
    graph.node.extend(nodes)


def expand(ctx: Any, node: Any, inputs: list, convert_node: Any, supported: Any) -> list:
    """Convert `node` as its function body; the values of its outputs, in order."""
    from .onnx_frontend import _require_onnx

    onnx = _require_onnx()
    depth = getattr(ctx, "function_depth", 0)
    if depth >= _MAX_DEPTH:
        raise FrontendError(f"function bodies nest more than {_MAX_DEPTH} deep")
    func, body_opset = body_of(ctx, onnx, node, inputs)
    schema = _schema(onnx, node, ctx.opset)
    ctx.function_count = getattr(ctx, "function_count", 0) + 1
    prefix = f"_{node.op_type}_{ctx.function_count}__"
    body = _renamed_nodes(onnx, node, func, schema, prefix)
    graph = onnx.GraphProto()
    graph.node.extend(body)
    missing = sorted(
        {
            f"{n.domain or 'ai.onnx'}::{n.op_type}"
            for n, _ in walk_nodes(graph)
            if not supported(n) and not has_body(onnx, n, body_opset)
        }
    )
    if missing:
        raise OpNotImplemented(
            f"{node.op_type} (opset {ctx.opset}) is imported through its ONNX function body, "
            f"which uses {', '.join(missing)}: not supported"
        )
    outer, outer_opset = ctx.node, ctx.opset
    ctx.opset, ctx.function_depth = body_opset, depth + 1
    try:
        for inner in body:
            convert_node(ctx, inner)
    except MiniTVMError as err:
        inner = str(err).removeprefix("from_onnx: ")
        raise type(err)(f"in its ONNX function body (opset {body_opset}): {inner}") from err
    finally:
        ctx.node, ctx.opset, ctx.function_depth = outer, outer_opset, depth
    values = []
    for name in node.output:
        if name and name not in ctx.values:
            raise FrontendError(f"the function body of {node.op_type} does not produce {name!r}")
        values.append(ctx.values[name] if name else None)
    return values
