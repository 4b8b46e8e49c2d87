"""TE operations: `te.placeholder`, `te.compute` (with the nested-reduction check) and axes."""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Callable
from typing import Any

from .. import tir
from ..error import DTypeError, TEError
from ..ir.dtype import DataType
from ..ir.node import FrozenDict, Node, field_names, node, setfield
from ..tir.expr import EqualOp
from ..tir.functor import Visitor, allows_deep_recursion
from .reduction import Reduce
from .tag import current_tag
from .tensor import ProducerLoad, Tensor, _dim_text


class Operation(Node):
    """Base of TE operations. An operation produces `num_outputs` tensors."""

    __slots__ = ()
    __hash__ = object.__hash__

    def __post_init__(self) -> None:
        if "attrs" in field_names(type(self)):  # compute, extern, scan: any mapping or None
            setfield(self, "attrs", FrozenDict(self.attrs or {}))

    @property
    def num_outputs(self) -> int:
        return 1

    def output(self, index: int) -> Tensor:
        if not 0 <= index < self.num_outputs:
            raise TEError(
                f"operation '{self.name}' has {self.num_outputs} output(s), not {index + 1}"
            )
        return Tensor(self.output_shape(index), self.output_dtype(index), self, index)

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        return tuple(self.output(n) for n in range(self.num_outputs))

    @property
    def input_tensors(self) -> list[Tensor]:
        return []

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"

    __str__ = __repr__


class _LooplessOp(Operation):
    """An operation without loop axes of its own (a placeholder, an extern, a scan): TVM gives
    it empty `axis` and `reduce_axis`."""

    __slots__ = ()

    @property
    def axis(self) -> tuple:
        return ()

    @property
    def reduce_axis(self) -> tuple:
        return ()


class _TemplatedOp(_LooplessOp):
    """A loopless operation whose output k has the shape and dtype of `_templates[k]` (an
    extern's output placeholders, a scan's update tensors)."""

    __slots__ = ()

    @property
    def _templates(self) -> tuple:
        raise NotImplementedError

    @property
    def num_outputs(self) -> int:
        return len(self._templates)

    def output_shape(self, index: int) -> tuple:
        return self._templates[index].shape

    def output_dtype(self, index: int) -> DataType:
        return DataType(self._templates[index].dtype)


@node
class PlaceholderOp(_LooplessOp):
    """An input tensor, bound to a buffer argument of the compiled function."""

    name: str
    shape: tuple
    dtype: DataType
    tag: str = ""

    def output_shape(self, index: int) -> tuple:
        return self.shape

    def output_dtype(self, index: int) -> DataType:
        return self.dtype


@node
class ComputeOp(Operation):
    """Outputs `body[n]` at every point of `axis` (the body may be a top-level reduction)."""

    name: str
    tag: str
    attrs: FrozenDict
    axis: tuple
    body: tuple

    @property
    def num_outputs(self) -> int:
        return len(self.body)

    @property
    def shape(self) -> tuple:
        return tuple(iv.dom.extent for iv in self.axis)

    def output_shape(self, index: int) -> tuple:
        return self.shape

    def output_dtype(self, index: int) -> DataType:
        return self.body[index].dtype

    @property
    def reduce_axis(self) -> tuple:
        first = self.body[0]
        return first.axis if isinstance(first, Reduce) else ()

    @property
    def input_tensors(self) -> list[Tensor]:
        """Tensors read by the body, in first-use order, without repeats."""
        found = _Loads()
        found.visit(self.body)
        return list(dict.fromkeys(found.tensors))


class _Loads(Visitor):
    def __init__(self) -> None:
        self.tensors: list[Tensor] = []

    def visit_ProducerLoad(self, n: ProducerLoad) -> None:
        self.tensors.append(n.producer)
        self.generic_visit(n)


# ----------------------------------------------------------------------------- shapes


def _whole_number(dim: Any, n: int, what: str) -> Any:
    """A float or numpy integer shape entry as an int (`N / bn` is a float in Python 3)."""
    if isinstance(dim, numbers.Integral) and not isinstance(dim, bool | int):
        return int(dim)
    if not isinstance(dim, numbers.Real) or isinstance(dim, numbers.Integral):
        return dim
    if not float(dim).is_integer():
        raise TEError(
            f"{what}: shape entry {n} is {dim!r}, a float that is not a whole number; shape "
            "entries must be ints or integer expressions (use // for integer division)"
        )
    return int(dim)


