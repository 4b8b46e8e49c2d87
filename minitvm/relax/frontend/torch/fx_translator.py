"""`from_fx`: a torch.fx GraphModule (from `torch.fx.symbolic_trace`) into a relax IRModule."""

from __future__ import annotations

import inspect
import operator
from collections.abc import Sequence
from typing import Any

from ....error import FrontendError
from ....ir.module import IRModule
from ....runtime import ndarray as nd
from ...expr import Var
from ...struct_info import TensorStructInfo
from . import _modules, _ops
from ._importer import Converter, Importer, aten_converter, bind_output, finished_module, to_numpy
from ._inplace import (
    FX_INPLACE_OPERATORS,
    FX_VIEWS,
    aten_is_view,
    aten_writes,
    first_operand,
    is_inplace_name,
)

__all__ = ["from_fx"]

# Python's operator functions (`a & b` traces to operator.and_): the trailing _ of and_ or
# or_ is not torch's in-place naming; only iadd, iand... write their first operand
_PYTHON_OPERATORS = frozenset(
    getattr(operator, name) for name in dir(operator) if not name.startswith("__")
)


def from_fx(
    graph_module: Any,
    input_info: Sequence[tuple[Sequence[Any], str]],
    keep_params_as_input: bool = False,
    unwrap_unit_return_tuple: bool = False,
    no_bind_return_tuple: bool = False,
) -> IRModule:
    """Import a traced torch module; input_info is [(shape, dtype), ...] per graph input.

    A dim given as a string ("n") is symbolic, shared by every input that names it. Weights
    become constants, or with keep_params_as_input=True extra inputs (sorted by name) whose
    values are in the attr "params" (see `relax.frontend.detach_params`). Modules import in
    inference mode whatever their training flag, as in TVM: batch norm reads its running
    statistics and dropout is the identity. In-place calls (`x.fill_(1.5)`, `x += y`,
    `inplace=True`) are functionalized: the result replaces the operand for later uses.
    >>> mod = from_fx(torch.fx.symbolic_trace(model.eval()), [((1, 3, 224, 224), "float32")])
    """
    from torch import fx

    if not isinstance(graph_module, fx.GraphModule):
        raise FrontendError(
            f"from_fx: expected a torch.fx.GraphModule, got {type(graph_module).__name__}; "
            "trace the model first: torch.fx.symbolic_trace(model)"
        )
    t = Importer("from_fx")
    placeholders = [n for n in graph_module.graph.nodes if n.op == "placeholder"]
    if len(input_info) != len(placeholders):
        raise FrontendError(
            f"from_fx: the graph has {len(placeholders)} inputs "
            f"({', '.join(n.name for n in placeholders)}) but input_info describes "
            f"{len(input_info)}; pass one (shape, dtype) per input"
        )
    inputs = [_input_var(t, i, info) for i, info in enumerate(input_info)]
    params, values = [], []
    if keep_params_as_input:
        for name, p in sorted(graph_module.named_parameters(), key=lambda kv: kv[0]):
            var = Var(name.replace(".", "_"), TensorStructInfo(tuple(p.shape), t.dtype(p.dtype)))
            t.params[id(p)] = var
            params.append(var)
            values.append(nd.array(to_numpy(p)))
    attrs = {"num_input": len(inputs)} if keep_params_as_input else None
    modules = dict(graph_module.named_modules())
    module_table = _modules.table()
    view_modules = _modules.view_modules()

    def lookup(node) -> Converter | None:
        if node.op == "call_module":
            convert = module_table.get(type(modules[node.target]))
            module = modules[node.target]
            return None if convert is None else (lambda t, *a, **k: convert(t, module, *a, **k))
        if node.op == "call_method":
            name = node.target
            return _ops.METHODS.get(name) or _ops.FUNCTIONS.get(name) or _inplace(name)
        if hasattr(node.target, "_overloadpacket"):  # aten ops, as in make_fx / dynamo graphs
            return aten_converter(node)
        name = getattr(node.target, "__name__", None)
        return _ops.FX.get(name) or _ops.FUNCTIONS.get(name) or _inplace(name)

    def writes(node) -> tuple:
        """The operand a call overwrites: its first, for in-place methods, functions, modules."""
        if hasattr(node.target, "_overloadpacket"):
            return aten_writes(node)
        first = first_operand(node)
        if first is None:
            return ()
        if node.op == "call_module":
            return (first,) if getattr(modules[node.target], "inplace", False) is True else ()
        name = node.target if node.op == "call_method" else getattr(node.target, "__name__", None)
        if node.op == "call_function" and node.target in _PYTHON_OPERATORS:  # and_ is a & b
            return (first,) if name in FX_INPLACE_OPERATORS else ()
        if is_inplace_name(name):
            return (first,)
        return (first,) if _sets_inplace(node) else ()

    def is_view(node) -> bool:
        if node.op == "call_module":
            return isinstance(modules[node.target], view_modules)
        if hasattr(node.target, "_overloadpacket"):
            return aten_is_view(node)
        name = node.target if node.op == "call_method" else getattr(node.target, "__name__", None)
        return name in FX_VIEWS

    def describe(node) -> tuple[str, str]:
        where = f"node {node.name!r}"
        if node.op == "call_module":
            cls = type(modules[node.target])
            return (
                f"{cls.__module__.split('.modules.')[0]}.{cls.__name__}",
                f"{where}, module {node.target!r}",
            )
        if node.op == "call_method":
            return f"Tensor.{node.target}", where
        if hasattr(node.target, "_overloadpacket"):
            return str(node.target), where
        return (
            f"{getattr(node.target, '__module__', None) or ''}.{getattr(node.target, '__name__', node.target)}".lstrip(
                "."
            ),
            where,
        )

    with t.bb.function("main", params=inputs + params, attrs=attrs):
        with t.bb.dataflow():
            nodes = list(graph_module.graph.nodes)
            for node, var in zip(placeholders, inputs):
                t.env[node] = var
            for node in nodes:
                if node.op == "get_attr":
                    t.env[node] = _fetch_attr(t, graph_module, node.target)
            attrs_read = [n for n in nodes if n.op == "get_attr"]
            t.convert_nodes(
                nodes,
                lookup,
                describe,
                writes=writes,
                is_view=is_view,
                same_tensor=lambda node: [
                    n
                    for n in attrs_read
                    if getattr(node, "op", None) == "get_attr" and n.target == node.target
                ],
                hint="Replace them in the model with supported operations, or report the "
                "missing converters.",
            )
            output = next(n for n in nodes if n.op == "output")
            result = t.retrieve(output.args[0])
            out = bind_output(
                t.bb,
                result,
                is_tuple=isinstance(result, list | tuple),
                unwrap_unit_return_tuple=unwrap_unit_return_tuple,
                no_bind_return_tuple=no_bind_return_tuple,
            )
        t.bb.emit_func_output(out)
    return finished_module(t.bb, values if keep_params_as_input else None)


