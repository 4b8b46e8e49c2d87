"""CombineContextCall: each distinct tvm_thread_context(ctx) of a host function is evaluated
once into a `ctx_cache_` let at the top of its scope. The calls are extern (not runnable
here), so the semantic check is that inlining the lets gives back the original body."""

from minitvm import IRModule, tir
from minitvm.ir import assert_structural_equal
from minitvm.target import Target
from minitvm.tir.transform import CombineContextCall


def _ctx(dev_type, dev_id):
    ctx = tir.call_extern("handle", "device_context", dev_type, dev_id)
    return tir.Call("handle", "tir.tvm_thread_context", [ctx])


def _func(kind=tir.ForKind.SERIAL, target="llvm"):
    dev = tir.Var("dev_type", "int32")
    i = tir.Var("i", "int32")
    use = [tir.Evaluate(tir.call_extern("int32", "fadd", _ctx(dev, d))) for d in (0, 1, 0)]
    body = tir.For(i, 0, 4, kind, tir.SeqStmt(use))
    func = tir.PrimFunc([dev], body)
    return func.with_attr("target", Target(target)) if target else func


class _Unwrap(tir.Mutator):
    def visit_Call(self, call):
        if "thread_context" in str(call.op):
            return self.visit(call.args[0])
        return self.generic_visit(call)


def _inline_lets(stmt):
    values = {}

    class Inline(tir.Mutator):
        def visit_LetStmt(self, s):
            values[id(s.var)] = self.visit(s.value)
            return self.visit(s.body)

        def visit_Var(self, v):
            return values.get(id(v), v)

    return Inline().visit(stmt)


def _context_calls(stmt):
    out = []
    tir.post_order_visit(
        stmt,
        lambda n: (
            out.append(n) if isinstance(n, tir.Call) and "thread_context" in str(n.op) else None
        ),
    )
    return out


def test_contexts_hoisted_to_function_top_and_shared():
    before = _func()
    after = CombineContextCall()(IRModule({"main": before}))["main"]
    first, second = after.body, after.body.body
    assert isinstance(first, tir.LetStmt) and isinstance(second, tir.LetStmt)
    assert first.var.name == "ctx_cache_" and int(first.value.args[-1]) == 0
    assert int(second.value.args[-1]) == 1  # first seen, outermost
    assert not _context_calls(second.body)
    uses = [e.value.args[0] for e in second.body.body.seq]
    assert uses[0] is first.var and uses[1] is second.var and uses[2] is first.var
    # inlining the lets gives the original calls, each without its thread_context wrapper
    assert_structural_equal(_inline_lets(after.body), _Unwrap().visit(before.body))


def test_parallel_loop_is_its_own_scope_and_device_functions_are_left_alone():
    inner = _func(tir.ForKind.PARALLEL)
    dev = inner.params[0]
    outside = tir.Evaluate(tir.call_extern("int32", "fadd", _ctx(dev, 0)))
    func = inner.replace(body=tir.SeqStmt([outside, inner.body]))
    after = CombineContextCall()(IRModule({"main": func}))["main"]
    # the call outside the loop gets the function's own cache; the loop's two contexts are
    # bound around the loop, in a scope of their own (so ctx 0 is computed twice)
    top = after.body
    assert isinstance(top, tir.LetStmt) and isinstance(top.body, tir.SeqStmt)
    loop_lets = top.body.seq[1]
    assert isinstance(loop_lets, tir.LetStmt) and isinstance(loop_lets.body, tir.LetStmt)
    assert isinstance(loop_lets.body.body, tir.For) and loop_lets.var is not top.var
    for target in ("cuda", None):
        func = _func(target=target)
        assert CombineContextCall()(IRModule({"main": func}))["main"] is func
