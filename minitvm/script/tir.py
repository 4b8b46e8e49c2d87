"""The `T` namespace of TVMScript: `from minitvm.script import tir as T`.

Inside a `@T.prim_func` these names are interpreted by the parser (minitvm/script/parser.py):
expression helpers build TIR directly; declarations (`T.Buffer`, `T.alloc_buffer`, `T.grid`,
`T.axis.remap`, `T.reads`, ...) return small spec objects that the parser turns into IR.
Outside a parsed function only the annotation forms matter (`A: T.Buffer((128,), "float32")`,
`n: T.int32`), which Python evaluates when the `def` runs.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from .. import tir as _tir
from ..error import ParseError
from ..ir.dtype import DataType
from ..ir.structural import structural_equal
from ..tir import op as _op
from ..tir.expr import (
    Add,
    Call,
    FloatImm,
    IntImm,
    IterType,
    Op,
    PrimExpr,
    StringImm,
    Sub,
    _match_operands,
    as_expr,
    binary,
)
from ..tir.names import FABS, IF_THEN_ELSE
from ..tir.stmt import BufferRegion, Evaluate, ForKind
from ..te.reduction import CommReducer
from . import tir_types as _types
from .tir_specs import (  # noqa: F401 - re-exported
    AllocateConstSpec,
    AllocateSpec,
    AttrSpec,
    AxisSpec,
    BlockHeader,
    BlockSpec,
    BufferSpec,
    EnvThreadSpec,
    InitSpec,
    LaunchSpec,
    LetSpec,
    LoopSpec,
    RemapSpec,
    VarDecl,
    _buffer_spec,
    _shape,
)
from .tir_types import _DTYPE_NAMES, Buffer, Let, boolean, var  # re-exported

_mod = sys.modules[__name__]
# T.float32, T.int8x4, ...: the dtype constructors tir_types.py makes, under T as well
for _n in _DTYPE_NAMES:
    setattr(_mod, _n, getattr(_types, _n))

__tvmscript__ = True  # the parser resolves `T.<name>` through `__all__` of namespaces like this

# ----------------------------------------------------------------------------- function, loops


def prim_func(
    func: Callable | None = None, *, private: bool = False, check_well_formed: bool = True
) -> Any:
    """Decorator: parse a Python function written in TVMScript into a `tir.PrimFunc`.

    Example::

        @T.prim_func
        def add_one(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
            for i in range(4):
                B[i] = A[i] + T.float32(1)
    """
    from .entry import parse_prim_func_object
    from .source import capture_env, decorates_ir_module_class

    frame = sys._getframe(1)
    env = capture_env(frame)
    in_class = decorates_ir_module_class(frame)

    def decorate(fn: Callable) -> Any:
        if in_class:  # inside `@I.ir_module class ...`: the module decorator parses the class
            fn.__tvmscript_private__ = private  # type: ignore[attr-defined]
            return fn
        return parse_prim_func_object(fn, env, private, check_well_formed)

    return decorate if func is None else decorate(func)


def target(target_config: Any, host: Any = None) -> Any:
    """`T.target("llvm")`: a `Target`, as written in `T.func_attr({"target": T.target("llvm")})`.

    A target string or Target (TVM also takes a dict of target attributes; minitvm refuses it).
    """
    from ..target import Target

    if isinstance(target_config, Mapping):
        raise ParseError(
            "T.target: minitvm takes a target string such as 'llvm -mcpu=znver4' or a Target, "
            f"not a dict of target attributes ({dict(target_config)!r})"
        )
    return Target(target_config, host)


def func_attr(attrs: Mapping) -> BlockHeader:
    return BlockHeader("func_attr", dict(attrs))


def _loop(kind: ForKind) -> Callable[..., LoopSpec]:
    def loop(start: Any, stop: Any = None, *, annotations: Mapping | None = None) -> LoopSpec:
        return _loop_spec(kind, start, stop, None, annotations)

    loop.__name__ = kind.name.lower()
    return loop


def _loop_spec(
    kind: ForKind, start: Any, stop: Any, thread: str | None, annotations: Any
) -> LoopSpec:
    if stop is None:
        return LoopSpec(kind, 0, start, thread, annotations)
    lo, extent = min_extent(start, stop)
    return LoopSpec(kind, lo, extent, thread, annotations)


def min_extent(begin: Any, end: Any) -> tuple[Any, Any]:
    """`begin:end` as (min, extent), inverting how the printer writes a range's end.

    `0:e` and `b:b + e` give extent `e` itself; other symbolic bounds give `end - begin`,
    folded to a constant where it is one (`vi - 1 : vi + 2` has extent 3, as in TVM).
    """
    if isinstance(begin, int) and isinstance(end, int):
        return begin, end - begin
    if begin is None or (isinstance(begin, int | IntImm) and int(begin) == 0):
        return 0, end
    if isinstance(end, Add) and structural_equal(end.a, begin):
        return begin, end.b
    lo, hi = _match_operands(begin, end)
    extent = binary(Sub, hi, lo)
    from ..arith import Analyzer  # the parser stage needs it only here

    folded = Analyzer().simplify(extent)
    return lo, folded if isinstance(folded, IntImm) else extent


serial = _loop(ForKind.SERIAL)
parallel = _loop(ForKind.PARALLEL)
vectorized = _loop(ForKind.VECTORIZED)
unroll = _loop(ForKind.UNROLLED)


def thread_binding(
    start: Any, stop: Any = None, thread: str | None = None, *, annotations: Mapping | None = None
) -> LoopSpec:
    if isinstance(stop, str) and thread is None:  # T.thread_binding(n, "threadIdx.x")
        stop, thread = None, stop
    if not thread:
        raise ParseError('T.thread_binding needs thread="threadIdx.x" (or another thread tag)')
    return _loop_spec(ForKind.THREAD_BINDING, start, stop, thread, annotations)


def grid(*extents: Any) -> list[LoopSpec]:
    return [LoopSpec(ForKind.SERIAL, 0, e) for e in extents]


def range_(
    start: Any, stop: Any = None, step: Any = None, *, annotations: Mapping | None = None
) -> LoopSpec:
    """Python's `range` inside TVMScript: a serial loop (`annotations=` as for `T.serial`)."""
    if step not in (None, 1):
        raise ParseError(
            "range() with a step is not supported in TVMScript; scale the index instead"
        )
    return _loop_spec(ForKind.SERIAL, start, stop, None, annotations)


# ----------------------------------------------------------------------------- blocks


def block(name: str = "", no_realize: bool = False) -> BlockSpec:
    return BlockSpec(name)


sblock = block


def init() -> InitSpec:
    return InitSpec()


def _axis(iter_type: IterType) -> staticmethod:
    def axis(dom: Any, binding: Any, dtype: str = "int32") -> AxisSpec:
        return AxisSpec(iter_type, dom, binding, dtype)

    return staticmethod(axis)


class _Axis:
    """`T.axis.spatial/reduce/scan/opaque/remap`."""

    __tvmscript__ = True
    __all__: ClassVar[tuple[str, ...]] = ("spatial", "reduce", "scan", "opaque", "remap", "S", "R")

    spatial = _axis(IterType.DataPar)
    reduce = _axis(IterType.CommReduce)
    scan = _axis(IterType.Ordered)
    opaque = _axis(IterType.Opaque)

    @staticmethod
    def remap(kinds: str, bindings: Sequence, dtype: str = "int32") -> RemapSpec:
        return RemapSpec(kinds, tuple(bindings))

    S = spatial
    R = reduce


axis = _Axis()


def where(predicate: Any) -> BlockHeader:
    return BlockHeader("where", predicate)


def reads(*regions: Any) -> BlockHeader:
    return BlockHeader("reads", _regions(regions))


def writes(*regions: Any) -> BlockHeader:
    return BlockHeader("writes", _regions(regions))


def _regions(items: Sequence) -> tuple:
    if len(items) == 1 and isinstance(items[0], list | tuple):
        items = tuple(items[0])
    from ..tir.buffer import Buffer as _Buf
    from ..tir.expr import BufferLoad

    out = []
    for r in items:
        if isinstance(r, BufferRegion):
            out.append(r)
        elif isinstance(r, BufferLoad):
            out.append(
                BufferRegion(r.buffer, tuple(_tir.Range.from_min_extent(i, 1) for i in r.indices))
            )
        elif isinstance(r, _Buf):
            out.append(BufferRegion.full_region(r))
        else:
            raise ParseError(f"T.reads/T.writes take buffer regions like A[vi, 0:16], got {r!r}")
    return tuple(out)


def block_attr(attrs: Mapping) -> BlockHeader:
    return BlockHeader("block_attr", dict(attrs))


# ----------------------------------------------------------------------------- buffers, memory


def match_buffer(
    param: Any, shape: Any = None, dtype: str | None = None, *args: Any, **kwargs: Any
) -> BufferSpec:
    """`T.match_buffer(a, shape, ...)` of a handle param, or of a region `A[i, 0:16]` in a block.

    A region's shape and dtype default to its extents and its buffer's dtype.
    """
    if shape is None and not isinstance(param, BufferRegion | _tir.BufferLoad):
        raise ParseError("T.match_buffer of a handle parameter needs its shape")
    return _buffer_spec("match", param, shape, dtype, *args, **kwargs)


alloc_buffer = functools.partial(_buffer_spec, "alloc", None)
decl_buffer = functools.partial(_buffer_spec, "decl", None)
buffer_decl = decl_buffer  # TVM's older name


def allocate(
    extents: Sequence,
    dtype: str,
    scope: str | None = None,
    condition: Any = True,
    annotations: Mapping | None = None,
) -> AllocateSpec:
    return AllocateSpec(tuple(_shape(extents)), dtype, scope, condition, annotations)


def allocate_const(
    data: Sequence, dtype: str, extents: Sequence, annotations: Mapping | None = None
) -> AllocateConstSpec:
    values = tuple(getattr(v, "value", v) for v in data)  # numbers, or T.float32(...) constants
    return AllocateConstSpec(values, dtype, tuple(_shape(extents)), annotations)


def launch_thread(thread: Any, extent: Any) -> LaunchSpec:
    return LaunchSpec(thread, extent)


def LetStmt(value: Any, type_annotation: Any = None, *, var: Any = None) -> LetSpec:
    """`with T.LetStmt(x * y) as v:` binds a new var `v` (or the given `var=`) over the body."""
    return LetSpec(value, type_annotation, var)


def env_thread(thread_tag: str, dtype: str = "int32") -> EnvThreadSpec:
    if dtype != "int32":
        raise ParseError(f"T.env_thread: thread variables are int32 here, got dtype={dtype!r}")
    return EnvThreadSpec(thread_tag)


def comm_reducer(combiner: Callable, identity: Sequence[Any]) -> CommReducer:
    """`T.comm_reducer(lambda x, y: x + y, [T.float32(0)])`: a commutative reducer; the
    combiner's first half of parameters are the left operands (one per identity value), the
    second half the right ones, each of its identity value's dtype."""
    if not isinstance(identity, list | tuple) or not identity:
        raise ParseError(f"T.comm_reducer: identity must be a list of values, got {identity!r}")
    ident = tuple(as_expr(v) for v in identity)
    names = list(inspect.signature(combiner).parameters)
    if len(names) != 2 * len(ident):
        raise ParseError(
            f"T.comm_reducer: the combiner takes {len(names)} parameters; {len(ident)} identity "
            f"values need {2 * len(ident)} (the left operands, then the right ones)"
        )
    args = [_tir.Var(n, v.dtype) for n, v in zip(names, ident + ident)]
    result = combiner(*args)
    result = tuple(result) if isinstance(result, list | tuple) else (result,)
    if len(result) != len(ident):
        raise ParseError(
            f"T.comm_reducer: the combiner gives {len(result)} values for {len(ident)} identities"
        )
    half = len(ident)
    return CommReducer(tuple(args[:half]), tuple(args[half:]), tuple(map(as_expr, result)), ident)


def attr(node: Any, attr_key: str, value: Any) -> AttrSpec:
    return AttrSpec(node, attr_key, value)


buffer = Buffer  # TVM's function spelling of T.Buffer(...)


def evaluate(value: Any) -> Evaluate:
    return Evaluate(value)


# ----------------------------------------------------------------------------- expressions
# These build nodes directly (no constant folding), so printed IR parses back unchanged.


def _as_written(name: str, cls: type) -> Callable[[Any, Any], PrimExpr]:
    """The `T.<name>(a, b)` that builds a `cls` node without folding it."""

    def build(a: Any, b: Any) -> PrimExpr:
        return cls(a, b)

    build.__name__ = name
    build.__doc__ = f"`T.{name}(a, b)`: the {cls.__name__} node of a and b, as written."
    return build


max = _as_written("max", _tir.Max)
min = _as_written("min", _tir.Min)
truncdiv = _as_written("truncdiv", _tir.Div)
truncmod = _as_written("truncmod", _tir.Mod)
floordiv = _as_written("floordiv", _tir.FloorDiv)
floormod = _as_written("floormod", _tir.FloorMod)


def Cast(dtype: str, value: Any) -> PrimExpr:
    return _tir.Cast(DataType(dtype), value)


def cast(value: Any, dtype: str) -> PrimExpr:
    """TVM's `T.cast(value, dtype)`: the same node as `T.Cast(dtype, value)`."""
    return Cast(dtype, value)


def ceildiv(a: Any, b: Any) -> PrimExpr:
    """`T.ceildiv(a, b)` on integers: `(a + b - 1) // b`, as TVM expands it (b > 0)."""
    a, b = _match_operands(a, b)
    if not a.dtype.is_int and not a.dtype.is_uint:
        raise ParseError(f"T.ceildiv takes integers, got {a.dtype}; for floats write T.ceil(a / b)")
    return _tir.FloorDiv(binary(Add, a, binary(Sub, b, IntImm(b.dtype, 1))), b)


def meta_var(value: Any) -> Any:
    """`T.meta_var(v)`: a Python value used as is inside the script (TVM's macro helper)."""
    return value


def Select(cond: Any, true_value: Any, false_value: Any) -> PrimExpr:
    return _tir.Select(as_expr(cond), true_value, false_value)


def if_then_else(
    cond: Any, true_value: Any, false_value: Any, dtype: str | None = None
) -> PrimExpr:
    t, f = _match_operands(true_value, false_value)
    return _typed(Call(t.dtype, Op.get(IF_THEN_ELSE), (as_expr(cond), t, f)), dtype)


def _typed(result: PrimExpr, dtype: str | None) -> PrimExpr:
    """Check TVM's optional `dtype=` keyword against the type the call really has.

    TVM accepts and drops it; a mismatch would silently change nothing here, so it is an error.
    """
    if dtype is not None and DataType(dtype) != result.dtype:
        raise ParseError(
            f"dtype={dtype!r} was given but the call computes {result.dtype}; "
            f"cast an operand (T.Cast({dtype!r}, x)) or drop dtype="
        )
    return result


def _with_dtype_keyword(fn: Callable[..., PrimExpr]) -> Callable[..., PrimExpr]:
    """`fn` also taking TVM's `dtype=` keyword (checked by `_typed`)."""

    @functools.wraps(fn)
    def call(*args: Any, dtype: str | None = None) -> PrimExpr:
        return _typed(fn(*args), dtype)

    del call.__wrapped__  # the parser binds arguments against this signature, not fn's
    return call


def _limit(name: str, pick: Callable[[Any], Any]) -> Callable[[str], PrimExpr]:
    def limit(dtype: str) -> PrimExpr:
        dt = DataType(dtype)
        if dt.is_float:  # TVM's limits are the finite extremes, not infinities
            import numpy as np

            return FloatImm(dt, float(pick(np.finfo(str(dt)))))
        return getattr(_op, name)(dt)

    limit.__name__ = name
    limit.__doc__ = f"`T.{name}(dtype)`: the {name.split('_')[0]}imum finite value of `dtype`."
    return limit


min_value = _limit("min_value", lambda info: info.min)
max_value = _limit("max_value", lambda info: info.max)


def Ramp(base: Any, stride: Any, lanes: int) -> PrimExpr:
    return _tir.Ramp(base, stride, lanes)


def Broadcast(value: Any, lanes: int) -> PrimExpr:
    return _tir.Broadcast(value, lanes)


ramp = Ramp
broadcast = Broadcast


def Range(begin: Any, end: Any) -> _tir.Range:
    return _tir.Range.from_min_extent(*min_extent(begin, end))


def call_extern(*args: Any, dtype: str | None = None) -> PrimExpr:
    """`T.call_extern(dtype, name, *args)`, or TVM's `T.call_extern(name, *args, dtype=...)`."""
    dtype, name, rest = _dtype_name_args("call_extern", args, dtype)
    return Call(_result_dtype(dtype), name, tuple(_arg(a) for a in rest))


call_pure_extern = call_extern  # no purity flag here: every extern call is kept in order


def call_intrin(*args: Any, dtype: str | None = None) -> PrimExpr:
    dtype, name, rest = _dtype_name_args("call_intrin", args, dtype)
    return Call(_result_dtype(dtype), Op.get(name), tuple(_arg(a) for a in rest))


def _dtype_name_args(what: str, args: tuple, dtype: str | None) -> tuple[str, str, tuple]:
    """Split `(dtype, name, *args)`, or `(name, *args)` when dtype comes as a keyword."""
    if dtype is not None:
        args = (dtype, *args)
    if len(args) < 2 or not all(isinstance(a, str) for a in args[:2]):
        raise ParseError(
            f"T.{what} takes the result dtype and the function name as strings first, "
            f'as in T.{what}("float32", "sqrtf", x), got {args[:2]!r}'
        )
    return args[0], args[1], args[2:]


def _result_dtype(dtype: str) -> DataType:
    """A call's result dtype; TVM's "" (void, for calls run for their effect) is a handle here."""
    return DataType(_op._VOID if dtype == "" else dtype)


def _arg(a: Any) -> PrimExpr:
    return StringImm(a) if isinstance(a, str) else as_expr(a)


def _intrinsic(name: str) -> Callable[..., PrimExpr]:
    """`T.<name>(...)` for an intrinsic op: the `tir.op` helper when there is one, else a Call."""
    helper = getattr(_op, name, None)
    if helper is not None and callable(helper):
        return helper
    opname = "tir." + name
    bool_result = name in ("isnan", "isinf", "isfinite")

    def call(*args: Any) -> PrimExpr:
        exprs = [as_expr(a) for a in args]
        if len(exprs) >= 2:
            exprs[0], exprs[1] = _match_operands(exprs[0], exprs[1])
        dtype = DataType("bool") if bool_result else exprs[0].dtype
        return Call(dtype, Op.get(opname), tuple(exprs))

    call.__name__ = name
    return call


def _builtin(name: str) -> Callable[..., PrimExpr]:
    """`T.<name>(*args, dtype=None)` for a TVM builtin (tir/op.py's BUILTINS table)."""

    def call(*args: Any, dtype: str | None = None) -> PrimExpr:
        return _op.call_builtin(name, *args, dtype=dtype)

    call.__name__ = name
    call.__doc__ = f"TVM's builtin `tir.{_op.BUILTIN_ALIASES.get(name, name)}` (see tir/op.py)."
    return call


_BUILTIN_NAMES = [*_op.BUILTINS, *_op.BUILTIN_ALIASES]
for _n in _BUILTIN_NAMES:
    setattr(_mod, _n, _builtin(_n))

_INTRINSIC_NAMES = [
    n[4:]
    for n in Op._registry
    if n.startswith("tir.") and n not in (IF_THEN_ELSE, FABS) and n[4:] not in _op.BUILTINS
]
for _n in _INTRINSIC_NAMES:
    setattr(_mod, _n, _with_dtype_keyword(_intrinsic(_n)))
abs = _with_dtype_keyword(_op.abs)
fabs = abs  # TVM's alias


def infinity(dtype: str) -> PrimExpr:
    """`T.infinity(dtype)`: +inf for floats (as TVM), the largest value for integers."""
    return _op.infinity(DataType(dtype))


likely = _with_dtype_keyword(_op.likely)

__all__ = [
    "Broadcast",
    "Buffer",
    "Cast",
    "Let",
    "LetStmt",
    "Ramp",
    "Range",
    "Select",
    "abs",
    "alloc_buffer",
    "allocate",
    "allocate_const",
    "attr",
    "axis",
    "block",
    "block_attr",
    "boolean",
    "broadcast",
    "buffer",
    "buffer_decl",
    "call_extern",
    "call_intrin",
    "call_pure_extern",
    "cast",
    "comm_reducer",
    "ceildiv",
    "decl_buffer",
    "env_thread",
    "evaluate",
    "fabs",
    "floordiv",
    "floormod",
    "func_attr",
    "grid",
    "if_then_else",
    "infinity",
    "init",
    "launch_thread",
    "likely",
    "match_buffer",
    "max",
    "max_value",
    "meta_var",
    "min",
    "min_value",
    "parallel",
    "prim_func",
    "ramp",
    "reads",
    "sblock",
    "serial",
    "thread_binding",
    "truncdiv",
    "truncmod",
    "unroll",
    "var",
    "vectorized",
    "where",
    "writes",
]
__all__ += ["target"]
__all__ += _DTYPE_NAMES + _INTRINSIC_NAMES + _BUILTIN_NAMES  # noqa: PLE0605

from .tir_macro import macro  # T.macro: a TVMScript body pasted where it is called

__all__ += ["macro"]


def ptr(dtype: Any, storage_scope: str = "global", is_size_var: bool = False) -> Any:
    """`T.ptr("float32")`: TVM's spelling of `T.handle("float32")` for a pointer parameter."""
    return _types.handle(dtype, storage_scope, is_size_var=is_size_var)


__all__ += ["ptr"]

# TVM 0.24 renamed the block-level builders to `sblock_*` ("schedulable block"). minitvm's
# `T.alloc_buffer` already allocates in the enclosing block (or the function root), which is what
# 0.24's `T.sblock_alloc_buffer` does, so each new name is the same object as the old one.
sblock_alloc_buffer = alloc_buffer
sblock_attr = block_attr
__all__ += ["sblock_alloc_buffer", "sblock_attr"]
