"""Relay expressions: Var, Constant, Call, Op, Tuple, TupleGetItem, Function, Let, If.

Nodes are immutable; `checked_type` is the one piece of state type inference writes into a
node (as TVM does), kept in a slot outside the fields so structural equality ignores it.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ..error import MiniTVMError
from ..ir.module import BaseFunc, GlobalVar
from ..ir.node import FrozenDict, Node, node, setfield
from ..relax.expr import _ArrayData, _to_numpy
from .ty import TensorType, Type


def _operator_methods(name: str) -> tuple:
    """`a + b` and `b + a` (for op `name`) as a method pair; a number operand becomes a const."""

    def forward(self: Expr, other: Any) -> Expr:
        return _binary(name, self, other)

    def reflected(self: Expr, other: Any) -> Expr:
        return _binary(name, other, self)

    return forward, reflected


class Expr(Node):
    """Base of Relay expressions. Arithmetic operators build `add`/`subtract`/... calls."""

    __slots__ = ("_checked_type_", "_span")
    __hash__ = object.__hash__

    @property
    def checked_type(self) -> Type:
        """The type InferType gave this expression (raises if InferType has not run on it)."""
        ty = getattr(self, "_checked_type_", None)
        if ty is None:
            raise MiniTVMError(
                f"the type of {_describe(self)} is not known yet: run "
                "mod = relay.transform.InferType()(mod) (or relay.type_infer.infer_type(expr)) "
                "before reading checked_type"
            )
        return ty

    @property
    def span(self) -> Any:
        return getattr(self, "_span", None)

    def astext(self, show_meta_data: bool = True) -> str:
        return str(self)

    @staticmethod
    def _call_global(gv: GlobalVar, args: Sequence[Expr]) -> Call:
        """`gv(*args)` (GlobalVar.__call__): a call of the module function `gv`."""
        return Call(gv, list(args))

    def _as_function(self) -> Function:
        """`fn (<free variables>) { self }`: what IRModule.from_expr makes of an expression."""
        from .analysis import free_vars

        return Function(free_vars(self), self)

    def astype(self, dtype: str) -> Expr:
        from .op.tensor import cast

        return cast(self, dtype)

    def __getitem__(self, index: int) -> TupleGetItem:
        return TupleGetItem(self, index)

    def __neg__(self) -> Expr:
        from .op.tensor import negative

        return negative(self)

    def _compare(self, other: Any, name: str) -> Expr:
        """`a < b` builds relay.less (TVM's rule: the other side must already be an Expr)."""
        if not isinstance(other, Expr):
            raise TypeError(
                f"relay: cannot compare an expression with {type(other).__name__} {other!r}; "
                "convert it with relay.const first"
            )
        return _binary(name, self, other)

    def __lt__(self, other: Any) -> Expr:
        return self._compare(other, "less")

    def __gt__(self, other: Any) -> Expr:
        return self._compare(other, "greater")

    def __le__(self, other: Any) -> Expr:
        return self._compare(other, "less_equal")

    def __ge__(self, other: Any) -> Expr:
        return self._compare(other, "greater_equal")

    __add__, __radd__ = _operator_methods("add")
    __sub__, __rsub__ = _operator_methods("subtract")
    __mul__, __rmul__ = _operator_methods("multiply")
    __truediv__, __rtruediv__ = _operator_methods("divide")


def _binary(name: str, lhs: Any, rhs: Any) -> Expr:
    from .op import tensor

    return getattr(tensor, name)(_as_expr(lhs, rhs), _as_expr(rhs, lhs))


def _as_expr(value: Any, other: Any) -> Expr:
    """An operand as an Expr; a Python number becomes a constant of the other operand's dtype."""
    if isinstance(value, Expr):
        return value
    dtype = None
    ty = getattr(other, "_checked_type_", None) or getattr(other, "type_annotation", None)
    if isinstance(ty, TensorType):
        dtype = ty.dtype
    elif isinstance(other, Constant):
        dtype = other.data.dtype
    if isinstance(value, int | float | np.generic):
        return const(value, dtype or ("float32" if isinstance(value, float) else "int32"))
    raise MiniTVMError(
        f"cannot use a {type(value).__name__} as a Relay operand; wrap it with relay.const(...)"
    )


def _describe(e: Any) -> str:
    if isinstance(e, Var):
        return f"variable %{e.name_hint}"
    if isinstance(e, Call):
        return f"call of {getattr(e.op, 'name', None) or getattr(e.op, 'name_hint', 'a function')}"
    return f"this {type(e).__name__}"


# ----------------------------------------------------------------------------- operators


class Op(Expr):
    """A primitive operator, one object per name: `relay.op.get("nn.conv2d")`.

    `op_def` holds the op's row (type rule, translation to relax) set by `relay/op`.
    """

    __slots__ = ("name", "op_def")
    _registry: ClassVar[dict[str, Op]] = {}
    _field_names = ("name",)  # structural equality: one object per name, compared by name

    def __init__(self, name: str):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "op_def", None)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("relay Op objects are immutable")

    @classmethod
    def get(cls, name: str) -> Op:
        """The operator called `name` (`"add"`, `"nn.conv2d"`)."""
        try:
            return cls._registry[name]
        except KeyError:
            close = difflib.get_close_matches(name, list(cls._registry), n=3)
            hint = f"; did you mean {close}?" if close else ""
            raise MiniTVMError(f"unknown Relay op {name!r}{hint}") from None

    @classmethod
    def register(cls, name: str, op_def: Any = None) -> Op:
        """Create (or fetch) the op called `name` and attach its definition."""
        op = cls._registry.get(name) or cls(name)
        if op_def is not None:
            object.__setattr__(op, "op_def", op_def)
        cls._registry[name] = op
        return op

    @classmethod
    def list_op_names(cls) -> list[str]:
        return sorted(cls._registry)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f'Op("{self.name}")'

    def __reduce__(self):
        raise TypeError("Op is not picklable")


