"""Graph-level IR nodes: variables, constants, calls, tuples, blocks of bindings, functions.

Every expression has a `struct_info`: variables carry theirs, every other node derives it
from its children (a Call through its op's inference rule in the op table).
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ..error import MiniTVMError, ShapeError, TVMError
from ..ir.dtype import DataType
from ..ir.module import BaseFunc, GlobalVar
from ..ir.node import FrozenDict, Node, node, set_tuple_field, setfield
from ..ir.op import Op
from ..tir.expr import IntImm, PrimExpr, as_expr
from . import struct_info as si


class Expr(Node):
    """Base of graph-level expressions."""

    __slots__ = ()
    __hash__ = object.__hash__

    @property
    def struct_info(self) -> si.StructInfo:
        return _STRUCT_INFO_RULES[type(self)](self)

    @property
    def struct_info_(self) -> si.StructInfo:  # TVM's spelling
        return self.struct_info

    @property
    def shape_(self) -> Any:
        """2022 spelling: the shape as a ShapeExpr (use `struct_info.shape`)."""
        sinfo = self.struct_info
        return ShapeExpr(sinfo.shape) if getattr(sinfo, "shape", None) is not None else None

    @property
    def _checked_type_(self) -> Any:
        """2022 spelling: a DynTensorType of the tensor's ndim and dtype (use `struct_info`)."""
        sinfo = self.struct_info
        if not isinstance(sinfo, si.TensorStructInfo):
            raise MiniTVMError(f"{_short(self)} is not a tensor; read .struct_info instead")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return si.DynTensorType(sinfo.ndim, str(sinfo.dtype) if sinfo.dtype else None)

    def __getitem__(self, index: int) -> TupleGetItem:
        if not isinstance(self.struct_info, si.TupleStructInfo):
            raise MiniTVMError(f"cannot index {_short(self)}: it is not a tuple")
        return TupleGetItem(self, index)

    # TVM's tensor properties: each reads the tensor's container when the program runs (a VM
    # builtin), so they work on tensors of unknown rank; the struct info gives the value when
    # it knows it. (`dtype` is not among them here: a Var's `dtype` is None for structural
    # equality.)
    @property
    def ndim(self) -> Call:
        """The rank, as an R.Prim("int64") value: `return x.ndim`."""
        ndim = _rank(_tensor_sinfo(self, "ndim"))
        known = IntImm("int64", ndim) if ndim >= 0 else None
        return _inspect("TENSOR_NDIM", (self,), known)

    @property
    def shape(self) -> _DimsProxy:
        """The dims, each read as an R.Prim("int64") value: `x.shape[axis]`."""
        return _DimsProxy(self, "shape", _tensor_sinfo(self, "shape"))

    @property
    def strides(self) -> _DimsProxy:
        """The strides in elements, each read as an R.Prim("int64") value: `x.strides[axis]`."""
        return _DimsProxy(self, "strides", _tensor_sinfo(self, "strides"))


class TensorPropertyError(TVMError, AttributeError):
    """`x.shape` / `x.ndim` / `x.strides` of a relax expression that is not a tensor
    (an AttributeError too, so `hasattr(x, "shape")` stays False for it)."""


def _tensor_sinfo(e: Expr, what: str) -> si.TensorStructInfo:
    sinfo = e.struct_info
    if not isinstance(sinfo, si.TensorStructInfo):
        raise TensorPropertyError(
            f"{_short(e)}.{what}: {_short(e)} is not a tensor (its struct info is "
            f"{type(sinfo).__name__}); tensor properties read a tensor"
        )
    return sinfo


def _rank(sinfo: si.TensorStructInfo) -> int:
    return len(sinfo.shape) if sinfo.shape is not None else sinfo.ndim


def _inspect(builtin: str, args: tuple, known: Any) -> Call:
    """A call of the VM builtin `builtin` (a name in runtime/vm_builtin_view.py) giving an
    int64 scalar, whose struct info carries `known` (None: known only at run time)."""
    from ..runtime import vm_builtin_view
    from .op import call_pure_packed

    sinfo = si.PrimStructInfo("int64", known)
    return call_pure_packed(getattr(vm_builtin_view, builtin), *args, sinfo_args=sinfo)


