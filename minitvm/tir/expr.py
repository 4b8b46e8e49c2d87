"""TIR expression nodes. Python operators on PrimExpr build IR (with dtype promotion)."""

from __future__ import annotations

import enum
from typing import Any

from ..error import ArgumentError, DTypeError, MiniTVMError
from ..ir.dtype import DataType, dtype_of
from ..ir.node import Node, node, setfield
from .let_check import check_let_dtype

# ----------------------------------------------------------------------------- base


def _defers(other: Any) -> bool:
    """True for operands that build their own result from `expr op them` (a te.Tensor: `n + A`
    is a broadcasting compute), so Python tries their reflected operator."""
    return getattr(type(other), "_prim_expr_defers", False)


def _operator_pair(build, defer: bool = True):
    """(forward, reflected) operator methods returning `build(a, b)`; with `defer`, a te.Tensor
    operand builds its own compute (Python then calls its reflected operator)."""

    def forward(self, other):
        return NotImplemented if defer and _defers(other) else build(self, other)

    def reflected(self, other):
        return build(other, self)

    return forward, reflected


class PrimExpr(Node):
    """A scalar (or vector) expression with a `dtype`."""

    __slots__ = ()
    __hash__ = object.__hash__  # identity hash; structural_hash is the structural one
    # in a defining position (a buffer's shape) an expression defines the vars it first
    # names: `(5 * n,)` defines n as `(n,)` does
    _defines_through = True

    # arithmetic: `x + y` builds Add(x, y); a te.Tensor operand builds its own compute
    __add__, __radd__ = _operator_pair(lambda a, b: binary(Add, a, b))
    __sub__, __rsub__ = _operator_pair(lambda a, b: binary(Sub, a, b))
    __mul__, __rmul__ = _operator_pair(lambda a, b: binary(Mul, a, b))
    __truediv__, __rtruediv__ = _operator_pair(lambda a, b: binary(Div, a, b))
    __floordiv__, __rfloordiv__ = _operator_pair(lambda a, b: binary(FloorDiv, a, b))
    __mod__, __rmod__ = _operator_pair(lambda a, b: binary(FloorMod, a, b))

    def __neg__(self):
        zero = make_const(self.dtype, 0)
        return binary(Sub, zero, self)

    def __pos__(self):
        return self

    # comparison ---------------------------------------------------------
    def __lt__(self, other):
        return binary(LT, self, other)

    def __le__(self, other):
        return binary(LE, self, other)

    def __gt__(self, other):
        return binary(GT, self, other)

    def __ge__(self, other):
        return binary(GE, self, other)

    def __eq__(self, other):  # type: ignore[override]
        return EqualOp(self, other)

    def __ne__(self, other):  # type: ignore[override]
        return NotEqualOp(self, other)

    # logical (on bool) / bitwise (on int)
    __and__, __rand__ = _operator_pair(lambda a, b: logical_and(a, b), defer=False)
    __or__, __ror__ = _operator_pair(lambda a, b: logical_or(a, b), defer=False)
    __xor__, __rxor__ = _operator_pair(lambda a, b: bitwise("^", a, b), defer=False)
    __lshift__, __rlshift__ = _operator_pair(lambda a, b: bitwise("<<", a, b), defer=False)
    __rshift__, __rrshift__ = _operator_pair(lambda a, b: bitwise(">>", a, b), defer=False)

    def __invert__(self):
        return Not(self) if self.dtype.is_bool else bitwise_not(self)

    def __bool__(self) -> bool:
        raise MiniTVMError(
            f"cannot use the symbolic expression `{self}` as a Python bool; "
            "build the condition into the IR with tvm.tir.if_then_else / te.select / tvm.tir.all"
        )

    def astype(self, dtype: str | DataType) -> PrimExpr:
        return cast(dtype, self)

    def equal(self, other) -> PrimExpr:
        """Build an EQ node (`a == b` also does); `vscale() == vscale()` is true (one value)."""
        if is_vscale(self) and is_vscale(other):
            return IntImm(DataType("bool"), 1)
        return binary(EQ, self, other)


