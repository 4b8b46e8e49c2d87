"""TVM's `relax.testing.nn`: a small PyTorch-shaped layer API over the BlockBuilder, used by
TVM's relax tests to build workloads (`Linear`, `ReLU`, `LogSoftmax`, `Sequential`).

Layers emit into `relax.BlockBuilder.current()`; a `Parameter` is a relax Var that the caller
lists among the function's parameters (`[x] + model.parameters()`):

    bb = relax.BlockBuilder()
    model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10), nn.LogSoftmax())
    with bb.function("main"):
        x = nn.Placeholder((1, 784), name="x")
        bb.emit_func_output(model(x), [x] + model.parameters())
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...error import ArgumentError, MiniTVMError
from ...runtime import ndarray as nd
from ..block_builder import BlockBuilder
from ..expr import Call, Expr, Var, is_leaf
from ..struct_info import TensorStructInfo


def _builder(what: str) -> BlockBuilder:
    bb = BlockBuilder.current()
    if bb is None:
        raise MiniTVMError(
            f"relax.testing.nn.{what}: no BlockBuilder is active; call it inside "
            "`with bb.function(...)`"
        )
    return bb


def emit(expr: Expr, name_hint: str = "") -> Var:
    """Bind `expr` in the current BlockBuilder."""
    return _builder("emit").emit(expr, name_hint)


def emit_te(func: Callable, *args: Any, **kwargs: Any) -> Var:
    """Bind a call of the TE function `func` (e.g. `topi.nn.relu`) in the current BlockBuilder."""
    return _builder("emit_te").emit_te(func, *args, **kwargs)


def _checked_shape(kind: str, shape: Any) -> tuple:
    if not isinstance(shape, list | tuple):
        raise ArgumentError(
            f"relax.testing.nn.{kind}: shape must be a list or tuple, got {type(shape).__name__}"
        )
    return tuple(shape)


class Placeholder:
    """A model input: makes a relax Var of the given shape and dtype (a plain Var, so what is
    built with it compares structurally equal to the same function written in TVMScript)."""

    def __new__(cls, shape: Sequence[Any], dtype: str = "float32", name: str = "data") -> Var:
        return Var(name, TensorStructInfo(_checked_shape("Placeholder", shape), dtype))


class Parameter:
    """A model weight: makes a relax Var (plain, as Placeholder) that the caller passes as a
    function parameter; `Module.parameters()` finds it among the module's attributes."""

    def __new__(cls, shape: Sequence[Any], dtype: str = "float32", name: str = "param") -> Var:
        return Var(name, TensorStructInfo(_checked_shape("Parameter", shape), dtype))


def _params_in(value: Any) -> list:
    """The relax Vars held by `value`, in attribute order (modules, dicts, lists and tuples are
    searched; anything else holds none). A module holds its inputs only while a call runs, so
    the Vars it keeps are its Parameters."""
    if isinstance(value, Var):
        return [value]
    if isinstance(value, Module):
        value = {k: v for k, v in vars(value).items() if k != "_subroutines"}
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return [p for v in value for p in _params_in(v)]
    return []


class Module:
    """Base class of layers: define `forward`; `parameters()` lists the Parameters held in
    attributes (nested modules included). With `define_subroutine = True` a call emits a call
    of a private function named after the class (`Linear` -> `linear`), made once per input
    struct info, that takes the inputs and then the module's parameters."""

    define_subroutine: bool = False

    def parameters(self) -> list:
        return _params_in(self)

    def forward(self, *args: Any) -> Any:
        raise MiniTVMError(f"{type(self).__name__}: subclasses of nn.Module define forward")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not self.define_subroutine:
            return self.forward(*args, **kwargs)
        if kwargs:
            raise ArgumentError(
                f"{type(self).__name__}: a subroutine (define_subroutine = True) takes positional "
                f"arguments only, got {sorted(kwargs)}"
            )
        return _call_subroutine(self, args)