class _DimsProxy:
    """`x.shape` / `x.strides`: indexing gives the dim (stride) of an axis as a relax value."""

    def __init__(self, tensor: Expr, what: str, sinfo: si.TensorStructInfo):
        self.tensor, self.what, self.sinfo = tensor, what, sinfo

    def __getitem__(self, axis: Any) -> Call:
        where = f"{_short(self.tensor)}.{self.what}[{axis}]"
        if isinstance(axis, bool):
            raise ShapeError(f"{where}: the axis is a bool; give an int or an R.Prim('int64')")
        if isinstance(axis, int):
            ndim = _rank(self.sinfo)
            if axis < 0 or (ndim >= 0 and axis >= ndim):
                raise ShapeError(
                    f"{where}: axis {axis} is not in [0, {ndim if ndim >= 0 else 'ndim'}) "
                    f"for {_short(self.tensor)} of struct info {self.sinfo}"
                )
            known = None
            if self.what == "shape" and self.sinfo.shape is not None:
                known = self.sinfo.shape[axis]
            axis = PrimValue(IntImm("int64", axis))
        elif isinstance(axis, PrimExpr):
            axis, known = PrimValue(axis), None
        elif isinstance(axis, Expr) and isinstance(axis.struct_info, si.PrimStructInfo):
            known = None
        else:
            raise ShapeError(
                f"{where}: the axis must be an int or an R.Prim('int64') value, got "
                f"{type(axis).__name__}"
            )
        builtin = "TENSOR_SHAPE_I" if self.what == "shape" else "TENSOR_STRIDE_I"
        return _inspect(builtin, (self.tensor, axis), known)


def _short(e: Any) -> str:
    return getattr(e, "name_hint", None) or type(e).__name__


# Python operators on relax expressions build the op calls, as in TVM (`R.matmul(x, w) + b`,
# `relax.op.add(x, y) * 2`): method -> (relax.op function, operands swapped). A Python number
# becomes a constant of the tensor operand's dtype. `==` stays structural identity.
_OPERATORS = {
    "__add__": ("add", False), "__radd__": ("add", True),
    "__sub__": ("subtract", False), "__rsub__": ("subtract", True),
    "__mul__": ("multiply", False), "__rmul__": ("multiply", True),
    "__truediv__": ("divide", False), "__rtruediv__": ("divide", True),
    "__floordiv__": ("floor_divide", False), "__rfloordiv__": ("floor_divide", True),
    "__mod__": ("floor_mod", False), "__rmod__": ("floor_mod", True),
    "__pow__": ("power", False), "__rpow__": ("power", True),
    "__matmul__": ("matmul", False), "__rmatmul__": ("matmul", True),
    "__lt__": ("less", False), "__le__": ("less_equal", False),
    "__gt__": ("greater", False), "__ge__": ("greater_equal", False),
}  # fmt: skip


def _operand(value: Any, like: Expr) -> Any:
    if isinstance(value, bool | int | float) and not isinstance(value, Expr):
        dtype = getattr(like.struct_info, "dtype", None)
        return const(value, str(dtype) if dtype else None)
    if isinstance(value, np.ndarray):
        return const(value)
    return value


def _operator_method(op_name: str, swapped: bool) -> Callable:
    def method(self: Expr, other: Any) -> Any:
        if not isinstance(other, Expr | bool | int | float | np.ndarray):
            return NotImplemented
        from . import op as _op

        other = _operand(other, self)
        lhs, rhs = (other, self) if swapped else (self, other)
        return getattr(_op, op_name)(lhs, rhs)

    method.__name__ = op_name
    return method


def _negative(self: Expr) -> Any:
    from . import op as _op

    return _op.negative(self)


def _astype(self: Expr, dtype: Any) -> Any:
    """`x.astype("float32")`: relax.op.astype, as TVM's relax expressions offer."""
    from . import op as _op

    return _op.astype(self, dtype)


