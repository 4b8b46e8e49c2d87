"""`relax.BasePyModule`: an IRModule whose Python methods, PrimFuncs and relax functions call
each other (TVM 0.24's "mix Python and TVM" module).

An `@I.ir_module` class deriving from BasePyModule gives a factory; calling it
(`Module(device=tvm.cpu(0))`) compiles the PrimFuncs (`tvm.build`) and the relax functions
(`relax.build`, the one pipeline) and returns a BasePyModule whose attributes are the module's
functions: a PrimFunc as its compiled function, a relax function as a method that takes and
returns torch tensors (or minitvm/numpy arrays), an `@I.pyfunc` as a bound method.

`R.call_py_func("f", args, out_sinfo=...)` inside a relax function calls the pyfunc `f` from the
VM: the build replaces it by a destination-passing call of a registered function that converts
the arguments, calls the method and copies its result into the outputs the VM allocated, after
checking their shapes and dtypes. Those registered names die with the module.

Tensors cross between torch and minitvm through DLPack without copies; torch is imported only
when a torch tensor is met or asked for.

    @I.ir_module
    class Module(BasePyModule):
        @T.prim_func
        def add(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32"),
                C: T.Buffer((4,), "float32")): ...
        @I.pyfunc
        def forward(self, x, y):
            return self.call_tir(self.add, [x, y], out_sinfo=R.Tensor((4,), "float32"))

    mod = Module(device=tvm.cpu(0)); mod.forward(x, y)
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..error import ArgumentError, BuildError, MiniTVMError, ShapeError
from ..ir.module import GlobalVar, IRModule
from ..runtime.ndarray import NDArray, from_dlpack
from ..runtime.registry import get_global_func, register_func, remove_global_func
from ..tir.expr import IntImm
from ..tir.expr import Var as TirVar
from ..tir.function import PrimFunc
from . import expr as rx
from . import struct_info as si
from .functor import ExprMutator
from .printer import is_pyfunc, pyfunc_extern


class BasePyModule:
    """A module of Python methods, compiled PrimFuncs and relax functions (see the module doc).

    `BasePyModule(ir_mod, device, target=None)`; `target` defaults to the device's."""

    def __init__(self, ir_mod: IRModule, device: Any = None, target: Any = None):
        from ..runtime.device import cpu
        from ..target import Target

        if not isinstance(ir_mod, IRModule):
            raise ArgumentError(
                f"BasePyModule: expected an IRModule, got {type(ir_mod).__name__}; decorate the "
                "class with @I.ir_module"
            )
        self.ir_mod = ir_mod.copy()
        self.device = cpu(0) if device is None else device
        if target is None:
            target = Target.from_device(self.device)
        self.target = Target(target) if isinstance(target, str) else target
        self.pyfuncs: dict[str, Callable] = {}
        self.compiled_tir_funcs: dict[str, Any] = {}
        self.extern_funcs: dict[str, Any] = {}
        self.relax_vm: Any = None
        self.tir_func_names: list[str] = []
        self.relax_func_names: list[str] = []
        self._py_symbols: list[str] = []  # registered for R.call_py_func; removed with self
        weakref.finalize(self, _remove_globals, self._py_symbols)
        for gv, func in self.ir_mod.functions_items():
            names = self.tir_func_names if isinstance(func, PrimFunc) else self.relax_func_names
            if isinstance(func, PrimFunc | rx.Function):
                _check_member_name(gv.name_hint)
                names.append(gv.name_hint)
        self._compile()
        for name, fn in self.compiled_tir_funcs.items():
            setattr(self, name, fn)
        for name in self.relax_func_names:
            setattr(self, name, self._relax_method(name))

    # ------------------------------------------------------------------ building
    def _compile(self) -> None:
        from .. import driver
        from .vm import VirtualMachine, build

        prims = IRModule()
        for name in self.tir_func_names:
            prims[name] = self.ir_mod[name].with_attr("global_symbol", name)
        if self.tir_func_names:
            native = driver.build(prims, target=self.target)
            self.compiled_tir_funcs = {name: native[name] for name in self.tir_func_names}
        if self.relax_func_names:
            graph = IRModule(attrs=self.ir_mod.attrs)
            for gv, func in self.ir_mod.functions_items():
                if isinstance(func, rx.Function):
                    graph[gv] = _PyCalls(self).visit_function(func)
                elif isinstance(func, PrimFunc):
                    graph[gv] = func
            self.relax_vm = VirtualMachine(build(graph, target=self.target), self.device)

    def _py_call_symbol(self, name: str, outputs: int) -> str:
        """Register the function the VM calls for one `R.call_py_func` of the pyfunc `name`."""
        symbol = f"minitvm.base_py_module.{id(self):x}.{name}.{len(self._py_symbols)}"
        owner = weakref.ref(self)

        def run(*arrays: Any) -> None:
            module = owner()
            if module is None:
                raise MiniTVMError(f"R.call_py_func('{name}'): its BasePyModule no longer exists")
            module._run_py_call(name, arrays[:-outputs], arrays[-outputs:])

        register_func(symbol, run, override=True)
        self._py_symbols.append(symbol)
        return symbol

    def _run_py_call(self, name: str, inputs: tuple, outputs: tuple) -> None:
        func = self._pyfunc(name)
        args = [_to_user(a, want_torch=_has_torch()) for a in inputs]
        result = func(self, *args)
        results = list(result) if isinstance(result, list | tuple) else [result]
        if len(results) != len(outputs):
            raise ShapeError(
                f"pyfunc '{name}' returned {len(results)} value(s) but R.call_py_func declares "
                f"{len(outputs)} output(s) in out_sinfo; return one tensor per output"
            )
        for i, (value, out) in enumerate(zip(results, outputs)):
            array = _to_numpy(value, f"pyfunc '{name}' result {i}")
            if array.shape != tuple(out.shape) or str(array.dtype) != str(out.dtype):
                raise ShapeError(
                    f"pyfunc '{name}' result {i} has shape {array.shape} and dtype {array.dtype}, "
                    f"but R.call_py_func's out_sinfo says {tuple(out.shape)} and {out.dtype}; "
                    "fix the out_sinfo or the function"
                )
            out[:] = array

    # ------------------------------------------------------------------ calls from Python
    def call_tir(self, tir_func: Any, args: Any, out_sinfo: Any) -> Any:
        """Run the PrimFunc `tir_func` (its name, GlobalVar, PrimFunc or compiled function) on
        `args`, allocating the outputs `out_sinfo` describes. A symbolic output dim takes the
        value of the PrimFunc's output buffer dim at that place, given its inputs' shapes.
        Returns torch tensors when given torch tensors."""
        name = self._tir_name(tir_func)
        what = f"call_tir('{name}')"
        args = list(args) if isinstance(args, list | tuple) else [args]
        arrays = [self._array(a, f"{what} argument {i}") for i, a in enumerate(args)]
        sinfos = _sinfo_list(out_sinfo)
        prim = self.ir_mod[name]
        buffers = [prim.buffer_map[p] for p in prim.params if p in prim.buffer_map]
        if len(buffers) != len(arrays) + len(sinfos):
            raise ArgumentError(
                f"{what}: '{name}' takes {len(buffers)} buffers, but {len(arrays)} input(s) and "
                f"{len(sinfos)} output(s) were given"
            )
        dims = _bind_dims(buffers, arrays)
        outs = [
            self._alloc(_output_shape(s, buf, dims, f"{what} output {j}"), s.dtype)
            for j, (s, buf) in enumerate(zip(sinfos, buffers[len(arrays) :]))
        ]
        self.compiled_tir_funcs[name](*arrays, *outs)
        return _returned(outs, args)

    def call_dps_packed(self, func_name: str, args: Any, out_sinfo: Any) -> Any:
        """Call the registered function `func_name` in destination-passing style on `args`."""
        func = self.extern_funcs.get(func_name) or get_global_func(func_name, allow_missing=True)
        if func is None:
            raise MiniTVMError(
                f"call_dps_packed: no global function named '{func_name}'; register it with "
                f"@tvm.register_global_func('{func_name}')"
            )
        self.extern_funcs[func_name] = func
        args = list(args) if isinstance(args, list | tuple) else [args]
        what = f"call_dps_packed('{func_name}')"
        arrays = [self._array(a, f"{what} argument {i}") for i, a in enumerate(args)]
        sinfos = _sinfo_list(out_sinfo)
        outs = [self._alloc(_static_shape(s, what), s.dtype) for s in sinfos]
        func(*arrays, *outs)
        return _returned(outs, args)

    def call_py_func(self, func_name: str, args: Any) -> Any:
        """Call the pyfunc `func_name` on `args` as given."""
        return self._pyfunc(func_name)(self, *args)

    def _relax_method(self, name: str) -> Callable:
        def method(*args: Any) -> Any:
            arrays = [self._array(a, f"{name} argument {i}") for i, a in enumerate(args)]
            return _returned_value(self.relax_vm[name](*arrays), args)

        method.__name__ = name
        method.__doc__ = f"The compiled relax function '{name}' (torch or array arguments)."
        return method

    def _array(self, value: Any, what: str) -> NDArray:
        """`value` as an array on the module's device: shared through DLPack where it lives
        there already, copied otherwise."""
        array = _to_array(value, what)
        if self.device.device_type == array.device.device_type:
            return array
        from ..runtime.ndarray import array as nd_array

        return nd_array(array.numpy(), self.device)

    def _alloc(self, shape: tuple, dtype: Any) -> NDArray:
        from ..runtime.ndarray import empty

        return empty(shape, str(dtype), self.device)

    # ------------------------------------------------------------------ python functions
    def add_python_function(self, name: str, func: Callable) -> None:
        """Make `func` (taking the module first, as a method) the pyfunc `name`."""
        _check_member_name(name)
        known = _member(self.ir_mod, name)
        if known is not None and not is_pyfunc(known):
            raise MiniTVMError(
                f"add_python_function: '{name}' is already a {type(known).__name__} of the "
                "module; give the Python function another name"
            )
        self.pyfuncs[name] = func
        if known is None:
            self.ir_mod[name] = pyfunc_extern(name, _source_text(func))
        setattr(self, name, func.__get__(self))

    def _pyfunc(self, name: str) -> Callable:
        if name not in self.pyfuncs:
            raise MiniTVMError(
                f"no Python function '{name}' in the module; it has {sorted(self.pyfuncs)} "
                "(decorate a method with @I.pyfunc, or add_python_function)"
            )
        return self.pyfuncs[name]

    # ------------------------------------------------------------------ inspection
    def _tir_name(self, tir_func: Any) -> str:
        if isinstance(tir_func, str):
            name = tir_func
        elif isinstance(tir_func, GlobalVar):
            name = tir_func.name_hint
        else:
            found = [n for n, f in self.compiled_tir_funcs.items() if f is tir_func]
            found += [n for n in self.tir_func_names if self.ir_mod[n] is tir_func]
            name = found[0] if found else repr(tir_func)
        if name not in self.compiled_tir_funcs:
            raise MiniTVMError(
                f"call_tir: {name} is not a PrimFunc of this module; it has "
                f"{sorted(self.compiled_tir_funcs)}"
            )
        return name

    def get_function(self, name: str) -> Any:
        """The callable for `name` (compiled PrimFunc, relax method or pyfunc), or None."""
        if name in self.compiled_tir_funcs or name in self.relax_func_names:
            return getattr(self, name)
        if name in self.pyfuncs:
            return getattr(self, name)
        return self.extern_funcs.get(name)

    def list_functions(self) -> dict[str, list[str]]:
        """The module's functions by kind, under TVM 0.24's keys."""
        return {
            "tirx": list(self.tir_func_names),
            "relax": list(self.relax_func_names),
            "extern": list(self.extern_funcs),
        }

    def script(self, **kwargs: Any) -> str:
        """The module as TVMScript; pyfuncs print as their source under `@I.pyfunc`."""
        return self.ir_mod.script(**kwargs)

    def show(self, style: Any = None, black_format: Any = None, **kwargs: Any) -> None:
        print(self.script(**kwargs))  # asked for by show()

    def __getattr__(self, name: str) -> Any:
        # called only for names not set on the instance: the IRModule's own (functions_items...)
        ir_mod = self.__dict__.get("ir_mod")
        if ir_mod is None or name.startswith("__"):
            raise AttributeError(name)
        try:
            return getattr(ir_mod, name)
        except AttributeError:
            raise AttributeError(
                f"'{type(self).__name__}' has no attribute '{name}'; its functions are "
                f"{sorted(ir_mod)}"
            ) from None

    # TVM's names for the conversions, used by pyfuncs written for TVM
    def _convert_pytorch_to_tvm(self, tensors: Any) -> Any:
        if isinstance(tensors, list | tuple):
            return [self._convert_pytorch_to_tvm(t) for t in tensors]
        return self._array(tensors, "_convert_pytorch_to_tvm")

    def _convert_tvm_to_pytorch(self, arrays: Any) -> Any:
        if isinstance(arrays, list | tuple):
            return [self._convert_tvm_to_pytorch(a) for a in arrays]
        return _to_user(arrays, want_torch=True)