def _inplace(name: str | None) -> Converter | None:
    """Tensor.add_ and friends compute what add computes; the walk applies the write."""
    if is_inplace_name(name):
        return _ops.METHODS.get(name[:-1]) or _ops.FUNCTIONS.get(name[:-1])
    return None


def _sets_inplace(node: Any) -> bool:
    """A call such as F.relu(x, inplace=True), by keyword or by position."""
    if node.kwargs.get("inplace") is True:
        return True
    if node.op != "call_function" or not any(a is True for a in node.args[1:]):
        return False
    try:
        bound = inspect.signature(node.target).bind(*node.args, **node.kwargs)
    except (TypeError, ValueError):  # builtins without a signature, or a mismatched call
        return False
    return bound.arguments.get("inplace") is True


def _input_var(t: Importer, index: int, info: Any) -> Var:
    try:
        shape, dtype = info
        shape = tuple(shape)
    except (TypeError, ValueError) as err:
        raise FrontendError(
            f"from_fx: input_info[{index}] must be (shape, dtype), e.g. ((1, 3, 224, 224), "
            f"'float32'); got {info!r}"
        ) from err
    dims = tuple(t.sym_var(d) if isinstance(d, str) else int(d) for d in shape)
    return Var(f"inp_{index}", TensorStructInfo(dims, t.dtype(dtype)))


def _fetch_attr(t: Importer, module: Any, target: str) -> Any:
    import torch

    value = module
    for part in target.split("."):
        value = getattr(value, part)
    return t.tensor(value) if isinstance(value, torch.Tensor) else value
