"""The graph walk both PyTorch importers share: fx nodes in order, each through its converter.

An importer finds a converter for every call node first and reports all the nodes it has
none for in one OpNotImplemented; only then does it emit code, so a model with three
unsupported ops names all three. A call that writes its first operand in place (`x.add_(1)`)
is functionalized: its result becomes that operand's value from then on (see `_inplace`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ....error import FrontendError, MiniTVMError, OpAttributeInvalid, OpNotImplemented
from ....tir.expr import PrimExpr
from ....tir.expr import Var as TirVar
from ... import op as R
from ...block_builder import BlockBuilder
from ...expr import Expr, ShapeExpr, Tuple, const
from ..common import raise_unsupported
from ._base import NotComputed
from ._inplace import first_operand, is_inplace_name, is_tensor_value, read_after, shared_memory

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
    """State of one import: the BlockBuilder, node -> value map, weights and symbolic dims.

    A custom converter (`custom_convert_map`) gets this object: `retrieve_args(node)` gives the
    node's converted arguments, `block_builder.emit(expr)` (or `emit`) binds a relax
    expression, `const(value, dtype)` makes a constant, and `env` maps fx nodes to values.
    """

    def __init__(self, frontend: str):
        self.frontend = frontend
        self.bb = BlockBuilder()
        self.env: dict[Any, Any] = {}
        self.params: dict[int, Expr] = {}  # id(torch tensor) -> Var (kept as input) or Constant
        self.sym_vars: dict[str, TirVar] = {}

    # ------------------------------------------------------------------ values
    @property
    def block_builder(self) -> BlockBuilder:
        """The BlockBuilder that emits into "main" (TVM's name for it)."""
        return self.bb

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

    def retrieve_args(self, node: Any) -> list:
        """The positional arguments of an fx node, converted (tensors are relax values)."""
        return list(self.retrieve(tuple(node.args)))

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
        *,
        writes: Callable[[Any], tuple],
        is_view: Callable[[Any], bool],
        hint: str,
        same_tensor: Callable[[Any], Iterable[Any]] = lambda node: (),
    ) -> None:
        """Convert every call node (placeholders and outputs are the caller's).

        `writes(node)` gives the operands a call writes in place, `is_view(node)` says whether
        a call's result may share its first operand's memory, `same_tensor(node)` gives the
        other nodes that read the very same tensor (fx get_attr nodes of one attribute), and
        `hint` ends the report of unsupported ops with what the user can do.
        """
        nodes = list(nodes)
        calls = [n for n in nodes if n.op in ("call_function", "call_method", "call_module")]
        found = {n: lookup(n) for n in calls}
        missing = [describe(n) for n, conv in found.items() if conv is None]
        writers, refused = set(), []
        for node in calls:
            written = writes(node)
            if not written:
                continue
            if len(written) == 1 and written[0] is first_operand(node):
                writers.add(node)
            else:
                op, where = describe(node)
                refused.append((op, f"{where} (writes an operand other than its first)"))
        raise_unsupported(self.frontend, missing + refused, hint)
        order = {n: i for i, n in enumerate(nodes)}
        for node, convert in found.items():
            args, kwargs = self.retrieve(tuple(node.args)), self.retrieve(dict(node.kwargs))
            _refuse_not_computed(self.frontend, node, (args, kwargs), describe)
            value = self._call(node, convert, args, kwargs, describe)
            if node in writers:
                value = self._write_first_operand(node, value, order, writers, is_view, describe)
                for n in same_tensor(first_operand(node)):
                    self.env[n] = value
            self._check_dtypes(node, value, describe)
            self.env[node] = value

    def _write_first_operand(self, node, value, order, writers, is_view, describe) -> Any:
        """Apply `node`'s in-place write: its value replaces its first operand's from now on."""
        from torch import fx

        target = first_operand(node)
        if not isinstance(target, fx.Node) or not is_tensor_value(self.env.get(target)):
            return value  # `n += 1` on a Python int: nothing else holds the old value
        op, where = describe(node)
        if not is_tensor_value(value):
            raise OpNotImplemented(
                f"{self.frontend}: cannot convert {op} at {where}: writing {target.name!r} in "
                f"place gave {type(value).__name__}, not a tensor; write it out of place"
            )
        dtype = str(self.env[target].struct_info.dtype)
        if str(value.struct_info.dtype) != dtype:  # an in-place op keeps its operand's dtype
            value = self.emit(R.astype(value, dtype))
        same, overlapping = shared_memory(
            node, order, writers, is_view, lambda n: is_tensor_value(self.env.get(n))
        )
        late = read_after(node, order, overlapping)
        if late:
            names = ", ".join(repr(n.name) for n in late)
            raise OpNotImplemented(
                f"{self.frontend}: cannot convert {op} at {where}: it writes {target.name!r} in "
                f"place, but {names} (sharing its memory) {'is' if len(late) == 1 else 'are'} "
                "read afterwards, and the importer applies in-place writes only to tensors no "
                "other live tensor views. Write it out of place (y = x.add(1) for x.add_(1), "
                "torch.where for masked writes) or clone the tensor before writing it"
            )
        for n in same:
            self.env[n] = value
        return value

    def _check_dtypes(self, node, value: Any, describe) -> None:
        """Where torch recorded the node's result (node.meta["val"], as torch.export does), a
        converted tensor of another dtype is an importer bug: refuse it rather than compute
        something else."""
        vals, values = node.meta.get("val"), value
        if not isinstance(vals, list | tuple):
            vals, values = (vals,), (value,)
        if not isinstance(values, list | tuple) or len(values) != len(vals):
            return
        for val, got in zip(vals, values):
            want = _torch_dtype_name(val)
            if want is None or not is_tensor_value(got) or want == "bfloat16":
                continue  # bfloat16 weights are widened to float32 on purpose (to_numpy)
            have = str(got.struct_info.dtype)
            if have != want:
                op, where = describe(node)
                raise FrontendError(
                    f"{self.frontend}: cannot convert {op} at {where}: the importer computes "
                    f"{have} where torch computes {want}; this is an importer bug, please "
                    "report it (casting the operands explicitly in the model avoids it)"
                )

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


