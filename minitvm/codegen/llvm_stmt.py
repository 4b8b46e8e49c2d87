"""Statements to LLVM IR: sequences (long straight-line runs outlined into functions of their
own), lets, conditionals, loops with their metadata, asserts and attributes (a base class of
CodeGenLLVM; its table _STMT maps each statement class to one of these methods)."""

from __future__ import annotations

from contextlib import contextmanager

from llvmlite import ir

from .. import tir
from ..error import BuildError
from ..tir.functor import Visitor
from . import llvm_checks, llvm_parallel
from .llvm_types import (
    I1,
    I32,
    cast_value,
)

# AttrStmt keys that mean "run the body on GPU threads": never silently run once on a CPU
_GPU_SCOPE_ATTRS = frozenset({"thread_extent", "virtual_thread"})


# A top-level sequence longer than _OUTLINE_ABOVE statements is emitted as calls of functions
# of _OUTLINE_CHUNK statements each (see CodeGenLLVM._outlined).
_OUTLINE_ABOVE = 64
_OUTLINE_CHUNK = 16


# An innermost loop body with more stores than this is outlined (see CodeGenLLVM._outlined);
# register-blocked kernels unroll to far fewer (the GEMM micro-kernel: 32).
_OUTLINE_LOOP_BODY_ABOVE = 512


class _StraightLine(Visitor):
    """Counts the stores of a statement, and whether it contains a loop."""

    def __init__(self) -> None:
        self.stores = 0
        self.has_loop = False

    def visit_BufferStore(self, n: tir.BufferStore) -> None:
        self.stores += 1

    def visit_For(self, n: tir.For) -> None:
        self.has_loop = True

    def visit_While(self, n: tir.While) -> None:
        self.has_loop = True


def _divides_loop_var(loop: tir.For) -> bool:
    """The loop body divides an expression of its own variable (`j // 16`, `j % 16`)."""
    divisions = _Divisions(loop.loop_var)
    divisions.visit(loop.body)
    return divisions.found


class _Divisions(Visitor):
    """Finds a FloorDiv/FloorMod whose operands mention `var`."""

    def __init__(self, var: tir.Var) -> None:
        self.var, self.found = var, False

    def _division(self, e: tir.FloorDiv | tir.FloorMod) -> None:
        if not self.found:
            uses = _Uses(self.var)
            uses.visit(e)
            self.found = uses.found

    visit_FloorDiv = _division
    visit_FloorMod = _division


class _Uses(Visitor):
    """Whether an expression mentions `var`."""

    def __init__(self, var: tir.Var) -> None:
        self.var, self.found = var, False

    def visit_Var(self, v: tir.Var) -> None:
        self.found = self.found or v is self.var


def _is_long_straight_line(body: tir.Stmt) -> bool:
    """A loop-free body with more than _OUTLINE_LOOP_BODY_ABOVE stores (a huge unroll)."""
    if not isinstance(body, tir.SeqStmt) or len(body.seq) <= _OUTLINE_LOOP_BODY_ABOVE // 8:
        return False  # cheap exit for ordinary bodies
    count = _StraightLine()
    count.visit(body)
    return not count.has_loop and count.stores > _OUTLINE_LOOP_BODY_ABOVE


def _named(value: ir.Value, name: str) -> ir.Value:
    """Give an unnamed instruction the user's variable name (the IR then reads like the TIR)."""
    if isinstance(value, ir.Instruction) and not value.name:
        value.name = name
    return value