class EqualOp:
    """Result of `a == b` on expressions: an EQ node when used as IR, identity when used as bool.

    Python calls `==` for dict and list lookups; answering those with identity keeps
    `var in list_of_vars` working while `te.compute(..., lambda i: i == 0)` still builds IR.
    """

    __slots__ = ("a", "b")
    _cls: type = None  # type: ignore[assignment]

    def __init__(self, a: Any, b: Any):
        self.a, self.b = a, b

    def __bool__(self) -> bool:
        same = self.a is self.b
        x, y = const_value(_lift(self.a)), const_value(_lift(self.b))
        if x is not None and y is not None:  # constants compare by value (`A.shape[0] == 3`)
            same = x == y
        return same if self._cls is EQ else not same

    def asobject(self) -> PrimExpr:
        return binary(self._cls, self.a, self.b)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.asobject(), name)

    def __str__(self) -> str:
        return str(self.asobject())

    __repr__ = __str__

    def __and__(self, other):
        return logical_and(self.asobject(), other)

    def __or__(self, other):
        return logical_or(self.asobject(), other)

    def __invert__(self):
        return Not(self.asobject())


class NotEqualOp(EqualOp):
    __slots__ = ()


def as_expr(value: Any, like: DataType | None = None) -> PrimExpr:
    """Convert a Python scalar (or EqualOp, or PrimExpr) to a PrimExpr.

    `like` gives the dtype a bare Python number takes (an int literal next to a float
    expression becomes a float constant of that width).
    """
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, EqualOp):
        return value.asobject()
    if isinstance(value, bool):
        return IntImm(DataType("bool"), int(value))
    if isinstance(value, int | float) and like is not None and not like.is_handle:
        elem = like.element_of()
        if isinstance(value, float) and not elem.is_float:
            return FloatImm(DataType("float32"), value)
        if elem.is_bool and value not in (0, 1):
            return make_const(DataType("int32"), value)
        return make_const(elem, value)
    if isinstance(value, int | float) or hasattr(value, "dtype"):
        return make_const(dtype_of(value), value)
    if hasattr(value, "asobject"):
        return value.asobject()
    raise DTypeError(
        f"cannot use {value!r} (a {type(value).__name__}) as an expression; "
        "expected a PrimExpr, an int, a float or a bool"
    )


def make_const(dtype: str | DataType, value: Any) -> PrimExpr:
    """A constant of `dtype` (scalar, or broadcast for a vector dtype)."""
    dtype = DataType(dtype)
    if dtype.lanes > 1:
        return Broadcast(make_const(dtype.element_of(), value), dtype.lanes)
    if dtype.is_float:
        return FloatImm(dtype, value)  # checks that the value fits the width
    if dtype.is_bool:
        return IntImm(dtype, int(bool(value)))
    return IntImm(dtype, int(value))


# ----------------------------------------------------------------------------- leaves


@node
class Var(PrimExpr):
    """A variable. Two `Var("i")` are different variables."""

    name: str
    dtype: DataType = DataType("int32")
    _is_var = True

    def __post_init__(self):
        if not isinstance(self.name, str):
            raise ArgumentError(
                f"tir.Var: the name must be a str, got {type(self.name).__name__} {self.name!r}"
            )
        setfield(self, "dtype", DataType(self.dtype))

    @property
    def name_hint(self) -> str:
        return self.name


@node
class SizeVar(Var):
    """A variable known to be non-negative (a symbolic dimension)."""


@node
class AnyDim(Var):
    """TVM's `tir.Any()`: a dimension known only at run time; like a Var, equal only to itself."""

    name: str = "any"


