"""The pieces of TVM's `relax.frontend.nn`: Tensor, Parameter, Module and its containers.

A `Tensor` is a symbolic value (a relax expression with a known tensor shape); ops on it emit
bindings into the BlockBuilder that `Module.export_tvm` opened. A `Parameter` is a Tensor that
may also hold concrete data; during export it stands for an input of the exported function.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ....error import ArgumentError, DTypeError, MiniTVMError, ShapeError
from ....tir.expr import IntImm, PrimExpr
from ....tir.expr import Var as TirVar
from ...block_builder import BlockBuilder
from ...expr import DataflowVar, Expr, TupleGetItem, Var, const
from ...struct_info import ObjectStructInfo, TensorStructInfo, TupleStructInfo
from ._tensor_op import TensorOpMixin
from .subroutine import SubroutineMixin

_DEFAULT_DTYPE = ["float32"]
# what TVM's relax.const does to numpy data given without a dtype
_NARROWED = {np.dtype("float64"): np.dtype("float32"), np.dtype("int64"): np.dtype("int32")}


def get_default_dtype() -> str:
    """The dtype a Parameter gets when none is given (float32 unless changed)."""
    return _DEFAULT_DTYPE[0]


def set_default_dtype(dtype: str) -> None:
    """Change the dtype new Parameters get when none is given."""
    _DEFAULT_DTYPE[0] = str(dtype)


def current_builder(what: str) -> BlockBuilder:
    """The BlockBuilder that `export_tvm` opened; an error naming `what` outside of one."""
    bb = BlockBuilder.current()
    if bb is None:
        raise MiniTVMError(
            f"nn.{what}: nn ops only run while a module is exported; call it inside a Module's "
            "forward and use Module.export_tvm(spec) or Module.jit(spec)"
        )
    return bb


def _as_dim(dim: Any, where: str) -> Any:
    if isinstance(dim, str):
        return TirVar(dim, "int64")  # a symbolic dim named by the user ("n")
    if isinstance(dim, bool):
        raise ShapeError(f"{where}: a dimension cannot be a bool ({dim!r})")
    if isinstance(dim, int | np.integer):
        if dim < 0:
            raise ShapeError(f"{where}: dimension {int(dim)} is negative")
        return int(dim)
    if isinstance(dim, IntImm):
        return int(dim.value)
    if isinstance(dim, PrimExpr):
        return dim
    raise ShapeError(
        f"{where}: a dimension must be an int, a name such as 'n' or a tir expression, got "
        f"{type(dim).__name__}"
    )


class Tensor(TensorOpMixin):
    """A symbolic tensor of an nn.Module's computation (shape and dtype known when made)."""

    _expr: Expr

    def __init__(self, *, _expr: Expr) -> None:
        sinfo = getattr(_expr, "struct_info", None)
        if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None:
            raise ShapeError(
                f"nn.Tensor: expected a relax expression of a tensor with a known shape, got "
                f"struct info {sinfo!r}"
            )
        self._expr = _expr

    @staticmethod
    def from_const(data: Any) -> Tensor:
        """A constant tensor holding `data` (a numpy array or anything np.asarray takes).
        float64 and int64 data become float32 and int32, as TVM's relax.const makes them."""
        array = np.asarray(data)
        array = array.astype(_NARROWED.get(array.dtype, array.dtype))
        return Tensor(_expr=const(array))

    @staticmethod
    def from_scalar(data: float, dtype: str) -> Tensor:
        """A 0-d constant tensor of `dtype`."""
        return Tensor(_expr=const(data, dtype))

    @staticmethod
    def from_struct_info(struct_info: TensorStructInfo, name: str = "tensor") -> Tensor:
        """A placeholder tensor (a fresh relax.Var) described by `struct_info`."""
        return Tensor(_expr=Var(name, struct_info))

    @staticmethod
    def placeholder(shape: Sequence[Any], dtype: str, name: str = "tensor") -> Tensor:
        """A fresh tensor variable; a str dim becomes a symbolic int64 tir.Var of that name."""
        dims = [_as_dim(d, f"nn.Tensor.placeholder({name!r})") for d in shape]
        return Tensor(_expr=Var(name, TensorStructInfo(dims, dtype)))

    @property
    def shape(self) -> list[Any]:
        """The shape: Python ints for static dims, tir expressions for symbolic ones."""
        return [d.value if isinstance(d, IntImm) else d for d in self._expr.struct_info.shape]

    @property
    def ndim(self) -> int:
        return self._expr.struct_info.ndim

    @property
    def dtype(self) -> str:
        return str(self._expr.struct_info.dtype)

    def __repr__(self) -> str:
        return f'Tensor({self.shape}, "{self.dtype}")'


