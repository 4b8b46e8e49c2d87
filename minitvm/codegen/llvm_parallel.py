"""Parallel loops: outline the body into a task run by `minitvm_parallel_for` (contracts.md §2).

For `for i in parallel(min, min + extent): body` the enclosing function gets

    closure = {every value the body uses, ptr status}     ; on the stack
    call i32 @minitvm_parallel_for(ptr @f.parallel.i, ptr closure, i32 0)
    if (status != 0) return status

and the module gets

    void @f.parallel.i(ptr closure, i32 task_id, i32 num_tasks)      ; unpacks the closure
        status' = call @f.parallel.i.body(A, B, n, ..., lo, hi)      ; chunk task_id of the range
    i32 @f.parallel.i.body(ptr noalias A, ..., lo, hi)               ; a serial loop over [lo, hi)

The body function takes buffer pointers as `noalias` parameters, so the chunk loop vectorizes as
well as a serial kernel does. A failed assert inside the body returns its code through
`status`. Parallel loops nested inside a parallel body run serially.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ..tir.expr import BufferLoad, Var
from ..tir.functor import Visitor
from ..tir.stmt import BufferStore, For, Stmt
from .llvm_intrinsics import declare_extern
from .llvm_types import I32, PTR, VOID

if TYPE_CHECKING:
    from .llvm import CodeGenLLVM


class _UsedVars(Visitor):
    """Every Var an IR subtree mentions (buffer data vars included), in first-use order, and
    the data vars of the buffers it accesses (their extents are needed by bounds checks)."""

    def __init__(self, cg: CodeGenLLVM) -> None:
        self.cg = cg
        self.found: dict[int, Var] = {}
        self.checked: list[Var] = []

    def visit_Var(self, v: Var) -> None:
        self.found.setdefault(id(v), v)

    def visit_BufferLoad(self, n: BufferLoad) -> None:
        self._access(n.buffer, n.indices)

    def visit_BufferStore(self, n: BufferStore) -> None:
        self.visit(n.value)
        self._access(n.buffer, n.indices)

    def _access(self, buf, indices) -> None:
        self.visit_Var(buf.data)
        self.visit(indices)
        # Every accessed buffer's extent is passed, not only those indexed by data here: the
        # loop variable itself counts as data once its extent is a scalar argument, and that
        # is known only when the loop is emitted, after this walk.
        self.checked.append(buf.data)


def captured_vars(cg: CodeGenLLVM, body: Stmt, inner: Var | None = None) -> list[Var]:
    """The variables bound outside `body` (other than `inner`, the loop's own variable) that it
    uses: what an outlined function must be passed."""
    used = _UsedVars(cg)
    used.visit(body)
    for data in used.checked:
        dims, _ = cg.extents.get(data, ((), None))
        used.visit(dims)
    return [v for v in used.found.values() if v is not inner and cg.is_bound(v)]


def emit_parallel_for(cg: CodeGenLLVM, loop: For) -> None:
    """Emit `loop` (kind PARALLEL) as an outlined task run across the thread pool."""
    captured = captured_vars(cg, loop.body, loop.loop_var)
    values = [cg.lookup(v) for v in captured]
    b = cg.builder
    lo, extent = cg.loop_bounds(loop)
    idx_ty = lo.type

    task_name = cg.unique_symbol(f"{cg.func_name}.parallel.{loop.loop_var.name}")
    body_params = [(v, val.type) for v, val in zip(captured, values)]
    body_fn = cg.emit_kernel_function(
        task_name + ".body",
        body_params + [("begin", idx_ty), ("end", idx_ty)],
        lambda args: cg.emit_serial_loop(loop, args[-2], args[-1], parallel_body=True),
    )
    task = _emit_task(cg, task_name, body_fn, [v.type for v in values], idx_ty)

    # Pack the closure: captured values, the chunked range, and a status slot.
    field_types = [v.type for v in values] + [idx_ty, idx_ty, PTR]
    closure_ty = ir.LiteralStructType(field_types)
    closure = cg.entry_alloca(closure_ty, "closure")
    status = cg.entry_alloca(I32, "parallel_status")
    b.store(ir.Constant(I32, 0), status)
    for k, value in enumerate(values + [lo, extent, status]):
        slot = b.gep(closure, [ir.Constant(I32, 0), ir.Constant(I32, k)], source_etype=closure_ty)
        b.store(value, slot)
    runner = declare_extern(cg.module, "minitvm_parallel_for", I32, [PTR, PTR, I32])
    b.call(runner, [task, closure, ir.Constant(I32, 0)])
    code = b.load(status, typ=I32, name="status")
    cg.return_if_nonzero(code)


def _emit_task(
    cg: CodeGenLLVM, name: str, body_fn: ir.Function, types: list, idx_ty
) -> ir.Function:
    """`void name(ptr closure, i32 task_id, i32 num_tasks)`: run chunk `task_id` of the range."""
    fn = ir.Function(cg.module, ir.FunctionType(VOID, [PTR, I32, I32]), name)
    fn.linkage = "internal"
    cg.set_function_attributes(fn)
    closure, task_id, num_tasks = fn.args
    closure.name, task_id.name, num_tasks.name = "closure", "task_id", "num_tasks"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    closure_ty = ir.LiteralStructType(list(types) + [idx_ty, idx_ty, PTR])

    def field(k: int, ty, label: str):
        slot = b.gep(closure, [ir.Constant(I32, 0), ir.Constant(I32, k)], source_etype=closure_ty)
        return b.load(slot, typ=ty, name=label)

    args = [field(k, ty, f"arg{k}") for k, ty in enumerate(types)]
    lo = field(len(types), idx_ty, "begin")
    extent = field(len(types) + 1, idx_ty, "extent")
    status = field(len(types) + 2, PTR, "status")
    # chunk = ceil(extent / num_tasks); [lo + id*chunk, min(lo + (id+1)*chunk, lo + extent))
    tid, ntasks = _resize(b, task_id, idx_ty), _resize(b, num_tasks, idx_ty)
    one = ir.Constant(idx_ty, 1)
    chunk = b.sdiv(b.sub(b.add(extent, ntasks), one), ntasks, "chunk")
    start = b.add(lo, b.mul(tid, chunk), "chunk_begin")
    end = b.add(start, chunk)
    hi = b.add(lo, extent)
    end = b.select(b.icmp_signed("<", end, hi), end, hi, "chunk_end")
    code = b.call(body_fn, args + [start, end], name="code")
    with b.if_then(b.icmp_signed("!=", code, ir.Constant(I32, 0)), likely=False):
        b.atomic_rmw("xchg", status, code, "monotonic")  # tasks may fail at the same time
    b.ret_void()
    return fn


def _resize(b: ir.IRBuilder, v: ir.Value, ty: ir.IntType) -> ir.Value:
    if ty.width > v.type.width:
        return b.sext(v, ty)
    return b.trunc(v, ty) if ty.width < v.type.width else v