# ----------------------------------------------------------------------------- the factory


class PyModuleFactory:
    """What `@I.ir_module` gives for a class deriving from BasePyModule: calling it with
    `device=` (and `target=`) builds a module instance; other attributes are the IRModule's."""

    def __init__(self, ir_mod: IRModule, klass: type, pyfuncs: Mapping[str, Callable]):
        self.ir_module, self.original_class = ir_mod, klass
        self.pyfuncs = dict(pyfuncs)
        self.pyfunc_methods = list(pyfuncs)
        self.__name__ = klass.__name__

    def __call__(self, device: Any = None, target: Any = None) -> BasePyModule:
        cls = self.original_class if issubclass(self.original_class, BasePyModule) else None
        instance = (cls or BasePyModule).__new__(cls or BasePyModule)
        BasePyModule.__init__(instance, self.ir_module, device, target)
        for name, func in self.pyfuncs.items():
            instance.add_python_function(name, func)
        return instance

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.__dict__["ir_module"], name)


def module_factory(ir_mod: IRModule, klass: type) -> PyModuleFactory:
    """The factory for a parsed `@I.ir_module` class deriving from BasePyModule."""
    pyfuncs = {}
    for name, value in vars(klass).items():
        if getattr(value, "dispatch_token", None) == "pyfunc":
            _check_member_name(name)
            pyfuncs[name] = value
    return PyModuleFactory(ir_mod, klass, pyfuncs)