@node
class IntImm(PrimExpr):
    dtype: DataType
    value: int

    def __post_init__(self):
        dtype = DataType(self.dtype)
        setfield(self, "dtype", dtype)
        value = int(self.value)
        if dtype.is_int:
            lo, hi = -(2 ** (dtype.bits - 1)), 2 ** (dtype.bits - 1)
        else:
            lo, hi = 0, 2**dtype.bits  # uint, and bool (1 bit)
        if not lo <= value < hi:
            raise DTypeError(
                f"constant {_short(value)} does not fit in {dtype} (range [{lo}, {hi - 1}]); "
                "use a wider dtype (e.g. int64) or a smaller value"
            )
        setfield(self, "value", value)

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value

    def __bool__(self) -> bool:
        return self.value != 0

    def __float__(self) -> float:
        return float(self.value)


@node
class FloatImm(PrimExpr):
    dtype: DataType
    value: float

    def __post_init__(self):
        dtype = DataType(self.dtype)
        if not dtype.is_float:  # as TVM checks: an int FloatImm would reach codegen as a float
            raise DTypeError(
                f"FloatImm: dtype {dtype} is not a float type; use tir.IntImm('{dtype}', ...) "
                "or tir.const(value, dtype), which picks the node from the dtype"
            )
        setfield(self, "dtype", dtype)
        setfield(self, "value", _float_constant(self.value, dtype))

    def __float__(self) -> float:
        return self.value


# the largest finite value of each float width (inf and nan are allowed; overflow is not)
_FLOAT_MAX = {16: 65504.0, 32: 3.4028234663852886e38, 64: 1.7976931348623157e308}


def _float_constant(value: Any, dtype: DataType) -> float:
    """`value` as a Python float, refusing a finite value the float dtype cannot hold."""
    try:
        out = float(value)
    except OverflowError as err:
        raise DTypeError(
            f"constant {_short(value)} does not fit {dtype} (largest finite value "
            f"{_FLOAT_MAX.get(dtype.bits, 'unknown'):g}); use a smaller value, or float('inf')"
        ) from err
    # bfloat16/float8 constants are rounded (and saturate or overflow) where they are cast
    limit = _FLOAT_MAX.get(dtype.bits) if dtype.is_ieee_float else None
    if limit is not None and abs(out) > limit and out == out and abs(out) != float("inf"):
        import numpy as np  # rounding to the nearest representable value may still fit

        with np.errstate(over="ignore"):
            fits = bool(np.isfinite(np.array(out, dtype=f"float{dtype.bits}")))
        if not fits:
            raise DTypeError(
                f"constant {out:g} does not fit {dtype} (largest finite value {limit:g}); "
                f"use a wider dtype (float64) or a smaller value"
            )
    return out


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 30 else f"{text[:12]}...({len(text)} digits)"


@node
class StringImm(PrimExpr):
    value: str
    dtype: DataType = DataType("handle")


@node
class Cast(PrimExpr):
    dtype: DataType
    value: PrimExpr

    def __post_init__(self):
        setfield(self, "dtype", DataType(self.dtype))
        setfield(self, "value", as_expr(self.value))


# ----------------------------------------------------------------------------- binary ops


@node
class BinaryOpExpr(PrimExpr):
    a: PrimExpr
    b: PrimExpr
    dtype: DataType | None = None

    def __post_init__(self):
        a, b = _match_operands(self.a, self.b)
        setfield(self, "a", a)
        setfield(self, "b", b)
        setfield(
            self,
            "dtype",
            self._result_dtype(a.dtype) if self.dtype is None else DataType(self.dtype),
        )

    @staticmethod
    def _result_dtype(operand: DataType) -> DataType:
        return operand


@node
class Add(BinaryOpExpr):
    pass


@node
class Sub(BinaryOpExpr):
    pass


@node
class Mul(BinaryOpExpr):
    pass


@node
class Div(BinaryOpExpr):
    """True division for floats; truncating division (C semantics) for integers."""


@node
class Mod(BinaryOpExpr):
    """Truncating remainder (C semantics)."""


