"""`define_subroutine` on nn.Module classes (TVM's SubroutineMixin).

With `define_subroutine = True`, calling the module during export emits a call of a private
relax function named after the class (`DecoderLayer` -> `decoder_layer`) instead of inlining
its forward. The function takes the forward's tensor arguments, then the module's parameters.
One function is made per class and per argument struct info within an export (different input
shapes give different functions); calls with the same struct info reuse it.
"""

from __future__ import annotations

import functools
import inspect
import re
import weakref
from typing import Any


class SubroutineMixin:
    """Wraps each subclass's forward so that `define_subroutine` can turn it into a function."""

    define_subroutine: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        forward = cls.__dict__.get("forward")
        if forward is not None and not getattr(forward, "_nn_subroutine", False):
            cls.forward = _dispatch(forward)


def _dispatch(forward: Any) -> Any:
    @functools.wraps(forward)
    def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not self.define_subroutine:
            return forward(self, *args, **kwargs)
        return _call_subroutine(self, forward, args, kwargs)

    wrapped._nn_subroutine = True
    return wrapped


# Subroutines made so far, per BlockBuilder (an export): (forward, arg struct infos, GlobalVar).
_MADE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _snake_case(name: str) -> str:
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


def _call_subroutine(module: Any, forward: Any, args: tuple, kwargs: dict) -> Any:
    from ....error import ArgumentError
    from ....ir.structural import structural_equal
    from ...struct_info import TupleStructInfo
    from .core import Tensor, current_builder, wrap_nested

    what = f"{type(module).__name__}.forward (define_subroutine = True)"
    bb = current_builder(what)
    bound = inspect.signature(forward).bind(module, *args, **kwargs)
    inputs = list(bound.arguments.items())[1:]  # without self
    for name, value in inputs:
        if not isinstance(value, Tensor):
            raise ArgumentError(
                f"{what}: argument {name!r} is a {type(value).__name__}; a subroutine takes nn "
                "Tensors only (set define_subroutine = False to inline this module)"
            )
    params = list(module.named_parameters())
    sinfos = TupleStructInfo(
        tuple(v._expr.struct_info for _, v in inputs)
        + tuple(p._expr.struct_info for _, p in params)
    )
    made = _MADE.setdefault(bb, [])
    gv = next(
        (
            g
            for fwd, s, g in made
            if fwd is forward and structural_equal(s, sinfos, map_free_vars=True)
        ),
        None,
    )
    if gv is None:
        gv = _build(bb, module, forward, inputs, params, _snake_case(type(module).__name__))
        made.append((forward, sinfos, gv))
    from ...expr import Call

    call = Call(gv, tuple(v._expr for _, v in inputs) + tuple(p._expr for _, p in params))
    return wrap_nested(call, f"{gv.name_hint}_output")


def _build(outer: Any, module: Any, forward: Any, inputs: list, params: list, name: str) -> Any:
    """Build the subroutine in a builder of its own (ours builds one function at a time), then
    move it, and whatever it added (PrimFuncs, nested subroutines), into `outer`'s module."""
    from ...block_builder import BlockBuilder
    from ...expr import Var
    from .core import Tensor
    from .exporter import _unwrap

    inner = BlockBuilder(outer.get())  # starts from outer's functions, so new names are unique
    arg_vars = [Var(n, v._expr.struct_info) for n, v in inputs]
    param_vars = [Var(p._expr.name_hint, p._expr.struct_info) for _, p in params]
    saved = [p._expr for _, p in params]
    dataflow = outer._dataflow
    try:
        for (_, param), var in zip(params, param_vars):
            param._expr = var
        with inner.function(name, [*arg_vars, *param_vars], private=True):
            if dataflow:
                with inner.dataflow():
                    out = _unwrap(forward(module, *[Tensor(_expr=v) for v in arg_vars]), name)
                    out = inner.emit_output(out, "dataflow_output")
            else:
                out = _unwrap(forward(module, *[Tensor(_expr=v) for v in arg_vars]), name)
            gv = inner.emit_func_output(out)
    finally:
        for (_, param), expr in zip(params, saved):
            param._expr = expr
    known = {g.name_hint for g, _ in outer.get().functions_items()}
    for g, func in inner.get().functions_items():
        if g.name_hint not in known:
            outer.update_func(g, func)
    return gv
