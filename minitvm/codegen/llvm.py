"""Lowered TIR → LLVM IR (llvmlite) → optimised host object code (docs/contracts.md §1–4).

    result = minitvm.codegen.llvm.build([prim_func], "llvm")
    result.llvm_ir        # optimised IR; values are named after buffers and loops (%A, %i.outer)

Every PrimFunc `f` becomes `i32 @f(ptr %args, ptr %scalars)`, a thin wrapper that unpacks the
arguments and calls the internal `@f.compute(ptr noalias %A, ..., i32 %n, ...)` (inlined at O3,
which is how `noalias` reaches the loops). Internal functions have a '.' in their names, so they
never collide with a PrimFunc's (C identifier) symbol. Expressions and statements are emitted
through two dispatch tables keyed by node class; binary operators through one keyed by (class,
dtype kind); an (op, dtype) pair outside the tables is a BuildError, never invalid IR.

What would trap returns an error code instead (llvm_checks.py): integer division by zero, and
indices computed from data that fall outside their buffer; FuncInfo["errors"][k - 1] names the
failure behind return code k. Long top-level sequences and huge loop bodies are emitted as calls
of outlined parts, so LLVM's pass time stays linear in the program (`_outlined`).

Numerics follow numpy: no fast-math except `contract` (FMA fusion); Min/Max on floats use
`llvm.minimum`/`llvm.maximum`, which propagate NaN like np.minimum/np.maximum; `!=` on floats
is unordered (NaN != x is true), the other comparisons are ordered.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import llvmlite.binding as llvm
from llvmlite import ir
from llvmlite.ir.values import FunctionAttributes

from .. import tir
from ..error import BuildError, MiniTVMError
from ..ir.dtype import DataType
from ..ir.module import IRModule
from ..ir.node import by_class
from ..runtime import compiler_rt
from ..runtime.elf import SIGNATURE_SYMBOL
from ..runtime.meta import signature_bytes
from ..runtime.module import CodegenResult
from ..target import Target
from ..tir.function import PrimFunc
from ..tir.functor import deep_recursion
from ..tir.names import ATTR_NOALIAS
from . import llvm_memory, llvm_packed
from .llvm_binary import BINARY, INT_RANGES, NO_SIGNED_WRAP_FLAGGED
from .llvm_checks import INTEGER_DIVISIONS, safe_divisor
from .llvm_funcinfo import func_info, return_dtype, signature_info
from .llvm_intrinsics import DTYPE_KINDS, INTRINSICS, declare_extern
from .llvm_legalize import legalize_low_floats
from .llvm_stmt import _named, _StmtEmitter
from .llvm_types import (
    CASTS,
    I32,
    I64,
    PTR,
    cast_value,
    constant,
    kind,
    llvm_type,
    splat,
)

# --------------------------------------------------------------------------- function state


@dataclass
class _FunctionState:
    """What is live while one LLVM function is being filled."""

    function: ir.Function
    builder: ir.IRBuilder
    vars: dict = field(default_factory=dict)  # Var → ir.Value (Vars hash by identity)
    ranges: dict = field(default_factory=dict)  # id(ir.Value) → ((lo, hi), value): proven
    numbered: dict = field(default_factory=dict)  # (block, op, operands) → ir.Value computed
    in_parallel: bool = False
    loop_depth: int = 0  # loops around the statement being emitted


class _Attributes(FunctionAttributes):
    """Function attributes with the string ones (`"target-cpu"="..."`) llvmlite lacks."""

    def __init__(self, strings: dict[str, str], names: Sequence[str]):
        super().__init__(names)
        self.strings = strings

    def _to_list(self, ret_type):
        return super()._to_list(ret_type) + [f'"{k}"="{v}"' for k, v in self.strings.items()]


def _dim_vars(buffers: list) -> set:
    """Vars that a dim of `buffers` pins to a size: a dim that is the var, or the var times
    positive constants (call_te's `s * 4`). Once the runtime has checked that dim against the
    argument's shape, the var is >= 0 and in step with the memory, like a symbolic dim."""
    found: set = set()
    for buf in buffers:
        for d in buf.shape:
            while isinstance(d, tir.Mul):
                d, c = (d.a, d.b) if isinstance(d.b, tir.IntImm) else (d.b, d.a)
                if not (isinstance(c, tir.IntImm) and c.value > 0):
                    d = None  # s * -4, s * n: the dim does not bound s
            if isinstance(d, tir.Var):
                found.add(d)
    return found


class CodeGenLLVM(_StmtEmitter):
    """Fills one LLVM module with the functions of a list of lowered PrimFuncs."""

    def __init__(self, tm: llvm.TargetMachine, cpu: str, features: str):
        self.module = ir.Module(name="minitvm")
        self.module.triple = tm.triple
        self.module.data_layout = str(tm.target_data)
        self._fn_strings = {
            "target-cpu": cpu,
            "target-features": features,
            "prefer-vector-width": "512",
            "min-legal-vector-width": "512",
        }
        self.cpu_features = frozenset(f for f in features.split(",") if f)  # "+avx512f", ...
        self._state: _FunctionState | None = None
        self.func_name = ""
        self.ret_slot: ir.Argument | None = None  # where T.ret stores (the compute function's)
        self._noalias = True
        self._errors: list[str] = []  # FuncInfo["errors"]: return code k + 1 means errors[k]
        self.known_align: dict = {}  # data var → known alignment (our allocations only)
        self.extents: dict = {}  # data var → (flat extent expr, dtype) of its param/allocation
        self.data_vars: set = set()  # Vars whose value comes from memory or the caller's data
        self.shape_vars: set = set()  # symbolic dims of the params' shapes (>= 0)
        # the lanes a vector if_then_else side gives (<n x i1>): its vector loads read only those
        self.load_mask: ir.Value | None = None
        self.where = ""  # what the statement being emitted computes, for error messages
        self.imported_symbols: frozenset[str] = frozenset()  # defined by import_llvm IR

    # ------------------------------------------------------------------ helpers used by rules
    @property
    def builder(self) -> ir.IRBuilder:
        return self._state.builder

    def new_block(self, label: str) -> ir.Block:
        return self._state.function.append_basic_block(label)

    def bind(self, var: tir.Var, value: ir.Value) -> None:
        self._state.vars[var] = value

    def unbind(self, var: tir.Var) -> None:
        del self._state.vars[var]

    def is_bound(self, var: tir.Var) -> bool:
        return var in self._state.vars

    def lookup(self, var: tir.Var) -> ir.Value:
        try:
            return self._state.vars[var]
        except KeyError:
            raise BuildError(
                f"building '{self.func_name}': variable '{var.name}' is used but not defined; "
                "it must be a parameter, a symbolic dim of a parameter's shape, a loop variable "
                "or bound by a Let/LetStmt/Allocate that encloses the use"
            ) from None

    def unique_symbol(self, name: str) -> str:
        return self.module.get_unique_name(name)

    def set_function_attributes(self, fn: ir.Function, *names: str) -> None:
        fn.attributes = _Attributes(self._fn_strings, ("nounwind", *names))

    def entry_alloca(self, ty: ir.Type, name: str, count: int | None = None) -> ir.Value:
        """A stack slot in the entry block, so mem2reg/SROA can promote it to registers."""
        entry = ir.IRBuilder(self._state.function.entry_basic_block)  # holds only allocas
        slot = entry.alloca(ty, size=None if count is None else ir.Constant(I64, count), name=name)
        slot.align = llvm_memory.ALIGN
        slot.type = PTR  # llvmlite types allocas as typed pointers; the module uses opaque ones
        return slot

    def splat(self, value: ir.Value, lanes: int) -> ir.Value:
        return splat(self.builder, value, lanes)

    def lanewise(
        self, fn: Callable[..., ir.Value], vals: list[ir.Value], dtype: DataType
    ) -> ir.Value:
        """Apply a scalar emitter to each lane of vector operands (or once for scalars)."""
        if dtype.lanes == 1:
            return fn(*vals)
        b = self.builder
        out = ir.Constant(llvm_type(dtype), ir.Undefined)
        for lane in range(dtype.lanes):
            k = ir.Constant(I32, lane)
            out = b.insert_element(out, fn(*(b.extract_element(v, k) for v in vals)), k)
        return out

    def return_if_nonzero(self, code: ir.Value) -> None:
        """Return `code` from the current function when it is not 0 (a failed assert)."""
        b = self.builder
        fail, ok = self.new_block("fail"), self.new_block("ok")
        b.cbranch(b.icmp_signed("!=", code, ir.Constant(I32, 0)), fail, ok)
        b.position_at_end(fail)
        b.ret(code)
        b.position_at_end(ok)

    # ------------------------------------------------------------------ functions
    def add_function(self, func: PrimFunc) -> dict:
        """Emit the ABI wrapper and the compute function of `func`; return its FuncInfo."""
        name = func.attrs.get("global_symbol")
        if not name:
            raise BuildError(
                "cannot build a PrimFunc without attrs['global_symbol']; name it "
                "with func.with_attr('global_symbol', 'my_func')"
            )
        self.func_name = name
        self._noalias = bool(func.attrs.get(ATTR_NOALIAS, True))
        self._errors = []
        info, sym_vars = func_info(func)
        buffers = [func.buffer_map[p] for p in func.params if p in func.buffer_map]
        scalars = [p for p in func.params if p not in func.buffer_map]
        params = [(buf.data, PTR) for buf in buffers]
        params += [(v, llvm_type(v.dtype)) for v in [*sym_vars, *scalars]]
        self.known_align = {}
        self.extents = {buf.data: (tuple(buf.shape), buf.dtype) for buf in buffers}
        # a scalar argument indexing memory is checked, unless a param's dim pins it: the
        # runtime checks every dim against the scalars, so it is as safe as a symbolic dim
        sized = set(scalars) & _dim_vars(buffers)
        self.data_vars = set(scalars) - sized
        self.shape_vars = set(sym_vars) | sized  # dims of argument shapes: never negative
        handles = {p: func.buffer_map[p].data for p in func.params if p in func.buffer_map}
        ret = return_dtype(func)
        if ret is not None:  # the wrapper passes the slot after the scalars (contracts §2)
            params.append(("ret_slot", PTR))

        def emit_body(args: list) -> None:
            self.ret_slot = args[-1] if ret is not None else None
            self._emit_body(func.body, handles)

        compute = self.emit_kernel_function(name + ".compute", params, emit_body)
        self.ret_slot = None
        scalar_vars = [*sym_vars, *scalars]
        self._emit_abi_wrapper(entry_symbol(name), compute, len(buffers), scalar_vars, ret)
        if ret is not None:
            info["ret"] = ret
        info["symbol"] = entry_symbol(name)
        info["errors"] = list(self._errors)
        return info

    def _emit_body(self, body: tir.Stmt, handles: dict) -> None:
        for param, data in handles.items():  # the handle param names the same pointer
            self.bind(param, self._state.vars[data])
        self.stmt(body)

    def emit_kernel_function(
        self,
        name: str,
        params: list[tuple[tir.Var | str, ir.Type]],
        emit_body: Callable[[list[ir.Value]], None],
        attributes: tuple[str, ...] = (),
    ) -> ir.Function:
        """An internal `i32 name(params...)` whose body `emit_body(args)` fills; returns 0.

        A param given as a Var is bound to it (buffer pointers get noalias/align); a str only
        names the argument.
        """
        fn = ir.Function(self.module, ir.FunctionType(I32, [ty for _, ty in params]), name)
        fn.linkage = "internal"
        self.set_function_attributes(fn, *attributes)
        for arg, (var, ty) in zip(fn.args, params):
            arg.name = var if isinstance(var, str) else var.name
            if isinstance(var, tir.Var) and var.dtype.is_handle and isinstance(ty, ir.PointerType):
                if self._noalias:
                    arg.add_attribute("noalias")
                arg.add_attribute("captures(none)")
                if var in self.known_align:
                    arg.attributes.align = self.known_align[var]
        outer = self._state
        entry = fn.append_basic_block("entry")
        start = fn.append_basic_block("start")
        self._state = _FunctionState(fn, ir.IRBuilder(start))
        self._state.in_parallel = outer.in_parallel if outer is not None else False
        self._state.loop_depth = outer.loop_depth if outer is not None else 0
        for arg, (var, _) in zip(fn.args, params):
            if isinstance(var, tir.Var):
                self.bind(var, arg)
        emit_body(list(fn.args))
        self.builder.ret(ir.Constant(I32, 0))
        ir.IRBuilder(entry).branch(start)
        self._state = outer
        return fn

    def _emit_abi_wrapper(
        self, name: str, compute: ir.Function, n_buffers: int, scalar_vars: list,
        ret: str | None = None,
    ) -> None:  # fmt: skip
        """`i32 name(ptr noalias %args, ptr noalias %scalars)` → `compute(...)` (contracts §2)."""
        fn = ir.Function(self.module, ir.FunctionType(I32, [PTR, PTR]), name)
        self.set_function_attributes(fn)
        args, scalars = fn.args
        args.name, scalars.name = "args", "scalars"
        for a in fn.args:
            a.add_attribute("noalias")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        values = []
        for i, arg in enumerate(compute.args[:n_buffers]):
            slot = b.gep(args, [ir.Constant(I64, i)], source_etype=PTR)
            values.append(b.load(slot, typ=PTR, name=arg.name, align=8))
        for j, var in enumerate(scalar_vars):
            slot = b.gep(scalars, [ir.Constant(I64, j)], source_etype=I64)
            raw = b.load(slot, typ=I64, name=var.name + ".raw", align=8)
            values.append(_unpack_scalar(b, raw, var))
        if ret is not None:
            values.append(b.gep(scalars, [ir.Constant(I64, len(scalar_vars))], source_etype=I64))
        b.ret(b.call(compute, values, name="code"))

    # ------------------------------------------------------------------ expressions
    def expr(self, e: tir.PrimExpr) -> ir.Value:
        rule = by_class(_EXPR, type(e))
        if e.dtype.lanes < 0:  # DataType's encoding of vscale * k lanes
            raise BuildError(
                f"building '{self.func_name}': `{e}` is a scalable vector ({e.dtype}, Arm SVE); "
                "the LLVM code generator emits fixed-width vectors only; vectorize with a "
                "constant number of lanes instead"
            )
        if rule is None:
            raise BuildError(
                f"building '{self.func_name}': the LLVM code generator cannot "
                f"emit the expression {type(e).__name__} `{e}`"
            )
        return rule(self, e)

    def _imm(self, e: tir.IntImm | tir.FloatImm) -> ir.Value:
        return constant(e.dtype, e.value)

    def _var(self, e: tir.Var) -> ir.Value:
        return self.lookup(e)

    def _string(self, e: tir.StringImm) -> ir.Value:
        raise BuildError(
            f"building '{self.func_name}': string constant {e.value!r} cannot be a "
            "value in compiled code (strings are only allowed in AssertStmt messages)"
        )

    def _cast(self, e: tir.Cast) -> ir.Value:
        if (kind(e.value.dtype), kind(e.dtype)) not in CASTS:
            raise BuildError(
                f"building '{self.func_name}': cannot cast {e.value.dtype} to {e.dtype}: `{e}`; "
                "casts are defined between bool, int, uint and float dtypes"
            )
        return cast_value(self.builder, self.expr(e.value), e.value.dtype, e.dtype)

    def _binary(self, e) -> ir.Value:
        operand = e.a.dtype
        rule = BINARY.get((type(e), kind(operand)))
        if rule is None:
            raise BuildError(
                f"building '{self.func_name}': {type(e).__name__} is not defined on "
                f"{operand} operands: `{e}`; cast the operands first"
            )
        x, y = self.expr(e.a), self.expr(e.b)
        if isinstance(e, INTEGER_DIVISIONS) and not operand.is_float:
            y = safe_divisor(self, e, x, y)
        numbered = isinstance(e, _NUMBERED) and kind(operand) in ("int", "uint")
        if numbered:  # local value numbering: an unrolled tile repeats its index arithmetic
            key = (id(self.builder.block), type(e), str(operand), _operand_key(x), _operand_key(y))
            hit = self._state.numbered.get(key)
            if hit is not None:
                return hit
        out = rule(self.builder, x, y, "")
        if kind(operand) == "int" and operand.lanes == 1:
            self._note_range(e, x, y, out)
        if numbered:
            self._state.numbered[key] = out
        return out

    def value_range(self, value: ir.Value) -> tuple[int, int] | None:
        """(lo, hi) of a scalar integer value, when constants and loop bounds prove one."""
        if isinstance(value, ir.Constant) and isinstance(value.constant, int):
            return value.constant, value.constant
        return self._state.ranges.get(id(value), (None, value))[0]

    def set_range(self, value: ir.Value, lo: int, hi: int) -> None:
        self._state.ranges[id(value)] = ((lo, hi), value)  # the value is kept alive with its id

    def _note_range(self, e, x: ir.Value, y: ir.Value, out: ir.Value) -> None:
        """Record `out`'s range; flag an add/sub/mul `nsw` when that range fits its type."""
        rx, ry, rule = self.value_range(x), self.value_range(y), INT_RANGES.get(type(e))
        if rx is None or ry is None or rule is None:
            return
        r = rule(rx, ry)
        bits = e.dtype.bits
        if r is None or r[0] < -(1 << (bits - 1)) or r[1] >= 1 << (bits - 1):
            return
        self.set_range(out, *r)
        if isinstance(e, NO_SIGNED_WRAP_FLAGGED) and isinstance(out, ir.Instruction):
            out.flags.append("nsw")

    def _mark_data(self, var: tir.Var, value: tir.PrimExpr) -> None:
        """`var` inherits the data dependence of its value (its uses as an index get checked)."""
        if self.depends_on_data(value):
            self.data_vars.add(var)

    def _not(self, e: tir.Not) -> ir.Value:
        return self.builder.not_(self.expr(e.a))

    def _select(self, e: tir.Select) -> ir.Value:
        cond, t, f = self.expr(e.condition), self.expr(e.true_value), self.expr(e.false_value)
        return self.builder.select(cond, t, f)

    def _let(self, e: tir.Let) -> ir.Value:
        value = _named(self.expr(e.value), e.var.name)
        self._mark_data(e.var, e.value)
        self.bind(e.var, value)
        try:
            return self.expr(e.body)
        finally:
            self.unbind(e.var)

    def _broadcast(self, e: tir.Broadcast) -> ir.Value:
        return self.splat(self.expr(e.value), e.lanes)

    def _ramp(self, e: tir.Ramp) -> ir.Value:
        base, stride = self.expr(e.base), self.expr(e.stride)
        steps = ir.Constant(llvm_type(e.dtype), [ir.Constant(base.type, k) for k in range(e.lanes)])
        if isinstance(stride, ir.Constant) and stride.constant == 1:
            offsets = steps
        else:
            offsets = self.builder.mul(self.splat(stride, e.lanes), steps)
        return self.builder.add(self.splat(base, e.lanes), offsets)

    def _call(self, e: tir.Call) -> ir.Value:
        if isinstance(e.op, str):
            return self._call_extern(e)
        rule = _INTRINSICS.get(e.op.name) if isinstance(e.op, tir.Op) else None
        if rule is None:
            raise BuildError(
                f"building '{self.func_name}': intrinsic {e.op!r} has no LLVM "
                f"lowering; supported: {sorted(INTRINSICS)}"
            )
        self._check_intrinsic_dtypes(e)
        return rule(self, e)

    def _check_intrinsic_dtypes(self, e: tir.Call) -> None:
        """Refuse an intrinsic on dtypes it is not defined for (LLVM would reject the IR)."""
        results, args = DTYPE_KINDS.get(e.op.name, (None, None))
        seen = [("result", e.dtype)] + [(f"argument {k}", a.dtype) for k, a in enumerate(e.args)]
        for what, dtype in seen:
            allowed = results if what == "result" else args
            if allowed is not None and kind(dtype) not in allowed:
                raise BuildError(
                    f"building '{self.func_name}': {e.op.name} is not defined for a {dtype} "
                    f"{what} (it takes {' or '.join(sorted(allowed))}): `{e}`; cast the "
                    "operands first"
                )

    def _call_extern(self, e: tir.Call) -> ir.Value:
        if e.op not in self.imported_symbols:
            _check_resolvable(self.func_name, e.op)
        vals = [self.expr(a) for a in e.args]
        fn = declare_extern(self.module, e.op, llvm_type(e.dtype), [v.type for v in vals])
        if list(fn.ftype.args) != [v.type for v in vals]:
            raise BuildError(
                f"building '{self.func_name}': extern '{e.op}' is called with "
                f"argument types {[str(v.type) for v in vals]} here and "
                f"{[str(t) for t in fn.ftype.args]} elsewhere in the module; cast the "
                "arguments so every call agrees"
            )
        return self.builder.call(fn, vals)

    def stmt(self, s: tir.Stmt) -> None:
        rule = _STMT.get(type(s))
        if rule is None:
            raise BuildError(
                f"building '{self.func_name}': statement {type(s).__name__} cannot "
                "reach the LLVM code generator; lower the function first "
                "(blocks become loops in the lowering pipeline)"
            )
        rule(self, s)


def _check_resolvable(func_name: str, symbol: str) -> None:
    """A call_extern target must exist in this process (MCJIT would resolve it to address 0)."""
    if symbol in compiler_rt.PROVIDED_SYMBOLS:
        return
    compiler_rt.ensure_helpers()  # its engine also makes the process's own symbols searchable
    if not llvm.address_of_symbol(symbol):
        raise BuildError(
            f"building '{func_name}': tir.call_extern calls '{symbol}', which is not defined in "
            "this process (not in libc/libm, a loaded library or minitvm's runtime helpers), "
            "so the call would jump to address 0; load the library that defines it with "
            "ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL) before building, or use a tir intrinsic"
        )


# Integer operations without side effects whose result is reused within one basic block when
# the same operation is applied to the same operand values (the operands' ir.Values are kept
# alive by the module, so their ids are stable; constants compare by type and value).
_NUMBERED = (tir.Add, tir.Sub, tir.Mul, tir.Min, tir.Max)


def _operand_key(value: ir.Value) -> Any:
    if isinstance(value, ir.Constant):
        return (str(value.type), str(value.constant))
    return id(value)


def _unpack_scalar(b: ir.IRBuilder, raw: ir.Value, var: tir.Var) -> ir.Value:
    """An i64 slot of `scalars` → the param's type (ints truncated, floats from double bits)."""
    dtype = var.dtype
    if dtype.is_float:
        as_double = b.bitcast(raw, ir.DoubleType())
        return cast_value(b, as_double, DataType("float64"), dtype, var.name)
    return cast_value(b, raw, DataType("int64"), dtype, var.name)


_INTRINSICS = {**INTRINSICS, **llvm_packed.RULES}  # packed calls and pointers: llvm_packed.py

_EXPR: dict[type, Callable[[CodeGenLLVM, tir.PrimExpr], ir.Value]] = {
    tir.IntImm: CodeGenLLVM._imm,
    tir.FloatImm: CodeGenLLVM._imm,
    tir.StringImm: CodeGenLLVM._string,
    tir.Var: CodeGenLLVM._var,
    tir.Cast: CodeGenLLVM._cast,
    tir.Not: CodeGenLLVM._not,
    tir.Select: CodeGenLLVM._select,
    tir.Let: CodeGenLLVM._let,
    tir.Broadcast: CodeGenLLVM._broadcast,
    tir.Ramp: CodeGenLLVM._ramp,
    tir.Call: CodeGenLLVM._call,
    tir.BufferLoad: llvm_memory.load,
    **{cls: CodeGenLLVM._binary for cls, _ in BINARY},
}

_STMT: dict[type, Callable[[CodeGenLLVM, tir.Stmt], None]] = {
    tir.SeqStmt: CodeGenLLVM._seq,
    tir.BufferStore: llvm_memory.store,
    tir.Evaluate: CodeGenLLVM._evaluate,
    tir.LetStmt: CodeGenLLVM._let_stmt,
    tir.IfThenElse: CodeGenLLVM._if,
    tir.While: CodeGenLLVM._while,
    tir.AssertStmt: CodeGenLLVM._assert,
    tir.AttrStmt: CodeGenLLVM._attr,
    tir.DeclBuffer: CodeGenLLVM._attr,
    tir.Allocate: llvm_memory.allocate,
    tir.For: CodeGenLLVM._for,
    tir.Block: CodeGenLLVM._unlowered,
    tir.BlockRealize: CodeGenLLVM._unlowered,
}


# --------------------------------------------------------------------------- build


def entry_symbol(name: str) -> str:
    """The object-file symbol of the ABI entry of function `name`. The prefix keeps kernels
    named like C functions (`exp`, `log`, `sqrt`: relax names kernels after their ops) from
    shadowing libm, whose calls the backend emits for vector math (`llvm.exp.v4f64` → `exp`);
    a '.' cannot occur in a C identifier."""
    return f"minitvm.{name}"


def build(
    funcs: list[PrimFunc] | IRModule | PrimFunc,
    target: Target | str = "llvm",
    aliases: Sequence[tuple[PrimFunc, str]] = (),
) -> CodegenResult:
    """Compile lowered PrimFuncs to one optimised host object (see contracts.md §4).

    `aliases` are (function, name of its twin in `funcs`) pairs: functions structurally
    identical to a function of `funcs` (driver.build finds them), which share its code. Each
    gets an entry symbol that is an alias of its twin's, and a FuncInfo whose params are named
    after its own (its errors and the rest are its twin's).

    >>> result = build([lowered_func], "llvm")   # then runtime.Module.from_codegen(result)
    """
    with deep_recursion():  # expressions are emitted recursively; a long sum is deep
        return _build(funcs, target, list(aliases))


def _build(funcs, target, aliases: list[tuple[PrimFunc, str]]) -> CodegenResult:
    if isinstance(funcs, PrimFunc):
        funcs = [funcs]
    if isinstance(funcs, IRModule):
        funcs = [f for _, f in funcs.functions_items() if isinstance(f, PrimFunc)]
    target = Target(target)
    tm = target.create_target_machine()
    compiler_rt.ensure_helpers()  # helpers LLVM may call, registered before anything is loaded
    imported = llvm_packed.imported_ir(funcs, tm)  # pragma import_llvm: checked LLVM IR
    cg = CodeGenLLVM(tm, target.cpu, target.features)
    cg.imported_symbols = llvm_packed.defined_functions(imported)
    names = [f.attrs.get("global_symbol") for f in funcs]
    for name in names:
        if name is not None and names.count(name) > 1:
            raise BuildError(f"two functions are named '{name}'; give each a unique global_symbol")
    infos = [_add_function(cg, func) for func in funcs]
    infos += _alias_infos(infos, aliases)
    _embed_signature(cg.module, infos)
    text = str(cg.module) + "".join(_alias_definition(f.name, twin) for f, twin in aliases)
    _release(cg.module)
    mod = _verified(text, [i["name"] for i in infos])
    llvm_packed.link_imported(mod, imported)
    _optimize(mod, tm, target.opt_level)
    return CodegenResult(
        object_code=_emit_object(tm, mod),
        llvm_ir=str(mod),
        func_infos=tuple(infos),
        target=str(target),
    )


def build_partition(
    funcs: Sequence[PrimFunc],
    target: Target | str,
    aliases: Sequence[tuple[PrimFunc, str]] = (),
    timings: dict[str, float] | None = None,
) -> tuple[bytes, list[dict]]:
    """One part of a build split across processes: `funcs` (lowered) and the aliases of their
    twins as optimised LLVM bitcode, with their FuncInfos. `link_partitions` joins the parts.
    `timings`, when given, gets the seconds of "LLVM IR emission" and "LLVM optimisation"."""
    with deep_recursion():
        start = time.perf_counter()
        target = Target(target)
        tm = target.create_target_machine()
        cg = CodeGenLLVM(tm, target.cpu, target.features)
        infos = [_add_function(cg, func) for func in funcs]
        infos += _alias_infos(infos, list(aliases))
        text = str(cg.module) + "".join(_alias_definition(f.name, twin) for f, twin in aliases)
        _release(cg.module)
        mod = _verified(text, [i["name"] for i in infos])
        emitted = time.perf_counter()
        _optimize(mod, tm, target.opt_level)
        if timings is not None:
            timings["LLVM IR emission"] = emitted - start
            timings["LLVM optimisation"] = time.perf_counter() - emitted
        return bytes(mod.as_bitcode()), infos


def link_partitions(bitcodes: Sequence[bytes], infos: Sequence[dict], target) -> CodegenResult:
    """The object of a build whose parts `build_partition` optimised separately (kernels are
    independent, so linking optimised parts gives the code of one optimised module). `infos`
    are every function's FuncInfo in the order a serial build lists them."""
    target = Target(target)
    tm = target.create_target_machine()
    compiler_rt.ensure_helpers()  # helpers LLVM may call, registered before anything is loaded
    signature = ir.Module(name="signature")
    signature.triple, signature.data_layout = tm.triple, str(tm.target_data)
    _embed_signature(signature, list(infos))
    mod = llvm.parse_assembly(str(signature))
    for code in bitcodes:
        mod.link_in(llvm.parse_bitcode(code))
    return CodegenResult(
        object_code=_emit_object(tm, mod),
        llvm_ir=str(mod),
        func_infos=tuple(infos),
        target=str(target),
    )


def _emit_object(tm: llvm.TargetMachine, mod: llvm.ModuleRef) -> bytes:
    """The object code of `mod`, without loop strength reduction: it was half the time of
    instruction selection on our kernels (ResNet-18: 0.25 of 0.49 s) and gained nothing there
    (ResNet-18, MobileNet-v2 and the BERT layer ran equally fast, outputs bit-identical); the
    option is global to LLVM, so it is restored for other users of llvmlite in the process."""
    llvm.set_option("", "--disable-lsr=true")
    try:
        return bytes(tm.emit_object(mod))
    finally:
        llvm.set_option("", "--disable-lsr=false")


def _alias_infos(infos: list[dict], aliases: list[tuple[PrimFunc, str]]) -> list[dict]:
    """FuncInfos of the aliases: their twin's (same code, errors, writes), with their own name
    and param names."""
    by_name = {info["name"]: info for info in infos}
    out = []
    for func, twin in aliases:
        name = func.name
        if twin not in by_name or name in by_name:
            raise BuildError(
                f"cannot make '{name}' an alias of '{twin}': the build must define '{twin}' "
                f"and not define '{name}' itself"
            )
        own, _ = signature_info(func)
        out.append({**by_name[twin], **own, "symbol": entry_symbol(name)})
        by_name[name] = out[-1]
    return out


def _alias_definition(name: str, twin: str) -> str:
    """`@"minitvm.<name>" = alias ...` of the twin's entry: the same address, no code."""
    return f'\n@"{entry_symbol(name)}" = alias i32 (ptr, ptr), ptr @"{entry_symbol(twin)}"\n'


def _embed_signature(module: ir.Module, infos: list[dict]) -> None:
    """Store the FuncInfos in the object as data (`minitvm.signature`), so the loader can tell
    whether a meta.json describes this object's functions (runtime/meta.py, elf.py)."""
    data = signature_bytes(infos)
    array = ir.ArrayType(ir.IntType(8), len(data))
    glob = ir.GlobalVariable(module, array, name=SIGNATURE_SYMBOL)
    glob.global_constant = True
    glob.initializer = ir.Constant(array, bytearray(data))


def _add_function(cg: CodeGenLLVM, func: PrimFunc) -> dict:
    try:
        return cg.add_function(legalize_low_floats(func))
    except MiniTVMError:
        raise
    except (TypeError, ValueError) as err:  # llvmlite's builder rejects mismatched operand types
        raise BuildError(
            f"building '{cg.func_name}': LLVM IR construction failed: {err}; the function's "
            "expressions probably mix dtypes without a Cast"
        ) from err


def _release(module: ir.Module) -> None:
    """Cut the links from `module` down to its functions, blocks and instructions once its text
    is taken: each of those points back to its parent, so the emitted IR (10,000s of objects
    per model) was left to the cyclic garbage collector; reference counting now frees it."""
    for value in module.globals.values():
        for block in getattr(value, "blocks", ()):
            block.instructions = []
        if isinstance(value, ir.Function):
            value.blocks, value.args = [], ()
    module.globals.clear()


def _verified(text: str, names: list[str]) -> llvm.ModuleRef:
    try:
        mod = llvm.parse_assembly(text)
        mod.verify()
    except RuntimeError as err:
        raise BuildError(f"LLVM rejected the code generated for {names}: {err}") from err
    return mod


# Functions longer than this (LLVM instructions before optimisation) skip the SLP vectorizer:
# they are the fully unrolled conv-gradient kernels of a training step, whose code is vector
# code already, and on them SLP found nothing to do (byte-identical object code, checked on
# ResNet-18's training module) while taking half of LLVM's optimisation time (33 -> 14 s).
# No inference kernel of the zoo models comes near the limit (the largest is about 1100).
SLP_MAX_INSTRUCTIONS = 2000


def _skip_slp_on_huge_functions(mod: llvm.ModuleRef) -> None:
    for f in mod.functions:
        if f.is_declaration:
            continue
        n = 0
        for block in f.blocks:
            for _ in block.instructions:
                n += 1
            if n > SLP_MAX_INSTRUCTIONS:
                # noimplicitfloat is what the SLP vectorizer checks to leave a function alone;
                # explicit vector and float instructions are unaffected
                f.add_function_attribute("noimplicitfloat")
                break


def _optimize(
    mod: llvm.ModuleRef, tm: llvm.TargetMachine, opt_level: int, cpu: bool = True
) -> None:
    if cpu:  # (measured on x86 only; NVPTX keeps LLVM's defaults)
        _skip_slp_on_huge_functions(mod)
    pto = llvm.create_pipeline_tuning_options(speed_level=min(max(opt_level, 0), 3))
    # Vectorize only the loops the schedule marked (they carry llvm.loop.vectorize.enable):
    # LLVM 22's auto-vectorizer miscompiles some wrapping index patterns (a load indexed by
    # `i*8 + jk % 8` became one contiguous 16-lane load; see
    # tests/codegen/test_llvm_integration.py::test_auto_vectorizer_does_not_touch_unmarked_loops).
    pto.loop_vectorization = False
    pto.slp_vectorization = True
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