@node
class FloorDiv(BinaryOpExpr):
    pass


@node
class FloorMod(BinaryOpExpr):
    pass


@node
class Min(BinaryOpExpr):
    pass


@node
class Max(BinaryOpExpr):
    pass


@node
class CmpOpExpr(BinaryOpExpr):
    @staticmethod
    def _result_dtype(operand: DataType) -> DataType:
        return DataType("bool").with_lanes(operand.lanes)


@node
class EQ(CmpOpExpr):
    pass


@node
class NE(CmpOpExpr):
    pass


@node
class LT(CmpOpExpr):
    pass


@node
class LE(CmpOpExpr):
    pass


@node
class GT(CmpOpExpr):
    pass


@node
class GE(CmpOpExpr):
    pass


@node
class And(CmpOpExpr):
    def __post_init__(self):
        setfield(self, "a", _as_bool(self.a, "and"))
        setfield(self, "b", _as_bool(self.b, "and"))
        CmpOpExpr.__post_init__(self)


@node
class Or(CmpOpExpr):
    def __post_init__(self):
        setfield(self, "a", _as_bool(self.a, "or"))
        setfield(self, "b", _as_bool(self.b, "or"))
        CmpOpExpr.__post_init__(self)


@node
class Not(PrimExpr):
    a: PrimExpr
    dtype: DataType | None = None

    def __post_init__(self):
        a = _as_bool(self.a, "not")
        setfield(self, "a", a)
        setfield(self, "dtype", a.dtype)


def _as_bool(x: Any, what: str) -> PrimExpr:
    x = as_expr(x)
    if not x.dtype.is_bool:
        raise DTypeError(f"operand of logical {what} must be bool, got {x.dtype}: `{x}`")
    return x


# ----------------------------------------------------------------------------- other exprs


@node
class Select(PrimExpr):
    """`true_value if condition else false_value`; both sides may be evaluated."""

    condition: PrimExpr
    true_value: PrimExpr
    false_value: PrimExpr
    dtype: DataType | None = None

    def __post_init__(self):
        setfield(self, "condition", _as_bool(self.condition, "select condition"))
        t, f = _match_operands(self.true_value, self.false_value)
        setfield(self, "true_value", t)
        setfield(self, "false_value", f)
        setfield(self, "dtype", t.dtype)


@node
class BufferLoad(PrimExpr):
    buffer: Any  # tir.Buffer (imported lazily to keep modules acyclic)
    indices: tuple
    dtype: DataType | None = None

    def __post_init__(self):
        indices = tuple(as_expr(i, like=DataType("int32")) for i in self.indices)
        setfield(self, "indices", indices)
        counts = [i.dtype.lanes for i in indices] or [1]
        lanes = min(counts) if min(counts) < 0 else max(counts)  # a scalable index wins
        setfield(
            self,
            "dtype",
            self.buffer.dtype.with_lanes(lanes) if self.dtype is None else DataType(self.dtype),
        )


@node
class Ramp(PrimExpr):
    """The vector [base, base + stride, ..., base + (lanes-1)*stride]."""

    base: PrimExpr
    stride: PrimExpr
    lanes: Any  # int, or T.vscale() * k for a scalable vector
    dtype: DataType | None = None

    def __post_init__(self):
        base = as_expr(self.base)
        setfield(self, "base", base)
        setfield(self, "stride", as_expr(self.stride, like=base.dtype))
        _set_lanes(self, base.dtype)


@node
class Broadcast(PrimExpr):
    value: PrimExpr
    lanes: Any  # int, or T.vscale() * k for a scalable vector
    dtype: DataType | None = None

    def __post_init__(self):
        value = as_expr(self.value)
        setfield(self, "value", value)
        _set_lanes(self, value.dtype)


def is_vscale(e: Any) -> bool:
    """Whether `e` is the call `T.vscale()`."""
    return isinstance(e, Call) and e.op is Op.get("tir.vscale")