def _shape(shape: Any, what: str) -> tuple[tir.PrimExpr, ...]:
    if isinstance(shape, numbers.Real | tir.PrimExpr | tir.IterVar) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, tuple | list):
        raise TEError(
            f"{what}: shape must be a tuple of ints or integer expressions, got {shape!r}"
        )
    out = []
    for n, dim in enumerate(shape):
        if isinstance(dim, tir.IterVar):
            dim = dim.var
        dim = _whole_number(dim, n, what)
        ok = isinstance(dim, int) and not isinstance(dim, bool)
        ok = ok or (isinstance(dim, tir.PrimExpr) and dim.dtype.is_integer and dim.dtype.is_scalar)
        if not ok:
            kind = getattr(dim, "dtype", type(dim).__name__)
            raise TEError(
                f"{what}: shape entry {n} is {dim!r} ({kind}); shape entries must be ints or "
                "integer expressions such as te.var('n')"
            )
        expr = tir.as_expr(dim, like=DataType("int32"))
        if isinstance(expr, tir.IntImm) and expr.value < 0:
            raise TEError(f"{what}: shape entry {n} is negative ({expr.value})")
        out.append(expr)
    # One index dtype per shape (the widest), so (n_int64, 1, 4) does not mix int32 dims in.
    widest = max((e.dtype for e in out), key=lambda t: t.bits, default=None)
    return tuple(e if e.dtype == widest else tir.cast(widest, e) for e in out)