class _StmtEmitter:
    """CodeGenLLVM's statement methods (its `stmt` dispatches through _STMT to them)."""

    # ------------------------------------------------------------------ statements
    def _seq(self, s: tir.SeqStmt) -> None:
        if self._state.loop_depth == 0 and len(s.seq) > _OUTLINE_ABOVE:
            for k in range(0, len(s.seq), _OUTLINE_CHUNK):
                self._outlined(tir.SeqStmt(s.seq[k : k + _OUTLINE_CHUNK]))
            return
        for child in s.seq:
            self.stmt(child)

    def _outlined(self, body: tir.Stmt) -> None:
        """Emit `body` as a call of its own (noinline) function. LLVM's loop passes take time
        quadratic in the loops of one function (IndVarSimplify, LoopRotate) and in the memory
        accesses of one loop (LoopLoadElimination), so a long top-level sequence (5 000 loops,
        a huge unrolled body) is cut into parts, and a huge loop body becomes a call."""
        captured = llvm_parallel.captured_vars(self, body)
        values = [self.lookup(v) for v in captured]
        fn = self.emit_kernel_function(
            self.unique_symbol(f"{self.func_name}.part"),
            [(v, val.type) for v, val in zip(captured, values)],
            lambda args: self.stmt(body),
            attributes=("noinline",),
        )
        self.return_if_nonzero(self.builder.call(fn, values, name="code"))

    def _evaluate(self, s: tir.Evaluate) -> None:
        if not isinstance(s.value, tir.IntImm | tir.FloatImm):
            self.expr(s.value)

    def _let_stmt(self, s: tir.LetStmt) -> None:
        self.bind(s.var, _named(self.expr(s.value), s.var.name))
        self._mark_data(s.var, s.value)
        self.stmt(s.body)
        self.unbind(s.var)

    def _if(self, s: tir.IfThenElse) -> None:
        b = self.builder
        cond = self.expr(s.condition)
        then_bb = self.new_block("if_then")
        else_bb = self.new_block("if_else") if s.else_case is not None else None
        end_bb = self.new_block("if_end")
        b.cbranch(cond, then_bb, else_bb or end_bb)
        for bb, body in ((then_bb, s.then_case), (else_bb, s.else_case)):
            if bb is not None:
                b.position_at_end(bb)
                self.stmt(body)
                b.branch(end_bb)
        b.position_at_end(end_bb)

    def _while(self, s: tir.While) -> None:
        b = self.builder
        head, body, end = (
            self.new_block("while_cond"),
            self.new_block("while_body"),
            self.new_block("while_end"),
        )
        b.branch(head)
        b.position_at_end(head)
        b.cbranch(self.expr(s.condition), body, end)
        b.position_at_end(body)
        self._state.loop_depth += 1
        self.stmt(s.body)
        self._state.loop_depth -= 1
        b.branch(head)
        b.position_at_end(end)

    def _assert(self, s: tir.AssertStmt) -> None:
        self.fail_unless(self.expr(s.condition), s.message)
        self.stmt(s.body)

    def fail_unless(self, ok: ir.Value, message: str) -> None:
        """Return code k (FuncInfo["errors"][k - 1] is `message`) when `ok` is false."""
        self._errors.append(message)
        code = ir.Constant(I32, len(self._errors))
        b = self.builder
        fail, cont = self.new_block("assert_fail"), self.new_block("assert_ok")
        b.cbranch(ok, cont, fail)
        b.position_at_end(fail)
        b.ret(code)
        b.position_at_end(cont)

    def _attr(self, s: tir.AttrStmt | tir.DeclBuffer) -> None:
        key = getattr(s, "attr_key", None)
        if key in _GPU_SCOPE_ATTRS:  # running the body once on a CPU would be a wrong result
            thread = getattr(s.node, "thread_tag", None) or getattr(
                getattr(s.node, "var", s.node), "name", s.node
            )
            raise BuildError(
                f"building '{self.func_name}': a '{key}' scope launches GPU thread '{thread}'; "
                "a CPU build cannot run it (bind loops to threads only for a GPU target)"
            )
        if key == "coproc_uop_scope":
            self._run_once(s)
            return
        self.stmt(s.body)

    def _run_once(self, s: tir.AttrStmt) -> None:
        """`coproc_uop_scope` = "TVMBackendRunOnce": the body runs on the first call of the
        loaded module only (TVM's static init); a module-level flag set by compare-and-swap
        picks that call, also when several threads make it at once."""
        init = getattr(s.value, "value", None)
        if init != "TVMBackendRunOnce":
            raise BuildError(
                f"building '{self.func_name}': a 'coproc_uop_scope' attribute names {init!r}; "
                'the CPU code generator runs only "TVMBackendRunOnce" scopes'
            )
        b = self.builder
        flag = ir.GlobalVariable(self.module, I32, name=self.module.get_unique_name("run_once"))
        flag.linkage = "internal"
        flag.initializer = ir.Constant(I32, 0)
        swapped = b.cmpxchg(flag, ir.Constant(I32, 0), ir.Constant(I32, 1), "acq_rel", "acquire")
        first = b.extract_value(swapped, 1, name="first_call")
        with b.if_then(first):
            self.stmt(s.body)

    def _unlowered(self, s: tir.Stmt) -> None:
        name = getattr(getattr(s, "block", s), "name_hint", "")
        raise BuildError(
            f"building '{self.func_name}': block '{name}' reached the code generator; "
            "lower the function first (tvm.lower / the tir lowering pipeline)"
        )

    def _for(self, s: tir.For) -> None:
        if s.kind is tir.ForKind.THREAD_BINDING:
            raise BuildError(
                f"loop '{s.loop_var.name}' is bound to a GPU thread; building it "
                "needs a GPU target, which this build does not have"
            )
        if s.kind is tir.ForKind.PARALLEL and not self._state.in_parallel:
            llvm_parallel.emit_parallel_for(self, s)
            return
        begin, extent = self.loop_bounds(s)
        end = self.builder.add(begin, extent, name=s.loop_var.name + ".end")
        self.emit_serial_loop(s, begin, end)

    def loop_bounds(self, s: tir.For) -> tuple[ir.Value, ir.Value]:
        """`min` and `extent` of a loop in its loop variable's type."""
        b, dtype = self.builder, s.loop_var.dtype
        with self.computing(f" in the bounds of loop '{s.loop_var.name}'"):
            begin = cast_value(b, self.expr(s.min), s.min.dtype, dtype)
            extent = cast_value(b, self.expr(s.extent), s.extent.dtype, dtype)
        if self.depends_on_data(s.min) or self.depends_on_data(s.extent):
            self.data_vars.add(s.loop_var)  # e.g. CSR rows: range(I[i], I[i + 1])
        return begin, extent

    @contextmanager
    def computing(self, where: str):
        """Name what is being emitted (" computing 'C'") in run-time error messages."""
        outer, self.where = self.where, where
        try:
            yield
        finally:
            self.where = outer

    def depends_on_data(self, e: tir.PrimExpr) -> bool:
        return llvm_checks.depends_on_data(self, e)

    def emit_serial_loop(
        self, s: tir.For, begin: ir.Value, end: ir.Value, parallel_body: bool = False
    ) -> None:
        """`for (v = begin; v < end; ++v) body` in the canonical form (header phi, latch)."""
        b, name = self.builder, s.loop_var.name
        pre = b.block
        head, body, latch, done = (
            self.new_block(f"for_{part}.{name}") for part in ("begin", "body", "inc", "end")
        )
        b.branch(head)
        b.position_at_end(head)
        var = b.phi(begin.type, name=name)
        var.add_incoming(begin, pre)
        lo, extent = s.min, s.extent
        if isinstance(lo, tir.IntImm) and isinstance(extent, tir.IntImm) and extent.value > 0:
            self.set_range(var, lo.value, lo.value + extent.value - 1)  # inside the body
        b.cbranch(b.icmp_signed("<", var, end), body, done)
        b.position_at_end(body)
        was_parallel = self._state.in_parallel
        self._state.in_parallel = was_parallel or parallel_body
        self._state.loop_depth += 1
        self.bind(s.loop_var, var)
        if _is_long_straight_line(s.body):
            self._outlined(s.body)  # LoopLoadElimination is quadratic in a loop's accesses
        else:
            self.stmt(s.body)
        self.unbind(s.loop_var)
        self._state.loop_depth -= 1
        self._state.in_parallel = was_parallel
        b.branch(latch)
        b.position_at_end(latch)
        nxt = b.add(var, ir.Constant(var.type, 1), name=name + ".next", flags=("nsw",))
        backedge = b.branch(head)
        md = self._loop_metadata(s)
        if md is not None:
            backedge.set_metadata("llvm.loop", md)
        var.add_incoming(nxt, latch)
        b.position_at_end(done)

    def _loop_metadata(self, s: tir.For):
        """`!{self, hints...}` for VECTORIZED/UNROLLED loops that reach codegen as loops."""
        extent = s.extent.value if isinstance(s.extent, tir.IntImm) else None
        if s.kind is tir.ForKind.VECTORIZED:
            if _divides_loop_var(s):
                # `B[k, j % 16]` over 32 lanes: forced through LLVM 20's loop vectorizer (with
                # or without a width) the lanes were loaded as one contiguous vector, giving
                # wrong numbers. No hint: LLVM's own cost model and legality checks decide.
                return None
            hints = [["llvm.loop.vectorize.enable", ir.Constant(I1, 1)]]
            if extent is not None and extent >= 2 and extent & (extent - 1) == 0 and extent <= 64:
                hints.append(["llvm.loop.vectorize.width", ir.Constant(I32, extent)])
        elif s.kind is tir.ForKind.UNROLLED:
            hints = [["llvm.loop.unroll.full" if extent is not None else "llvm.loop.unroll.enable"]]
        else:
            return None
        nodes = [self.module.add_metadata(h) for h in hints]
        loop_id = self.module.add_metadata([f"minitvm.loop.{len(self.module.metadata)}"])
        loop_id.operands = (loop_id, *nodes)  # self-reference makes the loop id unique
        return loop_id
