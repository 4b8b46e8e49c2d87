"""LLVM lowering of packed calls into Python, raw buffer pointers, and `import_llvm` pragmas.

`tir.tvm_call_packed(name, args...)` fills an array of argument descriptors on the stack (layout
in runtime/packed_callback.py) and calls `minitvm_call_packed(name, descriptors, count)`; a
non-zero return becomes the function's error code whose FuncInfo message names the packed
function. `tir.tvm_call_trace_packed(action, args...)` (`tir.trace`) goes through the same
trampoline to `_trace_call`, which calls `action` and stores its result (the last argument when
it returns None) in a stack slot that becomes the expression's value. `tir.tvm_access_ptr` is the address of a buffer element. A loop annotated
`pragma_import_llvm` carries LLVM IR text (e.g. from clang) that is parsed, verified and linked
into the module, so `call_extern` can call the functions it defines.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from ..error import BuildError
from ..ir.dtype import DataType
from ..ir.node import field_names
from ..runtime import packed_callback as pc
from ..runtime.registry import get_global_func, register_func
from ..tir.expr import Call, Op, StringImm
from ..tir.names import TVM_ACCESS_PTR, TVM_CALL_PACKED, TVM_STACK_MAKE_ARRAY
from ..tir.stmt import For, Stmt
from .llvm_types import I32, I64, PTR, cast_value, llvm_type

if TYPE_CHECKING:
    from .llvm import CodeGenLLVM

_DOUBLE = ir.DoubleType()
_DESCRIPTOR = ir.LiteralStructType([I32, I32, I32, I32, I64, _DOUBLE, PTR, PTR])
_FIELD = {
    "kind": 0,
    "ndim": 1,
    "code": 2,
    "bits": 3,
    "ivalue": 4,
    "fvalue": 5,
    "data": 6,
    "shape": 7,
}
_CODES = {"int": 0, "uint": 1, "float": 2, "bool": 4}
_TRAMPOLINE_TYPE = ir.FunctionType(I32, [PTR, PTR, I32])

IMPORT_PRAGMA = "pragma_import_llvm"
_I64_DTYPE = DataType("int64")
_F64_DTYPE = DataType("float64")


def _is(e: Any, name: str) -> bool:
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == name


def _dtype_code(cg: CodeGenLLVM, dtype: Any) -> int:
    for prefix, code in _CODES.items():
        if str(dtype).startswith(prefix):
            return code
    raise BuildError(f"building '{cg.func_name}': call_packed cannot pass {dtype} arrays")


def _store(cg: CodeGenLLVM, slots: tuple, index: int, field: str, value: ir.Value) -> None:
    array, array_type = slots
    zero = ir.Constant(I32, 0)
    where = [zero, ir.Constant(I32, index), ir.Constant(I32, _FIELD[field])]
    ptr = cg.builder.gep(array, where, source_etype=array_type)
    cg.builder.store(value, ptr)


def _fill(cg: CodeGenLLVM, slots: tuple, k: int, arg: Any, fname: str) -> None:
    b = cg.builder
    if _is(arg, TVM_STACK_MAKE_ARRAY):
        marker, data, offset, *shape = arg.args
        dims_type = ir.ArrayType(I64, max(len(shape), 1))
        dims = cg.entry_alloca(dims_type, f"{fname}.shape{k}")
        for d, extent in enumerate(shape):
            where = [ir.Constant(I32, 0), ir.Constant(I32, d)]
            slot = b.gep(dims, where, source_etype=dims_type)
            b.store(cast_value(b, cg.expr(extent), extent.dtype, _I64_DTYPE), slot)
        fields = {
            "kind": ir.Constant(I32, pc.KIND_ARRAY),
            "ndim": ir.Constant(I32, len(shape)),
            "code": ir.Constant(I32, _dtype_code(cg, marker.dtype)),
            "bits": ir.Constant(I32, marker.dtype.bits),
            "ivalue": cast_value(b, cg.expr(offset), offset.dtype, _I64_DTYPE),
            "data": cg.expr(data),
            "shape": dims,
        }
    elif arg.dtype.is_handle:
        fields = {"kind": ir.Constant(I32, pc.KIND_HANDLE), "data": cg.expr(arg)}
    elif arg.dtype.is_float and arg.dtype.lanes == 1:
        value = cast_value(b, cg.expr(arg), arg.dtype, _F64_DTYPE)
        fields = {"kind": ir.Constant(I32, pc.KIND_FLOAT), "fvalue": value}
    elif arg.dtype.lanes == 1:
        value = cast_value(b, cg.expr(arg), arg.dtype, _I64_DTYPE)
        fields = {"kind": ir.Constant(I32, pc.KIND_INT), "ivalue": value}
    else:
        raise BuildError(
            f"building '{cg.func_name}': call_packed('{fname}') argument {k} has dtype "
            f"{arg.dtype}; pass buffers, scalars or pointers"
        )
    for field, value in fields.items():
        _store(cg, slots, k, field, value)


def _name_constant(cg: CodeGenLLVM, name: str) -> ir.GlobalVariable:
    data = bytearray(name.encode() + b"\0")
    glob = ir.GlobalVariable(
        cg.module, ir.ArrayType(ir.IntType(8), len(data)), cg.unique_symbol("packed.name")
    )
    glob.global_constant = True
    glob.linkage = "internal"
    glob.initializer = ir.Constant(glob.value_type, data)
    return glob


def call_packed(cg: CodeGenLLVM, call: Call) -> ir.Value:
    """Fill the descriptors, call the trampoline, fail with the FuncInfo error on non-zero."""
    if not call.args or not isinstance(call.args[0], StringImm):
        raise BuildError(f"building '{cg.func_name}': tvm_call_packed needs the function's name")
    fname, args = call.args[0].value, call.args[1:]
    pc.ensure_registered()
    array_type = ir.ArrayType(_DESCRIPTOR, max(len(args), 1))
    slots = (cg.entry_alloca(array_type, "packed.args"), array_type)
    for k, arg in enumerate(args):
        _fill(cg, slots, k, arg, fname)
    _call_trampoline(cg, fname, slots, len(args), fname)
    return ir.Constant(I32, 0)


def _call_trampoline(cg: CodeGenLLVM, fname: str, slots: tuple, count: int, user: str) -> None:
    """Call packed function `fname` with the `count` filled descriptors; a failure is the
    error naming `user` (the function the TIR named)."""
    pc.ensure_registered()
    if pc.SYMBOL in cg.module.globals:
        fn = cg.module.globals[pc.SYMBOL]
    else:
        fn = ir.Function(cg.module, _TRAMPOLINE_TYPE, pc.SYMBOL)
    rc = cg.builder.call(fn, [_name_constant(cg, fname), slots[0], ir.Constant(I32, count)])
    ok = cg.builder.icmp_signed("==", rc, ir.Constant(I32, 0))
    cg.fail_unless(
        ok,
        f"the packed function '{user}' failed: it raised an exception, or no function is "
        f"registered under that name (register it with tvm.register_func('{user}') before "
        "calling the module)",
    )


# ----------------------------------------------------------------------------- tir.trace

TRACE_CALL = "minitvm.codegen.trace_call"
TRACE_CALL_PACKED = "tir.tvm_call_trace_packed"


def _trace_call(name: ctypes.c_void_p, slot: ctypes.c_void_p, code: int, bits: int, *args):
    """Call the trace action named at `name` with `args`; write its result, or the last
    argument when it returns None, into `slot` (one scalar of DLPack type code/bits)."""
    action = ctypes.string_at(name.value).decode()
    func = get_global_func(action, allow_missing=True)
    if func is None:
        raise LookupError(
            f"tir.trace: no global function named '{action}' is registered; register it with "
            f"@tvm.register_func('{action}') before calling the module"
        )
    result = func(*args)
    value = args[-1] if result is None else result
    dtype = pc._dtype(code, bits)
    out = np.frombuffer((ctypes.c_char * dtype.itemsize).from_address(slot.value), dtype)
    out[0] = np.asarray(value).astype(dtype)


def _default_trace_action(*args) -> None:
    """TVM's `tvm.default_trace_action`: print the traced values."""
    print(list(args))