for _name, (_op_name, _swapped) in _OPERATORS.items():
    setattr(Expr, _name, _operator_method(_op_name, _swapped))
Expr.__neg__ = _negative
Expr.astype = _astype


# ----------------------------------------------------------------------------- leaves


@node
class Var(Expr):
    """A graph-level variable with its struct info. Two `Var("x", ...)` are different vars."""

    name_hint: str
    struct_info: si.StructInfo = si.ObjectStructInfo()
    _is_var = True
    _var_fields = ("struct_info",)  # compared/hashed where the var is defined
    dtype = None  # structural equality compares var dtypes; graph vars have none

    def __init__(
        self, name_hint: str, struct_info: si.StructInfo | None = None, type_annotation: Any = None
    ):
        if type_annotation is not None:  # 2022: Var(name, shape, DynTensorType(ndim, dtype))
            struct_info = _struct_info_2022(name_hint, struct_info, type_annotation)
        object.__setattr__(self, "name_hint", str(name_hint))
        object.__setattr__(self, "struct_info", struct_info or si.ObjectStructInfo())
        if not isinstance(self.struct_info, si.StructInfo):
            raise MiniTVMError(
                f"Var {name_hint!r}: struct_info must be a StructInfo (e.g. "
                f"relax.TensorStructInfo((n, 4), 'float32')), got {struct_info!r}"
            )

    @property
    def name(self) -> str:
        return self.name_hint


@node
class DataflowVar(Var):
    """A variable local to a dataflow block (not visible after it)."""

    def __init__(
        self, name_hint: str, struct_info: si.StructInfo | None = None, type_annotation: Any = None
    ):
        Var.__init__(self, name_hint, struct_info, type_annotation)


def _struct_info_2022(name: str, shape: Any, type_annotation: Any) -> si.StructInfo:
    """The struct info of the 2022 `Var(name, shape_annotation, type_annotation)` form."""
    if not isinstance(type_annotation, si.DynTensorType):
        raise MiniTVMError(
            f"Var {name!r}: the third argument must be a relax.DynTensorType, got "
            f"{type(type_annotation).__name__}; write relax.Var(name, relax.TensorStructInfo(shape, dtype))"
        )
    if isinstance(shape, ShapeExpr):
        shape = shape.values
    return type_annotation.struct_info(shape)


# The arrays _ArrayData made itself (copies nobody else holds a writable name for), by id; an
# entry goes when its array does, so an id reused by a later array cannot match it.
_OWN_ARRAYS: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()


class _ArrayData:
    """A read-only array held by a Constant; equal when dtype, shape and contents are equal."""

    __slots__ = ("_a",)

    def __init__(self, array: np.ndarray):
        if _OWN_ARRAYS.get(id(array)) is array:
            # another Constant's own read-only array (passes rebuild constants from
            # `data.numpy()`): shared, not copied (ResNet-18's passes made 81 copies, ~47 MB)
            self._a = array
            return
        a = np.array(array, copy=True)
        a.flags.writeable = False
        _OWN_ARRAYS[id(a)] = a
        self._a = a

    def numpy(self) -> np.ndarray:
        return self._a

    asnumpy = numpy

    @property
    def shape(self) -> tuple[int, ...]:
        return self._a.shape

    @property
    def dtype(self) -> str:
        return str(self._a.dtype)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _ArrayData):
            return NotImplemented
        a, b = self._a, other._a
        return (
            a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
        )

    def __hash__(self) -> int:
        return hash((self._a.dtype.str, self._a.shape, self._a.tobytes()))

    def __repr__(self) -> str:
        return f"array(shape={self._a.shape}, dtype={self._a.dtype})"


def _to_numpy(value: Any) -> np.ndarray:
    if isinstance(value, _ArrayData):
        return value.numpy()
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        return np.asarray(value.numpy())
    return np.asarray(value)


@node
class Constant(Expr):
    """A constant tensor; `data.numpy()` gives its values."""

    data: Any

    def __post_init__(self):
        array = _to_numpy(self.data)
        if array.dtype == np.float64 and not isinstance(self.data, np.ndarray | _ArrayData):
            array = array.astype("float32")  # Python floats default to float32, as in TVM
        DataType(array.dtype)  # validates the dtype
        setfield(
            self, "data", self.data if isinstance(self.data, _ArrayData) else _ArrayData(array)
        )