# ----------------------------------------------------------------------------- helpers


# what an instance sets on itself besides the module's functions
_INSTANCE_ATTRS = frozenset(
    {
        "ir_mod",
        "device",
        "target",
        "pyfuncs",
        "compiled_tir_funcs",
        "extern_funcs",
        "relax_vm",
        "tir_func_names",
        "relax_func_names",
        "_py_symbols",
    }
)


def _check_member_name(name: str) -> None:
    """A module function becomes an attribute of the instance: it may not hide BasePyModule's."""
    if name in _INSTANCE_ATTRS or name in dir(BasePyModule):
        raise MiniTVMError(
            f"BasePyModule: the module's function '{name}' clashes with BasePyModule's own "
            f"attribute '{name}'; rename the function"
        )


def _member(mod: IRModule, name: str) -> Any:
    return mod[name] if name in mod else None  # noqa: SIM401 - IRModule has no .get


def _remove_globals(symbols: list[str]) -> None:
    for symbol in symbols:
        if get_global_func(symbol, allow_missing=True) is not None:
            remove_global_func(symbol)


def _source_text(func: Callable) -> str:
    try:
        lines = inspect.getsource(func).split("\n")
    except (OSError, TypeError):  # made by exec or a lambda without a file: no text to show
        return ""
    pad = len(lines[0]) - len(lines[0].lstrip())
    body = [line[pad:] if line[:pad].strip() == "" else line for line in lines]
    while body and body[0].lstrip().startswith("@"):
        body = body[1:]
    return "\n".join(line.rstrip() for line in body).rstrip()


