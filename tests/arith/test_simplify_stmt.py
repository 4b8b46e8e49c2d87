"""arith.simplify over statements and functions: loop ranges, block domains, if conditions."""

import pytest

from minitvm import arith, tir
from minitvm.error import MiniTVMError
from minitvm.ir import IRModule, structural_equal
from minitvm.tir import ForKind, const


def _loop(var, extent, body):
    return tir.For(var, 0, extent, ForKind.SERIAL, body)


def test_loop_vars_are_bound_and_guard_dropped():
    A = tir.decl_buffer((1024,), "float32", "A")
    io, ii = tir.Var("io"), tir.Var("ii")
    idx = io * 32 + ii
    store = tir.BufferStore(A, const(1.0, "float32"), [(idx // 32) * 32 + idx % 32])
    body = tir.IfThenElse(tir.likely(idx < 1024), store)
    out = arith.simplify(_loop(io, 32, _loop(ii, 32, body)))
    expected_store = tir.BufferStore(A, const(1.0, "float32"), [idx])
    expected = _loop(io, 32, _loop(ii, 32, expected_store))
    assert structural_equal(out, expected)


def test_unprovable_guard_is_kept():
    n = tir.SizeVar("n")
    A = tir.decl_buffer((n,), "float32", "A")
    io, ii = tir.Var("io"), tir.Var("ii")
    cond = tir.likely(io * 32 + ii < n)
    store = tir.BufferStore(A, const(1.0, "float32"), [io * 32 + ii])
    loop = _loop(io, (n + 31) // 32, _loop(ii, 32, tir.IfThenElse(cond, store)))
    out = arith.simplify(loop)
    assert out is loop  # nothing to simplify: the same object comes back


def test_if_condition_holds_in_then_branch():
    n = tir.SizeVar("n")
    A = tir.decl_buffer((n,), "int32", "A")
    i = tir.Var("i")
    inner = tir.IfThenElse(i < n, tir.BufferStore(A, tir.min(i, n - 1), [i]))
    stmt = _loop(i, 64, tir.IfThenElse(i < n, inner))
    out = arith.simplify(stmt)
    # `i < n` with n a SizeVar builds GT(n, i) (Python tries the subclass's reflection first)
    expected = _loop(i, 64, tir.IfThenElse(tir.LT(i, n), tir.BufferStore(A, i, [i])))
    assert structural_equal(out, expected)


def test_else_branch_gets_negated_condition():
    A = tir.decl_buffer((64,), "int32", "A")
    i = tir.Var("i")
    stmt = _loop(
        i,
        64,
        tir.IfThenElse(
            i < 32,
            tir.BufferStore(A, tir.max(i, 40), [i]),
            tir.BufferStore(A, tir.max(i, 20), [i]),
        ),
    )
    out = arith.simplify(stmt)
    expected = _loop(
        i,
        64,
        tir.IfThenElse(i < 32, tir.BufferStore(A, const(40), [i]), tir.BufferStore(A, i, [i])),
    )
    assert structural_equal(out, expected)


def test_false_guard_removes_statement():
    A = tir.decl_buffer((64,), "int32", "A")
    B = tir.decl_buffer((64,), "int32", "B")
    i = tir.Var("i")
    body = tir.seq(
        tir.IfThenElse(i >= 64, tir.BufferStore(A, const(0), [i])),
        tir.BufferStore(B, i + 0, [i]),
    )
    out = arith.simplify(_loop(i, 64, body))
    assert structural_equal(out, _loop(i, 64, tir.BufferStore(B, i, [i])))


def test_block_iter_vars_use_their_domains():
    A = tir.decl_buffer((16,), "int32", "A")
    vi = tir.IterVar(tir.Range.from_min_extent(0, 16), tir.Var("vi"), tir.IterVar.DataPar)
    block = tir.Block((vi,), (), (), "B", tir.BufferStore(A, tir.floordiv(vi.var, 16), [vi.var]))
    i = tir.Var("i")
    realize = tir.BlockRealize((i,), const(True), block)
    out = arith.simplify(_loop(i, 16, realize))
    assert structural_equal(out.body.block.body, tir.BufferStore(A, const(0), [vi.var]))
    assert out.body.block.iter_vars[0] is vi


def test_prim_func_and_module():
    A = tir.decl_buffer((8,), "int32", "A")
    a = tir.Var("a", "handle")
    i = tir.Var("i")
    func = tir.PrimFunc((a,), _loop(i, 8, tir.BufferStore(A, i * 2 - i, [i])), buffer_map={a: A})
    out = arith.simplify(func)
    assert structural_equal(out.body.body.value, i)
    assert out.buffer_map[a] is A
    mod = IRModule({"main": func})
    out_mod = arith.simplify(mod)
    assert structural_equal(out_mod["main"], out)
    assert arith.simplify(out) is out
    done = IRModule({"main": out})
    assert arith.simplify(done) is done


def test_let_stmt_keeps_var_and_knows_its_range():
    A = tir.decl_buffer((8,), "int32", "A")
    i, t = tir.Var("i"), tir.Var("t")
    stmt = _loop(i, 8, tir.LetStmt(t, i * 2, tir.BufferStore(A, tir.min(t, 100), [i])))
    out = arith.simplify(stmt)
    assert structural_equal(out.body.body, tir.BufferStore(A, t, [i]))


def test_simplify_rejects_other_objects():
    with pytest.raises(MiniTVMError, match="expects a PrimExpr, Stmt, PrimFunc or IRModule"):
        arith.simplify("i + 1")


def test_affine_coeffs():
    i, j, n = tir.Var("i"), tir.Var("j"), tir.SizeVar("n")
    coeffs, base = arith.affine_coeffs(i * 4 + j + n + 3 - i, [i, j])
    assert coeffs == {i: 3, j: 1}
    assert structural_equal(base, n + 3)
    coeffs, base = arith.affine_coeffs(n * 2, [i])
    assert coeffs == {i: 0} and structural_equal(base, n * 2)
    assert arith.affine_coeffs(i * n + j, [i, j]) is None
    assert arith.affine_coeffs(i // 4, [i]) is None
    assert arith.affine_coeffs(tir.Var("f", "float32"), [i]) is None


def test_shared_statement_is_simplified_per_scope():
    A = tir.decl_buffer((64,), "int32", "A")
    i = tir.Var("i")
    shared = tir.BufferStore(A, tir.min(i, 31), [i])
    stmt = _loop(i, 64, tir.IfThenElse(i < 32, shared, shared))
    out = arith.simplify(stmt)
    assert structural_equal(out.body.then_case, tir.BufferStore(A, i, [i]))
    assert structural_equal(out.body.else_case, tir.BufferStore(A, const(31), [i]))