class Attrs(FrozenDict):
    """Operator attributes: `attrs.strides`, `attrs["strides"]`, `attrs.keys()`; equal by value."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._d[name]
        except KeyError:
            raise AttributeError(
                f"these attrs have no field {name!r}; fields: {sorted(self._d)}"
            ) from None

    def get_int(self, key: str) -> int:
        return int(self._d[key])

    def get_str(self, key: str) -> str:
        return str(self._d[key])

    def list_field_info(self) -> list[str]:
        return list(self._d)

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k}={v!r}" for k, v in self._d.items()) + "}"


def _freeze(value: Any) -> Any:
    """Attribute values are immutable: lists become tuples, recursively."""
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def make_attrs(values: Mapping | None) -> Attrs | None:
    if values is None or isinstance(values, Attrs):
        return values
    return Attrs({k: _freeze(v) for k, v in dict(values).items()})


# ----------------------------------------------------------------------------- leaves


@node
class Var(Expr):
    """A variable; two `Var("x")` are different variables. `type_annotation` may be None."""

    name_hint: str
    type_annotation: Type | None = None
    _is_var = True
    _var_fields = ("type_annotation",)  # compared where the variable is defined
    dtype = None  # structural equality compares var dtypes; Relay vars have none

    def __post_init__(self):
        setfield(self, "name_hint", str(self.name_hint))
        if self.type_annotation is not None and not isinstance(self.type_annotation, Type):
            raise MiniTVMError(
                f"Var {self.name_hint!r}: type_annotation must be a relay type such as "
                f"relay.TensorType((1, 3), 'float32'), got {self.type_annotation!r}"
            )

    @property
    def name(self) -> str:
        return self.name_hint


@node
class Constant(Expr):
    """A constant tensor; `.data.numpy()` gives its values."""

    data: Any

    def __post_init__(self):
        if not isinstance(self.data, _ArrayData):
            setfield(self, "data", _ArrayData(_to_numpy(self.data)))


@node
class Tuple(Expr):
    """A tuple of expressions; `tup[i]` is the field itself (TupleGetItem for other tuples)."""

    fields: tuple

    def __post_init__(self):
        setfield(self, "fields", tuple(_check_expr(f, "Tuple field") for f in self.fields))

    def __getitem__(self, index: int) -> Expr:
        return self.fields[index]

    def __len__(self) -> int:
        return len(self.fields)

    def astuple(self) -> Tuple:
        return self


@node
class TupleGetItem(Expr):
    """Field `index` of a tuple-valued expression."""

    tuple_value: Expr
    index: int

    def __post_init__(self):
        _check_expr(self.tuple_value, "TupleGetItem")
        setfield(self, "index", int(self.index))


@node
class Call(Expr):
    """A call of an Op, a Function or a GlobalVar, with attributes (an `Attrs`) for ops."""

    op: Any
    args: tuple
    attrs: Attrs | None = None
    type_args: tuple = ()

    def __post_init__(self):
        if not isinstance(self.op, Op | Function | GlobalVar | Var):
            raise MiniTVMError(
                f"Call: the callee must be a relay Op, Function or GlobalVar, got "
                f"{type(self.op).__name__}"
            )
        setfield(self, "args", tuple(_check_expr(a, "Call argument") for a in self.args))
        setfield(self, "attrs", make_attrs(self.attrs))
        setfield(self, "type_args", tuple(self.type_args or ()))


@node
class Function(Expr, BaseFunc):
    """A function: `relay.Function([x, w], body)`; `with_attr("Primitive", 1)` marks a kernel."""

    params: tuple
    body: Expr
    ret_type: Type | None = None
    type_params: tuple = ()
    attrs: FrozenDict = FrozenDict()
    _def_fields = ("params",)

    def __post_init__(self):
        params = tuple(self.params)
        for p in params:
            if not isinstance(p, Var):
                raise MiniTVMError(
                    f"Function: parameters must be relay.Var, got {type(p).__name__}"
                )
        setfield(self, "params", params)
        _check_expr(self.body, "Function body")
        setfield(self, "type_params", tuple(self.type_params or ()))
        attrs = self.attrs
        if attrs is None:
            attrs = FrozenDict()
        elif not isinstance(attrs, FrozenDict):
            attrs = FrozenDict(dict(attrs))
        setfield(self, "attrs", attrs)

    def __call__(self, *args: Expr) -> Call:
        return Call(self, args)


@node
class Let(Expr):
    """`let var = value; body`."""

    var: Var
    value: Expr
    body: Expr
    _def_fields = ("var",)


@node
class If(Expr):
    """`if (cond) { true_branch } else { false_branch }`; cond is a boolean scalar."""

    cond: Expr
    true_branch: Expr
    false_branch: Expr


def _check_expr(value: Any, where: str) -> Any:
    if not isinstance(value, Expr | GlobalVar):
        raise MiniTVMError(
            f"{where} must be a relay expression, got {type(value).__name__} {value!r:.60}; "
            "wrap constants with relay.const(...)"
        )
    return value


class TupleWrapper:
    """A tuple-valued call seen as a sequence: `relay.nn.batch_norm(...)[0]`."""

    __slots__ = ("size", "tuple_value")

    def __init__(self, tuple_value: Expr, size: int):
        self.tuple_value, self.size = tuple_value, size

    def astuple(self) -> Expr:
        return self.tuple_value

    def astext(self) -> str:
        return str(self.tuple_value)

    def __getitem__(self, index: int) -> TupleGetItem:
        if not -self.size <= index < self.size:
            raise IndexError(f"tuple index {index} out of range for a {self.size}-tuple")
        return TupleGetItem(self.tuple_value, index % self.size)

    def __len__(self) -> int:
        return self.size

    def __iter__(self):
        return (self[i] for i in range(self.size))

    def __repr__(self) -> str:
        return f"TupleWrapper({self.tuple_value!r}, {self.size})"


# ----------------------------------------------------------------------------- constructors


def var(
    name_hint: str,
    type_annotation: Type | str | None = None,
    shape: Sequence | None = None,
    dtype: str = "float32",
) -> Var:
    """A variable: `relay.var("x", shape=(1, 3), dtype="float32")` or with a type."""
    if isinstance(type_annotation, str):
        dtype, type_annotation = type_annotation, None
        if shape is None:
            shape = ()
    if type_annotation is None and shape is not None:
        type_annotation = TensorType(tuple(shape), dtype)
    return Var(name_hint, type_annotation)


def const(value: Any, dtype: str | None = None) -> Constant:
    """A constant: `relay.const(np.ones((2, 2)))`; Python floats are float32, ints int32."""
    array = _to_numpy(value)
    if dtype is not None:
        array = array.astype(str(dtype))
    elif not isinstance(value, np.ndarray | np.generic):
        if array.dtype == np.float64:
            array = array.astype("float32")
        elif array.dtype == np.int64:
            array = array.astype("int32")
    return Constant(array)


def bind(expr: Expr, binds: Mapping) -> Expr:
    """Replace free variables (by Var or by name) with the given expressions."""
    from .expr_functor import ExprMutator

    by_name = {k: v for k, v in binds.items() if isinstance(k, str)}
    by_var = {k: v for k, v in binds.items() if isinstance(k, Var)}

    class _Binder(ExprMutator):
        def visit_var(self, v: Var) -> Expr:
            out = by_var.get(v, by_name.get(v.name_hint, v))
            return const(out) if not isinstance(out, Expr) else out

    if isinstance(expr, Function):
        body = _Binder().visit(expr.body)
        params = [p for p in expr.params if p not in by_var and p.name_hint not in by_name]
        return Function(params, body, expr.ret_type, expr.type_params, expr.attrs)
    return _Binder().visit(expr)
