"""Buffer loads and stores (scalar, contiguous vector, gather/scatter) and allocations.

Contiguous `Ramp` accesses become one vector load/store whose alignment is what the pointer
and the index's known factors prove (user buffers promise only element alignment: the runtime
accepts any C-contiguous numpy array; our own allocations are 64-byte aligned). Other vector
indices are handled lane by lane. Allocations of constant small size are entry-block allocas
(SROA promotes local accumulators to registers); others go through aligned_alloc/free.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from llvmlite import ir

from ..error import BuildError
from ..ir.dtype import DataType
from ..tir.expr import Add, Broadcast, BufferLoad, Cast, IntImm, Mul, PrimExpr, Ramp, Sub
from ..tir.stmt import Allocate, BufferStore
from . import llvm_checks
from .llvm_intrinsics import _suffix, declare_extern
from .llvm_types import I32, I64, PTR, cast_value, from_memory, mem_type, to_memory

if TYPE_CHECKING:
    from .llvm import CodeGenLLVM

STACK_LIMIT = 64 * 1024  # bytes; larger or symbolic allocations go to the heap
ALIGN = 64


def load(cg: CodeGenLLVM, e: BufferLoad) -> ir.Value:
    """`buf[index]`: a scalar load, one vector load (contiguous Ramp) or one load per lane."""
    buf, index = e.buffer, _flat_index(cg, e.buffer, e.indices)
    b, ptr = cg.builder, cg.lookup(buf.data)
    elem = buf.dtype.element_of()
    label = buf.name
    if index.dtype.lanes == 1:
        addr = _address(cg, buf, index, cg.expr(index), "reading")
        raw = b.load(addr, typ=mem_type(elem), align=_align(cg, buf, index), name=label)
        return from_memory(b, raw, elem, label)
    mask = cg.load_mask
    if mask is not None and mask.type.count != index.dtype.lanes:
        mask = None  # not this vector's lanes (cannot happen for a vectorized select)
    if _is_contiguous(index):
        addr = _address(cg, buf, index, cg.expr(index.base), "reading")
        ty, align = mem_type(e.dtype), _align(cg, buf, index.base)
        if mask is None:
            raw = b.load(addr, typ=ty, align=align, name=label)
        else:  # under a vector if_then_else: lanes it does not take are not read at all
            fn = declare_extern(
                cg.module, f"llvm.masked.load.{_suffix(ty)}.p0", ty, [PTR, I32, mask.type, ty]
            )
            raw = b.call(
                fn, [addr, ir.Constant(I32, align), mask, ir.Constant(ty, None)], name=label
            )
        return from_memory(b, raw, e.dtype, label)
    idx = cg.expr(index)
    llvm_checks.check_index(cg, buf, index, [(idx, index.dtype)], "reading")
    if mask is not None:
        ty, lanes = mem_type(e.dtype), index.dtype.lanes
        ptrs_ty = ir.VectorType(PTR, lanes)
        ptrs = ir.Constant(ptrs_ty, ir.Undefined)
        for lane in range(lanes):
            k = ir.Constant(I32, lane)
            i = _wide(b, b.extract_element(idx, k))
            lane_ptr = b.gep(ptr, [i], inbounds=True, source_etype=mem_type(elem))
            ptrs = b.insert_element(ptrs, lane_ptr, k)
        fn = declare_extern(
            cg.module,
            f"llvm.masked.gather.{_suffix(ty)}.v{lanes}p0",
            ty,
            [ptrs_ty, I32, mask.type, ty],
        )
        raw = b.call(fn, [ptrs, ir.Constant(I32, elem.bytes), mask, ir.Constant(ty, None)])
        return from_memory(b, raw, e.dtype, label)

    def load_lane(i: ir.Value) -> ir.Value:
        addr = b.gep(ptr, [_wide(b, i)], inbounds=True, source_etype=mem_type(elem))
        raw = b.load(addr, typ=mem_type(elem), align=elem.bytes)
        return from_memory(b, raw, elem)

    return cg.lanewise(load_lane, [idx], e.dtype)


def _address(cg: CodeGenLLVM, buf, index: PrimExpr, start: ir.Value, access: str) -> ir.Value:
    """The address of element `start` (the scalar index, or a contiguous Ramp's base) of `buf`,
    after a bounds check when the index depends on data."""
    b = cg.builder
    if llvm_checks.depends_on_data(cg, index):
        values = [(start, index.dtype.element_of())]
        if index.dtype.lanes > 1:  # contiguous: the first and the last lane bound the rest
            last = b.add(_wide(b, start), ir.Constant(I64, index.dtype.lanes - 1))
            values.append((last, DataType("int64")))
        llvm_checks.check_index(cg, buf, index, values, access)
    elem = mem_type(buf.dtype.element_of())
    return b.gep(cg.lookup(buf.data), [_wide(b, start)], inbounds=True, source_etype=elem)


def _wide(b: ir.IRBuilder, index: ir.Value) -> ir.Value:
    """A narrower index sign-extended to i64: address arithmetic never wraps at 32 bits."""
    return b.sext(index, I64) if index.type.width < 64 else index


def _flat_index(cg: CodeGenLLVM, buf, indices: tuple) -> PrimExpr:
    """The element offset from the data pointer (the buffer's elem_offset included)."""
    if len(indices) != 1:
        raise BuildError(
            f"building '{cg.func_name}': buffer '{buf.name}' is accessed with "
            f"{len(indices)} indices; codegen needs flattened (1-D) accesses, "
            "run the lowering pipeline (FlattenBuffer) first"
        )
    (index,) = indices
    offset = buf.elem_offset
    if isinstance(offset, IntImm) and offset.value == 0:
        return index
    if isinstance(index, Ramp):
        return Ramp(index.base + offset, index.stride, index.lanes)
    return index + (offset if index.dtype.lanes == 1 else Broadcast(offset, index.dtype.lanes))


def _align(cg: CodeGenLLVM, buf, offset: PrimExpr) -> int:
    """Alignment of `buf + offset` (elements) from the pointer's and the offset's known factors."""
    base = cg.known_align.get(buf.data, buf.dtype.element_of().bytes)
    return math.gcd(base, _known_multiple(offset) * buf.dtype.element_of().bytes) or base


def store(cg: CodeGenLLVM, s: BufferStore) -> None:
    """`buf[index] = value`, scalar, vector or per lane like `load`."""
    buf, index = s.buffer, _flat_index(cg, s.buffer, s.indices)
    b = cg.builder
    elem = buf.dtype.element_of()
    if s.value.dtype.element_of() != elem:
        raise BuildError(
            f"building '{cg.func_name}': storing a {s.value.dtype} value into {buf.dtype} "
            f"buffer '{buf.name}': `{s.value}`; cast the value to {buf.dtype}"
        )
    with cg.computing(f" computing '{buf.name}'"):
        value = cg.expr(s.value)
        lanes = index.dtype.lanes
        if lanes > 1 and s.value.dtype.lanes == 1:
            value = cg.splat(value, lanes)
        value = to_memory(b, value, elem.with_lanes(lanes))
        if lanes == 1:
            addr = _address(cg, buf, index, cg.expr(index), "writing")
            b.store(value, addr, align=_align(cg, buf, index))
        elif _is_contiguous(index):
            addr = _address(cg, buf, index, cg.expr(index.base), "writing")
            b.store(value, addr, align=_align(cg, buf, index.base))
        else:
            _scatter(cg, buf, index, value)


def _scatter(cg: CodeGenLLVM, buf, index: PrimExpr, value: ir.Value) -> None:
    """A store per lane of a non-contiguous vector index."""
    b, ptr = cg.builder, cg.lookup(buf.data)
    elem = buf.dtype.element_of()
    idx = cg.expr(index)
    llvm_checks.check_index(cg, buf, index, [(idx, index.dtype)], "writing")
    for lane in range(index.dtype.lanes):
        k = ir.Constant(I32, lane)
        addr = b.gep(
            ptr, [_wide(b, b.extract_element(idx, k))], inbounds=True, source_etype=mem_type(elem)
        )
        b.store(b.extract_element(value, k), addr, align=elem.bytes)


def allocate(cg: CodeGenLLVM, s: Allocate) -> None:
    """Constant small sizes → an entry-block alloca; large or symbolic → aligned_alloc/free."""
    elem = s.dtype.element_of()
    sizes = [e.value if isinstance(e, IntImm) else None for e in s.extents]
    on_stack = None not in sizes and math.prod(sizes) * elem.bytes <= STACK_LIMIT
    if on_stack:
        ptr = cg.entry_alloca(mem_type(elem), s.buffer_var.name, math.prod(sizes))
    else:
        ptr = _heap_allocate(cg, s, elem)
    cg.known_align[s.buffer_var] = ALIGN
    cg.extents[s.buffer_var] = (tuple(s.extents), s.dtype)
    cg.bind(s.buffer_var, ptr)
    cg.stmt(s.body)
    cg.unbind(s.buffer_var)
    if not on_stack:
        cg.builder.call(declare_extern(cg.module, "free", ir.VoidType(), [PTR]), [ptr])


def _heap_allocate(cg: CodeGenLLVM, s: Allocate, elem: DataType) -> ir.Value:
    b = cg.builder
    nbytes = ir.Constant(I64, elem.bytes)
    for e in s.extents:
        if not e.dtype.is_integer:
            raise BuildError(
                f"building '{cg.func_name}': allocation '{s.buffer_var.name}' "
                f"has non-integer extent `{e}` ({e.dtype}); extents must be ints"
            )
        nbytes = b.mul(nbytes, cast_value(b, cg.expr(e), e.dtype, DataType("int64")))
    rounded = b.and_(b.add(nbytes, ir.Constant(I64, ALIGN - 1)), ir.Constant(I64, -ALIGN))
    alloc = declare_extern(cg.module, "aligned_alloc", PTR, [I64, I64])
    ptr = b.call(alloc, [ir.Constant(I64, ALIGN), rounded], name=s.buffer_var.name)
    ok = b.icmp_unsigned("!=", ptr, ir.Constant(PTR, None))
    cg.fail_unless(ok, f"out of memory allocating '{s.buffer_var.name}' of {s.dtype}")
    return ptr


def _is_contiguous(index: PrimExpr) -> bool:
    return isinstance(index, Ramp) and isinstance(index.stride, IntImm) and index.stride.value == 1


def _known_multiple(e: PrimExpr) -> int:
    """A factor `e` is known to be a multiple of (0 for the constant 0)."""
    if isinstance(e, IntImm):
        return abs(e.value)
    if isinstance(e, Mul):
        return _known_multiple(e.a) * _known_multiple(e.b)
    if isinstance(e, Add | Sub):
        return math.gcd(_known_multiple(e.a), _known_multiple(e.b))
    if isinstance(e, Cast) and e.dtype.is_integer:
        return _known_multiple(e.value)
    return 1