class _PyCalls(ExprMutator):
    """`R.call_py_func("f", args, out_sinfo)` -> a destination-passing call of the function
    registered for that call (BasePyModule._py_call_symbol)."""

    def __init__(self, module: BasePyModule) -> None:
        super().__init__()
        self.module = module

    def visit_call(self, call: rx.Call) -> rx.Expr:
        from .op import call_dps_packed

        call = super().visit_call(call)
        if not (isinstance(call.op, rx.Op) and call.op.name == "relax.call_py_func"):
            return call
        name = call.args[0].value
        member = _member(self.module.ir_mod, name)
        if name not in self.module.pyfuncs and not is_pyfunc(member):
            raise BuildError(
                f"R.call_py_func('{name}'): the module has no @I.pyfunc method '{name}'; its "
                f"pyfuncs are {sorted(self.module.pyfuncs)}"
            )
        sinfo = call.sinfo_args[0]
        outputs = len(sinfo.fields) if isinstance(sinfo, si.TupleStructInfo) else 1
        symbol = self.module._py_call_symbol(name, outputs)
        return call_dps_packed(symbol, call.args[1], sinfo)


def _has_torch() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def _torch() -> Any:
    try:
        import torch
    except ImportError as err:
        raise MiniTVMError(
            "BasePyModule: converting to torch tensors needs PyTorch; pip install torch, or "
            "pass and expect minitvm/numpy arrays"
        ) from err
    return torch


