"""The `R` namespace of TVMScript: `from minitvm.script import relax as R`.

Struct-info constructors (`R.Tensor((1, "m"), "float32")`, `R.Tuple`, `R.Shape`, `R.Object`,
`R.Prim`), the function decorator (`@R.function`), block markers (`R.dataflow()`, `R.output`),
calls into lower levels (`R.call_tir`, `R.call_dps_packed`) and every op of the relax op table:
`R.<name>` / `R.nn.<name>` resolve through `minitvm.relax.op.OP_TABLE` to the Python op
functions, so an op added to the table is usable from TVMScript without touching this file.

A string dimension such as `"m"` names a symbolic int64 `tir.Var`: inside a parsed function all
occurrences of one name are the same variable; outside a parser each struct info gets fresh ones.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import contextvars
import sys
import types
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import relax as _relax
from ..error import ArgumentError, MiniTVMError, ParseError
from ..ir.dtype import DataType
from ..ir.module import GlobalVar
from ..relax import op as _op
from ..relax.expr import DataTypeImm
from ..tir.expr import PrimExpr
from ..tir.expr import Var as TirVar
from .tir import VarDecl

__tvmscript__ = True

# ----------------------------------------------------------------------------- symbolic dims

# the current function's table of symbolic dims (name -> tir.Var), set by the relax parser
_DIMS: contextvars.ContextVar[dict[str, TirVar] | None] = contextvars.ContextVar(
    "minitvm_relax_script_dims", default=None
)


@contextlib.contextmanager
def dim_scope(table: dict[str, TirVar]) -> Iterator[None]:
    """Within the block, string dims resolve through `table` (the relax parser: one per function)."""
    token = _DIMS.set(table)
    try:
        yield
    finally:
        _DIMS.reset(token)


def _resolve_dim(value: Any, table: dict[str, TirVar]) -> Any:
    if isinstance(value, VarDecl):
        # `n = T.int64()` at module level, met when Python evaluates a signature's annotations
        # eagerly; the parser re-reads the annotation and names the dim after the variable.
        return TirVar("n", value.dtype)
    if not isinstance(value, builtins.str):
        return value
    text = value.strip()
    if text.isidentifier():
        if text not in table:
            table[text] = TirVar(text, "int64")
        return table[text]
    return _dim_expression(text, table)


def _dim_expression(text: str, table: Mapping[str, TirVar]) -> PrimExpr:
    """A dim written as a string expression over known symbolic dims, e.g. "n * 2"."""
    from .parser import TIRParser
    from .source import Source

    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as err:
        raise ParseError(f"shape dimension {text!r} is not a valid expression") from err
    from . import tir as T

    parser = TIRParser(Source("<dim>", [text], tree), {"T": T})
    parser.scopes = [dict(table)]
    try:
        return parser.eval(tree.body)
    except ParseError as err:
        raise ParseError(
            f"shape dimension {text!r}: {getattr(err, 'msg', err)}; a dim expression may use only "
            f"symbolic dims already defined in the function ({sorted(table)})"
        ) from err


def _dims(values: Any) -> Any:
    table = _DIMS.get()
    if table is None:
        # Outside a parser (most often Python evaluating a signature's annotations before the
        # parser re-reads them): names are shared within one struct info only, and a dim
        # expression may name a dim that a later parameter introduces.
        table = _free_dims(values)
    return tuple(_resolve_dim(v, table) for v in values)


def _free_dims(values: Any) -> dict[str, TirVar]:
    """A dim table defining every name that the string dims in `values` use."""
    table: dict[str, TirVar] = {}
    for value in values:
        if not isinstance(value, builtins.str):
            continue
        try:
            tree = ast.parse(value.strip(), mode="eval")
        except SyntaxError:
            continue  # _dim_expression reports it
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id != "T" and node.id not in table:
                table[node.id] = TirVar(node.id, "int64")
    return table


def _dtype(dtype: Any) -> str | None:
    if dtype is None or dtype == "" or dtype == "void":
        return None
    return builtins.str(DataType(dtype))


# ----------------------------------------------------------------------------- struct info


def _named_vdevice(text: builtins.str) -> Any:
    """The VDevice that `text` ("cuda:1", "llvm", "vdevice:0") names in the module's list.

    Python evaluates the signatures of an `@I.ir_module` class's methods while it runs the
    class body, before the parser reads them; there the text cannot be resolved yet and
    gives an unspecified `VDevice()` (the parser re-reads the annotation in its module).
    Anywhere else outside a module it is refused."""
    from ..ir.vdevice import VDevice, lookup_vdevice
    from .ir import current_vdevices

    caller = sys._getframe(2).f_locals  # R.Tensor's caller
    if _DIMS.get() is None and "__qualname__" in caller and "__module__" in caller:
        return VDevice()
    return lookup_vdevice(current_vdevices.get(), text)


def Tensor(
    shape: Any = None, dtype: Any = None, vdevice: Any = None, ndim: int = -1
) -> _relax.TensorStructInfo:
    """Tensor struct info: `R.Tensor((1, "m"), "float32")`, `R.Tensor(ndim=2)`, `R.Tensor`.

    TVM's order is `(shape, dtype, vdevice, ndim)`; an int third positional argument still
    means `ndim` (minitvm's older order). `vdevice` is a `tvm.ir.VDevice`, or text such as
    "cuda:0" naming an entry of the module's `I.module_global_infos({"vdevice": [...]})`.
    """
    if isinstance(vdevice, int) and not isinstance(vdevice, bool):
        vdevice, ndim = None, vdevice
    if isinstance(vdevice, builtins.str):  # "cuda:1": an entry of the module's vdevice list
        vdevice = _named_vdevice(vdevice)
    if ndim != -1 and (not isinstance(ndim, int) or ndim < -1):
        raise ArgumentError(
            f"R.Tensor: ndim={ndim!r} must be a non-negative int, or -1 for an unknown rank"
        )
    if (
        isinstance(shape, tuple | list) and ndim != -1 and ndim != len(shape)
    ):  # TVM refuses any ndim beside a shape; minitvm accepts a consistent one
        raise ArgumentError(
            f"R.Tensor: ndim={ndim} disagrees with shape {tuple(shape)!r}; give the shape or "
            "ndim, not both"
        )
    if isinstance(shape, builtins.str | DataType) and dtype is None:  # R.Tensor("float32", ndim=2)
        shape, dtype = None, shape
    if isinstance(shape, _relax.Expr):
        return _relax.TensorStructInfo(shape, _dtype(dtype), ndim, vdevice=vdevice)
    if shape is not None:
        shape = _dims(shape if isinstance(shape, tuple | list) else (shape,))
        return _relax.TensorStructInfo(shape, _dtype(dtype), vdevice=vdevice)
    return _relax.TensorStructInfo(None, _dtype(dtype), ndim, vdevice=vdevice)


def Tuple(*fields: Any) -> _relax.TupleStructInfo:
    """Tuple struct info: `R.Tuple(R.Tensor((2,), "float32"), R.Object)`."""
    if len(fields) == 1 and isinstance(fields[0], list | tuple):
        fields = tuple(fields[0])
    return _relax.TupleStructInfo(tuple(as_struct_info(f) for f in fields))


def Shape(values: Any = None, ndim: int = -1) -> _relax.ShapeStructInfo:
    """Shape struct info: `R.Shape([1, "n"])` or `R.Shape(ndim=2)`."""
    if values is None:
        return _relax.ShapeStructInfo(None, ndim)
    return _relax.ShapeStructInfo(_dims(values))


def Prim(dtype: Any = None, value: Any = None) -> _relax.PrimStructInfo:
    """Scalar struct info: `R.Prim("int64")`, `R.Prim(value=n)` (dtype that of `n`), or
    `R.Prim("int64", value="n")` (a symbolic value named `n`)."""
    from ..tir.expr import PrimExpr

    if isinstance(value, PrimExpr):
        return _relax.PrimStructInfo(value.dtype if dtype is None else dtype, value)
    if value is not None:
        value = _dims((value,))[0]
    return _relax.PrimStructInfo("int64" if dtype is None else dtype, value)


def Callable(params: Any = None, ret: Any = None, purity: bool = True) -> _relax.FuncStructInfo:
    """Function struct info: `R.Callable([R.Tensor((2,), "float32")], R.Tensor((2,), "float32"))`."""
    ps = None if params is None else tuple(as_struct_info(p) for p in params)
    ret = as_struct_info(ret) if ret is not None else _relax.ObjectStructInfo()
    return _relax.FuncStructInfo(ps, ret, purity)


# bare names used as annotations (`x: R.Tensor`) mean what calling them without arguments
# does, as in TVM: nothing more is known, and the bare `R.Tuple` is the empty `R.Tuple()`
_BARE_SINFO: dict[Any, Any] = {
    Tensor: lambda: _relax.TensorStructInfo(None, None),
    Shape: lambda: _relax.ShapeStructInfo(),
    Tuple: lambda: _relax.TupleStructInfo(()),
}


class StructInfoProxy:
    """TVM's parser-side struct-info classes (`tvm.script.parser.relax.entry.TensorProxy`):
    here calling one builds the struct info at once, and the bare class means what the bare
    `R.Tensor` means."""

    @staticmethod
    def _make(*args: Any, **kwargs: Any) -> _relax.StructInfo:
        raise NotImplementedError

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls._make(*args, **kwargs)


def _proxy(name: builtins.str, make: Any) -> type:
    return type(name, (StructInfoProxy,), {"_make": staticmethod(make), "__module__": __name__})


# `R.Object` and `R.Object()` both mean ObjectStructInfo, as in TVM (where it is a function)
Object = _proxy("Object", _relax.ObjectStructInfo)

entry = types.SimpleNamespace(
    StructInfoProxy=StructInfoProxy,
    ObjectProxy=_proxy("ObjectProxy", _relax.ObjectStructInfo),
    TensorProxy=_proxy("TensorProxy", Tensor),
    CallableProxy=_proxy("CallableProxy", Callable),
    TupleProxy=_proxy("TupleProxy", Tuple),
    ShapeProxy=_proxy("ShapeProxy", Shape),
    PrimProxy=_proxy("PrimProxy", Prim),
)


def as_struct_info(value: Any) -> _relax.StructInfo:
    """A struct info from an annotation value (also the bare `R.Tensor`, `R.Shape`)."""
    if isinstance(value, _relax.StructInfo):
        return value
    if isinstance(value, type) and issubclass(value, StructInfoProxy):
        return value()
    for key, make in _BARE_SINFO.items():
        if value is key:
            return make()
    raise MiniTVMError(
        f'expected a struct info such as R.Tensor((n, 4), "float32"), R.Tuple(...), '
        f'R.Shape([...]), R.Object or R.Prim("int64"); got {value!r}'
    )


# ----------------------------------------------------------------------------- functions and blocks


def function(
    fn: Any = None, *, private: bool = False, pure: bool = True, check_well_formed: bool = True
) -> Any:
    """Decorator: parse a Python function as a relax Function (inside `@I.ir_module` or alone).

    Example::

        @R.function
        def main(x: R.Tensor((1, "m"), "float32")) -> R.Tensor((1, "m"), "float32"):
            with R.dataflow():
                y = R.nn.relu(x)
                R.output(y)
            return y
    """
    from .relax_parser import parse_relax_function_object
    from .source import capture_env, decorates_ir_module_class

    frame = sys._getframe(1)
    env = capture_env(frame)
    in_class = decorates_ir_module_class(frame)

    def decorate(f: Any) -> Any:
        if in_class:  # inside `@I.ir_module class ...`: the module decorator parses the class
            return f
        func = parse_relax_function_object(f, env, private)
        if check_well_formed:
            from .entry import verify_parsed

            verify_parsed(func, f.__name__)
        return func

    return decorate if fn is None else decorate(fn)


@dataclass(frozen=True)
class DataflowSpec:
    """`with R.dataflow():`."""


@dataclass(frozen=True)
class OutputSpec:
    """`R.output(a, b)`: the vars of a dataflow block visible after it."""

    values: tuple


@dataclass(frozen=True)
class FuncAttrSpec:
    attrs: Mapping


@dataclass(frozen=True)
class MatchCastSpec:
    value: _relax.Expr
    struct_info: _relax.StructInfo


def dataflow() -> DataflowSpec:
    """`with R.dataflow():` opens a side-effect-free block."""
    return DataflowSpec()


def output(*values: Any) -> OutputSpec:
    """`R.output(a, b)` as the last statement of a dataflow block."""
    return OutputSpec(values)


def func_attr(attrs: Mapping) -> FuncAttrSpec:
    """`R.func_attr({"key": value})` attaches attributes to the enclosing function."""
    return FuncAttrSpec(dict(attrs))


def match_cast(value: _relax.Expr, struct_info: Any) -> MatchCastSpec:
    """`lv = R.match_cast(x, R.Tensor(("n", 4), "float32"))` binds x under a new struct info."""
    if not isinstance(value, _relax.Expr):
        raise MiniTVMError(f"R.match_cast: the value must be a relax expression, got {value!r}")
    return MatchCastSpec(value, as_struct_info(struct_info))


# ----------------------------------------------------------------------------- values


def const(value: Any, dtype: Any = None) -> _relax.Constant:
    """A constant: `R.const(1.0, "float32")`, `R.const([[1, 2]], "int32")`, `R.const(np_array)`."""
    if isinstance(value, list | tuple):
        value = np.array(value, dtype=None if dtype is None else DataType(dtype).numpy_dtype())
    return _relax.const(value, None if dtype is None else builtins.str(DataType(dtype)))


def shape(values: Any) -> _relax.ShapeExpr:
    """A shape value: `R.shape([1, "n"])`."""
    return _relax.ShapeExpr(_dims(values))


def prim_value(value: Any) -> _relax.PrimValue:
    """A scalar value: `R.prim_value(1)` or `R.prim_value("n")`."""
    return _relax.PrimValue(_dims((value,))[0])


def str(value: Any) -> _relax.StringImm:
    """A string value: `R.str("hello")`."""
    return _relax.StringImm(f"{value}")


def _dtype_value(value: Any) -> DataTypeImm:
    """A dtype value: `R.dtype("float32")` (R.memory.view's dtype argument)."""
    return DataTypeImm(DataType(value))


def ExternFunc(name: Any) -> Any:
    """A packed function by name, as a value."""
    from ..relax.expr import ExternFunc as _ExternFunc

    return _ExternFunc(f"{name}")


def _out_sinfo(out_sinfo: Any, shape: Any, dtype: Any, what: str) -> Any:
    if out_sinfo is not None and shape is None:
        if (
            isinstance(out_sinfo, list | tuple)
            and out_sinfo
            and not all(isinstance(s, _relax.StructInfo) for s in out_sinfo)
        ):
            return Tensor(out_sinfo, dtype)  # the older positional `(1, 128), dtype=...` form
        return out_sinfo
    if out_sinfo is None and shape is not None:
        return Tensor(shape, dtype)
    raise MiniTVMError(
        f'{what}: give the outputs\' struct info as out_sinfo=R.Tensor((1, 128), "float32") '
        "(or, in the older form, a shape tuple and dtype=...)"
    )


def call_tir(
    func: Any,
    args: Any,
    out_sinfo: Any = None,
    dtype: Any = None,
    tir_vars: Any = None,
    shape: Any = None,
) -> _relax.Call:
    """`R.call_tir(cls.linear0, (x, w, b), out_sinfo=R.Tensor((1, 128), "float32"))`."""
    if not isinstance(func, GlobalVar):
        raise MiniTVMError(
            f"R.call_tir: the callee must be a PrimFunc of the module (cls.name), got {func!r}"
        )
    sinfo = _out_sinfo(out_sinfo, shape, dtype, "R.call_tir")
    if tir_vars is not None and not isinstance(tir_vars, _relax.ShapeExpr):
        tir_vars = _relax.ShapeExpr(_dims(tir_vars))
    return _op.call_tir(func, _args(args), sinfo, tir_vars)


def call_tir_with_grad(
    func: Any,
    args: Any,
    out_sinfo: Any = None,
    te_grad_name: str = "",
    te_grad_kwargs: Any = None,
    tir_vars: Any = None,
) -> _relax.Call:
    """`R.call_tir_with_grad(cls.f, (a, b), out_sinfo=..., te_grad_name="f_grad")`: a call_tir
    whose gradient is a registered TE function (relax.training.utils.register_te_gradient)."""
    from ..relax.op.call_tir_grad import call_tir_with_grad as make

    if not isinstance(func, GlobalVar):
        raise MiniTVMError(
            "R.call_tir_with_grad: the callee must be a PrimFunc of the module (cls.name), "
            f"got {func!r}"
        )
    sinfo = _out_sinfo(out_sinfo, None, None, "R.call_tir_with_grad")
    return make(func, _args(args), sinfo, te_grad_name, dict(te_grad_kwargs or {}), tir_vars)


def call_tir_inplace(
    func: Any, args: Any, inplace_indices: Any, out_sinfo: Any = None, tir_vars: Any = None
) -> _relax.Call:
    """`R.call_tir_inplace(cls.f, (x, y), out_sinfo=R.Tensor((4,), "float32"),
    inplace_indices=[0])`: output i is written into input inplace_indices[i] (-1: fresh)."""
    if not isinstance(func, GlobalVar):
        raise MiniTVMError(
            "R.call_tir_inplace: the callee must be a PrimFunc of the module (cls.name), "
            f"got {func!r}"
        )
    sinfo = _out_sinfo(out_sinfo, None, None, "R.call_tir_inplace")
    if tir_vars is not None and not isinstance(tir_vars, _relax.ShapeExpr):
        tir_vars = _relax.ShapeExpr(_dims(tir_vars))
    return _op.call_tir_inplace(func, _args(args), inplace_indices, sinfo, tir_vars)


def call_dps_packed(func: Any, args: Any, out_sinfo: Any = None, dtype: Any = None) -> _relax.Call:
    """`R.call_dps_packed("env.linear", (x, w, b), out_sinfo=R.Tensor((1, 128), "float32"))`."""
    sinfo = _out_sinfo(out_sinfo, None, dtype, "R.call_dps_packed")
    return _op.call_dps_packed(func, _args(args), sinfo)


def call_packed(func: Any, *args: Any, sinfo_args: Any = None, **kwargs: Any) -> _relax.Call:
    """`R.call_packed("vm.builtin.copy", x, sinfo_args=R.Tensor((4,), "float32"))`: a call of a
    registered function that may have side effects (passes keep it as it is). Keyword
    arguments other than sinfo_args become the call's attributes, as in TVM.

    The older spelling `R.call_packed("f", (x, w), out_sinfo=...)` is call_dps_packed."""
    if "out_sinfo" in kwargs or "dtype" in kwargs:
        return call_dps_packed(func, *args, **kwargs)
    from ..relax.op._table import make_call
    from ..relax.op.base import _packed_args, _packed_callee

    callee = _packed_callee(func, "R.call_packed")
    items = [] if sinfo_args is None else sinfo_args
    items = list(items) if isinstance(items, list | tuple) else [items]
    items = [s() if callable(s) and not isinstance(s, _relax.StructInfo) else s for s in items]
    for s in items:
        if not isinstance(s, _relax.StructInfo):
            raise MiniTVMError(
                f"R.call_packed('{callee.global_symbol}'): sinfo_args entries must be struct "
                f'infos such as R.Tensor((4,), "float32"), got {s!r}'
            )
    args_ = _packed_args(args, f"R.call_packed('{callee.global_symbol}')")
    return make_call(callee, args_, kwargs, tuple(items))  # attributes frozen as for ops


def call_pure_packed(func: Any, *args: Any, sinfo_args: Any = None) -> _relax.Call:
    """`R.call_pure_packed("vm.builtin.copy", x, sinfo_args=R.Tensor((4,), "float32"))`."""
    return _op.call_pure_packed(func, *args, sinfo_args=sinfo_args)


def call_inplace_packed(
    func: Any, *args: Any, inplace_indices: Any = None, sinfo_args: Any = None
) -> _relax.Call:
    """`R.call_inplace_packed("f", x, y, inplace_indices=[0], sinfo_args=R.Tensor(...))`."""
    return _op.call_inplace_packed(
        func, *args, inplace_indices=inplace_indices, sinfo_args=sinfo_args
    )


def call_py_func(func_name: Any, args: Any, out_sinfo: Any = None) -> _relax.Call:
    """`R.call_py_func("silu", (x,), out_sinfo=R.Tensor((4, 8), "float32"))`: a call of the
    module's `@I.pyfunc` method `silu` (run by BasePyModule's VM)."""
    return _op.call_py_func(func_name, _args(args), out_sinfo)


def _args(args: Any) -> Any:
    return list(args) if isinstance(args, list | tuple) else args


# ----------------------------------------------------------------------------- ops from the table


def _op_function(qualified: str) -> Any:
    """The Python op function for an op-table name like "relax.nn.conv2d"."""
    path = qualified.split(".")[1:]
    obj: Any = _op
    for part in path:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj if callable(obj) else None


_SPECIAL = {
    "relax.call_tir",
    "relax.call_tir_inplace",
    "relax.call_dps_packed",
    "relax.call_pure_packed",
    "relax.call_inplace_packed",
    "relax.call_py_func",
}


_OPS_CACHE: dict[tuple[str, int], dict[str, Any]] = {}


def _ops_under(prefix: str) -> dict[str, Any]:
    """{short name: op function} for table ops directly under `prefix` ("relax." or "relax.nn.")."""
    from ..relax.op import OP_TABLE

    key = (prefix, len(OP_TABLE))  # the table only grows: its size identifies a version
    if key not in _OPS_CACHE:
        _OPS_CACHE[key] = _scan_ops(prefix, OP_TABLE)
    return _OPS_CACHE[key]


def _scan_ops(prefix: str, table: Mapping) -> dict[str, Any]:
    out = {}
    for qualified in table:
        if qualified in _SPECIAL or not qualified.startswith(prefix):
            continue
        rest = qualified[len(prefix) :]
        if "." in rest:
            continue
        out[rest] = _void_dtype_as_none(_op_function(qualified) or _generic_op(qualified))
    return out


_DTYPE_KEYWORDS = ("dtype", "out_dtype")


def _void_dtype_as_none(fn: Any) -> Any:
    """TVM prints an op's unset dtype attribute as "void" (`R.cumsum(x, dtype="void")`); in
    TVMScript that spelling means None (the op's default), as when TVM parses it back."""

    def call(*args: Any, **kwargs: Any) -> Any:
        for key in _DTYPE_KEYWORDS:
            if isinstance(kwargs.get(key), builtins.str) and kwargs[key] == "void":
                kwargs[key] = None
        return fn(*args, **kwargs)

    call.__name__, call.__doc__ = getattr(fn, "__name__", "op"), fn.__doc__
    call.__wrapped__ = fn
    return call


def _generic_op(qualified: str) -> Any:
    """`R.<name>(*args, **attrs)` for a table op that has no Python op function (yet)."""
    from ..relax.expr import Op
    from ..relax.op._table import make_call

    op = Op.get(qualified)

    def build(*args: Any, **attrs: Any) -> _relax.Call:
        return make_call(op, tuple(_as_arg(a) for a in args), attrs)

    build.__name__ = qualified.rsplit(".", 1)[-1]
    build.__doc__ = (
        f"The table op {qualified!r}: positional relax arguments, attributes by keyword."
    )
    return build


def _as_arg(value: Any) -> Any:
    if isinstance(value, list | tuple) and all(isinstance(v, _relax.Expr) for v in value):
        from ..relax.expr import Tuple as _TupleExpr

        return _TupleExpr(tuple(value))
    return value


class _Names:
    """An `__all__` that follows the op table (ops registered later appear automatically)."""

    def __init__(self, fixed: tuple[str, ...], prefix: str):
        self.fixed, self.prefix = fixed, prefix

    def _all(self) -> list[str]:
        return sorted(set(self.fixed) | set(_ops_under(self.prefix)))

    def __contains__(self, name: object) -> bool:
        return name in self.fixed or name in _ops_under(self.prefix)

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def __getitem__(self, index: int) -> str:
        return self._all()[index]


class _OpNamespace:
    """`R.nn`: the table's ops under "relax.nn."."""

    __tvmscript__ = True

    def __init__(self, prefix: str):
        self._prefix = prefix
        self.__all__ = _Names((), prefix)

    def __getattr__(self, name: str) -> Any:
        fn = _ops_under(self._prefix).get(name)
        if fn is None:
            raise AttributeError(f"R.{self._prefix[len('relax.') :]}{name} is not a relax op")
        return fn


nn = _OpNamespace("relax.nn.")
image = _OpNamespace("relax.image.")
grad = _OpNamespace("relax.grad.")  # backward ops (R.grad.nll_loss_backward, as in TVM)
random = _OpNamespace("relax.random.")  # R.random.dropout_mask (training dropout)
vision = _OpNamespace("relax.vision.")  # R.vision.all_class_non_max_suppression
ccl = _OpNamespace("relax.ccl.")  # R.ccl.allreduce (collectives of a disco session)
memory = _OpNamespace("relax.memory.")  # R.memory.view

_FIXED = (
    "Callable",
    "ExternFunc",
    "Object",
    "Prim",
    "Shape",
    "ShapeExpr",
    "Tensor",
    "Tuple",
    "TupleGetItem",
    "call_dps_packed",
    "call_inplace_packed",
    "call_packed",
    "call_pure_packed",
    "call_py_func",
    "call_tir",
    "call_tir_inplace",
    "call_tir_with_grad",
    "ccl",
    "const",
    "dataflow",
    "dtype",
    "func_attr",
    "function",
    "grad",
    "image",
    "linear",
    "match_cast",
    "memory",
    "nn",
    "output",
    "prim_value",
    "random",
    "rewriter",
    "vision",
    "shape",
    "str",
    "tuple",
)
# not a list: it follows the op table, so ops registered later are R names too
__all__ = _Names(_FIXED, "relax.")  # type: ignore[assignment]  # noqa: PLE0605


def rewriter(cls: type) -> Any:
    """`@R.rewriter class X:` with `pattern` and `replacement` functions: a
    `relax.PatternMatchingRewriter` (see minitvm/relax/rewriter.py)."""
    from ..relax.rewriter import PatternMatchingRewriter
    from .entry import parse_ir_module_class
    from .source import capture_env

    mod = parse_ir_module_class(cls, capture_env(sys._getframe(1)))
    return PatternMatchingRewriter.from_module(mod)


def _tuple_value(*fields: Any) -> _relax.Tuple:
    """`R.tuple(a, b)`: a relax Tuple of the values (`R.tuple()` is the empty tuple)."""
    return _relax.Tuple(tuple(_as_arg(f) for f in fields))


# expression classes TVM's R namespace re-exports: `R.TupleGetItem(t, 0)`, `R.ShapeExpr([2, n])`
TupleGetItem = _relax.TupleGetItem
ShapeExpr = _relax.ShapeExpr
linear = _op.linear  # a composite (matmul + add), not a table op: `R.linear(x, w, b)`

# names that would shadow a builtin this module uses if they were module-level functions
_SHADOWING = {"tuple": _tuple_value, "dtype": _dtype_value}


def __getattr__(name: str) -> Any:
    if name in _SHADOWING:
        return _SHADOWING[name]
    fn = _ops_under("relax.").get(name)
    if fn is None:
        raise AttributeError(f"module 'minitvm.script.relax' has no attribute {name!r}")
    return fn
