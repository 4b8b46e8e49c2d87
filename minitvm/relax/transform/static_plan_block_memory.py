"""StaticPlanBlockMemory: intermediate tensors of a function share storage by liveness.

Every tensor that `call_tir` / `call_dps_packed` produce in a function's top-level blocks is an
*allocation*. Allocations that reach the function's result (directly, through tuples, aliases
or calls that may return their arguments) are *outputs*: the caller keeps them, so they are
never planned. The others are *intermediates*; a linear scan over the binding order gives each
one a storage (a byte buffer) that is free at its definition, and frees it after its last use:

* static sizes: best fit among free storages (the smallest one big enough, else the largest
  free one, grown), else a new storage;
* symbolic sizes: a free storage whose size expression is the same (a size class), else a new
  one — unless the function attr ``tir_var_upper_bound`` (``{"n": 1024}``) bounds the dims,
  which makes the size static.

The plan is attached as the function attr ``relax.memory_plan`` (read by the VM code generator;
run this pass last):  ``storages`` (byte sizes, int64 PrimExprs), ``tensors`` ((binding index,
output index, storage id) per planned allocation), ``intermediate_bytes`` (the sum of all
intermediates' sizes: what allocating each one separately costs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...ir.module import IRModule
from ...ir.node import FrozenDict
from ...ir.structural import structural_equal
from ...tir.expr import IntImm, PrimExpr
from ...tir.expr import Var as TirVar
from ...tir.functor import substitute
from ..expr import Call, Function, MatchCast, Op, SeqExpr, Tuple, TupleGetItem, Var
from ..functor import used_vars
from ..struct_info import INDEX_DTYPE, TensorStructInfo, TupleStructInfo, shape_vars

PLAN_ATTR = "relax.memory_plan"
UPPER_BOUND_ATTR = "tir_var_upper_bound"
_DPS_OPS = ("relax.call_tir", "relax.call_dps_packed")


@dataclass
class Allocation:
    """One tensor produced by a DPS call: binding `binding`'s output number `out`."""

    binding: int
    out: int
    var: Var
    sinfo: TensorStructInfo
    is_output: bool = False
    last_use: int = -1


@dataclass
class Liveness:
    """Allocations of a function in binding order, with their last uses and output flags."""

    bindings: list
    allocations: list[Allocation] = field(default_factory=list)


def flat_bindings(func: Function) -> list:
    """The bindings of the function body's top-level blocks, in order (the plan's numbering)."""
    if not isinstance(func.body, SeqExpr):
        return []
    return [b for block in func.body.blocks for b in block.bindings]


def is_dps_call(value: Any) -> bool:
    return isinstance(value, Call) and isinstance(value.op, Op) and value.op.name in _DPS_OPS


def out_sinfos(call: Call) -> list[TensorStructInfo]:
    sinfo = call.sinfo_args[0]
    return list(sinfo.fields) if isinstance(sinfo, TupleStructInfo) else [sinfo]


def analyze_liveness(func: Function) -> Liveness:
    """Find the allocations, the last binding that uses each, and which reach the result."""
    bindings = flat_bindings(func)
    live = Liveness(bindings)
    tokens: dict[Var, set[int]] = {}  # var -> allocations its value may hold
    fields: dict[Var, list[set[int]]] = {}  # per tuple field, when known

    def of(e: Any) -> set[int]:
        out: set[int] = set()
        for v in used_vars(e):
            out |= tokens.get(v, set())
        return out

    for i, b in enumerate(bindings):
        value = b.value
        for t in of(value):
            live.allocations[t].last_use = i
        if is_dps_call(value):
            made = []
            for j, s in enumerate(out_sinfos(value)):
                made.append({len(live.allocations)})
                live.allocations.append(Allocation(i, j, b.var, s, last_use=i))
            tokens[b.var] = set().union(*made)
            if isinstance(value.sinfo_args[0], TupleStructInfo):
                fields[b.var] = made
        elif isinstance(value, Tuple):
            fields[b.var] = [of(f) for f in value.fields]
            tokens[b.var] = of(value)
        elif isinstance(value, TupleGetItem) and value.tuple_value in fields:
            tokens[b.var] = set(fields[value.tuple_value][value.index])
        else:  # aliases, match_cast, calls of functions that may return their arguments
            tokens[b.var] = of(value)
        if isinstance(b, MatchCast) and isinstance(value, Var) and value in fields:
            fields[b.var] = fields[value]
    body = func.body.body if isinstance(func.body, SeqExpr) else func.body
    for t in of(body):
        live.allocations[t].is_output = True
    return live


