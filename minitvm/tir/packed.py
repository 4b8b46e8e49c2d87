"""Calls from compiled code back into registered Python functions, and raw buffer pointers.

`tir.call_packed("name", A, B, 1.5)` is a `tir.tvm_call_packed` intrinsic whose first argument
is the function's name; each buffer argument becomes a `tir.tvm_stack_make_array` (a zero of
its dtype, its data pointer, its element offset, its shape), which codegen passes as an array
descriptor (runtime/packed_callback.py). `Buffer.access_ptr` is a `tir.tvm_access_ptr`: the
address of the buffer's first element, for `call_extern` of C kernels.
"""

from __future__ import annotations

from typing import Any

from ..error import MiniTVMError
from ..ir.dtype import DataType
from .buffer import Buffer
from .expr import Call, Op, PrimExpr, StringImm, as_expr, make_const
from .names import TVM_ACCESS_PTR, TVM_CALL_PACKED, TVM_STACK_MAKE_ARRAY

CALL_PACKED = Op.register(TVM_CALL_PACKED, -1, pure=False)
MAKE_ARRAY = Op.register(TVM_STACK_MAKE_ARRAY, -1, pure=False)
ACCESS_PTR = Op.register(TVM_ACCESS_PTR, 5, pure=False)

_HANDLE = DataType("handle")
_ACCESS_MASKS = {"r": 1, "w": 2, "rw": 3, "wr": 3}


def array_of(buf: Buffer) -> PrimExpr:
    """A buffer as a packed-call argument: dtype, data pointer, element offset and shape.

    The callee sees a C-contiguous array, so a buffer with other strides is refused.
    """
    _check_compact(buf)
    return Call(
        _HANDLE, MAKE_ARRAY, (make_const(buf.dtype, 0), buf.data, buf.elem_offset, *buf.shape)
    )


def call_packed(*args: Any) -> PrimExpr:
    """Call the function registered as `args[0]` (tvm.register_func) with the other arguments.

    Buffers arrive as NDArrays viewing the buffer's memory, ints and bools as int, floats as
    float. Example: `te.extern(shape, [A], lambda ins, outs: tvm.tir.call_packed("f", ins[0],
    outs[0]))`.
    """
    if not args or not isinstance(args[0], str):
        raise MiniTVMError(
            "call_packed: the first argument must be the registered function's name (a str), "
            f"got {args[0]!r}"
            if args
            else "call_packed: give the function's name first"
        )
    rest = tuple(array_of(a) if isinstance(a, Buffer) else as_expr(a) for a in args[1:])
    for k, a in enumerate(rest):
        if isinstance(a, StringImm):
            raise MiniTVMError(
                f"call_packed('{args[0]}'): argument {k + 1} is the string {a.value!r}; "
                "only buffers, numbers and pointers can be passed"
            )
    return Call(DataType("int32"), CALL_PACKED, (StringImm(args[0]), *rest))


def access_ptr(buf: Buffer, access_mask: Any = "rw", ptr_type: str = "handle",
               content_lanes: int = 1, offset: Any = 0, extent: Any = None) -> PrimExpr:  # fmt: skip
    """The address of `buf`'s element `offset` (a pointer for call_extern), as TVM's access_ptr."""
    if isinstance(access_mask, str):
        if access_mask not in _ACCESS_MASKS:
            raise MiniTVMError(
                f"access_ptr of buffer '{buf.name}': access mask {access_mask!r} is not one of "
                "'r', 'w', 'rw'"
            )
        access_mask = _ACCESS_MASKS[access_mask]
    start = as_expr(offset, like=buf.elem_offset.dtype) + buf.elem_offset
    size = extent if extent is not None else _elements(buf)
    return Call(
        _HANDLE, ACCESS_PTR, (make_const(buf.dtype, 0), buf.data, start, size, int(access_mask))
    )


def _check_compact(buf: Buffer) -> None:
    from ..arith import Analyzer  # arith sits on tir; imported when a strided buffer is passed

    if not buf.strides:
        return
    ana, expected = Analyzer(), as_expr(1)
    for dim in range(buf.ndim - 1, -1, -1):
        if not ana.can_prove_equal(buf.strides[dim], expected):
            raise MiniTVMError(
                f"call_packed: buffer '{buf.name}' has strides {list(buf.strides)}, not those of "
                "a C-contiguous array of its shape; the packed function receives NDArrays, so "
                "pass a compact buffer (or pass buffer.access_ptr() and the strides yourself)"
            )
        expected = expected * buf.shape[dim]


def _elements(buf: Buffer) -> PrimExpr:
    total: Any = 1
    for d in buf.shape:
        total = total * d
    return as_expr(total)
