"""Input specifications of exported methods: `{"forward": {"x": spec.Tensor(("n", 784), "float32")}}`.

A method spec maps argument names to `Tensor(shape, dtype)` (a str dim is a symbolic size shared
by every input that names it), `Int()` / `int` / `"int"` (a symbolic integer input), `Object`,
or a list/tuple of these. The optional key `"$"` holds `{"param_mode": ..., "effect_mode": ...}`
("plain": one function input each, "packed": one tuple input, "none": not inputs).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from ....error import ArgumentError
from ....tir.expr import IntImm
from ....tir.expr import Var as TirVar

_MODES = ("plain", "packed", "none")


class Int:
    """A symbolic integer input (an int64 shape value at run time)."""

    def __repr__(self) -> str:
        return "int"


class Tensor:
    """A tensor input: static rank and dtype, dims are ints or names of symbolic sizes."""

    def __init__(self, shape: Sequence[int | str | TirVar], dtype: str) -> None:
        self.shape = [int(d.value) if isinstance(d, IntImm) else d for d in shape]
        self.dtype = str(dtype)
        for dim in self.shape:
            if (
                isinstance(dim, bool)
                or not isinstance(dim, int | str | TirVar)
                or (isinstance(dim, int) and dim < 0)
                or (isinstance(dim, TirVar) and str(dim.dtype) != "int64")
            ):
                raise ArgumentError(
                    f"spec.Tensor({self.shape}, {self.dtype!r}): a dim must be a non-negative "
                    f"int or a name such as 'n' (or an int64 tir.Var), got {dim!r}"
                )

    def __repr__(self) -> str:
        return f"Tensor([{', '.join(str(d) for d in self.shape)}], '{self.dtype}')"


class Object:
    """An opaque object input of type `object_type` (an nn.Object subclass)."""

    def __init__(self, object_type: type) -> None:
        self.object_type = object_type

    def __repr__(self) -> str:
        return "object"


class Tuple:
    """A list or tuple input; `elements` are specs."""

    def __init__(self, name: str, elements: list | tuple) -> None:
        if not isinstance(elements, list | tuple):
            raise ArgumentError(f"spec.Tuple {name!r}: elements must be a list or tuple")
        self.name = name
        self.elements = elements

    def __repr__(self) -> str:
        return repr(self.elements)


def _convert_arg(arg_spec: Any, arg_name: str) -> Any:
    if arg_spec is Int or arg_spec is int or arg_spec == "int":
        return Int()
    if isinstance(arg_spec, Int | Tensor | Object | Tuple):
        return arg_spec
    if isinstance(arg_spec, list | tuple):
        elements = [_convert_arg(a, f"{arg_name}_{i}") for i, a in enumerate(arg_spec)]
        return Tuple(arg_name, type(arg_spec)(elements))
    raise ArgumentError(
        f"spec for argument {arg_name!r}: expected nn.spec.Tensor(shape, dtype), nn.spec.Int(), "
        f"int, or a list of those, got {arg_spec!r}"
    )


class MethodSpec:
    """The spec of one exported method: its argument names and their specs."""

    def __init__(
        self,
        method: Callable,
        arg_names: list[str],
        arg_specs: list[Any],
        param_mode: str = "plain",
        effect_mode: str = "plain",
    ) -> None:
        for what, mode in (("param_mode", param_mode), ("effect_mode", effect_mode)):
            if mode not in _MODES:
                raise ArgumentError(f"MethodSpec: {what} {mode!r} is not one of {list(_MODES)}")
        self.method, self.arg_names, self.arg_specs = method, arg_names, arg_specs
        self.param_mode, self.effect_mode = param_mode, effect_mode

    def _repr(self, name: str) -> str:
        args = ", ".join(f"{n}: {s}" for n, s in zip(self.arg_names, self.arg_specs))
        return f"{name}({args})"

    def __repr__(self) -> str:
        return self._repr("MethodSpec")

    @staticmethod
    def from_raw(spec: Any, method: Callable) -> MethodSpec:
        """A MethodSpec from `{"arg": spec, ..., "$": {...}}`; every argument of `method`
        without a default must be named."""
        if isinstance(spec, MethodSpec):
            return spec
        if not isinstance(spec, dict):
            raise ArgumentError(
                f"spec of method {getattr(method, '__name__', method)!r}: expected a dict of "
                f"argument name -> spec, got {type(spec).__name__}"
            )
        spec = dict(spec)
        config = spec.pop("$", {})
        params = inspect.signature(method).parameters
        unknown = [name for name in spec if name not in params]
        if unknown:
            raise ArgumentError(
                f"spec of method {method.__name__!r}: {unknown} are not arguments of it "
                f"(its arguments: {list(params)})"
            )
        names, specs = [], []
        for name, param in params.items():
            if name in spec:
                names.append(name)
                specs.append(_convert_arg(spec[name], name))
            elif param.default is inspect.Parameter.empty and param.kind not in (
                inspect.Parameter.VAR_POSITIONAL,
                inspect.Parameter.VAR_KEYWORD,
            ):
                raise ArgumentError(
                    f"spec of method {method.__name__!r}: argument {name!r} has no spec; add "
                    f"e.g. {name!r}: nn.spec.Tensor(shape, dtype)"
                )
        return MethodSpec(
            method,
            names,
            specs,
            param_mode=config.get("param_mode", "plain"),
            effect_mode=config.get("effect_mode", "plain"),
        )

    @staticmethod
    def from_torch(args: Sequence[Any], method: Callable) -> MethodSpec:
        """The spec of calling `method` on `args`, one per argument of it: a torch.Tensor gives
        its static shape and dtype, an int gives `Int()` (plain params and effects)."""
        names = list(inspect.signature(method).parameters)
        if len(names) != len(args):
            raise ArgumentError(
                f"MethodSpec.from_torch: {getattr(method, '__name__', method)!r} takes "
                f"{len(names)} arguments {names}, got {len(args)}"
            )
        return MethodSpec(method, names, [_spec_of_torch(a, n) for n, a in zip(names, args)])


def _spec_of_torch(arg: Any, name: str) -> Any:
    dtype = str(getattr(arg, "dtype", ""))
    if dtype.startswith("torch.") and hasattr(arg, "shape"):
        return Tensor(list(arg.shape), dtype.rsplit(".", 1)[1])
    if isinstance(arg, int) and not isinstance(arg, bool):
        return Int()
    raise ArgumentError(
        f"MethodSpec.from_torch: argument {name!r} is a {type(arg).__name__}; pass torch "
        "tensors and ints"
    )


class ModuleSpec:
    """The methods of a module to export, each with its MethodSpec."""

    def __init__(self, module: Any, method_names: list[str], method_specs: list[MethodSpec]):
        self.module, self.method_names, self.method_specs = module, method_names, method_specs

    @staticmethod
    def from_raw(spec: Any, module: Any) -> ModuleSpec:
        """A ModuleSpec from `{"method": {arg: spec}}`."""
        if isinstance(spec, ModuleSpec):
            return spec
        if not isinstance(spec, dict) or not spec:
            raise ArgumentError(
                "export_tvm: spec must be a non-empty dict of method name -> {argument: spec}, "
                'e.g. {"forward": {"x": nn.spec.Tensor((1, 784), "float32")}}'
            )
        specs = []
        for name, method_spec in spec.items():
            method = getattr(module, name, None)
            if not callable(method):
                raise ArgumentError(
                    f"export_tvm: {type(module).__name__} has no method {name!r} to export"
                )
            specs.append(MethodSpec.from_raw(method_spec, method))
        return ModuleSpec(module, list(spec), specs)

    def __repr__(self) -> str:
        lines = (f"  {s._repr(n)}" for n, s in zip(self.method_names, self.method_specs))
        return "ModuleSpec:\n" + "\n".join(lines)
