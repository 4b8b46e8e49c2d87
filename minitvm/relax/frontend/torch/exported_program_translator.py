"""`from_exported_program`: a torch.export ExportedProgram into a relax IRModule."""

from __future__ import annotations

import operator
from typing import Any

from ....error import FrontendError, OpAttributeUnImplemented
from ....ir.module import IRModule
from ....runtime import ndarray as nd
from ...expr import Var
from ...struct_info import TensorStructInfo
from . import _ops
from ._importer import Converter, Importer, aten_converter, bind_output, to_numpy

__all__ = ["from_exported_program"]

_PYTHON_OPS = {
    operator.getitem,
    operator.add,
    operator.sub,
    operator.mul,
    operator.floordiv,
    operator.truediv,
}


def from_exported_program(
    exported_program: Any,
    *,
    keep_params_as_input: bool = False,
    unwrap_unit_return_tuple: bool = False,
    no_bind_return_tuple: bool = False,
) -> IRModule:
    """Import a torch.export program; a torch.export.Dim becomes a symbolic dim of the inputs.

    "main" returns a tuple of the program's outputs (unwrap_unit_return_tuple=True returns a
    single output bare). Parameters become constants, or with keep_params_as_input=True extra
    inputs after the user's whose values are in the attr "params".
    >>> ep = torch.export.export(model.eval(), (x,)); mod = from_exported_program(ep)
    """
    import torch
    from torch.export.graph_signature import InputKind, OutputKind

    if not isinstance(exported_program, torch.export.ExportedProgram):
        raise FrontendError(
            f"from_exported_program: expected a torch.export.ExportedProgram, got "
            f"{type(exported_program).__name__}; make one with torch.export.export(model, args)"
        )
    ep = exported_program
    t = Importer("from_exported_program")
    graph = ep.graph
    by_name = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    inputs, params, values = [], [], []
    for spec in ep.graph_signature.input_specs:
        node = by_name[spec.arg.name]
        if spec.kind == InputKind.USER_INPUT:
            var = _user_input(t, node)
            inputs.append(var)
            t.env[node] = var
        elif spec.kind == InputKind.PARAMETER and keep_params_as_input:
            tensor = ep.state_dict[spec.target]
            var = Var(spec.arg.name, TensorStructInfo(tuple(tensor.shape), t.dtype(tensor.dtype)))
            params.append(var)
            values.append(nd.array(to_numpy(tensor)))
            t.env[node] = var
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            store = ep.state_dict if spec.target in ep.state_dict else ep.constants
            t.env[node] = t.tensor(store[spec.target])
        else:
            raise OpAttributeUnImplemented(
                f"from_exported_program: input {spec.arg.name!r} is of kind {spec.kind.name}; "
                "only tensors (user inputs, parameters, buffers, constants) are supported"
            )
    user_outputs = [s.kind == OutputKind.USER_OUTPUT for s in ep.graph_signature.output_specs]
    attrs = {"num_input": len(inputs)} if keep_params_as_input else None

    with t.bb.function("main", params=inputs + params, attrs=attrs):
        with t.bb.dataflow():
            t.convert_nodes(graph.nodes, _lookup, _describe)
            output = next(n for n in graph.nodes if n.op == "output")
            result = [v for v, keep in zip(t.retrieve(output.args[0]), user_outputs) if keep]
            out = bind_output(
                t.bb,
                result,
                is_tuple=True,
                unwrap_unit_return_tuple=unwrap_unit_return_tuple,
                no_bind_return_tuple=no_bind_return_tuple,
            )
        t.bb.emit_func_output(out)
    mod = t.bb.get()
    if keep_params_as_input:
        mod["main"] = mod["main"].with_attr("params", values)
    return mod


def _user_input(t: Importer, node: Any) -> Var:
    import torch

    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        raise OpAttributeUnImplemented(
            f"from_exported_program: input {node.name!r} is a {type(val).__name__}, not a tensor; "
            "pass tensors only (fold Python scalars into the model)"
        )
    dims = tuple(_dim(t, d, node.name) for d in val.shape)
    return Var(node.name, TensorStructInfo(dims, t.dtype(val.dtype)))


def _dim(t: Importer, d: Any, name: str) -> Any:
    import torch

    if not isinstance(d, torch.SymInt):
        return int(d)
    expr = d.node.expr
    if not expr.is_Symbol:
        raise OpAttributeUnImplemented(
            f"from_exported_program: input {name!r} has a dim {expr} that is an expression of "
            "symbols; give each dynamic input dim its own torch.export.Dim"
        )
    return t.sym_var(str(expr))


def _lookup(node: Any) -> Converter | None:
    if node.op != "call_function":
        return None
    if node.target in _PYTHON_OPS:
        return _ops.FUNCTIONS.get(node.target.__name__)
    return aten_converter(node)


def _describe(node: Any) -> tuple[str, str]:
    where = f"node {node.name!r}"
    stack = node.meta.get("nn_module_stack") or {}
    if stack:
        path, cls = list(stack.values())[-1]
        cls_name = cls if isinstance(cls, str) else getattr(cls, "__qualname__", str(cls))
        where += f", module {path!r} ({cls_name.rsplit('.', 1)[-1]})"
    return str(node.target), where