def _set_lanes(vec: Ramp | Broadcast, elem: DataType) -> None:
    """Set a Ramp's/Broadcast's lanes and dtype. Lanes are an int, or for a scalable vector
    `T.vscale() * k` (either operand order, or a DataType's lane count -k) of dtype "...xvscalexk"."""
    lanes = vec.lanes.value if isinstance(vec.lanes, IntImm) else vec.lanes
    if isinstance(lanes, int) and lanes >= 0:
        setfield(vec, "lanes", lanes)
        setfield(vec, "dtype", elem.with_lanes(lanes))
        return
    factor = -lanes if isinstance(lanes, int) else None
    if isinstance(lanes, Mul):
        for k, v in ((lanes.a, lanes.b), (lanes.b, lanes.a)):
            if isinstance(k, IntImm) and is_vscale(v):
                factor = k.value
    if factor is None or factor < 1:
        raise DTypeError(
            f"{type(vec).__name__}: invalid scalable lanes `{lanes}`; write T.vscale() * k "
            "with a positive int k, or an int lane count"
        )
    int32 = DataType("int32")
    setfield(vec, "lanes", Mul(Call(int32, "tir.vscale", ()), IntImm(int32, factor)))
    setfield(vec, "dtype", elem.with_scalable_vscale_factor(factor))


@node
class Let(PrimExpr):
    var: Var
    value: PrimExpr
    body: PrimExpr
    dtype: DataType | None = None
    _def_fields = ("var",)

    def __post_init__(self):
        setfield(self, "value", as_expr(self.value, like=self.var.dtype))
        check_let_dtype("Let", self.var, self.value)
        setfield(self, "body", as_expr(self.body))
        setfield(self, "dtype", self.body.dtype)


class Op:
    """An intrinsic operator (`tir.exp`, `tir.likely`, ...), looked up by name; compared by identity."""

    __slots__ = ("name", "num_inputs", "pure")
    _registry: dict[str, Op] = {}

    def __init__(self, name: str, num_inputs: int, pure: bool = True):
        self.name, self.num_inputs, self.pure = name, num_inputs, pure

    @classmethod
    def get(cls, name: str) -> Op:
        full = name if name.startswith("tir.") else "tir." + name
        try:
            return cls._registry[full]
        except KeyError:
            raise MiniTVMError(
                f"unknown intrinsic {name!r}; known: {sorted(cls._registry)}"
            ) from None

    @classmethod
    def register(cls, name: str, num_inputs: int, pure: bool = True) -> Op:
        op = cls(name, num_inputs, pure)
        cls._registry[name] = op
        return op

    def __repr__(self) -> str:
        return f'Op("{self.name}")'

    def __reduce__(self):
        raise TypeError("Op is not picklable")


@node
class Call(PrimExpr):
    """A call of an intrinsic `Op` (or, with op a str, of an external C symbol)."""

    dtype: DataType
    op: Any  # Op or str (extern symbol)
    args: tuple

    def __post_init__(self):
        setfield(self, "dtype", DataType(self.dtype))
        if isinstance(self.op, str) and not self.op.startswith("tir."):
            pass  # external symbol called by name
        elif isinstance(self.op, str):
            setfield(self, "op", Op.get(self.op))
        setfield(self, "args", tuple(as_expr(a) for a in self.args))


# ----------------------------------------------------------------------------- ranges / iter vars


