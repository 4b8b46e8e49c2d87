"""Commutative reductions: `te.sum`, `te.max`, `te.min` and `te.comm_reducer` for your own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..error import TEError
from ..ir.dtype import DataType
from ..ir.node import Node, node, setfield
from ..tir import op as _op
from ..tir.expr import IntImm, IterType, IterVar, PrimExpr, Var, as_expr, cast
from .tensor import Tensor


@node
class CommReducer(Node):
    """`result = fcombine(lhs, rhs)` with `identity_element`, over one or more values."""

    lhs: tuple
    rhs: tuple
    result: tuple
    identity_element: tuple
    name: str = "reducer"
    _def_fields = ("lhs", "rhs")

    def combine(self, lhs: tuple, rhs: tuple) -> tuple:
        """The combined values for concrete `lhs`/`rhs` expressions."""
        from ..tir.functor import substitute

        vmap = dict(zip(self.lhs, lhs)) | dict(zip(self.rhs, rhs))
        return tuple(substitute(r, vmap) for r in self.result)


@node
class Reduce(PrimExpr):
    """Value `value_index` of reducing `source` over `axis` where `condition` holds."""

    combiner: CommReducer
    source: tuple
    axis: tuple
    condition: PrimExpr
    value_index: int = 0
    init: tuple = ()
    dtype: DataType | None = None

    def __post_init__(self):
        setfield(self, "source", tuple(as_expr(s) for s in self.source))
        setfield(self, "condition", as_expr(self.condition))
        setfield(self, "init", tuple(as_expr(v) for v in self.init))
        if self.dtype is None:
            setfield(self, "dtype", self.source[self.value_index].dtype)

    @property
    def reducer_name(self) -> str:
        return self.combiner.name


def _as_axis_list(axis: Any, reducer: str) -> tuple[IterVar, ...]:
    axes = tuple(axis) if isinstance(axis, list | tuple) else (axis,)
    for a in axes:
        if not isinstance(a, IterVar) or a.iter_type is not IterType.CommReduce:
            raise TEError(
                f"te.{reducer}: axis {a!r} is not a reduction axis; create one with "
                "k = te.reduce_axis((0, n), name='k') and pass axis=k (or a list of them)"
            )
    if len({id(a) for a in axes}) != len(axes):
        raise TEError(f"te.{reducer}: the same reduce axis appears twice in axis=")
    return axes


class Reducer:
    """What `te.comm_reducer` returns: call it like `te.sum(expr, axis=k, where=None, init=None)`.

    Called with two expressions instead of an axis (`te.max(a, b)`) it combines them directly.
    """

    def __init__(self, fcombine: Callable, fidentity: Callable, name: str):
        self.fcombine, self.fidentity, self.name = fcombine, fidentity, name
        self.__name__ = name

    def combiner(self, dtypes: tuple[DataType, ...]) -> CommReducer:
        """The CommReducer node for values of `dtypes`."""
        lhs = tuple(Var(f"x{n}" if len(dtypes) > 1 else "x", d) for n, d in enumerate(dtypes))
        rhs = tuple(Var(f"y{n}" if len(dtypes) > 1 else "y", d) for n, d in enumerate(dtypes))
        if len(dtypes) == 1:
            result = _values(self.fcombine(lhs[0], rhs[0]))
            identity = _values(self.fidentity(str(dtypes[0])))
        else:
            result = _values(self.fcombine(lhs, rhs))
            identity = _values(self.fidentity(*(str(d) for d in dtypes)))
        if len(result) != len(dtypes) or len(identity) != len(dtypes):
            raise TEError(
                f"reducer '{self.name}': fcombine/fidentity must return {len(dtypes)} values "
                f"(one per reduced value), got {len(result)} and {len(identity)}"
            )
        result = tuple(cast(d, r) for d, r in zip(dtypes, result))
        identity = tuple(cast(d, v) for d, v in zip(dtypes, identity))
        return CommReducer(lhs, rhs, result, identity, self.name)

    def __call__(
        self, expr: Any, axis: Any = None, where: Any = None, init: Any = None, *rest: Any
    ) -> Any:
        if axis is None:
            raise TEError(
                f"te.{self.name}(...) needs axis=: the reduce_axis (or list of them) to reduce over"
            )
        if not isinstance(axis, IterVar | list | tuple):
            # te.max(a, b): an elementwise combination, not a reduction.
            out = self.fcombine(as_expr(_lift(expr)), as_expr(_lift(axis)))
            for r in (where, init) + rest:
                if r is not None:
                    out = self.fcombine(out, as_expr(_lift(r)))
            return out
        axes = _as_axis_list(axis, self.name)
        if isinstance(expr, Tensor):
            raise TEError(
                f"te.{self.name}: got the tensor '{expr.name}'; reduce an element of it inside "
                f"te.compute, e.g. te.{self.name}({expr.name}[i, k], axis=k)"
            )
        multi = isinstance(expr, tuple | list)
        source = tuple(as_expr(_lift(e)) for e in (expr if multi else (expr,)))
        combiner = self.combiner(tuple(s.dtype for s in source))
        cond = IntImm(DataType("bool"), 1) if where is None else as_expr(_lift(where))
        if not cond.dtype.is_bool:
            raise TEError(f"te.{self.name}: where= must be a boolean condition, got `{cond}`")
        inits = ()
        if init is not None:
            inits = tuple(init) if isinstance(init, tuple | list) else (init,)
            if len(inits) != len(source):
                raise TEError(
                    f"te.{self.name}: init= has {len(inits)} value(s) for {len(source)} reduced "
                    "value(s); give one initial value per reduced value"
                )
            inits = tuple(cast(s.dtype, as_expr(_lift(v))) for s, v in zip(source, inits))
        outs = tuple(Reduce(combiner, source, axes, cond, n, inits) for n in range(len(source)))
        return outs if multi else outs[0]

    def __repr__(self) -> str:
        return f"<te reducer {self.name}>"


def _values(x: Any) -> tuple:
    return tuple(x) if isinstance(x, tuple | list) else (x,)


def _lift(x: Any) -> Any:
    return x.var if isinstance(x, IterVar) else x


def comm_reducer(fcombine: Callable, fidentity: Callable, name: str = "reducer") -> Reducer:
    """Make a reducer from `fcombine(x, y)` and `fidentity(dtype)`.

    Example: `mysum = te.comm_reducer(lambda x, y: x + y, lambda t: tvm.tir.const(0, t))`.
    For several values, `fcombine(xs, ys)` takes and returns tuples and `fidentity(*dtypes)`
    returns a tuple.
    """
    return Reducer(fcombine, fidentity, name)


sum = comm_reducer(lambda x, y: x + y, lambda t: _op.const(0, t), name="sum")
max = comm_reducer(lambda x, y: _op.max(x, y), _op.min_value, name="max")
min = comm_reducer(lambda x, y: _op.min(x, y), _op.max_value, name="min")