def tensor_bytes(sinfo: TensorStructInfo, what: str) -> PrimExpr:
    """Bytes of a tensor of `sinfo` as an int64 expression."""
    from ...arith import Analyzer
    from ...error import ShapeError

    if sinfo.shape is None or sinfo.dtype is None:
        raise ShapeError(
            f"{what}: the output struct info {sinfo} has no known shape and dtype; give "
            "call_tir/call_dps_packed an out_sinfo with both"
        )
    size: PrimExpr = IntImm(INDEX_DTYPE, (sinfo.dtype.bits * sinfo.dtype.lanes + 7) // 8)
    for d in sinfo.shape:
        size = size * d
    return Analyzer().simplify(size)


def _bounded(size: PrimExpr, bounds: dict[str, int]) -> PrimExpr:
    if isinstance(size, IntImm) or not bounds:
        return size
    from ...arith import Analyzer

    vmap = {
        v: IntImm(v.dtype, bounds[v.name])
        for v in shape_vars(TensorStructInfo((size,), "int8"))
        if isinstance(v, TirVar) and v.name in bounds
    }
    return Analyzer().simplify(substitute(size, vmap)) if vmap else size


class _Pool:
    """The storages and which are free, during the linear scan."""

    def __init__(self) -> None:
        self.sizes: list[PrimExpr] = []
        self.free: list[int] = []

    def take(self, need: PrimExpr) -> int:
        if isinstance(need, IntImm):
            static = [s for s in self.free if isinstance(self.sizes[s], IntImm)]
            fits = [s for s in static if self.sizes[s].value >= need.value]
            if fits:
                sid = min(fits, key=lambda s: self.sizes[s].value)  # best fit
            elif static:
                sid = max(static, key=lambda s: self.sizes[s].value)  # grow the largest
                self.sizes[sid] = need
            else:
                return self._new(need)
        else:
            same = [s for s in self.free if structural_equal(self.sizes[s], need)]
            if not same:
                return self._new(need)
            sid = same[0]
        self.free.remove(sid)
        return sid

    def _new(self, need: PrimExpr) -> int:
        self.sizes.append(need)
        return len(self.sizes) - 1


def plan_function(func: Function) -> FrozenDict:
    """The memory plan of one function (see the module docstring for its fields)."""
    live = analyze_liveness(func)
    bounds = {str(k): int(v) for k, v in dict(func.attrs.get(UPPER_BOUND_ATTR, {})).items()}
    pool = _Pool()
    storage_of: dict[int, int] = {}
    dying: dict[int, list[int]] = {}
    total: PrimExpr = IntImm(INDEX_DTYPE, 0)
    intermediates = [t for t, a in enumerate(live.allocations) if not a.is_output]
    for t in intermediates:
        dying.setdefault(live.allocations[t].last_use, []).append(t)
    by_binding: dict[int, list[int]] = {}
    for t in intermediates:
        by_binding.setdefault(live.allocations[t].binding, []).append(t)
    for i in range(len(live.bindings)):
        for t in by_binding.get(i, ()):  # outputs of binding i first: never an input's storage
            a = live.allocations[t]
            size = tensor_bytes(a.sinfo, f"memory planning of '{a.var.name_hint}'")
            total = total + size
            storage_of[t] = pool.take(_bounded(size, bounds))
        for t in dying.get(i, ()):
            pool.free.append(storage_of[t])
    from ...arith import Analyzer

    tensors = tuple(
        (live.allocations[t].binding, live.allocations[t].out, storage_of[t]) for t in intermediates
    )
    return FrozenDict(
        {
            "storages": tuple(pool.sizes),
            "tensors": tensors,
            "intermediate_bytes": Analyzer().simplify(total),
        }
    )


def static_plan_block_memory(mod: IRModule) -> IRModule:
    """Attach a memory plan (`relax.memory_plan`) to every relax function of the module."""
    out = mod.copy()
    for gv, func in mod.functions_items():
        if isinstance(func, Function):
            out[gv] = func.with_attr(PLAN_ATTR, plan_function(func))
    return out


__all__ = [
    "PLAN_ATTR",
    "UPPER_BOUND_ATTR",
    "Allocation",
    "Liveness",
    "analyze_liveness",
    "flat_bindings",
    "plan_function",
    "static_plan_block_memory",
    "tensor_bytes",
]