def _to_runtime_tensor(data: Any, what: str) -> Any:
    from ....runtime import ndarray

    if isinstance(data, ndarray.NDArray):
        return data
    if isinstance(data, np.ndarray | np.generic):
        return ndarray.array(np.ascontiguousarray(data))
    if hasattr(data, "__dlpack__"):  # torch tensors and other DLPack producers
        if type(data).__module__.startswith("torch"):
            data = data.detach().cpu().contiguous()
        return ndarray.array(np.ascontiguousarray(np.from_dlpack(data)))
    raise ArgumentError(
        f"{what}: data must be a numpy array, a tvm runtime tensor or a DLPack tensor "
        f"(e.g. torch), got {type(data).__name__}"
    )


class Parameter(Tensor):
    """A weight: a Tensor that may be bound to concrete data (`param.data = array`)."""

    def __init__(self, shape: Sequence[Any], dtype: str | None = None) -> None:
        dtype = get_default_dtype() if dtype is None else str(dtype)
        super().__init__(_expr=Tensor.placeholder(shape, dtype, name="param")._expr)
        self._data = None
        self.attrs: dict[str, Any] = OrderedDict()

    @property
    def data(self) -> Any:
        """The bound value (a runtime tensor), or None."""
        return self._data

    @data.setter
    def data(self, data: Any) -> None:
        if data is None:
            self._data = None
            return
        value = _to_runtime_tensor(data, "Parameter.data")
        if tuple(value.shape) != tuple(self.shape):
            raise ShapeError(
                f"Parameter.data: shape {tuple(value.shape)} does not match the parameter's "
                f"{tuple(self.shape)}"
            )
        if str(value.dtype) != self.dtype:
            raise DTypeError(
                f"Parameter.data: dtype {value.dtype} does not match the parameter's "
                f"{self.dtype}; convert the array first (e.g. .astype('{self.dtype}'))"
            )
        self._data = value

    def to(self, dtype: str | None = None) -> None:
        """Change the dtype of an unbound parameter."""
        if dtype is None:
            return
        if self._data is not None:
            raise DTypeError(
                "Parameter.to: the parameter holds data; converting it would change its values. "
                "Set .data = None first, or convert the array yourself"
            )
        self._expr = Tensor.placeholder(self.shape, str(dtype), name="param")._expr


class Object:
    """A non-tensor value of the exported program (an opaque relax object, e.g. a cache)."""

    def __init__(self, *, _expr: Expr, _name: str) -> None:
        if not isinstance(_expr, Var):
            _expr = current_builder("Object").emit(_expr, _name)
        if not isinstance(_expr.struct_info, ObjectStructInfo):
            raise MiniTVMError(f"nn.Object {_name!r}: expected an object, got {_expr.struct_info}")
        self._expr = _expr


class Effect:
    """A side effect threaded through exported functions as extra inputs and outputs."""

    def emit_init(self, name_hint: str, builder: BlockBuilder) -> list[DataflowVar]:
        raise NotImplementedError(f"{type(self).__name__}.emit_init")

    def create(self, name_hint: str) -> list[Var]:
        raise NotImplementedError(f"{type(self).__name__}.create")

    def set_state(self, state_vars: list[Var]) -> None:
        raise NotImplementedError(f"{type(self).__name__}.set_state")

    def finalize(self) -> list[Var]:
        raise NotImplementedError(f"{type(self).__name__}.finalize")

    def to(self, dtype: str | None = None) -> None:
        """Most effects hold no dtype-dependent state."""


class Module(SubroutineMixin):
    """Base class of models: subclass it, assign layers and Parameters as attributes, write
    `forward`, then `export_tvm(spec)` or `jit(spec)`."""

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Parameter]]:
        """(dotted name, Parameter) for every parameter, in attribute order."""
        yield from _attribute_finder(self, prefix, lambda x: isinstance(x, Parameter))

    def parameters(self) -> Iterator[Parameter]:
        for _, param in self.named_parameters():
            yield param

    def state_dict(
        self, *, prefix: str = "", destination: dict[str, Parameter] | None = None
    ) -> dict[str, Parameter]:
        """The parameters by dotted name (the same Parameter objects, not copies)."""
        out = OrderedDict() if destination is None else destination
        for name, param in self.named_parameters(prefix):
            out[name] = param
        return out

    def load_state_dict(
        self, state_dict: dict[str, Any], strict: bool = True
    ) -> tuple[list[str], list[str]]:
        """Bind this module's parameters to the data in `state_dict` (Parameters or arrays);
        returns (missing keys, unexpected keys); `strict` makes either an error."""
        own = self.state_dict()
        unexpected = [k for k in state_dict if k not in own]
        for key, value in state_dict.items():
            if key in own:
                data = value.data if isinstance(value, Parameter) else value
                if data is None:
                    raise ArgumentError(f"load_state_dict: parameter {key!r} holds no data")
                own.pop(key).data = data
        missing = list(own)
        if strict and (missing or unexpected):
            raise KeyError(f"load_state_dict: missing keys {missing}, unexpected keys {unexpected}")
        return missing, unexpected

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        forward = getattr(self, "forward", None)
        if forward is None:
            raise MiniTVMError(f"{type(self).__name__} has no forward method to call")
        return forward(*args, **kwargs)

    def to(self, dtype: str | None = None) -> None:
        """Convert every parameter (recursively) to `dtype`."""
        for item in list(self.__dict__.values()):
            if isinstance(item, Module | Parameter | Effect):
                item.to(dtype=dtype)
        if dtype is not None and isinstance(getattr(self, "dtype", None), str):
            self.dtype = str(dtype)

    def export_tvm(self, spec: Any, debug: bool = False, allow_extern: bool = False) -> Any:
        """(IRModule, [(name, Parameter)]): one relax function per method named in `spec`,
        taking the spec's inputs, then the parameters, as in TVM.

        >>> mod, params = model.export_tvm({"forward": {"x": nn.spec.Tensor(("n", 784), "float32")}})
        """
        from . import spec as _spec
        from .exporter import Exporter

        module_spec = _spec.ModuleSpec.from_raw(spec, self)
        mod, params, ext_mods = Exporter(debug=debug).build(module_spec)
        return (mod, params, ext_mods) if allow_extern else (mod, params)

    def jit(
        self,
        spec: Any,
        device: Any = "cpu",
        pipeline: Any = "default_build",
        out_format: str = "torch",
        debug: bool = False,
    ) -> Any:
        """Export, compile and load on `device`; every parameter must hold data. The result is
        called per method: `jm["forward"](torch_tensor)` or `jm.forward(...)`."""
        from .jit import jit_module

        return jit_module(self, spec, device, pipeline, out_format, debug)


