"""TE tensors: the output of an operation, indexed in compute lambdas to build `ProducerLoad`s."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..error import DTypeError, TEError
from ..ir.dtype import DataType
from ..ir.node import node, setfield
from ..tir.expr import IterVar, PrimExpr, as_expr


def _as_index(tensor_name: str, position: int, index: Any) -> PrimExpr:
    if isinstance(index, IterVar):
        index = index.var
    try:
        expr = as_expr(index, like=DataType("int32"))
    except DTypeError as err:
        raise TEError(
            f"tensor '{tensor_name}': index {position} is {index!r}; "
            "indices must be integers or integer expressions of the compute's axes"
        ) from err
    if not (expr.dtype.is_integer and expr.dtype.is_scalar):
        raise TEError(
            f"tensor '{tensor_name}': index {position} `{expr}` has dtype {expr.dtype}; "
            "indices must be integer expressions (cast with .astype('int32'))"
        )
    return expr


@node
class ProducerLoad(PrimExpr):
    """`A[i, j]` on a TE tensor; `te.create_prim_func` turns it into a BufferLoad."""

    producer: Any  # Tensor (not a Node, so generic visitors stop here instead of walking the graph)
    indices: tuple
    dtype: DataType | None = None

    def __post_init__(self):
        name = self.producer.name
        indices = tuple(_as_index(name, n, i) for n, i in enumerate(self.indices))
        setfield(self, "indices", indices)
        if self.dtype is None:
            setfield(self, "dtype", DataType(self.producer.dtype))


class Tensor:
    """Output `value_index` of the operation `op`; `A[i, j]` (or `A(i, j)`) reads an element.

    Two Tensor objects are equal (and hash alike) when they name the same output of the same
    operation, so `C.op.output(0)` can stand for `C` as a dict key.
    """

    __slots__ = ("_dtype", "op", "shape", "value_index")
    _prim_expr_defers = True  # `n + A` is a broadcasting compute (Tensor.__radd__), not an error

    def __init__(self, shape: tuple, dtype: str | DataType, op: Any, value_index: int = 0):
        object.__setattr__(self, "shape", tuple(shape))
        object.__setattr__(self, "_dtype", DataType(dtype))
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "value_index", int(value_index))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"te.Tensor is immutable (tried to set {name!r})")

    def __reduce__(self):
        raise TypeError("te.Tensor is not picklable by design")

    # --- properties used by TVM programs --------------------------------
    @property
    def dtype(self) -> str:
        """The element type as a string (`"float32"`), usable directly with numpy."""
        return str(self._dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def name(self) -> str:
        if self.op.num_outputs == 1:
            return self.op.name
        return f"{self.op.name}.v{self.value_index}"

    @property
    def axis(self) -> tuple:
        return self.op.axis

    def output(self, index: int) -> Tensor:
        return self.op.output(index)

    # --- element access ---------------------------------------------------
    def __getitem__(self, indices: Any) -> PrimExpr | TensorSlice:
        if not isinstance(indices, tuple):
            indices = (indices,)
        return _index(self, tuple(indices))

    def __call__(self, *indices: Any) -> PrimExpr:
        if len(indices) != self.ndim:
            raise TEError(
                f"tensor '{self.name}' has {self.ndim} dimensions but was called with "
                f"{len(indices)} indices"
            )
        return ProducerLoad(self, indices)

    def astype(self, dtype: str | DataType) -> Tensor:
        """Elementwise cast, as a new compute: `B = A.astype("float64")`."""
        from .operation import compute

        return compute(self.shape, lambda *i: self(*i).astype(dtype), name="T_cast", tag="elemwise")

    # --- identity -----------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tensor):
            return NotImplemented
        return self.op is other.op and self.value_index == other.value_index

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash((id(self.op), self.value_index))

    def __bool__(self) -> bool:
        return True

    def __len__(self) -> int:
        raise TEError(
            f"len() of tensor '{self.name}' is not defined; use {self.name}.shape[0] "
            "(or .ndim for the number of dimensions)"
        )

    def __iter__(self):
        raise TEError(f"tensor '{self.name}' cannot be iterated; index it as {self.name}[i, ...]")

    def __repr__(self) -> str:
        dims = ", ".join(str(_dim_text(d)) for d in self.shape)
        return f"Tensor(shape=({dims}), op.name={self.op.name}, dtype={self.dtype})"

    __str__ = __repr__


class TensorSlice:
    """A tensor indexed in fewer dimensions than it has: `A[i]` on a 2-D `A`; `A[i][j]` loads."""

    __slots__ = ("indices", "tensor")

    def __init__(self, tensor: Tensor, indices: tuple):
        self.tensor, self.indices = tensor, indices

    def __getitem__(self, indices: Any) -> PrimExpr | TensorSlice:
        if not isinstance(indices, tuple):
            indices = (indices,)
        return _index(self.tensor, self.indices + tuple(indices))

    def asobject(self) -> PrimExpr:
        """Used when a slice appears in an expression: only a complete index is a value."""
        t = self.tensor
        raise TEError(
            f"tensor '{t.name}' has {t.ndim} dimensions but is used with {len(self.indices)} "
            f"indices; write {t.name}[{', '.join(['i'] * t.ndim)}] with one index per dimension"
        )

    @property
    def dtype(self) -> str:
        return self.tensor.dtype


_ARITHMETIC = (
    "add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "floordiv", "rfloordiv",
    "mod", "rmod", "neg", "lt", "le", "gt", "ge",
)  # fmt: skip


def _incomplete(self: TensorSlice, *_: Any) -> PrimExpr:
    return self.asobject()


def _whole_tensor(self: Tensor, *_: Any) -> PrimExpr:
    index = ", ".join("ijklmnop"[n] if n < 8 else f"i{n}" for n in range(self.ndim))
    raise TEError(
        f"tensor '{self.name}' is used in arithmetic as a whole; TE computes element by element: "
        f"index it inside te.compute, e.g. te.compute({self.name}.shape, lambda {index or '*i'}: "
        f"{self.name}[{index}] ...)"
    )


# Whole-tensor `A + B`, `2 * A`, `A / B` build a broadcasting compute, as in TVM. The builders
# live in the operator library (te cannot import topi), which registers them when imported.
_WHOLE_TENSOR_OPS: dict[str, Callable[[Any, Any], Tensor]] = {}
_OVERLOADED = {"add": ("add", False), "radd": ("add", True), "sub": ("subtract", False),
               "rsub": ("subtract", True), "mul": ("multiply", False),
               "rmul": ("multiply", True), "truediv": ("divide", False),
               "rtruediv": ("divide", True)}  # fmt: skip


def register_tensor_op(name: str, build: Callable[[Any, Any], Tensor]) -> None:
    """Make whole-tensor arithmetic `name` (add, subtract, multiply, divide) call `build(a, b)`."""
    _WHOLE_TENSOR_OPS[name] = build


def _overload(method: str) -> Callable:
    name, reflected = _OVERLOADED[method]

    def op(self: Tensor, other: Any) -> Tensor:
        build = _WHOLE_TENSOR_OPS.get(name)
        if build is None or isinstance(other, TensorSlice):
            return _whole_tensor(self)
        return build(other, self) if reflected else build(self, other)

    op.__name__ = f"__{method}__"
    op.__doc__ = f"Elementwise {name} with broadcasting (a new compute), as topi.{name}."
    return op


# Arithmetic on an incomplete slice (`A[i] + 1` on a 2-D A) reports the missing indices; on a
# whole tensor, + - * / broadcast and the rest (`C % n`, a slip) say to index it.
for _name in _ARITHMETIC:
    setattr(TensorSlice, f"__{_name}__", _incomplete)
    setattr(Tensor, f"__{_name}__", _overload(_name) if _name in _OVERLOADED else _whole_tensor)


def _index(tensor: Tensor, indices: tuple) -> PrimExpr | TensorSlice:
    if any(isinstance(i, slice) for i in indices) and len(indices) == tensor.ndim:
        from .tensor_compute import TensorRegion  # a region, argument of a tensor intrinsic

        return TensorRegion(tensor, indices)
    if any(isinstance(i, slice) for i in indices):
        raise TEError(
            f"tensor '{tensor.name}': slices are not supported in TE indexing; "
            "index one element per dimension inside te.compute"
        )
    if len(indices) < tensor.ndim:
        return TensorSlice(tensor, indices)
    if len(indices) > tensor.ndim:
        raise TEError(
            f"tensor '{tensor.name}' has {tensor.ndim} dimensions but was indexed with "
            f"{len(indices)} indices"
        )
    return ProducerLoad(tensor, indices)


def _dim_text(d: Any) -> Any:
    value = getattr(d, "value", None)
    if value is not None and not isinstance(value, str):
        return value
    return getattr(d, "name", d)
