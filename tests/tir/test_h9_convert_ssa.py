"""ConvertSSA: re-defined variables get fresh Vars, scoped to their definition, across the
whole module; environment threads are defined once per function. Each case is checked
structurally (verify_ssa, which Var each use refers to) and by running before/after
through the TIR interpreter against numpy."""

import numpy as np

from minitvm import IRModule, tir
from minitvm.testing import run_prim_func
from minitvm.tir.analysis import verify_ssa
from minitvm.tir.transform import ConvertSSA, convert_ssa


def _stores(func):
    """(index, value) of every BufferStore, in program order."""
    out = []
    tir.pre_order_visit(
        func.body,
        lambda n: (
            out.append((int(n.indices[0]), n.value)) if isinstance(n, tir.BufferStore) else None
        ),
    )
    return out


def _let_vars(func):
    out = []
    tir.pre_order_visit(
        func.body, lambda n: out.append(n.var) if isinstance(n, tir.LetStmt) else None
    )
    return out


def _run(func, n=4):
    return run_prim_func(func, np.zeros(n, "int32"))[0]


def test_sequential_rebinding_gets_fresh_var():
    A = tir.decl_buffer((2,), "int32", "A")
    var = tir.Var("var", "int32")
    body = tir.SeqStmt(
        [
            tir.LetStmt(var, 16, tir.BufferStore(A, var, [0])),
            tir.LetStmt(var, 32, tir.BufferStore(A, var + 1, [1])),
        ]
    )
    before = tir.PrimFunc([A], body)
    after = convert_ssa(before)
    assert not verify_ssa(before) and verify_ssa(after)
    first, second = _let_vars(after)
    assert first is var and second is not var and second.name == "var"
    (_, v0), (_, v1) = _stores(after)
    assert v0 is first and v1.a is second
    np.testing.assert_array_equal(_run(before, 2), [16, 33])
    np.testing.assert_array_equal(_run(after, 2), [16, 33])


def test_nested_rebinding_is_scoped_to_inner_let():
    A = tir.decl_buffer((3,), "int32", "A")
    var = tir.Var("var", "int32")
    inner = tir.LetStmt(var, 16, tir.BufferStore(A, var, [1]))
    outer = tir.LetStmt(
        var,
        32,
        tir.SeqStmt([tir.BufferStore(A, var, [0]), inner, tir.BufferStore(A, var * 2, [2])]),
    )
    before = tir.PrimFunc([A], outer)
    after = ConvertSSA()(IRModule({"main": before}))["main"]
    assert verify_ssa(after)
    outer_var, inner_var = _let_vars(after)
    assert outer_var is not inner_var
    stores = dict(_stores(after))
    assert stores[0] is outer_var and stores[1] is inner_var and stores[2].a is outer_var
    # the interpreter keeps one slot per Var, so the non-SSA input reads the inner binding
    # after the inner let has ended; the renamed function gives the scoped result
    np.testing.assert_array_equal(_run(before, 3), [32, 16, 32])
    np.testing.assert_array_equal(_run(after, 3), [32, 16, 64])


def test_shared_function_gets_fresh_params_and_buffers_per_copy():
    n = tir.Var("n", "int32")
    A = tir.decl_buffer((4,), "int32", "A")
    body = tir.For(tir.Var("i", "int32"), 0, 4, tir.ForKind.SERIAL, tir.Evaluate(0))
    i = body.loop_var
    body = body.replace(body=tir.BufferStore(A, i * n, [i]))
    func = tir.PrimFunc([A, n], body)
    mod = IRModule({"func_a": func, "func_b": func})
    after = ConvertSSA()(mod)
    fa, fb = after["func_a"], after["func_b"]
    assert fa is func  # the first definition keeps its variables
    assert fb.params[1] is not n and fb.params[1].name == "n"
    buf_a, buf_b = fa.buffer_map[fa.params[0]], fb.buffer_map[fb.params[0]]
    assert buf_b is not buf_a and buf_b.data is not buf_a.data
    assert fb.body.loop_var is not i
    store = fb.body.body
    assert store.buffer is buf_b and store.value.b is fb.params[1]
    for f in (fa, fb):
        out = run_prim_func(f, np.zeros(4, "int32"), 3)[0]
        np.testing.assert_array_equal(out, np.arange(4) * 3)


def test_already_ssa_module_is_returned_unchanged():
    A = tir.decl_buffer((4,), "int32", "A")
    i = tir.Var("i", "int32")
    func = tir.PrimFunc([A], tir.For(i, 0, 4, tir.ForKind.SERIAL, tir.BufferStore(A, i, [i])))
    mod = IRModule({"main": func})
    assert ConvertSSA()(mod) is mod


def _thread_kernel(A, iv, values):
    tx = iv.var
    stores = [
        tir.AttrStmt(iv, "thread_extent", 4, tir.BufferStore(A, tir.BufferLoad(A, [tx]) + v, [tx]))
        for v in values
    ]
    return tir.PrimFunc([A], tir.SeqStmt(stores))


def test_env_thread_shared_in_function_renamed_across_functions():
    tx = tir.Var("threadIdx_x", "int32")
    iv = tir.IterVar(tir.Range(0, 4), tx, tir.IterVar.ThreadIndex, "threadIdx.x")
    A = tir.decl_buffer((4,), "int32", "A")
    k1, k2 = _thread_kernel(A, iv, [1, 2]), _thread_kernel(A, iv, [3, 4])
    after = ConvertSSA()(IRModule({"k1": k1, "k2": k2}))
    assert after["k1"] is k1  # two launches of one thread in one function stay as they are
    attrs = [s for s in after["k2"].body.seq]
    assert attrs[0].node is attrs[1].node  # one IterVar for every launch in the function
    new_tx = attrs[0].node.var
    assert new_tx is not tx and new_tx.name == "threadIdx_x"
    for s in attrs:
        assert s.body.indices[0] is new_tx
    # the interpreter runs one thread, whose index is given by name: both launches add to it
    for f, add in ((after["k1"], 3), (after["k2"], 7)):
        out = run_prim_func(f, np.arange(4, dtype="int32"), threadIdx_x=2)[0]
        np.testing.assert_array_equal(out, np.arange(4) + np.where(np.arange(4) == 2, add, 0))


def test_reused_allocation_renames_its_buffer():
    A = tir.decl_buffer((2,), "int32", "A")
    data = tir.Var("scratch", "handle")
    B = tir.decl_buffer((1,), "int32", "B", data=data)

    def use(v, idx):
        fill = tir.BufferStore(B, v, [0])
        copy = tir.BufferStore(A, tir.BufferLoad(B, [0]) * 10, [idx])
        return tir.Allocate(data, "int32", [1], True, tir.DeclBuffer(B, tir.SeqStmt([fill, copy])))

    before = tir.PrimFunc([A], tir.SeqStmt([use(1, 0), use(2, 1)]))
    after = convert_ssa(before)
    assert verify_ssa(after)
    allocs = [s for s in after.body.seq]
    assert allocs[0].buffer_var is data and allocs[1].buffer_var is not data
    second_buf = allocs[1].body.buffer
    assert second_buf.data is allocs[1].buffer_var and second_buf is not B
    assert allocs[1].body.body.seq[1].value.a.buffer is second_buf
    np.testing.assert_array_equal(_run(before, 2), [10, 20])
    np.testing.assert_array_equal(_run(after, 2), [10, 20])
