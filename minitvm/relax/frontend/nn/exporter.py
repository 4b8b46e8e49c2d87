"""Export an nn.Module to an IRModule: each method of the spec becomes one relax function.

The function's inputs are the spec's arguments, then the module's parameters (one input each, or
one tuple with `"$": {"param_mode": "packed"}`); its attribute `num_input` counts the former, as
in TVM. The method runs once on symbolic Tensors inside a dataflow block, and every nn op it calls
emits a binding.
"""

from __future__ import annotations

from typing import Any

from ....error import ArgumentError, MiniTVMError
from ....tir.expr import Var as TirVar
from ...block_builder import BlockBuilder
from ...expr import Tuple, TupleGetItem, Var
from ...struct_info import ObjectStructInfo, ShapeStructInfo, TupleStructInfo
from . import core
from . import spec as _spec


class Exporter:
    """Builds the IRModule of a ModuleSpec (`Module.export_tvm` uses it)."""

    def __init__(self, debug: bool = False) -> None:
        self.debug = debug  # accepted for TVM's signature; minitvm exports no IO effect
        self.builder = BlockBuilder()
        self.extern_mods: list[Any] = []

    def build(self, spec: _spec.ModuleSpec) -> tuple[Any, list[tuple[str, core.Parameter]], list]:
        """(IRModule, [(name, Parameter)], extern modules)."""
        effects = list(
            core._attribute_finder(spec.module, "", lambda x: isinstance(x, core.Effect))
        )
        if effects:
            names = ", ".join(name for name, _ in effects)
            raise MiniTVMError(
                f"export_tvm: the module holds effects ({names}); minitvm's nn exporter does not "
                "support effects such as nn.KVCache. Keep state as explicit inputs and outputs"
            )
        params: list[tuple[str, core.Parameter]] = []
        for method_name, method_spec in zip(spec.method_names, spec.method_specs):
            params = list(
                core._attribute_finder(spec.module, "", lambda x: isinstance(x, core.Parameter))
            )
            _emit_method(self.builder, method_name, method_spec, params)
        return self.builder.get(), params, self.extern_mods


class _DimNames:
    """One int64 tir.Var per symbolic size name within a method (inputs and params share)."""

    def __init__(self) -> None:
        self.vars: dict[str, TirVar] = {}

    def get(self, name: str) -> TirVar:
        if name not in self.vars:
            self.vars[name] = TirVar(name, "int64")
        return self.vars[name]

    def dims(self, shape: list) -> list:
        return [self.get(d) if isinstance(d, str) else d for d in shape]

    def rename(self, shape: list) -> list:
        return [self.get(d.name) if isinstance(d, TirVar) else d for d in shape]


def _input(arg_name: str, arg_spec: Any, names: _DimNames) -> tuple[Var, Any]:
    """(the function's input var, what the method receives for it)."""
    if isinstance(arg_spec, _spec.Int):
        dim = names.get(arg_name)
        return Var(arg_name, ShapeStructInfo([dim])), dim
    if isinstance(arg_spec, _spec.Tensor):
        tensor = core.Tensor.placeholder(names.dims(arg_spec.shape), arg_spec.dtype, arg_name)
        return tensor._expr, tensor
    if isinstance(arg_spec, _spec.Object):
        var = Var(arg_name, ObjectStructInfo())
        return var, arg_spec.object_type(_expr=var, _name=arg_name)
    if isinstance(arg_spec, _spec.Tuple):
        parts = [_input(f"{arg_name}_{i}", e, names) for i, e in enumerate(arg_spec.elements)]
        var = Var(arg_name, TupleStructInfo(tuple(p[0].struct_info for p in parts)))
        return var, _spec.Tuple(arg_name, type(arg_spec.elements)(p[1] for p in parts))
    raise ArgumentError(f"export_tvm: argument {arg_name!r} has an unsupported spec {arg_spec!r}")


def _detuple(bb: BlockBuilder, value: Any, var: Var) -> Any:
    """What a method receives for a tuple input: its fields bound one by one."""
    if not isinstance(value, _spec.Tuple):
        return value
    out = []
    for i, element in enumerate(value.elements):
        field = bb.emit(TupleGetItem(var, i), f"{value.name}_{i}")
        if isinstance(element, core.Tensor):
            out.append(core.Tensor(_expr=field))
        else:
            out.append(_detuple(bb, element, field))
    return type(value.elements)(out)


def _unwrap(value: Any, method_name: str) -> Any:
    if isinstance(value, core.Tensor | core.Object):
        return value._expr
    if isinstance(value, list | tuple):
        return Tuple(tuple(_unwrap(v, method_name) for v in value))
    raise MiniTVMError(
        f"export_tvm: method {method_name!r} returned a {type(value).__name__}; return nn "
        "Tensors (or a tuple/list of them)"
    )


def _emit_method(
    bb: BlockBuilder,
    name: str,
    spec: _spec.MethodSpec,
    params: list[tuple[str, core.Parameter]],
) -> None:
    names = _DimNames()
    pairs = [_input(n, s, names) for n, s in zip(spec.arg_names, spec.arg_specs)]
    inputs = [var for var, _ in pairs]
    param_vars = []
    for pname, param in params:  # fresh vars per method, so methods share no variables
        param._expr = core.Tensor.placeholder(names.rename(param.shape), param.dtype, pname)._expr
        param_vars.append(param._expr)
    with bb.function(name, attrs={"num_input": len(inputs)}):
        if spec.param_mode == "plain":
            inputs += param_vars
        elif spec.param_mode == "packed":
            packed = Var("packed_params", TupleStructInfo(tuple(v.struct_info for v in param_vars)))
            inputs.append(packed)
        with bb.dataflow():
            if spec.param_mode == "packed":
                for i, (pname, param) in enumerate(params):
                    param._expr = bb.emit(TupleGetItem(packed, i), pname)
            args = [_detuple(bb, value, var) for var, value in pairs]
            out = bb.emit_output(_unwrap(spec.method(*args), name))
        bb.emit_func_output(out, params=inputs)
