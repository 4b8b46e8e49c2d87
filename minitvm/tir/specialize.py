"""`PrimFunc.specialize`: fix some parameters of a PrimFunc to given buffers or values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..error import MiniTVMError
from ..ir.structural import structural_equal
from .buffer import Buffer
from .expr import BinaryOpExpr, IntImm, PrimExpr, Var, as_expr, binary
from .function import PrimFunc
from .functor import Mutator


class _Specializer(Mutator):
    """Replaces the specialized vars; integer arithmetic they turned constant is folded (so
    `(n + 1) * 42` becomes 714, as in TVM); buffers are rebuilt once and shared by identity."""

    def __init__(self, vmap: dict[int, PrimExpr]) -> None:
        super().__init__()
        self.vmap = vmap

    def visit(self, n: Any) -> Any:
        out = super().visit(n)
        if (
            out is not n
            and isinstance(out, BinaryOpExpr)
            and isinstance(out.a, IntImm)
            and isinstance(out.b, IntImm)
        ):
            return binary(type(out), out.a, out.b)  # folds + - * min max // %
        return out

    def visit_Var(self, v: Var) -> PrimExpr:
        return self.vmap.get(id(v), v)


def _bind(vmap: dict[int, PrimExpr], old: PrimExpr, new: PrimExpr, what: str) -> None:
    """Make `old` (a field of the parameter's buffer) stand for `new`."""
    new = as_expr(new)
    if isinstance(old, Var) and id(old) not in vmap:
        if old is not new:
            vmap[id(old)] = new
        return
    seen = _Specializer(vmap).visit(old)
    if not structural_equal(seen, new):
        raise MiniTVMError(
            f"specialize: {what} is {seen} in the function but {new} in the given buffer; "
            "a specialization may only fix what the function leaves symbolic"
        )


def _bind_buffer(vmap: dict[int, PrimExpr], old: Buffer, new: Buffer, param: Var) -> None:
    where = f"parameter '{param.name}' (buffer '{old.name}')"
    if old.dtype != new.dtype or len(old.shape) != len(new.shape):
        raise MiniTVMError(
            f"specialize: {where} is {old.dtype} of rank {len(old.shape)}, the given buffer "
            f"'{new.name}' is {new.dtype} of rank {len(new.shape)}; they must agree"
        )
    for axis, (a, b) in enumerate(zip(old.shape, new.shape)):
        _bind(vmap, a, b, f"dim {axis} of {where}")
    if old.strides or new.strides:
        old_strides = old.strides or _row_major(old.shape)
        new_strides = new.strides or _row_major(new.shape)
        for axis, (a, b) in enumerate(zip(old_strides, new_strides)):
            _bind(vmap, a, b, f"stride {axis} of {where}")
    _bind(vmap, old.elem_offset, new.elem_offset, f"the elem_offset of {where}")
    _bind(vmap, old.data, new.data, f"the data pointer of {where}")


def _row_major(shape: tuple) -> list[PrimExpr]:
    strides, acc = [], as_expr(1)
    for dim in reversed(shape):
        strides.append(acc)
        acc = acc * dim
    return strides[::-1]


def _data_vars(func: PrimFunc) -> set[int]:
    from .functor import post_order_visit

    found: set[int] = set()
    post_order_visit(func, lambda n: isinstance(n, Buffer) and found.add(id(n.data)))
    return found


def specialize(func: PrimFunc, param_map: Mapping) -> PrimFunc:
    """`func` with parameters fixed: a buffer parameter's handle to a Buffer (its symbolic
    shape, strides, offset and data pointer take the given buffer's), a scalar or handle
    parameter to a value. Scalar parameters that end up fixed are dropped; integer
    arithmetic made constant is folded.

    `f.specialize({n: 128})` turns `T.Buffer((m, n))` into `T.Buffer((m, 128))`.
    """
    if not param_map:
        return func
    params = {id(p): p for p in func.params}
    vmap: dict[int, PrimExpr] = {}
    buffer_data = None
    for param, value in param_map.items():
        if not isinstance(param, Var) or id(param) not in params:
            raise MiniTVMError(
                f"specialize: {param!r} is not a parameter of this PrimFunc; its parameters are "
                f"{[p.name for p in func.params]}"
            )
        if isinstance(value, Buffer):
            old = func.buffer_map.get(param)
            if old is None:
                raise MiniTVMError(
                    f"specialize: parameter '{param.name}' has no buffer in buffer_map, so it "
                    f"cannot be specialized to buffer '{value.name}'; give a value instead"
                )
            _bind_buffer(vmap, old, value, param)
            continue
        value = as_expr(value)
        if value.dtype != param.dtype and not (param.dtype.is_handle and value.dtype.is_handle):
            raise MiniTVMError(
                f"specialize: parameter '{param.name}' is {param.dtype}, the value {value} is "
                f"{value.dtype}"
            )
        if param in func.buffer_map or not isinstance(value, Var):
            buffer_data = _data_vars(func) if buffer_data is None else buffer_data
            if param in func.buffer_map or id(param) in buffer_data:
                raise MiniTVMError(
                    f"specialize: parameter '{param.name}' is a buffer's data pointer; minitvm "
                    "specializes it only to a Buffer (or another handle Var), not to "
                    f"the expression {value}"
                )
        vmap[id(param)] = value
    dropped = {id(p) for p in func.params if id(p) in vmap}  # bound directly or by a buffer
    mutator = _Specializer(vmap)
    buffer_map = {p: mutator.visit(b) for p, b in func.buffer_map.items() if id(p) not in dropped}
    return func.replace(
        params=tuple(p for p in func.params if id(p) not in dropped),
        buffer_map=buffer_map,
        body=mutator.visit(func.body),
    )
