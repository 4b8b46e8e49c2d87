"""Export an nn.Module to an IRModule: each method of the spec becomes one relax function.

The function's inputs are the spec's arguments, then the module's effects (nn.KVCache, and the
IO effect of `debug=True`), then its parameters (one input each, or one tuple with
`"$": {"param_mode": "packed"}` / `"effect_mode": "packed"`); its attribute `num_input` counts
the arguments and effects, as in TVM. A module with effects also gets `_initialize_effect()`,
which creates them, and its methods return `(outputs, (new effects...))` (see effects.py). The
method runs once on symbolic Tensors inside a dataflow block, and every nn op it calls emits a
binding.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ....error import ArgumentError, MiniTVMError
from ....tir.expr import Var as TirVar
from ...analysis import well_formed_errors
from ...block_builder import BlockBuilder
from ...expr import Tuple, TupleGetItem, Var
from ...struct_info import ObjectStructInfo, ShapeStructInfo, TupleStructInfo
from . import core
from . import spec as _spec
from .effects import IOEffect


class Exporter:
    """Builds the IRModule of a ModuleSpec (`Module.export_tvm` uses it)."""

    _stack: ClassVar[list[Exporter]] = []

    def __init__(self, debug: bool = False) -> None:
        self.debug = debug  # adds the IO effect `_io` to every method, as in TVM
        self.builder = BlockBuilder()
        self.extern_mods: list[Any] = []
        self.io_effect: IOEffect | None = IOEffect() if debug else None

    @staticmethod
    def current() -> Exporter | None:
        """The exporter running now (nn.op.debug_func threads its calls through its IO effect)."""
        return Exporter._stack[-1] if Exporter._stack else None

    def build(self, spec: _spec.ModuleSpec) -> tuple[Any, list[tuple[str, core.Parameter]], list]:
        """(IRModule, [(name, Parameter)], extern modules)."""
        Exporter._stack.append(self)
        try:
            return self._build(spec)
        finally:
            Exporter._stack.pop()

    def _build(self, spec: _spec.ModuleSpec) -> tuple[Any, list[tuple[str, core.Parameter]], list]:
        effects: list[tuple[str, core.Effect]] = []
        if self.io_effect is not None:
            effects.append(("", self.io_effect))
        effects += core._attribute_finder(spec.module, "", lambda x: isinstance(x, core.Effect))
        for name, effect in effects:
            _check_effect(name, effect)
        if effects:
            _emit_effect_init(self.builder, effects)
        params: list[tuple[str, core.Parameter]] = []
        for method_name, method_spec in zip(spec.method_names, spec.method_specs):
            params = list(
                core._attribute_finder(spec.module, "", lambda x: isinstance(x, core.Parameter))
            )
            _emit_method(self.builder, method_name, method_spec, params, effects)
        return self.builder.get(), params, self.extern_mods


_EFFECT_METHODS = ("emit_init", "create", "set_state", "finalize")


def _check_effect(name: str, effect: core.Effect) -> None:
    missing = [m for m in _EFFECT_METHODS if getattr(type(effect), m) is getattr(core.Effect, m)]
    if missing:
        raise MiniTVMError(
            f"export_tvm: the module holds effects, and effect {name!r} "
            f"({type(effect).__name__}) does not define {', '.join(missing)}; subclass "
            "nn.Effect with all of " + ", ".join(_EFFECT_METHODS) + " (or use nn.KVCache)"
        )


def _emit_effect_init(bb: BlockBuilder, effects: list[tuple[str, core.Effect]]) -> None:
    """`_initialize_effect()`: creates every effect; returns them in one tuple, in order."""
    with bb.function("_initialize_effect", params=[]):
        with bb.dataflow():
            created = []
            for name, effect in effects:
                created += effect.emit_init(name, bb)
            out = bb.emit_output(bb.emit(Tuple(tuple(created))))  # lv, then gv = lv: TVM's form
        bb.emit_func_output(out)


class _DimNames:
    """One int64 tir.Var per symbolic size name within a method (inputs and params share)."""

    def __init__(self) -> None:
        self.vars: dict[str, TirVar] = {}

    def get(self, name: str) -> TirVar:
        if name not in self.vars:
            self.vars[name] = TirVar(name, "int64")
        return self.vars[name]

    def dims(self, shape: list) -> list:
        # A tir.Var in a spec is named like a str dim: within one function, a name is one size.
        return [
            self.get(d.name if isinstance(d, TirVar) else d) if isinstance(d, str | TirVar) else d
            for d in shape
        ]

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
    effects: list[tuple[str, core.Effect]],
) -> None:
    """One function: inputs are the spec's arguments, the effects, then the parameters."""
    names = _DimNames()
    pairs = [_input(n, s, names) for n, s in zip(spec.arg_names, spec.arg_specs)]
    inputs = [var for var, _ in pairs]
    param_vars = []
    for pname, param in params:  # fresh vars per method, so methods share no variables
        param._expr = core.Tensor.placeholder(names.rename(param.shape), param.dtype, pname)._expr
        param_vars.append(param._expr)
    created = [(effect, effect.create(ename)) for ename, effect in effects]
    effect_vars = [v for _, vs in created for v in vs]
    packed_effects = None
    if spec.effect_mode == "plain":
        inputs += effect_vars
    elif spec.effect_mode == "packed" and effect_vars:
        fields = tuple(v.struct_info for v in effect_vars)
        packed_effects = Var("packed_effects", TupleStructInfo(fields))
        inputs.append(packed_effects)
    with bb.function(name, attrs={"num_input": len(inputs)}):
        if spec.param_mode == "plain":
            inputs += param_vars
        elif spec.param_mode == "packed":
            packed = Var("packed_params", TupleStructInfo(tuple(v.struct_info for v in param_vars)))
            inputs.append(packed)
        with bb.dataflow():
            _set_effect_states(bb, created, packed_effects)
            if spec.param_mode == "packed":
                for i, (pname, param) in enumerate(params):
                    # a binding name is an identifier: "linear_1.weight" binds as linear_1_weight
                    param._expr = bb.emit(TupleGetItem(packed, i), pname.replace(".", "_"))
            args = [_detuple(bb, value, var) for var, value in pairs]
            out = _unwrap(spec.method(*args), name)
            new_effects = [v for _, effect in effects for v in effect.finalize()]
            if new_effects and spec.effect_mode != "none":
                out = Tuple((out, Tuple(tuple(new_effects))))
            out = bb.emit_output(out)
        gv = bb.emit_func_output(out, params=inputs)
    if spec.effect_mode == "none" and effects:
        errors = well_formed_errors(bb.get()[gv])
        if errors:
            raise MiniTVMError(
                f"export_tvm: method {name!r} has effect_mode 'none', so its effects are not "
                f"inputs, but it uses them ({errors[0]}); use effect_mode 'plain' or 'packed'"
            )


def _set_effect_states(
    bb: BlockBuilder, created: list[tuple[core.Effect, list[Var]]], packed: Var | None
) -> None:
    """Give each effect its input vars (fields of the packed tuple when effects are packed)."""
    i = 0
    for effect, state in created:
        if packed is not None:
            state = [bb.emit(TupleGetItem(packed, i + j), v.name_hint) for j, v in enumerate(state)]
            i += len(state)
        effect.set_state(state)


def add_extern(mod: Any) -> None:
    """Record the nn.ExternModule `mod` with the running export; `export_tvm(...,
    allow_extern=True)` returns it among the extern modules (once, however often added)."""
    from .extern import ExternModule

    exporter = Exporter.current()
    if exporter is None:
        raise MiniTVMError(
            "nn.add_extern: call it while a module is exported (inside a method that "
            "export_tvm runs), so the export can return the module with allow_extern=True"
        )
    if not isinstance(mod, ExternModule):
        raise ArgumentError(
            f"nn.add_extern: expected an nn.ExternModule (ObjectModule, SourceModule), got "
            f"{type(mod).__name__}"
        )
    if not any(m is mod for m in exporter.extern_mods):
        exporter.extern_mods.append(mod)