register_func(TRACE_CALL, _trace_call, override=True)
register_func("tvm.default_trace_action", _default_trace_action, override=True)


def trace_packed(cg: CodeGenLLVM, call: Call) -> ir.Value:
    """`tir.trace`: the trampoline calls `_trace_call` (action name, result slot, the slot's
    dtype, args...); the expression's value is the slot's content afterwards."""
    if len(call.args) < 2 or not isinstance(call.args[0], StringImm):
        raise BuildError(
            f"building '{cg.func_name}': tvm_call_trace_packed needs the action's name and "
            "at least one value"
        )
    dtype = call.dtype
    if dtype.lanes != 1 or dtype.is_handle or not any(str(dtype).startswith(p) for p in _CODES):
        raise BuildError(
            f"building '{cg.func_name}': tir.trace of a {dtype} value; trace scalars "
            "(int, uint, float, bool)"
        )
    action, args = call.args[0].value, call.args[1:]
    slot = cg.entry_alloca(llvm_type(dtype), "trace.value")
    array_type = ir.ArrayType(_DESCRIPTOR, len(args) + 4)
    slots = (cg.entry_alloca(array_type, "trace.args"), array_type)
    handle = ir.Constant(I32, pc.KIND_HANDLE)
    _store(cg, slots, 0, "kind", handle)
    _store(cg, slots, 0, "data", _name_constant(cg, action))
    _store(cg, slots, 1, "kind", handle)
    _store(cg, slots, 1, "data", slot)
    for k, meta in ((2, _dtype_code(cg, dtype)), (3, dtype.bits)):
        _store(cg, slots, k, "kind", ir.Constant(I32, pc.KIND_INT))
        _store(cg, slots, k, "ivalue", ir.Constant(I64, meta))
    for k, arg in enumerate(args):
        _fill(cg, slots, k + 4, arg, action)
    _call_trampoline(cg, TRACE_CALL, slots, len(args) + 4, action)
    return cg.builder.load(slot)


