"""`from_exported_program`: a torch.export ExportedProgram into a relax IRModule."""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from ....error import FrontendError, MiniTVMError, OpAttributeUnImplemented
from ....ir.module import IRModule
from ....runtime import ndarray as nd
from ...expr import Call, Expr, Var
from ...struct_info import TensorStructInfo
from . import _ops
from ._importer import (
    Converter,
    Importer,
    aten_converter,
    aten_op_converter,
    bind_output,
    finished_module,
    to_numpy,
)
from ._inplace import aten_is_view, aten_writes

# TVM's name for the importer a custom converter receives (`custom_convert_map` functions take
# `(node, importer)`; TVM's tutorials annotate the importer with this class).
ExportedProgramImporter = Importer

__all__ = ["ExportedProgramImporter", "from_exported_program"]

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
    custom_convert_map: Mapping[str, Callable] | None = None,
    run_ep_decomposition: bool = True,
) -> IRModule:
    """Import a torch.export program; a torch.export.Dim becomes a symbolic dim of the inputs.

    "main" returns a tuple of the program's outputs (unwrap_unit_return_tuple=True returns a
    single output bare). A program exported in train mode also updates buffers (BatchNorm's
    running_mean, running_var, num_batches_tracked): their new values follow the user's
    outputs, and main's attr "buffer_mutations" names those buffers (state_dict keys) in
    order. Parameters become constants, or with keep_params_as_input=True extra
    inputs after the user's whose values are in the attr "params".

    run_ep_decomposition=True first runs torch's `run_decompositions()`, which functionalizes
    in-place ops (`masked_fill_` -> `masked_fill`) and decomposes every op this importer has no
    converter for into core aten ops; ops it converts, and those in custom_convert_map, are
    kept whole. With False the program is imported as exported: each in-place write is applied
    to later uses of its tensor, or refused when a view of that tensor is read after it.

    custom_convert_map maps an aten op name as "op.overload" ("sigmoid.default"; the
    OpNotImplemented message prints them) to fn(node, importer) -> relax expression, which
    overrides the built-in converter or adds a missing one. `importer.retrieve_args(node)`
    gives the converted arguments; emit through `importer.block_builder.emit(...)`:

    >>> ep = torch.export.export(model.eval(), (x,)); mod = from_exported_program(ep)
    >>> def relu_as_sigmoid(node, importer):
    ...     x = importer.retrieve_args(node)[0]
    ...     return importer.block_builder.emit(relax.op.sigmoid(x))
    >>> mod = from_exported_program(ep, custom_convert_map={"relu.default": relu_as_sigmoid})
    """
    import torch
    from torch.export.graph_signature import InputKind, OutputKind

    if not isinstance(exported_program, torch.export.ExportedProgram):
        raise FrontendError(
            f"from_exported_program: expected a torch.export.ExportedProgram, got "
            f"{type(exported_program).__name__}; make one with torch.export.export(model, args)"
        )
    custom = _check_custom_map(custom_convert_map)
    ep = _decompose(exported_program, custom) if run_ep_decomposition else exported_program
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
    specs = ep.graph_signature.output_specs
    user_outputs = [s.kind == OutputKind.USER_OUTPUT for s in specs]
    # a train-mode program also returns new values of buffers (BatchNorm's running stats):
    # they follow the user's outputs, named in order by the attr "buffer_mutations"
    mutations = [s.kind == OutputKind.BUFFER_MUTATION for s in specs]
    mutated = tuple(s.target for s, keep in zip(specs, mutations) if keep)
    attrs = {"num_input": len(inputs)} if keep_params_as_input else {}
    if mutated:
        attrs["buffer_mutations"] = mutated

    with t.bb.function("main", params=inputs + params, attrs=attrs or None):
        with t.bb.dataflow():
            t.convert_nodes(
                graph.nodes,
                lambda node: _lookup(node, custom),
                _describe,
                writes=lambda node: aten_writes(node) if _is_aten(node) else (),
                is_view=aten_is_view,
                hint=_hint(graph, custom, run_ep_decomposition),
            )
            output = next(n for n in graph.nodes if n.op == "output")
            values_out = t.retrieve(output.args[0])
            result = [v for v, keep in zip(values_out, user_outputs) if keep]
            result += [v for v, keep in zip(values_out, mutations) if keep]
            out = bind_output(
                t.bb,
                result,
                is_tuple=True,
                unwrap_unit_return_tuple=unwrap_unit_return_tuple,
                no_bind_return_tuple=no_bind_return_tuple,
            )
        t.bb.emit_func_output(out)
    return finished_module(t.bb, values if keep_params_as_input else None)


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


def _lookup(node: Any, custom: Mapping[str, Callable]) -> Converter | None:
    if node.op != "call_function":
        return None
    name = getattr(node.target, "__name__", None)
    if name in custom:
        return _custom_converter(name, custom[name], node)
    if node.target in _PYTHON_OPS:
        return _as_torch_sized(_ops.FUNCTIONS.get(node.target.__name__), node)
    return aten_converter(node)


