import tir_builders as tb

from minitvm import tir
from minitvm.tir import BufferStore, Evaluate, For, ForKind, IfThenElse, SeqStmt
from minitvm.tir.transform import RemoveNoOp, remove_no_op


def _func(body, A):
    return tb.func_of([A], body).replace(body=body)


def test_empty_loops_and_false_branches_are_removed():
    A = tir.decl_buffer((4,), "float32", "A")
    i, j = tir.Var("i"), tir.Var("j")
    keep = For(i, 0, 4, ForKind.SERIAL, BufferStore(A, 0.0, (i,)))
    body = SeqStmt(
        (
            For(j, 0, 4, ForKind.SERIAL, Evaluate(0)),
            IfThenElse(tir.const(False), BufferStore(A, 1.0, (0,))),
            keep,
        )
    )
    assert remove_no_op(_func(body, A)).body is keep


def test_zero_extent_loop_is_removed():
    A = tir.decl_buffer((4,), "float32", "A")
    i = tir.Var("i")
    out = remove_no_op(_func(For(i, 0, 0, ForKind.SERIAL, BufferStore(A, 0.0, (i,))), A))
    assert isinstance(out.body, Evaluate)


def test_constant_true_branch_is_inlined_and_empty_else_dropped():
    A = tir.decl_buffer((4,), "float32", "A")
    store = BufferStore(A, 1.0, (0,))
    out = RemoveNoOp()(_func(IfThenElse(tir.const(True), store, Evaluate(0)), A))
    assert out.body is store
    n = tir.Var("n")
    out = remove_no_op(_func(IfThenElse(n > 0, store, Evaluate(0)), A))
    assert out.body.else_case is None
