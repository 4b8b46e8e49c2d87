"""`Module.jit(spec)`: export, compile and load a module; call it per method with torch tensors."""

from __future__ import annotations

from typing import Any

from ....error import ArgumentError, MiniTVMError
from . import core
from . import spec as _spec


def jit_module(
    module: core.Module, spec: Any, device: Any, pipeline: Any, out_format: str, debug: bool
) -> TorchModule:
    """The compiled module behind `Module.jit` (see there)."""
    from .... import runtime
    from ....target import Target
    from ...pipeline import compile as tvm_compile
    from ...vm import VirtualMachine

    if out_format != "torch":
        raise ArgumentError(f"Module.jit: out_format {out_format!r} is unknown; use 'torch'")
    dev = runtime.device(device) if isinstance(device, str) else device
    module_spec = _spec.ModuleSpec.from_raw(spec, module)
    mod, params = module.export_tvm(module_spec, debug=debug)
    missing = [name for name, p in params if p.data is None]
    if missing:
        raise ArgumentError(
            f"Module.jit: parameters {missing} hold no data; set param.data = array or use "
            "load_state_dict first"
        )
    ex = tvm_compile(mod, Target.from_device(dev), relax_pipeline=pipeline)
    vm = VirtualMachine(ex, dev)
    weights = [p.data.copyto(dev) for _, p in params]
    return TorchModule(module_spec, vm, weights)


_INIT_EFFECTS = "_initialize_effect"


class TorchModule:
    """A compiled nn.Module: `tm["forward"](x)` (or `tm.forward(x)`) takes torch tensors (ints
    for spec.Int inputs) and returns torch tensors. A module with effects (nn.KVCache) keeps
    them here, made once by `_initialize_effect` and replaced by what each call returns."""

    def __init__(self, spec: _spec.ModuleSpec, vm: Any, params: list) -> None:
        self.spec, self.vm, self.params = spec, vm, params
        try:
            init = vm[_INIT_EFFECTS]  # only the lookup may fail: a module without effects
        except MiniTVMError:
            init = None
        self.effects = None if init is None else list(init())

    def __getitem__(self, method_name: str) -> Any:
        if method_name not in self.spec.method_names:
            raise ArgumentError(
                f"TorchModule: method {method_name!r} was not compiled; the spec has "
                f"{self.spec.method_names}"
            )
        method_spec = self.spec.method_specs[self.spec.method_names.index(method_name)]
        func = self.vm[method_name]

        def call(*args: Any) -> Any:
            if len(args) != len(method_spec.arg_names):
                raise ArgumentError(
                    f"{method_name}: expected {len(method_spec.arg_names)} arguments "
                    f"({method_spec}), got {len(args)}"
                )
            converted = [
                _to_tvm(n, s, a)
                for n, s, a in zip(method_spec.arg_names, method_spec.arg_specs, args)
            ]
            mode = method_spec.effect_mode
            if self.effects is None or mode == "none":
                return _to_torch(func(*converted, *self.params))
            effects = [tuple(self.effects)] if mode == "packed" else self.effects
            outputs, new_effects = func(*converted, *effects, *self.params)
            self.effects = list(new_effects)
            return _to_torch(outputs)

        call.__name__ = method_name
        return call

    def __getattr__(self, name: str) -> Any:
        if name in ("spec", "vm", "params", "effects") or name.startswith("__"):
            raise AttributeError(name)
        if name in self.spec.method_names:
            return self[name]
        raise AttributeError(f"TorchModule has no method {name!r}")


def _to_tvm(name: str, arg_spec: Any, value: Any) -> Any:
    import torch

    from ....runtime import ndarray

    if isinstance(arg_spec, _spec.Tensor):
        if not isinstance(value, torch.Tensor):
            raise ArgumentError(
                f"argument {name!r}: expected a torch.Tensor, got {type(value).__name__}"
            )
        return ndarray.array(value.detach().cpu().contiguous().numpy())
    if isinstance(arg_spec, _spec.Int):
        if not isinstance(value, int):
            raise ArgumentError(f"argument {name!r}: expected an int, got {type(value).__name__}")
        return (value,)  # the VM takes a shape as a tuple of ints
    if isinstance(arg_spec, _spec.Tuple):
        return [
            _to_tvm(f"{name}[{i}]", s, v) for i, (s, v) in enumerate(zip(arg_spec.elements, value))
        ]
    raise ArgumentError(f"argument {name!r}: unsupported spec {arg_spec!r}")


def _to_torch(value: Any) -> Any:
    import torch

    if isinstance(value, list | tuple):
        return [_to_torch(v) for v in value]
    if hasattr(value, "numpy"):
        return torch.from_numpy(value.numpy().copy())
    return value
