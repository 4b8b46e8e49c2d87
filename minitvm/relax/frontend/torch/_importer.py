"""The graph walk both PyTorch importers share: fx nodes in order, each through its converter.

An importer finds a converter for every call node first and reports all the nodes it has
none for in one OpNotImplemented; only then does it emit code, so a model with three
unsupported ops names all three.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ....error import FrontendError, MiniTVMError, OpAttributeInvalid
from ....tir.expr import PrimExpr
from ....tir.expr import Var as TirVar
from ...block_builder import BlockBuilder
from ...expr import Expr, ShapeExpr, Tuple, const
from ..common import raise_unsupported

# torch dtype name -> relax dtype
_DTYPES = {
    "float32": "float32",
    "float": "float32",
    "float64": "float64",
    "double": "float64",
    "float16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "int64": "int64",
    "long": "int64",
    "int32": "int32",
    "int": "int32",
    "int16": "int16",
    "int8": "int8",
    "uint8": "uint8",
    "bool": "bool",
}

Converter = Callable[..., Any]  # (importer, *args, **kwargs) -> relax Expr | tuple | python value


class Importer:
    """State of one import: the BlockBuilder, node -> value map, weights and symbolic dims."""

    def __init__(self, frontend: str):
        self.frontend = frontend
        self.bb = BlockBuilder()
        self.env: dict[Any, Any] = {}
        self.params: dict[int, Expr] = {}  # id(torch tensor) -> Var (kept as input) or Constant
        self.sym_vars: dict[str, TirVar] = {}

    # ------------------------------------------------------------------ values
    def emit(self, expr: Expr) -> Expr:
        return self.bb.emit(expr)

    def const(self, value: Any, dtype: str | None = None) -> Expr:
        return const(np.asarray(value, dtype=dtype) if dtype is not None else np.asarray(value))

    def tensor(self, tensor: Any) -> Expr:
        """A torch tensor of the model (weight, buffer, constant): its Var if kept as input."""
        key = id(tensor)
        if key not in self.params:
            self.params[key] = const(to_numpy(tensor))
        return self.params[key]

    @staticmethod
    def dtype(torch_dtype: Any) -> str:
        name = str(torch_dtype).removeprefix("torch.")
        if name not in _DTYPES:
            raise OpAttributeInvalid(
                f"dtype {torch_dtype} is not supported; use one of {sorted(_DTYPES)}"
            )
        return _DTYPES[name]

    @staticmethod
    def torch_dtype(dtype: str) -> Any:
        import torch

        return getattr(torch, dtype)

    def sym_var(self, name: str) -> TirVar:
        """One tir.Var per symbolic dim name, shared by every input that uses it."""
        if name not in self.sym_vars:
            self.sym_vars[name] = TirVar(name, "int64")
        return self.sym_vars[name]

    def retrieve(self, arg: Any) -> Any:
        """An fx argument with every Node replaced by its converted value."""
        from torch import fx

        if isinstance(arg, fx.Node):
            return self.env[arg]
        if isinstance(arg, tuple):
            return tuple(self.retrieve(a) for a in arg)
        if isinstance(arg, list):
            return [self.retrieve(a) for a in arg]
        if isinstance(arg, dict):
            return {k: self.retrieve(v) for k, v in arg.items()}
        if isinstance(arg, slice):
            return slice(self.retrieve(arg.start), self.retrieve(arg.stop), self.retrieve(arg.step))
        return arg

    # ------------------------------------------------------------------ the walk
    def convert_nodes(
        self,
        nodes: Iterable[Any],
        lookup: Callable[[Any], Converter | None],
        describe: Callable[[Any], tuple[str, str]],
    ) -> None:
        """Convert every call node (placeholders and outputs are the caller's)."""
        calls = [n for n in nodes if n.op in ("call_function", "call_method", "call_module")]
        found = {n: lookup(n) for n in calls}
        raise_unsupported(self.frontend, [describe(n) for n, conv in found.items() if conv is None])
        for node, convert in found.items():
            args, kwargs = self.retrieve(tuple(node.args)), self.retrieve(dict(node.kwargs))
            self.env[node] = self._call(node, convert, args, kwargs, describe)

    def _call(self, node, convert: Converter, args: tuple, kwargs: dict, describe) -> Any:
        for name in ("input", "self"):  # the first operand passed by keyword
            if name in kwargs:
                args = (kwargs.pop(name), *args)
        try:
            return convert(self, *args, **kwargs)
        except TypeError as err:
            op, where = describe(node)
            raise OpAttributeInvalid(
                f"{self.frontend}: cannot convert {op} at {where}: unexpected arguments "
                f"({err}); args={args!r} kwargs={kwargs!r}"
            ) from err
        except MiniTVMError as err:
            op, where = describe(node)
            cls = type(err) if issubclass(type(err), FrontendError) else FrontendError
            raise cls(f"{self.frontend}: cannot convert {op} at {where}: {err}") from err


def aten_converter(node: Any) -> Converter | None:
    """The converter of an aten op node (by overload packet: aten.add.Tensor -> "add")."""
    from . import _ops

    target = node.target
    if getattr(target, "namespace", None) != "aten":
        return None
    name = target._overloadpacket.__name__
    if name in _ops.NO_OPS:
        return lambda t, *args, **kwargs: None
    return _ops.ATEN.get(name) or _ops.FUNCTIONS.get(name)


def to_numpy(tensor: Any) -> np.ndarray:
    """A torch tensor's values as a numpy array (bfloat16 is widened to float32)."""
    import torch

    tensor = tensor.detach().cpu()
    if tensor.dtype == torch.bfloat16:
        tensor = tensor.float()
    return tensor.contiguous().numpy().copy()  # ascontiguousarray would make a 0-d array 1-d


def bind_output(
    bb: BlockBuilder,
    out: Any,
    *,
    is_tuple: bool,
    unwrap_unit_return_tuple: bool,
    no_bind_return_tuple: bool,
) -> Any:
    """Emit the function's result inside the dataflow block, as TVM's importers shape it."""
    if not is_tuple or all(_is_dim(o) for o in out):
        return bb.emit_output(_as_expr(out))
    out = [_as_expr(o) for o in out]
    if unwrap_unit_return_tuple and len(out) == 1:
        return bb.emit_output(out[0])
    if no_bind_return_tuple:
        return [bb.emit_output(o) for o in out]
    return bb.emit_output(Tuple(tuple(out)))


def _as_expr(value: Any) -> Expr:
    """A nested Python tuple of outputs as a relax Tuple; a tensor's size as a shape."""
    if isinstance(value, list | tuple):
        if value and all(_is_dim(v) for v in value):
            return ShapeExpr(tuple(value))
        return Tuple(tuple(_as_expr(v) for v in value))
    if isinstance(value, int) and not isinstance(value, bool):
        return const(np.asarray(value, "int64"))
    if not isinstance(value, Expr):
        raise FrontendError(
            f"the model returns {value!r}, which is not a tensor; return tensors only"
        )
    return value


def _is_dim(value: Any) -> bool:
    return isinstance(value, int | PrimExpr) and not isinstance(value, bool)