@node
class PrimValue(Expr):
    """A scalar value (a tir PrimExpr) used as a graph-level argument."""

    value: PrimExpr

    def __post_init__(self):
        # a Python int is int64, as in TVM (bools stay bool: R.assert_op's condition)
        if isinstance(self.value, int) and not isinstance(self.value, bool):
            setfield(self, "value", IntImm("int64", self.value))
        setfield(self, "value", as_expr(self.value))


@node
class DataTypeImm(Expr):
    """A dtype as a graph-level value: `R.dtype("float32")` (R.memory.view's dtype argument);
    the VM passes it to builtins as the dtype's string."""

    value: DataType

    def __post_init__(self):
        setfield(self, "value", DataType(self.value))


@node
class StringImm(Expr):
    value: str


@node
class ShapeExpr(Expr):
    """A shape value: `R.shape([n, 4])`; each entry is an int64 PrimExpr."""

    values: tuple

    def __post_init__(self):
        setfield(self, "values", si.as_shape(self.values))

    def __getitem__(self, index: int) -> PrimExpr:
        """A dim, as in TVM (`shape[0]`, `shape[-1]`)."""
        if not -len(self.values) <= index < len(self.values):
            raise IndexError(f"ShapeExpr index out of range: {index} for {len(self.values)} dims")
        return self.values[index]


@node
class Tuple(Expr):
    fields: tuple

    def __post_init__(self):
        set_tuple_field(self, "fields", Expr, "relax expressions")

    def __getitem__(self, index: int) -> Expr:
        """The field itself, as in TVM (`t[0]`, `t[-1]`): the tuple is right here."""
        if not -len(self.fields) <= index < len(self.fields):
            raise IndexError(f"Tuple index out of range: {index} for {len(self.fields)} fields")
        return self.fields[index]


@node
class TupleGetItem(Expr):
    tuple_value: Expr
    index: int

    def __post_init__(self):
        setfield(self, "index", int(self.index))


@node
class ExternFunc(Expr, BaseFunc):
    """A packed function called by name (`R.call_dps_packed("env.linear", ...)`)."""

    global_symbol: str
    attrs: FrozenDict = FrozenDict()


# ----------------------------------------------------------------------------- ops and calls


@node
class Call(Expr):
    """`op(*args)` with attributes; `sinfo_args` carry output struct info (call_tir)."""

    op: Any  # Op, GlobalVar, Var, ExternFunc
    args: tuple
    attrs: FrozenDict = FrozenDict()
    sinfo_args: tuple = ()

    def __post_init__(self):
        setfield(self, "args", tuple(self.args))
        setfield(self, "attrs", FrozenDict(self.attrs or {}))
        setfield(self, "sinfo_args", tuple(self.sinfo_args or ()))  # TVM code passes None
        for i, a in enumerate(self.args):
            if not isinstance(a, Expr | GlobalVar):
                name = self.op.name if isinstance(self.op, Op) else _short(self.op)
                raise MiniTVMError(
                    f"{name}: argument {i} is a {type(a).__name__}, not a relax expression; "
                    "wrap arrays with relax.const(...) and shapes with relax.ShapeExpr(...)"
                )


# ----------------------------------------------------------------------------- bindings and blocks


class Binding(Node):
    __slots__ = ()


@node
class VarBinding(Binding):
    var: Var
    value: Expr
    _def_fields = ("var",)


@node
class MatchCast(Binding):
    """Bind `var` to `value` after checking it matches `struct_info` (defines new dims)."""

    var: Var
    value: Expr
    struct_info: si.StructInfo
    _def_fields = ("var", "struct_info")


@node
class BindingBlock(Node):
    bindings: tuple

    def __post_init__(self):
        setfield(self, "bindings", tuple(self.bindings))


@node
class DataflowBlock(BindingBlock):
    """A side-effect-free block; its DataflowVars are invisible outside it."""


