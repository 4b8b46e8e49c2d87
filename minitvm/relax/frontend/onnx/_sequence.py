"""ONNX sequences and optionals, kept as Python values while importing.

A sequence is a `SequenceValue`: a tuple of its items (known arrays stay arrays, so what
follows still folds) whose length, and every position into it, is known at import. It becomes
a relax Tuple only where it leaves the graph (a graph output, an If branch), and a graph input
of sequence type is a Tuple parameter whose length the caller fixes in shape_dict
(`{"seq": [(2, 3), (4, 3)]}`). A sequence whose length or positions are only known at run time
has no relax form here and is refused by name.

An optional is an `OptionalValue` known at import to hold a value or not; a graph input of
optional type is imported as present (its element's type), since the VM passes no "none".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ....error import FrontendError, OpAttributeInvalid, OpNotImplemented
from ... import op as R
from ...expr import Expr, Tuple, TupleGetItem, Var
from ...struct_info import TensorStructInfo, TupleStructInfo
from ._control import body_of, run_body
from ._helpers import _axis, _required, shape_of
from ._shape import SymTensor

_RUN_TIME_POSITION = (
    "is computed at run time; minitvm keeps a sequence as a tuple whose positions are known at "
    "import: make it a constant (or an initializer) in the model"
)


@dataclass(frozen=True)
class SequenceValue:
    """An ONNX sequence of tensors: its items in order; `dtype` their element type when known
    without an item (SequenceEmpty's, a graph input's)."""

    items: tuple
    dtype: str | None = None

    def as_tuple(self, ctx: Any) -> Tuple:
        return Tuple(tuple(ctx.expr(v) for v in self.items))


@dataclass(frozen=True)
class OptionalValue:
    """An ONNX optional whose presence is known at import (`value` None when empty)."""

    value: Any


# ----------------------------------------------------------------------------- values


def as_expr(ctx: Any, value: Any) -> Expr | None:
    """A sequence as a relax Tuple, an optional as its element; None for any other value
    (`Context.expr` converts those)."""
    if isinstance(value, SequenceValue):
        return value.as_tuple(ctx)
    if isinstance(value, OptionalValue):
        if value.value is None:
            raise OpNotImplemented(
                f"{ctx.where()}: an empty optional is used as a value (a graph or branch output); "
                "minitvm gives tensors and tuples only: return something else"
            )
        return ctx.expr(value.value)
    return None


def _sequence(ctx: Any, value: Any, what: str) -> SequenceValue:
    """Input `what` as a SequenceValue (a Tuple-typed graph input is read item by item)."""
    if isinstance(value, SequenceValue):
        return value
    if isinstance(value, Expr) and isinstance(value.struct_info, TupleStructInfo):
        fields = value.struct_info.fields
        items = tuple(ctx.emit(TupleGetItem(value, i)) for i in range(len(fields)))
        dtypes = {str(f.dtype) for f in fields if isinstance(f, TensorStructInfo)}
        return SequenceValue(items, dtypes.pop() if len(dtypes) == 1 else None)
    if value is None:
        raise OpAttributeInvalid(f"input '{what}' is missing")
    kind = "an optional" if isinstance(value, OptionalValue) else "a tensor"
    raise OpAttributeInvalid(
        f"input '{what}' is {kind}, not a sequence (the model is malformed: check it with "
        "onnx.checker)"
    )


def sequence_items(ctx: Any, value: Any, what: str) -> tuple | None:
    """A sequence's items (a Tuple is read item by item); None for a tensor. An optional has
    no relax form: its presence must be known where it is used."""
    if isinstance(value, OptionalValue):
        raise OpNotImplemented(
            f"{what} is an optional, which can only be used where its presence is known at "
            "import (not out of an If whose condition is computed at run time)"
        )
    if isinstance(value, SequenceValue) or (
        isinstance(value, Expr) and isinstance(value.struct_info, TupleStructInfo)
    ):
        return _sequence(ctx, value, what).items
    return None


def _kind(value: Any) -> str:
    if isinstance(value, OptionalValue):
        return "optional"
    if isinstance(value, SequenceValue) or isinstance(
        getattr(value, "struct_info", None), TupleStructInfo
    ):
        return "sequence"
    return "tensor"


def check_declared_kind(info: Any, value: Any) -> None:
    """A subgraph output is the kind its type declares (a tensor, a sequence); an optional
    may hold either, an untyped output anything."""
    declared = {"tensor_type": "tensor", "sequence_type": "sequence"}.get(
        info.type.WhichOneof("value")
    )
    if declared is not None and _kind(value) != declared:
        raise OpAttributeInvalid(
            f"its output {info.name!r} is declared a {declared} but is a {_kind(value)}; the "
            "model is malformed (ONNX shape inference refuses it too)"
        )


def _item_dtype(value: Any) -> str | None:
    if isinstance(value, np.ndarray):
        return str(value.dtype)
    if isinstance(value, SymTensor):
        return str(value.dtype)
    if isinstance(value, Expr) and isinstance(value.struct_info, TensorStructInfo):
        return str(value.struct_info.dtype)
    return None


def _tensor_item(value: Any, what: str) -> Any:
    """A value that may be an item of a sequence: a tensor (known or computed)."""
    if value is None:
        raise OpAttributeInvalid(f"input '{what}' is missing")
    if _item_dtype(value) is None:
        raise OpNotImplemented(
            f"input '{what}' is not a tensor; minitvm's sequences hold tensors only"
        )
    return value


def _joined_dtype(items: tuple, dtype: str | None, what: str) -> str | None:
    """The one element type of `items` (and `dtype`); a mix is refused (ONNX sequences hold
    one type)."""
    dtypes = {d for d in [dtype, *(_item_dtype(v) for v in items)] if d is not None}
    if len(dtypes) > 1:
        raise OpAttributeInvalid(
            f"{what} mixes element types {sorted(dtypes)}; an ONNX sequence holds one type"
        )
    return dtypes.pop() if dtypes else None


def _position(ctx: Any, value: Any, length: int, insert: bool) -> int:
    """A position input known at import, as an index in [0, length] (insert) or [0, length)."""
    known = ctx.known_or_none(value)
    if not isinstance(known, np.ndarray):
        raise OpNotImplemented(f"input 'position' {_RUN_TIME_POSITION}")
    if known.size != 1 or known.dtype.kind not in "iu":
        raise OpAttributeInvalid(
            f"input 'position' is {known.dtype} of shape {known.shape}; it must be one integer"
        )
    pos = int(known.reshape(-1)[0])
    top = length + 1 if insert else length
    if not -top <= pos < top:
        last = length if insert else length - 1
        raise OpAttributeInvalid(
            f"position {pos} is out of range for a sequence of length {length} (allowed: "
            f"{-length} to {last})"
        )
    return pos + length if pos < 0 else pos


# ----------------------------------------------------------------------------- converters


def _sequence_construct(ctx, inputs, attrs):
    items = tuple(_tensor_item(v, f"inputs[{i}]") for i, v in enumerate(inputs))
    return SequenceValue(items, _joined_dtype(items, None, "SequenceConstruct"))


def _sequence_empty(ctx, inputs, attrs):
    from .onnx_frontend import onnx_dtype

    return SequenceValue((), onnx_dtype(int(attrs.get("dtype", 1))))  # 1: FLOAT, the default


def _sequence_insert(ctx, inputs, attrs):
    seq = _sequence(ctx, inputs[0], "input_sequence")
    tensor = _tensor_item(inputs[1], "tensor")
    n = len(seq.items)
    pos = n if len(inputs) < 3 or inputs[2] is None else _position(ctx, inputs[2], n, True)
    items = seq.items[:pos] + (tensor,) + seq.items[pos:]
    return SequenceValue(items, _joined_dtype(items, seq.dtype, "SequenceInsert"))


def _sequence_erase(ctx, inputs, attrs):
    seq = _sequence(ctx, inputs[0], "input_sequence")
    n = len(seq.items)
    if n == 0:
        raise OpAttributeInvalid("the sequence is empty; there is nothing to erase")
    pos = n - 1 if len(inputs) < 2 or inputs[1] is None else _position(ctx, inputs[1], n, False)
    return SequenceValue(seq.items[:pos] + seq.items[pos + 1 :], seq.dtype)


def _sequence_at(ctx, inputs, attrs):
    seq = _sequence(ctx, inputs[0], "input_sequence")
    return seq.items[_position(ctx, inputs[1], len(seq.items), False)]


def _sequence_length(ctx, inputs, attrs):
    return np.array(len(_sequence(ctx, inputs[0], "input_sequence").items), "int64")


def _concat_from_sequence(ctx, inputs, attrs):
    seq = _sequence(ctx, inputs[0], "input_sequence")
    axis, new_axis = int(_required(attrs, "axis")), int(attrs.get("new_axis", 0))
    if new_axis not in (0, 1):
        raise OpAttributeInvalid(f"attribute new_axis={new_axis} must be 0 or 1")
    if not seq.items:
        raise OpAttributeInvalid("the sequence is empty; ConcatFromSequence needs one tensor")
    dtype = _joined_dtype(seq.items, seq.dtype, "ConcatFromSequence")
    ranks = {
        len(v.shape) if isinstance(v, np.ndarray | SymTensor) else len(shape_of(v))
        for v in seq.items
    }
    if len(ranks) != 1:
        raise OpAttributeInvalid(f"the sequence holds tensors of ranks {sorted(ranks)}")
    axis = _axis(axis, ranks.pop() + new_axis)
    if all(isinstance(v, np.ndarray) for v in seq.items):
        join = np.stack if new_axis else np.concatenate
        try:
            return join(list(seq.items), axis=axis)
        except ValueError as err:
            raise OpAttributeInvalid(f"its tensors do not join along axis {axis}: {err}") from err
    parts = [ctx.expr(v, dtype) for v in seq.items]
    if new_axis:
        parts = [ctx.emit(R.expand_dims(p, axis)) for p in parts]
    return parts[0] if len(parts) == 1 else ctx.emit(R.concat(parts, axis))


def _split_to_sequence(ctx, inputs, attrs):
    from ._runtime_axes import split_at_run_time

    x = inputs[0]
    rank = len(x.shape) if isinstance(x, np.ndarray) else len(shape_of(ctx.expr(x)))
    axis = _axis(int(attrs.get("axis", 0)), rank)
    keepdims = int(attrs.get("keepdims", 1))
    split = inputs[1] if len(inputs) > 1 else None
    known = None if split is None else ctx.known_or_none(split)
    dtype = _item_dtype(x)
    if split is not None and known is None:
        t = ctx.expr(split)
        if t.struct_info.ndim != 1:
            raise OpNotImplemented(
                "input 'split' is one size computed at run time, so the number of parts is "
                "only known then; give it as a constant (or a 1-d list of sizes)"
            )
        from ._runtime_axes import static_length

        parts = split_at_run_time(ctx, ctx.expr(x), axis, t, static_length(t, "split"))
        return SequenceValue(tuple(parts), dtype)
    if isinstance(known, SymTensor):
        raise OpNotImplemented("input 'split' holds symbolic dims; give integer sizes")
    dim = x.shape[axis] if isinstance(x, np.ndarray) else shape_of(ctx.expr(x))[axis]
    if not isinstance(dim, int | np.integer):
        raise OpNotImplemented(
            f"axis {axis} has the run-time length {dim}, so the number of parts is only known "
            "then; give the dim in shape_dict"
        )
    sizes = _split_sizes(int(dim), known, axis)
    parts = _split_parts(ctx, x, axis, sizes)
    if split is None and not keepdims:
        parts = [
            np.squeeze(p, axis) if isinstance(p, np.ndarray) else ctx.emit(R.squeeze(p, [axis]))
            for p in parts
        ]
    return SequenceValue(tuple(parts), dtype)


def _split_sizes(dim: int, split: np.ndarray | None, axis: int) -> list[int]:
    """Part sizes along an axis of length `dim`: ones (no split), chunks of one size (the last
    may be smaller), or the given sizes (which must add up to `dim`)."""
    if split is None:
        return [1] * dim
    if split.dtype.kind not in "iu" or split.ndim > 1:
        raise OpAttributeInvalid(f"input 'split' is {split.dtype} of rank {split.ndim}")
    if split.ndim == 0:
        chunk = int(split)
        if chunk <= 0:
            raise OpAttributeInvalid(f"input 'split' is {chunk}; a chunk size must be positive")
        return [min(chunk, dim - i) for i in range(0, dim, chunk)] or [0]
    sizes = [int(s) for s in split]
    if any(s < 0 for s in sizes) or sum(sizes) != dim:
        raise OpAttributeInvalid(
            f"split sizes {sizes} must be non-negative and sum to the length {dim} of axis {axis}"
        )
    return sizes


def _split_parts(ctx: Any, x: Any, axis: int, sizes: list[int]) -> list:
    bounds = [int(b) for b in np.cumsum(sizes)[:-1]]
    if isinstance(x, np.ndarray):
        return list(np.split(x, bounds, axis=axis))
    x = ctx.expr(x)
    if len(sizes) == 1:
        return [x]
    parts = ctx.emit(R.split(x, bounds, axis))
    return [ctx.emit(TupleGetItem(parts, i)) for i in range(len(sizes))]


def _sequence_map(ctx, inputs, attrs):
    from ._unroll import _iteration_cap

    body = body_of(ctx, attrs, "body")
    first = _sequence(ctx, inputs[0], "input_sequence")
    n = len(first.items)
    _iteration_cap(n, "the SequenceMap")
    args: list[Any] = [first]
    for i, v in enumerate(inputs[1:]):
        what = f"additional_inputs[{i}]"
        if isinstance(v, SequenceValue) or isinstance(
            getattr(v, "struct_info", None), TupleStructInfo
        ):
            v = _sequence(ctx, v, what)
            if len(v.items) != n:
                raise OpAttributeInvalid(
                    f"{what} is a sequence of length {len(v.items)}, input_sequence of length "
                    f"{n}; they must agree"
                )
        else:
            v = _tensor_item(v, what)
        args.append(v)
    outputs: list[list] = [[] for _ in body.outputs]
    for t in range(n):
        bound = [a.items[t] if isinstance(a, SequenceValue) else a for a in args]
        for j, v in enumerate(run_body(ctx, body, bound, f"body (item {t})")):
            outputs[j].append(_tensor_item(v, f"body output {j}"))
    return [
        SequenceValue(tuple(items), _joined_dtype(tuple(items), _declared_dtype(info), "its body"))
        for items, info in zip(outputs, body.graph.output)
    ]


def _declared_dtype(info: Any) -> str | None:
    """The element type a value info declares (tensor, or sequence of tensors), if any."""
    from .onnx_frontend import onnx_dtype

    t = info.type
    if t.HasField("sequence_type"):
        t = t.sequence_type.elem_type
    return onnx_dtype(t.tensor_type.elem_type) if t.tensor_type.elem_type else None


def _optional(ctx, inputs, attrs):
    value = inputs[0] if inputs else None
    if value is None and "type" not in attrs:
        raise OpAttributeInvalid("an Optional without an input needs the attribute 'type'")
    return OptionalValue(value)


def _optional_has_element(ctx, inputs, attrs):
    value = inputs[0] if inputs else None
    if isinstance(value, OptionalValue):
        value = value.value
    return np.array(value is not None)


def _optional_get_element(ctx, inputs, attrs):
    value = inputs[0] if inputs else None
    if isinstance(value, OptionalValue):
        value = value.value
    if value is None:
        raise OpAttributeInvalid(
            "the optional is empty, and OptionalGetElement of an empty optional is an error"
        )
    return value


SEQUENCE_CONVERTERS = {
    "SequenceConstruct": _sequence_construct,
    "SequenceEmpty": _sequence_empty,
    "SequenceInsert": _sequence_insert,
    "SequenceErase": _sequence_erase,
    "SequenceAt": _sequence_at,
    "SequenceLength": _sequence_length,
    "ConcatFromSequence": _concat_from_sequence,
    "SplitToSequence": _split_to_sequence,
    "SequenceMap": _sequence_map,
    "Optional": _optional,
    "OptionalHasElement": _optional_has_element,
    "OptionalGetElement": _optional_get_element,
}


# ----------------------------------------------------------------------------- graph inputs


def input_var(ctx: Any, info: Any, name: str, shapes: Mapping, dtype_dict: Any) -> Var:
    """A graph input of sequence type as a Tuple parameter (its item shapes from shape_dict);
    one of optional type as its element's type (imported as present)."""
    from .onnx_frontend import _input_var, onnx_dtype

    kind = info.type.WhichOneof("value")
    if kind == "optional_type":
        elem = info.type.optional_type.elem_type
        inner = type(info)()
        inner.name = info.name
        inner.type.CopyFrom(elem)
        return _input_var(ctx, inner, name, shapes, dtype_dict)
    if kind != "sequence_type" or not info.type.sequence_type.elem_type.HasField("tensor_type"):
        raise FrontendError(
            f"from_onnx: input {info.name!r} is a {kind or 'value of no type'}; minitvm imports "
            "tensors, sequences of tensors and optionals of those"
        )
    if info.name not in shapes:
        raise FrontendError(
            f"from_onnx: input {info.name!r} is a sequence, whose length the model does not "
            f"say; give its items' shapes in shape_dict, e.g. {{{info.name!r}: [(2, 3), (4, 3)]}}"
        )
    elem = info.type.sequence_type.elem_type.tensor_type
    if isinstance(dtype_dict, Mapping) and info.name in dtype_dict:
        dtype = str(dtype_dict[info.name])
    elif elem.elem_type:
        dtype = onnx_dtype(elem.elem_type)
    else:
        dtype = str(dtype_dict) if isinstance(dtype_dict, str) else "float32"
    fields = tuple(
        TensorStructInfo(
            tuple(ctx.sym_var(d) if isinstance(d, str) else int(d) for d in shape), dtype
        )
        for shape in shapes[info.name]
    )
    return Var(name, TupleStructInfo(fields))


def graph_input_value(ctx: Any, var: Var) -> Any:
    """A graph input's value: a sequence input as its items, each cast to its shape (the VM
    checks a cast, not a Tuple parameter's items, and a cast binds the item's named dims)."""
    sinfo = var.struct_info
    if not isinstance(sinfo, TupleStructInfo):
        return var
    items = tuple(ctx.bb.match_cast(TupleGetItem(var, i), f) for i, f in enumerate(sinfo.fields))
    dtypes = {str(f.dtype) for f in sinfo.fields}
    return SequenceValue(items, dtypes.pop() if len(dtypes) == 1 else None)


def is_sequence_input(info: Any) -> bool:
    """The input is a sequence (or an optional of one): shape_dict gives a list of shapes."""
    t = info.type
    if t.HasField("optional_type"):
        t = t.optional_type.elem_type
    return t.HasField("sequence_type")
