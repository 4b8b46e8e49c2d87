"""nn.op.debug_func and nn.op.print_: call a registered function while the exported program
runs (export with `debug=True`). Each call takes the IO effect and returns its next value, so
the calls stay in program order and no pass removes them."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from ....error import ArgumentError, MiniTVMError
from ....runtime.registry import get_global_func, register_func
from ....tir.expr import FloatImm, IntImm, PrimExpr
from ...expr import PrimValue, StringImm
from ...op import call_pure_packed
from ...struct_info import ObjectStructInfo
from .core import Tensor, current_builder


def _as_arg(arg: Any, name: str) -> Any:
    if isinstance(arg, Tensor):
        return arg._expr
    if isinstance(arg, bool):
        raise ArgumentError(f"nn.op.debug_func({name!r}): a bool argument is not supported")
    if isinstance(arg, int):
        return PrimValue(IntImm("int64", arg))
    if isinstance(arg, float):
        return PrimValue(FloatImm("float32", arg))
    if isinstance(arg, PrimExpr):
        return PrimValue(arg)
    if isinstance(arg, str):
        return StringImm(arg)
    raise ArgumentError(
        f"nn.op.debug_func({name!r}): arguments are nn Tensors, ints, floats, str or tir "
        f"expressions, got {type(arg).__name__}"
    )


def debug_func(name: str, *args: Any, _line_info: str | None = None) -> None:
    """At run time, call the registered function `name` as `f(line_info, *args)`.

    >>> nn.op.debug_func("my.debug", x, 1, "tag")   # inside forward; export with debug=True
    """
    from .exporter import Exporter

    exporter = Exporter.current()
    if exporter is None or exporter.io_effect is None:
        raise MiniTVMError(
            f"nn.op.debug_func({name!r}): debug calls need the IO effect; export with "
            "debug=True (export_tvm(spec, debug=True) or jit(spec, debug=True))"
        )
    if _line_info is None:
        caller = inspect.getframeinfo(inspect.currentframe().f_back)
        _line_info = f"{caller.filename}:{caller.lineno}"
    io = exporter.io_effect
    call = call_pure_packed(
        "vm.builtin.invoke_debug_func",
        io.effect,
        StringImm(name),
        StringImm(_line_info),
        *[_as_arg(a, name) for a in args],
        sinfo_args=ObjectStructInfo(),
    )
    io.effect = current_builder("debug_func").emit(call, io.effect.name_hint)


def print_(tensor: Tensor) -> None:
    """Print `tensor` (with the caller's file:line) when the exported program runs."""
    caller = inspect.getframeinfo(inspect.currentframe().f_back)
    debug_func("vm.builtin.debug_print", tensor, _line_info=f"{caller.filename}:{caller.lineno}")


def _invoke_debug_func(io: Any, func_name: str, line_info: str, *args: Any) -> Any:
    """Runtime side: call `func_name(line_info, *args)`; the IO effect passes through."""
    get_global_func(str(func_name))(str(line_info), *args)
    return io


def _debug_print(line_info: str, *args: Any) -> None:
    values = [a.numpy() if hasattr(a, "numpy") else a for a in args]
    text = " ".join(np.array2string(v) if isinstance(v, np.ndarray) else str(v) for v in values)
    print(f"{line_info}: {text}")  # printing is what nn.op.print_ asks for


register_func("vm.builtin.invoke_debug_func", _invoke_debug_func, override=True)
register_func("vm.builtin.debug_print", _debug_print, override=True)