def _snake_case(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _call_subroutine(module: Module, args: tuple) -> Var:
    from ...ir.structural import structural_equal

    what = f"{type(module).__name__} (define_subroutine = True)"
    outer = _builder(what)
    inputs = []
    for k, a in enumerate(args):
        if not isinstance(a, Expr):
            raise ArgumentError(f"{what}: argument {k} is a {type(a).__name__}, not a relax Expr")
        inputs.append(a if is_leaf(a) or isinstance(a, Var) else outer.emit(a))
    params = module.parameters()
    sinfos = [v.struct_info for v in (*inputs, *params)]
    made = module.__dict__.setdefault("_subroutines", [])
    gv = next(
        (
            g
            for bb, s, g in made
            if bb is outer
            and len(s) == len(sinfos)
            and all(structural_equal(x, y, map_free_vars=True) for x, y in zip(s, sinfos))
        ),
        None,
    )
    if gv is None:
        gv = _build(outer, module, inputs, params)
        made.append((outer, sinfos, gv))
    return outer.emit(Call(gv, (*inputs, *params)))


def _build(outer: BlockBuilder, module: Module, inputs: list, params: list) -> Any:
    """Build the subroutine in a builder of its own (ours builds one function at a time) with
    fresh Vars for its parameters (a Var belongs to one function), then move it and whatever it
    added into `outer`'s module."""
    name = _snake_case(type(module).__name__)
    inner = BlockBuilder(outer.get())  # starts from outer's functions: new names stay unique
    arg_vars = [
        Var(getattr(v, "name_hint", f"arg{k}"), v.struct_info) for k, v in enumerate(inputs)
    ]
    fresh = {p: Var(p.name_hint, p.struct_info) for p in params}
    restore = _swap_params(module, fresh)
    try:
        with inner.function(name, [*arg_vars, *fresh.values()], private=True):
            if outer._dataflow:
                with inner.dataflow():
                    out = inner.emit_output(_bound(inner, module.forward(*arg_vars)))
            else:
                out = _bound(inner, module.forward(*arg_vars))
            gv = inner.emit_func_output(out)
    finally:
        for obj, key, old in restore:
            setattr(obj, key, old)
    known = {g.name_hint for g, _ in outer.get().functions_items()}
    for g, func in inner.get().functions_items():
        if g.name_hint not in known:
            outer.update_func(g, func)
    return gv


def _bound(bb: BlockBuilder, out: Any) -> Any:
    return (
        out if not isinstance(out, Expr) or isinstance(out, Var) or is_leaf(out) else bb.emit(out)
    )


def _swap_params(module: Module, fresh: dict) -> list:
    """Point every attribute holding a Parameter of `fresh` (in `module` and its submodules) at
    its replacement; returns (object, attribute, old value) to undo it."""
    undo = []

    def swap(value: Any) -> Any:
        if isinstance(value, Var):
            return fresh.get(value, value)
        if isinstance(value, Module):
            for key, v in list(vars(value).items()):
                if key == "_subroutines":
                    continue
                new = swap(v)
                if new is not v:
                    undo.append((value, key, v))
                    setattr(value, key, new)
            return value
        if isinstance(value, list | tuple):
            new = [swap(v) for v in value]
            return type(value)(new) if any(a is not b for a, b in zip(new, value)) else value
        if isinstance(value, dict):
            new = {k: swap(v) for k, v in value.items()}
            return new if any(new[k] is not value[k] for k in value) else value
        return value

    swap(module)
    return undo


def init_params(mod: Any) -> list:
    """Zero arrays for the parameters of `mod["main"]` (those not named `data...`), in order."""
    arrays = []
    for v in mod["main"].params:
        if v.name_hint.startswith("data"):
            continue
        shape = getattr(v.struct_info, "shape", None)
        dims = [getattr(d, "value", d) for d in shape] if shape is not None else None
        if dims is None or not all(isinstance(d, int) for d in dims):
            raise ArgumentError(
                f"relax.testing.nn.init_params: parameter '{v.name_hint}' has shape "
                f"{shape}; only parameters of known static shape can be initialised"
            )
        arrays.append(nd.array(np.zeros(dims, dtype=str(v.struct_info.dtype))))
    return arrays


class Sequential(Module):
    """Applies its modules in order."""

    def __init__(self, *modules: Module) -> None:
        self.modules = modules

    def forward(self, x: Expr) -> Any:
        for m in self.modules:
            x = m(x)
        return x


class ReLU(Module):
    def forward(self, x: Expr) -> Var:
        from ... import topi

        return emit_te(topi.nn.relu, x)


class LogSoftmax(Module):
    def forward(self, x: Expr) -> Var:
        from ... import topi

        return emit_te(topi.nn.log_softmax, x)


class Linear(Module):
    """`y = x @ weight + bias` with weight of shape (in_features, out_features)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True) -> None:
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter((in_features, out_features), name="linear_weight")
        self.bias = Parameter((out_features,), name="linear_bias") if bias else None

    def forward(self, x: Expr) -> Var:
        from ... import topi

        y = emit_te(topi.matmul, x, self.weight)
        return emit_te(topi.add, y, self.bias) if self.bias is not None else y


def _marked(mark: Callable, value: Any) -> Any:
    return mark(value) if isinstance(value, Expr) else value


def checkpoint(func: Callable, *args: Any, **kwargs: Any) -> Any:
    """`func(*args, **kwargs)` with its inputs wrapped in `start_checkpoint` and its result (or
    each result of a list/tuple) in `end_checkpoint`, nothing emitted: relax.transform.Gradient
    recomputes what func computes in the backward pass instead of keeping it."""
    from ..op.grad_checkpoint import end_checkpoint, start_checkpoint

    result = func(
        *(_marked(start_checkpoint, a) for a in args),
        **{k: _marked(start_checkpoint, v) for k, v in kwargs.items()},
    )
    if isinstance(result, list | tuple):
        return [_marked(end_checkpoint, r) for r in result]
    if not isinstance(result, Expr):
        raise MiniTVMError(
            f"relax.testing.nn.checkpoint: {getattr(func, '__name__', func)!r} returned "
            f"{type(result).__name__}; it must return a relax Expr or a list of them"
        )
    return end_checkpoint(result)


def emit_checkpoint(func: Callable, *args: Any, **kwargs: Any) -> Any:
    """`checkpoint`, with the markers bound as `<name>_scp` / `<name>_ecp` (readable scripts)."""
    from ..op.grad_checkpoint import end_checkpoint, start_checkpoint

    bb = _builder("emit_checkpoint")

    def start(v: Any) -> Any:
        return bb.emit(start_checkpoint(v), f"{v.name_hint}_scp") if isinstance(v, Var) else v

    def end(v: Any) -> Any:
        if not isinstance(v, Expr):
            return v
        v = v if isinstance(v, Var) else bb.emit(v)
        return bb.emit(end_checkpoint(v), f"{v.name_hint}_ecp")

    result = func(*(start(a) for a in args), **{k: start(v) for k, v in kwargs.items()})
    if isinstance(result, list | tuple):
        return [end(r) for r in result]
    return end(result)


def emit_checkpoint_sequential(
    functions: Sequence[Callable],
    segments: int | Sequence[int],
    input: Var,
    checkpoint_last: bool = False,
) -> Var:
    """Run `functions` in order on `input`, cut into segments (an int: that many equal ones; a
    list: where each starts), and checkpoint each segment but the last (unless `checkpoint_last`),
    as torch.utils.checkpoint.checkpoint_sequential does."""
    bb = _builder("emit_checkpoint_sequential")
    n = len(functions)
    if isinstance(segments, int):
        if not 0 < segments <= n:
            raise ArgumentError(
                f"relax.testing.nn.emit_checkpoint_sequential: segments={segments} for {n} "
                f"functions; use 1..{n}"
            )
        starts = list(range(0, n, n // segments))
    else:
        starts = list(segments)
    bounds = [*starts, n] if not starts or starts[-1] != n else starts
    if len(bounds) < 2 or sorted(set(bounds)) != bounds or bounds[0] < 0:
        raise ArgumentError(
            f"relax.testing.nn.emit_checkpoint_sequential: segment starts {list(segments)} for "
            f"{n} functions; give increasing starts in 0..{n - 1}"
        )

    def run(lo: int, hi: int) -> Callable:
        def segment(x: Any) -> Any:
            for f in functions[lo:hi]:
                x = f(x)
                x = x if isinstance(x, Var) or not isinstance(x, Expr) else bb.emit(x)
            return x

        return segment

    x: Any = input
    for k, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        last = k == len(bounds) - 2
        x = run(lo, hi)(x) if last and not checkpoint_last else emit_checkpoint(run(lo, hi), x)
    return x if isinstance(x, Var) else bb.emit(x)


__all__ = [
    "Linear",
    "LogSoftmax",
    "Module",
    "Parameter",
    "Placeholder",
    "ReLU",
    "Sequential",
    "checkpoint",
    "emit",
    "emit_checkpoint",
    "emit_checkpoint_sequential",
    "emit_te",
    "init_params",
]
