"""Loop and Scan, unrolled at import: their body converted once per iteration.

The relax VM runs no backward jumps (a loaded executable is untrusted data, and every call has
a static step bound), so a loop exists only as its unrolled iterations and their number must be
known here. Scan's is the static length of its scan axis. Loop's comes from a trip count known
at import and a condition that folds to a constant at every iteration (the iteration number is
a constant of each iteration, so a body condition such as `i < 3` folds too); anything that
decides the iteration count at run time is refused.

Per iteration the body sees the loop-carried values of the previous one; the per-iteration
outputs (scan outputs) are stacked along a new axis. Bounds: MAX_ITERATIONS per loop, and the
subgraph-node budget of `_control.run_body` for a whole import.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....error import FrontendError, OpAttributeInvalid, OpNotImplemented
from ... import op as R
from ...expr import const
from ._control import Body, _same_dim, body_of, run_body
from ._helpers import _axis, _required, shape_of
from ._shape import SymTensor, make

MAX_ITERATIONS = 4096  # per Loop or Scan (each batch row of a Scan-8 counted apart)

_RUN_TIME_LOOP = (
    "Loop with a run-time trip count/condition is not supported: the VM runs no backward "
    "jumps; fold it or export with a fixed count"
)


# ----------------------------------------------------------------------------- values


def _rank(value: Any) -> int:
    if isinstance(value, np.ndarray | SymTensor):
        return len(value.shape)
    return len(shape_of(value))


def _dims(value: Any) -> tuple:
    if isinstance(value, np.ndarray | SymTensor):
        return tuple(value.shape)
    return shape_of(value)


def _take(ctx: Any, value: Any, index: int, axis: int) -> Any:
    """value[..., index, ...] along `axis`, that axis dropped; known values stay known."""
    if isinstance(value, np.ndarray):
        return np.take(value, index, axis=axis)
    if isinstance(value, SymTensor):
        return make(np.take(value.values, index, axis=axis), value.dtype)
    return ctx.emit(R.take(value, const(np.array(index, "int64")), axis))


def _stack(ctx: Any, items: list, axis: int, what: str) -> Any:
    """The per-iteration values `items` stacked along a new axis `axis` (of the result)."""
    first = items[0]
    rank = _rank(first)
    axis = _axis(axis, rank + 1)
    for t, item in enumerate(items):
        da, db = _dims(first), _dims(item)
        same = len(da) == len(db) and all(
            a == b if isinstance(a, int) and isinstance(b, int) else _same_dim(a, b)
            for a, b in zip(da, db)
        )
        if not same:
            raise OpNotImplemented(
                f"{what}: iteration {t} gives shape {list(db)}, iteration 0 gives {list(da)}; "
                "scan outputs are stacked, so every iteration must give one shape"
            )
    if all(isinstance(v, np.ndarray) for v in items):
        return np.stack(items, axis=axis)
    exprs = [ctx.expr(v) for v in items]
    dtypes = {str(e.struct_info.dtype) for e in exprs}
    if len(dtypes) != 1:
        raise OpAttributeInvalid(f"{what}: the iterations give dtypes {sorted(dtypes)}")
    parts = [ctx.emit(R.expand_dims(e, axis)) for e in exprs]
    return parts[0] if len(parts) == 1 else ctx.emit(R.concat(parts, axis))


def _iteration_cap(count: int, what: str) -> None:
    if count > MAX_ITERATIONS:
        raise FrontendError(
            f"{what} runs {count} iterations; minitvm unrolls loops at import and stops at "
            f"{MAX_ITERATIONS}; export the model with fewer iterations"
        )


# ----------------------------------------------------------------------------- Loop


def _known_scalar(ctx: Any, value: Any, what: str) -> np.generic | None:
    """The one value of an optional scalar input known at import; None when omitted."""
    if value is None:
        return None
    known = ctx.known_or_none(value)
    if not isinstance(known, np.ndarray):
        raise OpNotImplemented(f"{_RUN_TIME_LOOP} ({what} is computed at run time)")
    if known.size != 1:
        raise OpAttributeInvalid(f"{what} has shape {known.shape}; Loop takes one value")
    return known.reshape(-1)[0]


def _declared(info: Any, dtype: str, value: Any) -> np.ndarray:
    """`value` shaped as the body declares its input: a scalar, or a 1-element tensor."""
    ttype = info.type.tensor_type
    ndim = len(ttype.shape.dim) if ttype.HasField("shape") else 0
    return np.full((1,) * ndim, value, dtype)


def convert_loop(ctx: Any, inputs: list, attrs: dict) -> list:
    """Loop: the final loop-carried values, then the scan outputs (stacked along axis 0)."""
    body = body_of(ctx, attrs, "body")
    inputs = list(inputs) + [None] * (2 - len(inputs))
    trip, cond, carried = inputs[0], inputs[1], list(inputs[2:])
    n = len(carried)
    k = len(body.outputs) - 1 - n
    if len(body.inputs) != 2 + n or k < 0:
        raise OpAttributeInvalid(
            f"its body takes {len(body.inputs)} inputs and gives {len(body.outputs)} outputs; "
            f"with {n} loop-carried values it must take {2 + n} (iteration number, condition, "
            f"the values) and give at least {1 + n}"
        )
    if any(v is None for v in carried):
        raise OpAttributeInvalid("a loop-carried initial value is missing")
    count = _known_scalar(ctx, trip, "its trip count M")
    go = _known_scalar(ctx, cond, "its condition")
    if count is None and go is None:
        raise OpNotImplemented(f"{_RUN_TIME_LOOP} (it has neither a trip count nor a condition)")
    count = None if count is None else int(count)
    go = True if go is None else bool(go)
    scans: list[list] = [[] for _ in range(k)]
    i = 0
    while go and (count is None or i < count):
        _iteration_cap(i + 1, "the Loop")
        what = f"body (iteration {i})"
        bound = [
            _declared(body.graph.input[0], "int64", i),
            _declared(body.graph.input[1], "bool", go),
            *carried,
        ]
        outs = run_body(ctx, body, bound, what)
        known = ctx.known_or_none(outs[0])
        if not isinstance(known, np.ndarray) or known.size != 1:
            raise OpNotImplemented(
                f"{_RUN_TIME_LOOP} (the body's condition output at iteration {i} is computed "
                "at run time)"
            )
        go = bool(known.reshape(-1)[0])
        if not go and cond is None:
            # the spec ignores the body's condition here, ONNX Runtime stops on it
            raise OpNotImplemented(
                f"the body's condition turns false at iteration {i} of a Loop without a "
                "condition input, where the ONNX spec ignores it and ONNX Runtime stops; "
                "give the Loop a condition input (or a constant-true body condition)"
            )
        carried = list(outs[1 : 1 + n])
        for j, v in enumerate(outs[1 + n :]):
            scans[j].append(v)
        i += 1
    if i == 0 and k:
        raise OpNotImplemented(
            "the Loop runs no iteration, so the shapes of its scan outputs are unknown; "
            "remove the loop from the model"
        )
    return carried + [_stack(ctx, s, 0, f"scan output {j}") for j, s in enumerate(scans)]


# ----------------------------------------------------------------------------- Scan


def _int_list(attrs: dict, name: str, count: int, default: int = 0) -> list[int]:
    values = [int(v) for v in attrs.get(name, [default] * count)]
    if len(values) != count:
        raise OpAttributeInvalid(f"attribute {name}={values} must have {count} entries")
    return values


def _directions(attrs: dict, name: str, count: int) -> list[int]:
    values = _int_list(attrs, name, count)
    if any(v not in (0, 1) for v in values):
        raise OpAttributeInvalid(f"attribute {name}={values}: each must be 0 (forward) or 1")
    return values


def convert_scan(ctx: Any, inputs: list, attrs: dict) -> list:
    """Scan (8 and 9+): the final states, then the scan outputs."""
    body = body_of(ctx, attrs, "body")
    m = int(_required(attrs, "num_scan_inputs"))
    if ctx.opset < 9:
        return _scan8(ctx, body, inputs, attrs, m)
    n, k = _state_counts(m, len(inputs), len(body.outputs), "inputs")
    in_axes = _int_list(attrs, "scan_input_axes", m)
    out_axes = _int_list(attrs, "scan_output_axes", k)
    in_dirs = _directions(attrs, "scan_input_directions", m)
    out_dirs = _directions(attrs, "scan_output_directions", k)
    return _scan(ctx, body, inputs[:n], inputs[n:], (in_axes, in_dirs, out_axes, out_dirs))


def _scan_length(ctx: Any, scans: list, axes: list[int]) -> tuple[int, list[int]]:
    """The static length of the scan axis (the same in every scan input), the axes normalized."""
    lengths, normal = [], []
    for j, (x, axis) in enumerate(zip(scans, axes)):
        if x is None:
            raise OpAttributeInvalid(f"scan input {j} is missing")
        axis = _axis(axis, _rank(x))
        length = _dims(x)[axis]
        if not isinstance(length, int | np.integer):
            raise OpNotImplemented(
                f"scan input {j} has the run-time length {length} along its scan axis {axis}; "
                "the scan length must be static (Scan is unrolled at import): give the dim "
                "in shape_dict"
            )
        lengths.append(int(length))
        normal.append(axis)
    if len(set(lengths)) != 1:
        raise OpAttributeInvalid(f"the scan inputs have scan lengths {lengths}; they must agree")
    return lengths[0], normal


def _scan(ctx: Any, body: Body, states: list, scans: list, layout: tuple) -> list:
    """Scan-9+ semantics: final states, then scan outputs stacked along their axes."""
    in_axes, in_dirs, out_axes, out_dirs = layout
    length, in_axes = _scan_length(ctx, scans, in_axes)
    _iteration_cap(length, "the Scan")
    if any(v is None for v in states):
        raise OpAttributeInvalid("an initial state value is missing")
    k = len(body.outputs) - len(states)
    if length == 0 and k:
        raise OpNotImplemented(
            "the scan length is 0, so the shapes of its scan outputs are unknown; remove the "
            "Scan from the model"
        )
    outputs: list[list] = [[] for _ in range(k)]
    for t in range(length):
        elems = [
            _take(ctx, x, length - 1 - t if d else t, axis)
            for x, axis, d in zip(scans, in_axes, in_dirs)
        ]
        outs = run_body(ctx, body, [*states, *elems], f"body (iteration {t})")
        states = list(outs[: len(states)])
        for j, v in enumerate(outs[len(states) :]):
            outputs[j].append(v)
    stacked = [
        _stack(ctx, items[::-1] if d else items, axis, f"scan output {j}")
        for j, (items, axis, d) in enumerate(zip(outputs, out_axes, out_dirs))
    ]
    return states + stacked


def _state_counts(m: int, num_inputs: int, num_outputs: int, what: str) -> tuple[int, int]:
    """(states, scan outputs) of a Scan with `m` scan inputs among `num_inputs` and a body of
    `num_outputs` outputs (the states come first in both)."""
    n = num_inputs - m
    k = num_outputs - n
    if m < 1 or n < 0 or k < 0:
        raise OpAttributeInvalid(
            f"num_scan_inputs={m} with {num_inputs} {what} and a body of {num_outputs} "
            "outputs: the state count does not add up"
        )
    return n, k


def _scan8(ctx: Any, body: Body, inputs: list, attrs: dict, m: int) -> list:
    """Scan-8: every state and scan input has a leading batch axis (the scan axis is 1); each
    batch row is scanned on its own and the rows stacked again."""
    seq_lens, rest = (inputs[0] if inputs else None), list(inputs[1:])
    n, k = _state_counts(m, len(rest), len(body.outputs), "state and scan inputs")
    dirs = _directions(attrs, "directions", m)
    if any(v is None for v in rest):
        raise OpAttributeInvalid("a state or scan input is missing")
    batches = {_dims(v)[0] if _rank(v) else None for v in rest}
    if len(batches) != 1 or not isinstance(next(iter(batches)), int | np.integer):
        raise OpNotImplemented(
            f"Scan-8's batch dims are {sorted(map(str, batches))}; they must be one static size "
            "(give it in shape_dict, or export with opset 9 or newer)"
        )
    batch = int(next(iter(batches)))
    if seq_lens is not None:
        lengths = ctx.known_or_none(seq_lens)
        full = _dims(rest[n])[1] if _rank(rest[n]) > 1 else None
        if not isinstance(lengths, np.ndarray) or np.any(lengths.reshape(-1) != full):
            raise OpNotImplemented(
                "Scan-8 with sequence_lens other than the full scan length (per-row lengths) "
                "is not supported; omit sequence_lens"
            )
    _iteration_cap(batch, "the Scan's batch (one scan per row)")
    rows = []
    for b in range(batch):
        row = [_take(ctx, v, b, 0) for v in rest]
        layout = ([0] * m, dirs, [0] * k, [0] * k)
        rows.append(_scan(ctx, body, row[:n], row[n:], layout))
    return [_stack(ctx, [r[j] for r in rows], 0, f"output {j}") for j in range(n + k)]
