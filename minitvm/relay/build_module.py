"""`relay.build` and `relay.create_executor`: translate to relax, build with the one relax
pipeline (`relax.build`, honouring the current PassContext), wrap as a graph executor."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..error import BuildError
from ..ir.module import IRModule
from ..relax.struct_info import TensorStructInfo, TupleStructInfo
from ..runtime import Device, cpu
from ..runtime.params import load_param_dict, save_param_dict  # noqa: F401 (relay's names)
from ._translate import to_relax
from .analysis import free_vars
from .expr import Expr, Function


def _outputs(sinfo: Any) -> list[dict]:
    from ..contrib.graph_executor import _tensor_info

    fields = sinfo.fields if isinstance(sinfo, TupleStructInfo) else (sinfo,)
    out = []
    for i, f in enumerate(fields):
        if not isinstance(f, TensorStructInfo) or f.static_shape() is None:
            raise BuildError(f"relay.build: output {i} is not a tensor of static shape ({f})")
        out.append(_tensor_info(f"output{i}", f.static_shape(), str(f.dtype)))
    return out


def _as_module(mod: IRModule | Function) -> IRModule:
    if isinstance(mod, Function):
        return IRModule.from_expr(mod)
    if not isinstance(mod, IRModule) or "main" not in mod:
        raise BuildError(
            f"relay.build: expected an IRModule with a 'main' Relay function, got "
            f"{type(mod).__name__}"
        )
    return mod


def build(
    ir_mod: IRModule | Function,
    target: Any = None,
    target_host: Any = None,
    executor: Any = None,
    runtime: Any = None,
    params: Mapping[str, Any] | None = None,
    mod_name: str = "default",
    **unused_options: Any,
) -> Any:
    """Compile a Relay module: `lib = relay.build(mod, "llvm", params=params)`.

    Parameters named in `params` become constants (names that are not parameters of main are
    ignored, as in TVM); the rest are the inputs of `lib["default"](dev)`.
    """
    from ..contrib.graph_executor import GraphExecutorFactoryModule, _tensor_info
    from ..relax.vm import build as relax_build
    from .backend import Executor as _Executor
    from .backend import Runtime as _Runtime

    for option, kind in ((executor, _Executor), (runtime, _Runtime)):
        if option is not None and not isinstance(option, kind):
            raise BuildError(
                f"relay.build: {kind.__name__.lower()}= must be relay.backend.{kind.__name__}"
                f"(...), got {type(option).__name__}"
            )
    mod = _as_module(ir_mod)
    target = _single_target(target)
    rmod = to_relax(mod)
    main = rmod["main"]
    names = {p.name_hint for p in main.params}
    bound = {k: v for k, v in (params or {}).items() if k in names}
    inputs = [p for p in main.params if p.name_hint not in bound]
    for p in inputs:
        if p.struct_info.static_shape() is None:
            dims = ", ".join(str(getattr(d, "value", d)) for d in p.struct_info.shape)
            raise BuildError(
                f"relay.build: input %{p.name_hint} has shape ({dims}); the graph "
                "executor needs static input shapes (give every dim a number)"
            )
    ex = relax_build(rmod, target, params=bound)
    graph = {
        "inputs": [
            _tensor_info(p.name_hint, p.struct_info.static_shape(), str(p.struct_info.dtype))
            for p in inputs
        ],
        "outputs": _outputs(main.ret_struct_info),
        "bound_params": sorted(bound),
    }
    return GraphExecutorFactoryModule(ex, graph, mod_name)


def _single_target(target: Any) -> Any:
    """TVM accepted {"cpu": target} dicts; one target is all we build for."""
    if target is None:
        return "llvm"
    if isinstance(target, Mapping):
        if len(target) != 1:
            raise BuildError(f"relay.build: one target at a time, got {dict(target)}")
        return next(iter(target.values()))
    return target


class Executor:
    """`relay.create_executor(kind, mod, device, target).evaluate()(*inputs)`."""

    def __init__(self, kind: str, mod: IRModule | None, device: Device, target: Any, params: Any):
        if kind not in ("graph", "vm", "debug", "aot"):
            raise BuildError(
                f"create_executor: unknown kind {kind!r}; use 'graph', 'vm' or 'debug'"
            )
        self.kind, self.mod, self.device, self.target = kind, mod, device, target
        self.params = dict(params or {})

    def evaluate(self, expr: Expr | None = None, binds: Mapping | None = None) -> Any:
        """A function of the inputs (for `expr` None or a Function); a value for other exprs."""
        from ..contrib.graph_executor import GraphModule

        if expr is None:
            if self.mod is None:
                raise BuildError("create_executor(...).evaluate(): give a mod or an expr")
            mod = self.mod
        elif isinstance(expr, Function):
            mod = IRModule.from_expr(expr)
        else:
            mod = IRModule.from_expr(Function(free_vars(expr), expr))
        names = [p.name_hint for p in mod["main"].params if p.name_hint not in self.params]
        scalars = _scalar_converter(mod)
        if self.kind == "vm":  # the relax VM: symbolic (relay.Any) input shapes allowed
            return self._vm_runner(mod, names, expr, scalars)
        lib = build(mod, self.target, params=self.params)
        gm = GraphModule(lib["default"](self.device))

        def run(*args: Any, **kwargs: Any) -> Any:
            if len(args) > len(names):
                raise BuildError(f"expected at most {len(names)} inputs {names}, got {len(args)}")
            gm.set_input(**scalars({**dict(zip(names, args)), **kwargs}))
            gm.run()
            outs = [gm.get_output(i) for i in range(gm.get_num_outputs())]
            return outs[0] if len(outs) == 1 and not _returns_tuple(mod) else tuple(outs)

        if expr is not None and not isinstance(expr, Function) and not names:
            return run()
        return run

    def _vm_runner(self, mod: IRModule, names: list, expr: Expr | None, scalars: Any) -> Any:
        from ..relax import VirtualMachine
        from ..relax.vm import build as relax_build

        rmod = to_relax(mod)
        main_names = {p.name_hint for p in rmod["main"].params}
        bound = {k: v for k, v in self.params.items() if k in main_names}
        vm = VirtualMachine(relax_build(rmod, self.target, params=bound), self.device)

        def run(*args: Any, **kwargs: Any) -> Any:
            if len(args) > len(names):
                raise BuildError(f"expected at most {len(names)} inputs {names}, got {len(args)}")
            given = scalars({**dict(zip(names, args)), **kwargs})
            unknown = sorted(set(given) - set(names))
            if unknown or len(given) != len(names):
                raise BuildError(
                    f"the function takes inputs {names}; got {sorted(given)}"
                    + (f" (unknown: {unknown})" if unknown else "")
                )
            out = vm["main"](*[_to_device(given[n], self.device) for n in names])
            return tuple(out) if isinstance(out, list) else out

        if expr is not None and not isinstance(expr, Function) and not names:
            return run()
        return run


def _scalar_converter(mod: IRModule) -> Any:
    """inputs -> inputs with Python numbers made 0-d arrays of their parameter's dtype (TVM's
    executors take numbers for scalar params), and numpy arrays of another dtype converted
    where that keeps every value (int64 data for a uint8 param); a lossy one is passed as
    given, for set_input to refuse."""
    import numpy as np

    from ..relax.expr import Function as RelaxFunction

    main = mod["main"]
    dtypes, scalar = {}, set()
    if not isinstance(main, RelaxFunction):
        for p in main.params:
            dtype = getattr(p.type_annotation, "dtype", None)
            if dtype is not None:
                dtypes[p.name_hint] = dtype
                if len(getattr(p.type_annotation, "shape", ())) == 0:
                    scalar.add(p.name_hint)

    def one(name: str, value: Any) -> Any:
        if name in scalar and isinstance(value, bool | int | float):
            return np.asarray(value, dtypes[name])
        if name in dtypes and isinstance(value, np.ndarray) and str(value.dtype) != dtypes[name]:
            with np.errstate(all="ignore"):
                converted = value.astype(dtypes[name])
            if np.array_equal(converted, value):
                return converted
        return value

    def convert(inputs: dict) -> dict:
        return {k: one(k, v) for k, v in inputs.items()}

    return convert


def _to_device(value: Any, device: Device) -> Any:
    """An input of the relay VM executor on `device`: TVM's relay executors take host (numpy)
    arrays for any device and copy them over; the relax VM itself wants them there already."""
    import numpy as np

    from ..runtime import ndarray

    if device.device_type == cpu(0).device_type:
        return value
    if isinstance(value, ndarray.NDArray) and value.device != device:
        value = value.numpy()
    return ndarray.array(value, device) if isinstance(value, np.ndarray) else value


def _returns_tuple(mod: IRModule) -> bool:
    from ..relax.expr import Function as RelaxFunction
    from .ty import TupleType
    from .type_infer import infer_type

    if isinstance(mod["main"], RelaxFunction):  # from relay.frontend's importers
        return isinstance(mod["main"].ret_struct_info, TupleStructInfo)
    main = infer_type(mod)["main"]
    return isinstance(main.ret_type, TupleType)


def create_executor(
    kind: str = "debug",
    mod: IRModule | None = None,
    device: Device | None = None,
    target: Any = "llvm",
    params: Mapping | None = None,
) -> Executor:
    """An executor that builds `mod` with relay.build and runs it on `device`."""
    return Executor(kind, mod, device or cpu(0), _single_target(target), params)


def bind_params_by_name(func: Function, params: Mapping[str, Any]) -> Function:
    """`func` with the params named in `params` replaced by constants (TVM's helper)."""
    from .expr import bind, const

    names = [p.name_hint for p in func.params]
    duplicated = sorted({n for n in names if names.count(n) > 1 and n in params})
    if duplicated:
        raise BuildError(f"bind_params_by_name: several params are named {duplicated}")
    values = {k: const(v.numpy() if hasattr(v, "numpy") else v) for k, v in params.items()}
    return bind(func, {k: v for k, v in values.items() if k in names})


def optimize(
    mod: IRModule | Function, target: Any = None, params: Mapping[str, Any] | None = None
) -> tuple[IRModule, dict]:
    """Relay-level optimisation as TVM's `relay.optimize`: params bound, inference-time
    simplification and constant folding; returns (mod, params left unbound)."""
    from ..ir.transform import Sequential
    from . import transform

    mod = _as_module(mod).copy()
    if params:
        mod["main"] = bind_params_by_name(mod["main"], params)
    passes = [transform.InferType(), transform.SimplifyInference(), transform.FoldConstant()]
    return Sequential([*passes, transform.InferType()])(mod), {}