@node
class Range(Node):
    """A half-open interval [min, min + extent).

    Built as TVM builds it: `Range(begin, end)` is [begin, end) and `Range(n)` is [0, n);
    `Range.from_min_extent(min, extent)` gives the fields directly (what minitvm itself uses).
    """

    min: PrimExpr
    extent: PrimExpr

    def __post_init__(self):
        lo = as_expr(self.min, like=DataType("int32"))
        ext = as_expr(self.extent, like=lo.dtype)
        lo, ext = _match_operands(lo, ext)
        setfield(self, "min", lo)
        setfield(self, "extent", ext)

    @staticmethod
    def from_min_extent(min_value, extent) -> Range:
        out = object.__new__(Range)  # the fields directly: minitvm builds many Ranges
        _range_fields_init(out, min_value, extent)
        return out

    @staticmethod
    def by_begin_end(begin, end) -> Range:
        begin = as_expr(begin)
        return Range(min=begin, extent=binary(Sub, end, begin))


# the dataclass's own __init__ (min, extent); expr_build.py gives Range TVM's (begin, end)
_range_fields_init = Range.__init__


class IterType(enum.IntEnum):
    DataPar = 0
    ThreadIndex = 1
    CommReduce = 2
    Ordered = 3
    Opaque = 4
    Unrolled = 5
    Vectorized = 6
    Parallelized = 7


@node
class IterVar(Node):
    """A variable ranging over `dom`: a block iterator or a TE axis."""

    dom: Range | None
    var: Var
    iter_type: IterType = IterType.DataPar
    thread_tag: str = ""
    _def_fields = ("var",)

    # Classic TVM exposes these as class-level constants.
    DataPar = IterType.DataPar
    ThreadIndex = IterType.ThreadIndex
    CommReduce = IterType.CommReduce
    Ordered = IterType.Ordered
    Opaque = IterType.Opaque
    DimInfo = IterType.Opaque  # TVM's value 4 under its older name
    Unrolled = IterType.Unrolled
    Vectorized = IterType.Vectorized
    Parallelized = IterType.Parallelized

    def __post_init__(self):
        if self.dom is not None and not isinstance(self.dom, Range):
            lo, hi = self.dom
            setfield(self, "dom", Range.by_begin_end(lo, hi))
        if isinstance(self.var, str):
            setfield(self, "var", Var(self.var, self.dom.extent.dtype if self.dom else "int32"))
        setfield(self, "iter_type", IterType(self.iter_type))

    # An IterVar stands for its var in expressions (te.compute lambdas receive IterVars' vars,
    # but users also write `k` for a reduce_axis inside te.sum).
    def _as_var(self) -> Var:
        return self.var

    # Arithmetic on an IterVar is arithmetic on its var (`ry + yy * 2` in a conv2d lambda).
    def __add__(self, other):
        return self.var + other

    def __radd__(self, other):
        return binary(Add, other, self.var)

    def __sub__(self, other):
        return self.var - other

    def __rsub__(self, other):
        return binary(Sub, other, self.var)

    def __mul__(self, other):
        return self.var * other

    def __rmul__(self, other):
        return binary(Mul, other, self.var)

    def __truediv__(self, other):
        return self.var / other

    def __rtruediv__(self, other):
        return binary(Div, other, self.var)

    def __floordiv__(self, other):
        return self.var // other

    def __rfloordiv__(self, other):
        return binary(FloorDiv, other, self.var)

    def __mod__(self, other):
        return self.var % other

    def __rmod__(self, other):
        return binary(FloorMod, other, self.var)

    def __neg__(self):
        return -self.var

    def __lt__(self, other):
        return self.var < other

    def __le__(self, other):
        return self.var <= other

    def __gt__(self, other):
        return self.var > other

    def __ge__(self, other):
        return self.var >= other

    def astype(self, dtype: str | DataType) -> PrimExpr:
        return cast(dtype, self.var)


EqualOp._cls = EQ
NotEqualOp._cls = NE

# building expressions (expr_build.py, which imports the nodes above): PrimExpr's operators call it
from .expr_build import (  # noqa: F401 - re-exported
    _BITWISE,
    _FOLD,
    _check_bitwise,
    _lift,
    _match_operands,
    _promote,
    _promoted_type,
    binary,
    bitwise,
    bitwise_not,
    cast,
    const_value,
    is_const_int,
    logical_and,
    logical_or,
)