@node
class SeqExpr(Expr):
    blocks: tuple
    body: Expr

    def __post_init__(self):
        setfield(self, "blocks", tuple(self.blocks))


@node
class If(Expr):
    cond: Expr
    true_branch: Expr
    false_branch: Expr


@node
class Function(Expr, BaseFunc):
    """A graph-level function: `params` are Vars, `body` is (usually) a SeqExpr."""

    params: tuple
    body: Expr
    ret_struct_info: Any = None
    attrs: FrozenDict = FrozenDict()
    is_pure: bool = True
    _def_fields = ("params",)

    def __post_init__(self):
        setfield(self, "params", tuple(self.params))
        setfield(self, "attrs", FrozenDict(self.attrs or {}))
        for p in self.params:
            if not isinstance(p, Var) or isinstance(p, DataflowVar):
                raise MiniTVMError(
                    f"Function params must be relax.Var (not DataflowVar), got {p!r}"
                )
        if self.ret_struct_info is None:
            setfield(self, "ret_struct_info", self.body.struct_info)

    @property
    def name(self) -> str | None:
        return self.attrs.get("global_symbol")

    def bind_params(self, binding_map: Any) -> Function:
        """A new function with params (keys: Vars or names) replaced by values (arrays become
        constants), as TVM's `Function.bind_params`; see relax/transform/bind_symbolic_vars.py."""
        from .transform.bind_symbolic_vars import bind_params_to_function

        return bind_params_to_function(self, binding_map)

    def bind_symbolic_vars(self, binding_map: Any) -> Function:
        """A new function with symbolic vars (keys: tir.Vars or names) replaced by ints or
        PrimExprs, as TVM's `Function.bind_symbolic_vars`."""
        from .transform.bind_symbolic_vars import bind_symbolic_vars_function

        return bind_symbolic_vars_function(self, binding_map)


# ----------------------------------------------------------------------------- struct info rules


def _call_sinfo(call: Call) -> si.StructInfo:
    op = call.op
    if isinstance(op, Op):
        if op.op_def is None:
            raise MiniTVMError(f"relax op {op.name!r} has no struct-info inference rule")
        result = op.op_def.infer(call)
        return result if call.sinfo_args else _on_args_vdevice(call, result)
    if call.sinfo_args:
        return call.sinfo_args[0]
    if isinstance(op, Expr):
        fsinfo = op.struct_info
        if isinstance(fsinfo, si.FuncStructInfo):
            return fsinfo.ret
    raise MiniTVMError(
        f"cannot infer the result of calling {_short(op)}: give sinfo_args, or emit the call "
        "through a BlockBuilder that knows the callee"
    )


def _tensor_sinfos(sinfo: si.StructInfo) -> list:
    if isinstance(sinfo, si.TensorStructInfo):
        return [sinfo]
    if isinstance(sinfo, si.TupleStructInfo):
        return [t for f in sinfo.fields for t in _tensor_sinfos(f)]
    return []


def _place_on(sinfo: si.StructInfo, vdevice: Any) -> si.StructInfo:
    if isinstance(sinfo, si.TensorStructInfo) and sinfo.vdevice is None:
        return sinfo.replace(vdevice=vdevice)
    if isinstance(sinfo, si.TupleStructInfo):
        return sinfo.replace(fields=tuple(_place_on(f, vdevice) for f in sinfo.fields))
    return sinfo


def _on_args_vdevice(call: Call, result: si.StructInfo) -> si.StructInfo:
    """An op's tensor results live on the virtual device of its tensor operands, as in TVM;
    the per-op rules leave `vdevice` unset, so it is filled in here once for all ops."""
    found: dict = {}
    for arg in call.args:
        for t in _tensor_sinfos(arg.struct_info) if isinstance(arg, Expr) else ():
            if t.vdevice is not None:
                v = t.vdevice
                found.setdefault((str(v.target), v.vdevice_id, v.memory_scope), v)
    if not found:
        return result
    if len(found) > 1:
        raise MiniTVMError(
            f"relax op {call.op.name!r}: operands are on different virtual devices "
            f"{list(found.values())}; give all operands the same vdevice"
        )
    return _place_on(result, next(iter(found.values())))