def _refuse_not_computed(frontend: str, node: Any, args: Any, describe) -> None:
    """A node that reads an output the importer does not compute is refused, by name
    (picking it out of the op's outputs is not a read: export keeps unused getitems)."""
    import operator

    if node.target is operator.getitem:
        return
    missing = _find_not_computed(args)
    if missing is not None:
        op, where = describe(node)
        raise OpNotImplemented(
            f"{frontend}: cannot convert {op} at {where}: it reads {missing.what}, which the "
            "importer does not compute (it converts models for inference); use only the op's "
            "first output"
        )


def _find_not_computed(value: Any) -> NotComputed | None:
    if isinstance(value, NotComputed):
        return value
    items = value.values() if isinstance(value, dict) else value
    if isinstance(items, list | tuple) or isinstance(value, dict):
        for v in items:
            found = _find_not_computed(v)
            if found is not None:
                return found
    return None


def _torch_dtype_name(val: Any) -> str | None:
    """The relax name of a recorded torch tensor's dtype; None for non-tensors and odd dtypes."""
    dtype = getattr(val, "dtype", None)
    if dtype is None or not hasattr(val, "shape"):
        return None
    return _DTYPES.get(str(dtype).removeprefix("torch."))


def aten_converter(node: Any) -> Converter | None:
    """The converter of an aten op node (by overload packet: aten.add.Tensor -> "add"); an
    in-place op (aten.add_.Tensor) takes its functional twin's, and the walk applies the write.
    """
    return aten_op_converter(node.target)


def aten_op_converter(target: Any) -> Converter | None:
    """The converter of an aten OpOverload, or None: looked up by its overload packet
    (torch.ops.aten.add for aten.add.Tensor) in aten_table(); an in-place packet
    (aten.add_) takes its functional twin's converter."""
    if getattr(target, "namespace", None) != "aten":
        return None
    table = aten_table()
    packet = target.overloadpacket
    convert = table.get(packet)
    if convert is None and is_inplace_name(packet.__name__):
        twin = _aten_packet(packet.__name__[:-1])
        convert = None if twin is None else table.get(twin)
    return convert


_ATEN_TABLE: dict | None = None


def aten_table() -> dict:
    """{aten OpOverloadPacket: converter}, built once from _ops' name tables: every ATEN and
    NO_OPS name must be an aten op (a misspelt one fails here, not silently at import time
    of a model), and the torch-function names that aten also has (relu, add, ...) join it."""
    global _ATEN_TABLE
    if _ATEN_TABLE is None:
        from . import _ops

        def no_op(t: Any, *args: Any, **kwargs: Any) -> None:
            return None

        table: dict = {}
        for name, convert in _ops.FUNCTIONS.items():
            packet = _aten_packet(name)
            if packet is not None:
                table[packet] = convert
        for names, convert_of in ((_ops.ATEN, _ops.ATEN.get), (_ops.NO_OPS, lambda _: no_op)):
            for name in names:
                packet = _aten_packet(name)
                if packet is None:
                    raise FrontendError(
                        f"the torch importer's table names aten.{name}, which this torch "
                        "does not have; the table is out of date"
                    )
                table[packet] = convert_of(name)
        _ATEN_TABLE = table
    return _ATEN_TABLE


def _aten_packet(name: str) -> Any:
    """torch.ops.aten.<name> when aten has an op of that name, else None."""
    import torch

    try:
        packet = getattr(torch.ops.aten, name)
    except (AttributeError, RuntimeError):
        return None
    return packet if isinstance(packet, torch._ops.OpOverloadPacket) else None


def to_numpy(tensor: Any) -> np.ndarray:
    """A torch tensor's values as a numpy array (bfloat16 is widened to float32)."""
    import torch

    tensor = tensor.detach().cpu()
    if tensor.dtype == torch.bfloat16:
        tensor = tensor.float()
    return tensor.contiguous().numpy().copy()  # ascontiguousarray would make a 0-d array 1-d


def finished_module(bb: BlockBuilder, params: list | None) -> Any:
    """The built module; with `params` (keep_params_as_input) main carries them as its
    "params" attribute, as TVM's importers do."""
    mod = bb.get()
    if params is not None:
        mod["main"] = mod["main"].with_attr("params", params)
    return mod


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
    if isinstance(value, NotComputed):
        raise OpNotImplemented(
            f"the model returns {value.what}, which the importer does not compute (it converts "
            "models for inference); return only the op's first output"
        )
    if not isinstance(value, Expr):
        raise FrontendError(
            f"the model returns {value!r}, which is not a tensor; return tensors only"
        )
    return value


def _is_dim(value: Any) -> bool:
    return isinstance(value, int | PrimExpr) and not isinstance(value, bool)
