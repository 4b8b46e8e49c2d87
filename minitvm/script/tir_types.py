"""TVMScript types and dtypes: T.Buffer (subscriptable buffer annotations), T.handle, T.float32
and the other dtype constructors, T.let, T.Tensor."""

from __future__ import annotations

import builtins
import functools
import inspect
import sys
from collections.abc import Callable, Mapping
from typing import Any

from ..error import ParseError
from ..ir.dtype import ML_DTYPES, DataType
from ..tir.expr import (
    Broadcast as _BroadcastNode,
)
from ..tir.expr import (
    Cast as _CastNode,
)
from ..tir.expr import (
    FloatImm,
    IntImm,
    PrimExpr,
)
from .tir_specs import BufferSpec, VarDecl, _buffer_spec

# ----------------------------------------------------------------------------- types / dtypes


_param_buffer = functools.partial(_buffer_spec, "param", None)


class _BufferType:
    """`T.Buffer`: a buffer annotation `T.Buffer((128, 128), "float32")` or `T.Buffer[...]`."""

    # TVM's T.Buffer signature (shape, dtype, data, strides, ...): the parser checks calls
    # against it, and T.alloc_buffer / T.decl_buffer take the same one
    __signature__ = inspect.signature(_param_buffer)

    def __call__(self, *args: Any, **kwargs: Any) -> BufferSpec:
        return _param_buffer(*args, **kwargs)

    def __getitem__(self, item: Any) -> BufferSpec:
        if not isinstance(item, tuple):
            item = (item,)
        return self(*item)

    def __repr__(self) -> str:
        return "T.Buffer"


Buffer = _BufferType()


def _assigned_name(frame: Any) -> str:
    """`n` when the calling line reads `n = T.int64()` (plain Python, outside the parser, which
    names declarations itself); "" otherwise."""
    import linecache
    import re

    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    match = re.match(r"\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=\s*T\.\w+\(", line)
    return match.group(1) if match else ""


def _dtype_ctor(name: str) -> Callable[..., Any]:
    dtype = DataType(name)
    missing = object()

    def ctor(value: Any = missing, is_size_var: bool = False) -> Any:
        if value is missing:
            return VarDecl(dtype, is_size_var, _assigned_name(sys._getframe(1)))
        if isinstance(value, PrimExpr):
            return value if value.dtype == dtype else _CastNode(dtype, value)
        if isinstance(value, str):  # T.float32("inf")
            value = float(value)
        if dtype.is_float:
            return FloatImm(dtype, float(value))
        if dtype.is_handle:
            raise ParseError(f"T.{name}(...) takes no value; use T.{name}() to declare a variable")
        return IntImm(dtype, int(builtins.bool(value)) if dtype.is_bool else int(value))

    if dtype.lanes > 1:  # T.float32x4(v): v in every lane
        scalar = _dtype_ctor(str(dtype.element_of()))

        def ctor(value: Any = missing, is_size_var: bool = False) -> Any:
            if value is missing:
                return VarDecl(dtype, is_size_var)
            return _BroadcastNode(scalar(value), dtype.lanes)

    ctor.__name__ = name
    ctor._tvmscript_dtype = dtype  # type: ignore[attr-defined]
    ctor.__doc__ = f"`T.{name}(v)` is a {name} constant; `T.{name}()` declares a variable."
    return ctor


# the scalar numeric dtypes: T.<name> makes a constant or declares a variable of one
NUMERIC_DTYPES = (
    *(f"int{bits}" for bits in (8, 16, 32, 64)),
    *(f"uint{bits}" for bits in (8, 16, 32, 64)),
    *(f"float{bits}" for bits in (16, 32, 64)),
    # bfloat16/float8 (computed in float32, codegen/llvm_lowfloat.py) and int4/uint4
    *sorted(ML_DTYPES),
)
_DTYPE_NAMES = [*NUMERIC_DTYPES, "bool", "handle"]
_DTYPE_NAMES += [f"{base}x{lanes}" for base in NUMERIC_DTYPES for lanes in (4, 8, 16, 32, 64)]
_mod = sys.modules[__name__]
for _n in _DTYPE_NAMES:
    setattr(_mod, _n, _dtype_ctor(_n))
boolean = _mod.bool  # TVM's other spelling of T.bool


def handle(dtype: Any = None, storage_scope: str = "global", *, is_size_var: bool = False) -> Any:
    """`T.handle` / `T.handle("float32", "shared")`: declare a pointer (handle) variable.

    TVM records the pointee dtype and storage scope on the variable; minitvm's handle variables
    carry neither (a buffer viewing the pointer has its own dtype and scope), so both arguments
    are checked and then dropped.
    """
    if dtype is not None and dtype != "void":  # T.handle("void"): TVM's void*
        try:
            DataType(str(getattr(dtype, "_tvmscript_dtype", dtype)))
        except (ValueError, TypeError) as err:  # DTypeError is a TypeError
            raise ParseError(
                f'T.handle(dtype={dtype!r}): not a dtype; use e.g. T.handle("float32")'
            ) from err
    if not isinstance(storage_scope, str):
        raise ParseError(
            f"T.handle(storage_scope={storage_scope!r}): the scope is a string like "
            '"global" or "shared"'
        )
    return VarDecl(DataType("handle"), is_size_var)


handle._tvmscript_dtype = DataType("handle")  # type: ignore[attr-defined]


def var(dtype: str, name: str = "") -> VarDecl:
    """`n = T.var("int32")`: a new variable (named by the assignment)."""
    return VarDecl(DataType(dtype))


def Let(body: Any, where: Mapping) -> PrimExpr:
    """`T.Let(x + 1, where={x: v})`: `body` with `x` bound to `v` (x declared as `x = T.int32()`)."""
    from ..tir.expr import Let as _LetNode
    from ..tir.expr import Var as _VarNode

    if len(where) != 1 or not isinstance(next(iter(where)), _VarNode):
        raise ParseError("T.Let takes one binding: T.Let(body, where={x: value})")
    ((v, value),) = where.items()
    return _LetNode(v, value, body)