def _tuple_get_item_sinfo(e: TupleGetItem) -> si.StructInfo:
    sinfo = e.tuple_value.struct_info
    if not isinstance(sinfo, si.TupleStructInfo):
        raise MiniTVMError(f"TupleGetItem on {_short(e.tuple_value)}, which is not a tuple")
    if not 0 <= e.index < len(sinfo.fields):
        raise ShapeError(
            f"TupleGetItem: index {e.index} out of range for a tuple of {len(sinfo.fields)} fields"
        )
    return sinfo.fields[e.index]


def _if_sinfo(e: If) -> si.StructInfo:
    # The least common ancestor of the branches, as TVM does. Not `structural_equal` on the
    # struct infos: their symbolic dims are definition sites, so it would map (n,) onto (m,)
    # and claim the result always has the true branch's shape.
    from .analysis import struct_info_lca

    return struct_info_lca(e.true_branch.struct_info, e.false_branch.struct_info)


def _constant_sinfo(c: Constant) -> si.StructInfo:
    return si.TensorStructInfo(c.data.shape, c.data.dtype)


_STRUCT_INFO_RULES: dict[type, Callable[[Any], si.StructInfo]] = {
    Constant: _constant_sinfo,
    PrimValue: lambda p: si.PrimStructInfo(p.value.dtype, p.value),
    StringImm: lambda s: si.ObjectStructInfo(),
    DataTypeImm: lambda d: si.ObjectStructInfo(),
    ShapeExpr: lambda s: si.ShapeStructInfo(s.values),
    Tuple: lambda t: si.TupleStructInfo(tuple(f.struct_info for f in t.fields)),
    TupleGetItem: _tuple_get_item_sinfo,
    ExternFunc: lambda f: si.FuncStructInfo.opaque_func(),
    Call: _call_sinfo,
    SeqExpr: lambda s: s.body.struct_info,
    If: _if_sinfo,
    Function: lambda f: si.FuncStructInfo(
        tuple(p.struct_info for p in f.params), f.ret_struct_info
    ),
}


# ----------------------------------------------------------------------------- helpers


def const(value: Any, dtype: str | None = None) -> Constant:
    """A constant tensor: `relax.const(np.ones((2, 3), "float32"))`, `relax.const(1.0, "float32")`."""
    array = _to_numpy(value)
    if isinstance(
        dtype, si.DynTensorType
    ):  # 2022: relax.const(arr, relax.DynTensorType(2, "float32"))
        dtype = dtype.dtype
    if dtype is not None:
        array = array.astype(DataType(dtype).numpy_dtype())
    elif array.dtype == np.float64 and not isinstance(value, np.ndarray):
        array = array.astype("float32")
    elif array.dtype == np.int64 and not isinstance(value, np.ndarray):
        array = array.astype("int32")
    return Constant(array)


def get_shape_of(e: Expr) -> tuple:
    sinfo = e.struct_info
    if not isinstance(sinfo, si.TensorStructInfo) or sinfo.shape is None:
        raise ShapeError(f"{_short(e)} has no known shape (struct info {sinfo})")
    return sinfo.shape


def is_leaf(e: Any) -> bool:
    """Leaves may appear directly as call arguments (normal form)."""
    return isinstance(
        e,
        Var
        | Constant
        | PrimValue
        | StringImm
        | DataTypeImm
        | ShapeExpr
        | ExternFunc
        | GlobalVar
        | Op,
    )


__all__ = [
    "Binding",
    "BindingBlock",
    "Call",
    "Constant",
    "DataTypeImm",
    "DataflowBlock",
    "DataflowVar",
    "Expr",
    "ExternFunc",
    "Function",
    "GlobalVar",
    "If",
    "MatchCast",
    "Op",
    "PrimValue",
    "SeqExpr",
    "ShapeExpr",
    "StringImm",
    "Tuple",
    "TupleGetItem",
    "Var",
    "VarBinding",
    "const",
    "get_shape_of",
    "is_leaf",
]