class _Container(Module):
    """What ModuleList and ModuleDict share: indexing, iteration and length of `self.modules`
    (a list iterates its modules, a dict its keys, as in PyTorch)."""

    modules: Any

    def __iter__(self) -> Iterator[Any]:
        return iter(self.modules)

    def __getitem__(self, key: Any) -> Module:
        return self.modules[key]

    def __setitem__(self, key: Any, module: Module) -> None:
        self.modules[key] = module

    def __len__(self) -> int:
        return len(self.modules)


class ModuleList(_Container):
    """A list of submodules; parameters are named by index (`layers.0.weight`)."""

    def __init__(self, modules: Sequence[Module]):
        self.modules = list(modules)

    def append(self, module: Module) -> None:
        self.modules.append(module)

    def to(self, dtype: str | None = None) -> None:
        for module in self.modules:
            module.to(dtype=dtype)

    def forward(self, x: Any) -> Any:
        """Apply the modules one after the other."""
        for module in self.modules:
            x = module(x)
        return x


class Sequential(ModuleList):
    """`nn.Sequential(a, b, c)`: the modules applied in order (PyTorch's spelling)."""

    def __init__(self, *modules: Module):
        super().__init__(modules)


class ModuleDict(_Container):
    """A dict of submodules; parameters are named by key (`blocks.attn.weight`)."""

    def __init__(self, modules: dict[str, Module] | None = None):
        self.modules = OrderedDict(modules or {})

    def __contains__(self, key: str) -> bool:
        return key in self.modules

    def keys(self) -> Any:
        return self.modules.keys()

    def values(self) -> Any:
        return self.modules.values()

    def items(self) -> Any:
        return self.modules.items()

    def get(self, key: str, default: Module | None = None) -> Module | None:
        return self.modules.get(key, default)

    def update(self, modules: dict[str, Module]) -> None:
        self.modules.update(modules)

    def pop(self, key: str) -> Module:
        return self.modules.pop(key)

    def clear(self) -> None:
        self.modules.clear()

    def to(self, dtype: str | None = None) -> None:
        for module in self.modules.values():
            module.to(dtype=dtype)


def wrap_nested(expr: Expr, name: str) -> Any:
    """Emit `expr` and wrap the result: a Tensor, or a tuple of them for a tuple value."""
    if not isinstance(expr, DataflowVar):
        expr = current_builder(name).emit(expr, name)
    sinfo = expr.struct_info
    if isinstance(sinfo, TensorStructInfo):
        return Tensor(_expr=expr)
    if isinstance(sinfo, TupleStructInfo):
        return tuple(
            wrap_nested(TupleGetItem(expr, i), f"{name}.{i}") for i in range(len(sinfo.fields))
        )
    raise MiniTVMError(f"nn op {name!r}: its result {sinfo} is neither a tensor nor a tuple")


def _attribute_finder(
    root: Any, prefix: str, condition: Callable[[Any], bool]
) -> Iterator[tuple[str, Any]]:
    """(dotted name, value) of every attribute below `root` that satisfies `condition`."""
    if isinstance(root, ModuleList):
        items: Any = ((str(i), m) for i, m in enumerate(root.modules))
    elif isinstance(root, ModuleDict):
        items = root.modules.items()
    else:
        items = root.__dict__.items()
    for name, item in items:
        if condition(item):
            yield prefix + name, item
        elif isinstance(item, Module):
            yield from _attribute_finder(item, f"{prefix}{name}.", condition)