def make_array_outside(cg: CodeGenLLVM, call: Call) -> ir.Value:
    raise BuildError(
        f"building '{cg.func_name}': a buffer can be passed only as an argument of call_packed"
    )


def access_ptr(cg: CodeGenLLVM, call: Call) -> ir.Value:
    """`&data[offset]` in the element type of the buffer."""
    marker, data, offset = call.args[:3]
    index = cast_value(cg.builder, cg.expr(offset), offset.dtype, _I64_DTYPE)
    return cg.builder.gep(cg.expr(data), [index], source_etype=llvm_type(marker.dtype))


RULES = {
    TVM_CALL_PACKED: call_packed,
    TVM_STACK_MAKE_ARRAY: make_array_outside,
    TVM_ACCESS_PTR: access_ptr,
    TRACE_CALL_PACKED: trace_packed,
}


# --------------------------------------------------------------------------- import_llvm


def imported_ir(funcs: list, tm: llvm.TargetMachine) -> list[llvm.ModuleRef]:
    """Parse and verify the LLVM IR of every `pragma_import_llvm` loop annotation."""
    texts: list[tuple[str, str]] = []
    for func in funcs:
        name = func.attrs.get("global_symbol", "?")
        for n in _statements_post_order(func.body):
            if isinstance(n, For) and IMPORT_PRAGMA in n.annotations:
                texts.append((name, n.annotations[IMPORT_PRAGMA]))
    modules = []
    for name, text in texts:
        text = getattr(text, "value", text)
        if not isinstance(text, str):
            raise BuildError(
                f"building '{name}': pragma import_llvm needs LLVM IR text (a str), got "
                f"{type(text).__name__}"
            )
        if text.endswith(".ll") and "\n" not in text:  # a path to a .ll file, as TVM accepts
            try:
                with open(text) as f:
                    text = f.read()
            except OSError as err:
                raise BuildError(
                    f"building '{name}': pragma import_llvm names the file '{text}', which "
                    f"cannot be read: {err}"
                ) from err
        try:
            mod = llvm.parse_assembly(text)
            mod.verify()
        except RuntimeError as err:
            raise BuildError(
                f"building '{name}': the LLVM IR given to pragma import_llvm is not valid: "
                f"{str(err).strip()}; pass the text of a .ll file (e.g. clang -S -emit-llvm)"
            ) from err
        mod.triple = tm.triple
        mod.data_layout = str(tm.target_data)
        modules.append((name, mod))
    return modules


def _statements_post_order(root: Stmt) -> Iterator[Stmt]:
    """The statements under `root`, inner before outer and in field order (post_order_visit's
    order). Only statements hold loops, so expressions (most of a kernel's nodes: a walk of
    them was ~1.5% of a serial ResNet-18 build) are not visited."""
    stack: list[tuple[Stmt, bool]] = [(root, False)]
    while stack:
        n, children_done = stack.pop()
        if children_done:
            yield n
            continue
        stack.append((n, True))
        children: list[Stmt] = []
        for field in field_names(type(n)):
            value = getattr(n, field)
            if isinstance(value, Stmt):
                children.append(value)
            elif isinstance(value, tuple):
                children.extend(v for v in value if isinstance(v, Stmt))
        stack.extend((c, False) for c in reversed(children))


def defined_functions(modules: list) -> frozenset[str]:
    """Names of the functions the imported modules define (call_extern may call them)."""
    return frozenset(f.name for _, mod in modules for f in mod.functions if not f.is_declaration)


def link_imported(mod: llvm.ModuleRef, modules: list) -> None:
    """Link each imported module into `mod`. A function defined again with the same body (two
    pragmas importing the same code) is linked once; a different body is a BuildError."""
    linked: dict[str, str] = {}
    for name, other in modules:
        for f in other.functions:
            if f.is_declaration:
                continue
            if f.name.startswith("minitvm"):
                raise BuildError(
                    f"building '{name}': the LLVM IR of pragma import_llvm defines '{f.name}', "
                    "a name reserved for minitvm's own functions; rename it"
                )
            body = str(f)
            if f.name in linked:
                if linked[f.name] != body:
                    raise BuildError(
                        f"building '{name}': two pragma import_llvm texts define '{f.name}' "
                        "differently; import each function once"
                    )
                f.linkage = "linkonce_odr"  # the copy already linked is kept
            linked.setdefault(f.name, body)
        try:
            mod.link_in(other)
        except RuntimeError as err:
            raise BuildError(
                f"building '{name}': linking the LLVM IR of pragma import_llvm failed: {err}"
            ) from err