def placeholder(shape: Any, dtype: str | DataType = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor: `A = te.placeholder((n, 4), "float32", name="A")`."""
    try:
        dt = DataType(dtype)
    except DTypeError as err:
        raise DTypeError(f"placeholder '{name}': {err}") from err
    return PlaceholderOp(name, _shape(shape, f"placeholder '{name}'"), dt).output(0)


# ----------------------------------------------------------------------------- compute


def _axis_names(fcompute: Callable, ndim: int, name: str) -> list[str]:
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError) as err:
        raise TEError(f"compute '{name}': fcompute must be a function of the indices") from err
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    variadic = any(p.kind is p.VAR_POSITIONAL for p in params)
    if variadic and not positional:
        return [f"i{n}" for n in range(ndim)]
    if len(positional) != ndim:
        wanted = ", ".join("ijklmnop"[n] if n < 8 else f"i{n}" for n in range(ndim))
        raise TEError(
            f"compute '{name}': fcompute takes {len(positional)} index argument(s) but the shape "
            f"has {ndim} dimension(s); write `lambda {wanted}: ...` (or `lambda *i: ...`)"
        )
    return [p.name for p in positional]


@allows_deep_recursion
def compute(
    shape: Any,
    fcompute: Callable,
    name: str = "compute",
    tag: str = "",
    attrs: dict | None = None,
) -> Tensor | list[Tensor]:
    """A tensor whose element at each index is `fcompute(*index)`.

    Example: `C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")`.
    A tuple/list returned by fcompute makes a multi-output compute (a list of tensors).
    """
    dims = _shape(shape, f"compute '{name}'")
    try:
        names = _axis_names(fcompute, len(dims), name)
    except TEError:
        # fewer indices than dims: a tensor intrinsic computing the rest (te/tensor_compute.py)
        from .tensor_compute import try_tensor_compute

        out = try_tensor_compute(
            dims, fcompute, name, tag or current_tag(), FrozenDict(attrs or {})
        )
        if out is None:
            raise
        return out
    axis = tuple(
        tir.IterVar(tir.Range.from_min_extent(0, d), tir.Var(n, d.dtype), tir.IterType.DataPar)
        for n, d in zip(names, dims)
    )
    result = fcompute(*(iv.var for iv in axis))
    multi = isinstance(result, tuple | list)
    body = tuple(_as_body(r, name) for r in (result if multi else (result,)))
    if not body:
        raise TEError(f"compute '{name}': fcompute returned no values")
    _check_reductions(name, body, names, dims)
    op = ComputeOp(name, tag or current_tag(), FrozenDict(attrs or {}), axis, body)
    return list(op.outputs) if multi else op.output(0)


def _as_body(value: Any, name: str) -> tir.PrimExpr:
    if isinstance(value, Tensor):
        raise TEError(
            f"compute '{name}': fcompute returned the tensor '{value.name}' itself; "
            f"return one element of it, e.g. {value.name}[i, ...]"
        )
    if isinstance(value, EqualOp):
        return value.asobject()
    try:
        return tir.as_expr(value.var if isinstance(value, tir.IterVar) else value)
    except DTypeError as err:
        raise TEError(
            f"compute '{name}': fcompute returned {value!r}; return an expression "
            "(or a tuple of expressions for several outputs)"
        ) from err


class _FindReduce(Visitor):
    """Collects every Reduce node under the visited expressions."""

    def __init__(self) -> None:
        self.found: list[Reduce] = []

    def visit_Reduce(self, n: Reduce) -> None:
        self.found.append(n)
        self.generic_visit(n)


def _reductions_in(exprs: Any) -> list[Reduce]:
    finder = _FindReduce()
    finder.visit(exprs)
    return finder.found


def _nested_error(name: str, red: Reduce, axis_names: list[str], dims: tuple) -> TEError:
    ks = ", ".join(a.var.name for a in red.axis)
    idx = ", ".join(axis_names)
    shape = ", ".join(str(_dim_text(d)) for d in dims) + ("," if len(dims) == 1 else "")
    return TEError(
        f"compute '{name}': te.{red.reducer_name} over axis '{ks}' is nested inside another "
        "expression; a reduction must be the whole body of a compute. Put the reduction in its "
        f"own tensor (e.g. S = te.compute(({shape}), lambda {idx}: te.{red.reducer_name}(..., "
        f"axis={ks}))) and use S[{idx}] here."
    )


def _check_reductions(name: str, body: tuple, axis_names: list[str], dims: tuple) -> None:
    """A reduction must be the whole body; several outputs reduce together or not at all."""
    tops = [b for b in body if isinstance(b, Reduce)]
    for b in body:
        inner = (b.source, b.condition, b.init) if isinstance(b, Reduce) else b
        nested = _reductions_in(inner)
        if nested:
            raise _nested_error(name, nested[0], axis_names, dims)
    if tops and len(tops) != len(body):
        raise TEError(
            f"compute '{name}': some outputs are reductions and some are not; "
            "a multi-output compute must reduce all its outputs together (or none)"
        )
    first = tops[0] if tops else None
    for other in tops[1:]:
        if other.combiner is not first.combiner or other.axis != first.axis:
            raise TEError(
                f"compute '{name}': the outputs reduce with different reducers or axes; "
                "return the tuple that one reducer call produced, or use separate computes"
            )
    for a in first.axis if first is not None else ():
        if a.dom is None:
            raise TEError(f"compute '{name}': reduce axis '{a.var.name}' has no range")


# ----------------------------------------------------------------------------- axes and vars


def reduce_axis(dom: Any, name: str = "rv", thread_tag: str = "") -> tir.IterVar:
    """A reduction axis over `dom` = (begin, end) or a Range: `k = te.reduce_axis((0, n), "k")`."""
    if isinstance(dom, tir.Range):
        rng = dom
    elif isinstance(dom, tuple | list) and len(dom) == 2:
        lo, hi = (_shape((d,), f"reduce_axis '{name}'")[0] for d in dom)
        zero = isinstance(lo, tir.IntImm) and lo.value == 0
        rng = tir.Range.from_min_extent(lo, hi) if zero else tir.Range.by_begin_end(lo, hi)
    else:
        raise TEError(
            f"reduce_axis '{name}': dom must be (begin, end) or a tvm.ir.Range, got {dom!r}"
        )
    return tir.IterVar(rng, tir.Var(name, rng.extent.dtype), tir.IterType.CommReduce, thread_tag)


def thread_axis(dom: Any = None, tag: str = "", name: str = "") -> tir.IterVar:
    """A thread index axis: `te.thread_axis("threadIdx.x")`."""
    if isinstance(dom, str):
        dom, tag = None, dom
    if not tag:
        raise TEError("thread_axis needs a tag such as 'threadIdx.x' or 'blockIdx.x'")
    if isinstance(dom, tuple | list):
        dom = tir.Range.by_begin_end(dom[0], dom[1])
    return tir.IterVar(dom, tir.Var(name or tag, DataType("int32")), tir.IterType.ThreadIndex, tag)


def var(name: str = "tindex", dtype: str | DataType = "int32") -> tir.Var:
    """A symbolic scalar (a dimension like `n`, or a scalar argument)."""
    return tir.Var(name, DataType(dtype))


def size_var(name: str = "size", dtype: str | DataType = "int32") -> tir.SizeVar:
    """A symbolic non-negative size."""
    return tir.SizeVar(name, DataType(dtype))