def _is_torch(value: Any) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "detach")


def _to_array(value: Any, what: str) -> NDArray:
    """A minitvm array sharing `value`'s memory where it can (DLPack)."""
    if isinstance(value, NDArray):
        return value
    if _is_torch(value):
        return from_dlpack(value.detach().contiguous())
    if isinstance(value, np.ndarray):
        return from_dlpack(np.ascontiguousarray(value))
    if isinstance(value, bool | int | float):
        return from_dlpack(np.asarray(value, dtype="float32" if isinstance(value, float) else None))
    raise ArgumentError(
        f"{what}: expected a torch tensor, numpy array or minitvm array, got {type(value).__name__}"
    )


def _to_user(value: Any, want_torch: bool) -> Any:
    """A result for Python code: a torch tensor (zero-copy) when asked, else as it is."""
    if isinstance(value, list | tuple):
        return type(value)(_to_user(v, want_torch) for v in value)
    if want_torch and isinstance(value, NDArray):
        return _torch().from_dlpack(value)
    if want_torch and isinstance(value, np.ndarray):
        return _torch().from_numpy(value)
    return value


def _to_numpy(value: Any, what: str) -> np.ndarray:
    if _is_torch(value):
        return value.detach().cpu().numpy()
    if isinstance(value, NDArray):
        return value.numpy()
    if isinstance(value, np.ndarray):
        return value
    raise ArgumentError(f"{what}: expected a tensor, got {type(value).__name__}")


def _returned(outs: list[NDArray], args: list) -> Any:
    value = _to_user(outs, want_torch=any(_is_torch(a) for a in args))
    return value[0] if len(value) == 1 else value


def _returned_value(value: Any, args: tuple) -> Any:
    return _to_user(value, want_torch=any(_is_torch(a) for a in args))


def _sinfo_list(out_sinfo: Any) -> list[si.TensorStructInfo]:
    items = list(out_sinfo) if isinstance(out_sinfo, list) else [out_sinfo]
    if isinstance(out_sinfo, si.TupleStructInfo):
        items = list(out_sinfo.fields)
    for s in items:
        if not isinstance(s, si.TensorStructInfo) or s.shape is None or s.dtype is None:
            raise ArgumentError(
                f"out_sinfo: expected tensor struct infos with a shape and dtype, e.g. "
                f'R.Tensor((4,), "float32"); got {s!r}'
            )
    return items


def _bind_dims(buffers: list, arrays: list[NDArray]) -> dict[TirVar, int]:
    """The PrimFunc's symbolic dims bound from its input buffers and the arrays given (the
    compiled function checks the arrays against the buffers again when it runs)."""
    dims: dict[TirVar, int] = {}
    for buf, array in zip(buffers, arrays):
        for d, n in zip(buf.shape, array.shape):
            if isinstance(d, TirVar):
                dims.setdefault(d, int(n))
    return dims


def _output_shape(sinfo: si.TensorStructInfo, buf: Any, dims: dict, what: str) -> tuple:
    from .eval_ref import eval_dim

    if len(sinfo.shape) != len(buf.shape):
        raise ShapeError(
            f"{what}: out_sinfo has {len(sinfo.shape)} dims but the PrimFunc's buffer "
            f"'{buf.name}' has {len(buf.shape)}"
        )
    shape = []
    for d, prim_dim in zip(sinfo.shape, buf.shape):
        if isinstance(d, IntImm):
            shape.append(d.value)
            continue
        try:
            shape.append(eval_dim(prim_dim, dims, what))
        except ShapeError as err:
            raise ShapeError(
                f"{what}: cannot tell dim '{d}' (buffer '{buf.name}' dim '{prim_dim}') from the "
                "inputs' shapes; give out_sinfo a concrete shape"
            ) from err
    return tuple(shape)


def _static_shape(sinfo: si.TensorStructInfo, what: str) -> tuple:
    for d in sinfo.shape:
        if not isinstance(d, IntImm):
            raise ShapeError(
                f"{what}: output dim '{d}' is symbolic and there is no PrimFunc to tell its "
                "value; give out_sinfo a concrete shape"
            )
    return tuple(d.value for d in sinfo.shape)


__all__ = ["BasePyModule", "PyModuleFactory", "module_factory"]