def _as_torch_sized(convert: Converter | None, node: Any) -> Converter | None:
    """A size computed from symbolic sizes, as torch simplified it: where torch recorded the
    result as one symbol or a number (`s0 * s1 // s1` is `s0`), that is the value, so that
    later shapes compare equal to the inputs' dims."""
    if convert is None:
        return None

    def converted(t: Importer, *args, **kwargs) -> Any:
        import torch

        value = convert(t, *args, **kwargs)
        val = node.meta.get("val")
        if isinstance(val, torch.SymInt):
            expr = val.node.expr
            if expr.is_Integer:
                return int(expr)
            if expr.is_Symbol and str(expr) in t.sym_vars:
                return t.sym_vars[str(expr)]
        return value

    return converted


def _is_aten(node: Any) -> bool:
    return node.op == "call_function" and getattr(node.target, "namespace", None) == "aten"


# ----------------------------------------------------------------------------- decomposition


def _decompose(ep: Any, custom: Mapping[str, Callable]) -> Any:
    """ep.run_decompositions() with the default table less the ops converted whole here."""
    import torch

    table = torch.export.default_decompositions()
    for op in list(table.keys()):
        if _keep_whole(op, custom):
            del table[op]
    try:
        return ep.run_decompositions(table)
    except Exception as err:  # torch's own failure, reported with the way around it
        raise FrontendError(
            f"from_exported_program: torch's run_decompositions() failed "
            f"({type(err).__name__}: {err}); pass run_ep_decomposition=False to import the "
            "program as exported"
        ) from err


def _keep_whole(op: Any, custom: Mapping[str, Callable]) -> bool:
    """An op a converter takes as it is (in-place ops are always functionalized)."""
    if getattr(op, "__name__", None) in custom:
        return True
    schema = getattr(op, "_schema", None)
    if schema is None or any(
        a.alias_info is not None and a.alias_info.is_write for a in schema.arguments
    ):
        return False
    return aten_op_converter(op) is not None


# ----------------------------------------------------------------------------- custom converters


def _check_custom_map(custom: Mapping[str, Callable] | None) -> dict[str, Callable]:
    if custom is None:
        return {}
    if not isinstance(custom, Mapping):
        raise FrontendError(
            f"from_exported_program: custom_convert_map must be a dict from op name to "
            f"function, got {type(custom).__name__}; e.g. {{'sigmoid.default': fn}}"
        )
    for key, fn in custom.items():
        if not isinstance(key, str) or not callable(fn):
            raise FrontendError(
                f"from_exported_program: custom_convert_map entry {key!r}: {fn!r} must map an "
                "op name string such as 'sigmoid.default' to a function fn(node, importer)"
            )
        if key.startswith("aten."):
            raise FrontendError(
                f"from_exported_program: custom_convert_map key {key!r} names the op with its "
                f"namespace; write it as 'op.overload': {key.removeprefix('aten.')!r}"
            )
    return dict(custom)


def _custom_converter(key: str, fn: Callable, node: Any) -> Converter:
    """A (node, importer) user function as a converter; its failures name the map entry."""
    label = f"custom_convert_map[{key!r}] ({getattr(fn, '__qualname__', fn)!r})"

    def convert(t: Importer, *args, **kwargs) -> Any:
        try:
            out = fn(node, t)
        except MiniTVMError:
            raise
        except Exception as err:  # the user's code: say whose it is
            raise FrontendError(f"{label} raised {type(err).__name__}: {err}") from err
        if isinstance(out, Call):  # returned un-emitted: bind it, as emit would have
            out = t.emit(out)
        if not _is_relax_value(out):
            raise FrontendError(
                f"{label} returned {type(out).__name__}; return the relax expression it "
                "emits, e.g. importer.block_builder.emit(relax.op.sigmoid(x))"
            )
        return out

    return convert


def _is_relax_value(value: Any) -> bool:
    if isinstance(value, list | tuple):
        return all(_is_relax_value(v) for v in value)
    return isinstance(value, Expr)


def _hint(graph: Any, custom: Mapping[str, Callable], decomposed: bool) -> str:
    """What to do about unsupported ops, with the custom_convert_map keys they need."""
    keys = sorted(
        {
            n.target.__name__
            for n in graph.nodes
            if _is_aten(n) and n.target.__name__ not in custom and aten_converter(n) is None
        }
    )
    example = ", ".join(f"{k!r}: fn" for k in keys) or "'op.overload': fn"
    rerun = "" if decomposed else "; or pass run_ep_decomposition=True to decompose them"
    return (
        f"Pass custom_convert_map={{{example}}} to from_exported_program, where "
        "fn(node, importer) returns importer.block_builder.emit(<relax expression>), or "
        f"decompose them by hand: rewrite them in the model with supported torch ops{rerun}."
    )


def _describe(node: Any) -> tuple[str, str]:
    where = f"node {node.name!r}"
    stack = node.meta.get("nn_module_stack") or {}
    if stack:
        path, cls = list(stack.values())[-1]
        cls_name = cls if isinstance(cls, str) else getattr(cls, "__qualname__", str(cls))
        where += f", module {path!r} ({cls_name.rsplit('.', 1)[-1]})"
    return str(node.target), where
