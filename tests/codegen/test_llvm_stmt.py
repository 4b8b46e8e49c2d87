"""LLVM codegen of statements, vectors, allocation, asserts, parallel loops, metadata and errors."""

from __future__ import annotations

import numpy as np
import pytest
from codegen_harness import Loaded, aligned_copy, build_and_load, flat_buffer, prim_func, run

from minitvm import tir
from minitvm.codegen import llvm as codegen_llvm
from minitvm.error import BuildError, MiniTVMError
from minitvm.ir import IRModule
from minitvm.ir.dtype import DataType
from minitvm.ir.node import setfield
from minitvm.target import emit_assembly
from minitvm.tir import (
    Allocate,
    AssertStmt,
    Block,
    BlockRealize,
    Broadcast,
    BufferLoad,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    IterVar,
    LetStmt,
    Ramp,
    SeqStmt,
    Var,
    While,
    decl_buffer,
)

RNG = np.random.default_rng(1)


def _copy_scaled(name: str, n, kind=ForKind.SERIAL, dtype="float32"):
    """B[i] = A[i] * 2 + 1 over a loop of `kind`."""
    ap, A, _ = flat_buffer("A", n, dtype)
    bp, B, _ = flat_buffer("B", n, dtype)
    i = Var("i")
    body = For(i, 0, n, kind, BufferStore(B, BufferLoad(A, (i,)) * 2.0 + 1.0, (i,)))
    return prim_func(name, [ap, bp], {ap: A, bp: B}, body)


def _run(func, *arrays):
    """Run through the runtime Module; return (0, args) — a failure raises."""
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in arrays]
    run(func, *args)
    return 0, args


def _raw_code(func, *arrays) -> int:
    """The native return code of `func` (called per the ABI, without the runtime's checks)."""
    args = [aligned_copy(a) if isinstance(a, np.ndarray) else a for a in arrays]
    return build_and_load(func)(func.attrs["global_symbol"], *args)


def _asm(func) -> str:
    return emit_assembly(codegen_llvm.build([func]).llvm_ir)


# --------------------------------------------------------------------------- loops, symbolic dims


def test_serial_loop_with_symbolic_extent_passes_n_through_scalars():
    n = Var("n")
    func = _copy_scaled("scale", n)
    a = RNG.standard_normal(37).astype("float32")
    code, (_, b) = _run(func, a, np.zeros(37, "float32"))
    assert code == 0
    np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)


def test_func_info_describes_params_and_symbolic_dims():
    m, n = Var("m"), Var("n")
    ap, bp = Var("a", "handle"), Var("b", "handle")
    A = decl_buffer((m, n), "float32", "A")
    B = decl_buffer((n, 4), "float64", "B")
    C = decl_buffer((n * 2,), "float32", "C")
    cp = Var("c", "handle")
    alpha = Var("alpha", "float32")
    func = prim_func("mm", [ap, bp, cp, alpha], {ap: A, bp: B, cp: C}, Evaluate(0))
    (info,) = codegen_llvm.build([func]).func_infos
    assert info["name"] == "mm"
    assert [p["name"] for p in info["params"]] == ["A", "B", "C", "alpha"]
    assert info["params"][0]["shape"] == ["m", "n"]
    assert info["params"][1] == {
        "name": "B",
        "kind": "buffer",
        "dtype": "float64",
        "shape": ["n", 4],
    }
    assert info["params"][2]["shape"] == ["n * 2"]
    assert info["params"][3] == {"name": "alpha", "kind": "scalar", "dtype": "float32"}
    assert info["sym_vars"] == [
        {"name": "m", "dtype": "int32", "param": 0, "dim": 0},
        {"name": "n", "dtype": "int32", "param": 0, "dim": 1},
    ]


def test_shape_expression_over_undefined_var_is_build_error():
    n = Var("n")
    ap = Var("a", "handle")
    A = decl_buffer((n * 2,), "float32", "A")
    func = prim_func("f", [ap], {ap: A}, Evaluate(0))
    with pytest.raises(
        BuildError, match="buffer 'A' has shape .* variable 'n' is neither a parameter"
    ):
        codegen_llvm.build([func])


def test_two_dim_buffer_accessed_flat_with_symbolic_dims():
    m, n = Var("m"), Var("n")
    ap, bp = Var("a", "handle"), Var("b", "handle")
    A = decl_buffer((m, n), "float32", "A")
    B = decl_buffer((n, m), "float32", "B")
    A_flat = decl_buffer((m * n,), "float32", "A", data=A.data)
    B_flat = decl_buffer((n * m,), "float32", "B", data=B.data)
    i, j = Var("i"), Var("j")
    body = For(
        i,
        0,
        m,
        ForKind.SERIAL,
        For(
            j,
            0,
            n,
            ForKind.SERIAL,
            BufferStore(B_flat, BufferLoad(A_flat, (i * n + j,)), (j * m + i,)),
        ),
    )
    func = prim_func("transpose", [ap, bp], {ap: A, bp: B}, body)
    a = RNG.standard_normal((5, 7)).astype("float32")
    code, (_, b) = _run(func, a, np.zeros((7, 5), "float32"))
    assert code == 0
    np.testing.assert_array_equal(b, a.T)


def test_scalar_params_int_and_float():
    n = 16
    ap, A, _ = flat_buffer("A", n, "float64")
    bp, B, _ = flat_buffer("B", n, "float64")
    alpha, k = Var("alpha", "float64"), Var("k", "int32")
    i = Var("i")
    body = For(
        i,
        0,
        n,
        ForKind.SERIAL,
        BufferStore(B, BufferLoad(A, (i,)) * alpha + tir.Cast("float64", k + i), (i,)),
    )
    func = prim_func("axpb", [ap, bp, alpha, k], {ap: A, bp: B}, body)
    a = RNG.standard_normal(n)
    code, (_, b, _, _) = _run(func, a, np.zeros(n), 2.5, -3)
    assert code == 0
    np.testing.assert_allclose(b, a * 2.5 + (-3 + np.arange(n)), rtol=1e-12)


def test_loop_with_nonzero_min_and_int64_loop_var():
    n = 20
    ap, A, _ = flat_buffer("A", n, "int64")
    i = Var("i", "int64")
    body = For(
        i,
        tir.const(5, "int64"),
        tir.const(10, "int64"),
        ForKind.SERIAL,
        BufferStore(A, i * 3, (i,)),
    )
    func = prim_func("fill", [ap], {ap: A}, body)
    code, (a,) = _run(func, np.zeros(n, "int64"))
    assert code == 0
    expected = np.zeros(n, "int64")
    expected[5:15] = np.arange(5, 15) * 3
    np.testing.assert_array_equal(a, expected)


def test_if_then_else_while_let_stmt():
    n = 12
    ap, A, _ = flat_buffer("A", n, "int32")
    i, t = Var("i"), Var("t")
    k = decl_buffer((1,), "int32", "k_cell")
    cond_loop = Allocate(
        k.data,
        "int32",
        (1,),
        tir.const(True),
        SeqStmt(
            (
                BufferStore(k, 0, (0,)),
                While(BufferLoad(k, (0,)) < i, BufferStore(k, BufferLoad(k, (0,)) + 1, (0,))),
                IfThenElse(
                    tir.floormod(i, 2) == 0,
                    LetStmt(t, BufferLoad(k, (0,)) * 10, BufferStore(A, t, (i,))),
                    BufferStore(A, -i, (i,)),
                ),
            )
        ),
    )
    func = prim_func("ctl", [ap], {ap: A}, For(i, 0, n, ForKind.SERIAL, cond_loop))
    code, (a,) = _run(func, np.zeros(n, "int32"))
    assert code == 0
    r = np.arange(n)
    np.testing.assert_array_equal(a, np.where(r % 2 == 0, r * 10, -r))


def test_if_then_else_intrinsic_never_evaluates_untaken_out_of_bounds_load():
    n = 16
    ap, A, _ = flat_buffer("A", n, "float32")
    bp, B, _ = flat_buffer("B", n, "float32")
    i = Var("i", "int64")
    far = i + tir.const(1 << 40, "int64")  # a load here would fault
    value = tir.if_then_else(i < 8, BufferLoad(A, (i,)), BufferLoad(A, (far,)) * 0.0 - 1.0)
    value = tir.if_then_else(i < 8, value, tir.const(-1.0, "float32"))
    body = For(
        i, tir.const(0, "int64"), tir.const(n, "int64"), ForKind.SERIAL, BufferStore(B, value, (i,))
    )
    func = prim_func("guarded", [ap, bp], {ap: A, bp: B}, body)
    a = RNG.standard_normal(n).astype("float32")
    code, (_, b) = _run(func, a, np.zeros(n, "float32"))
    assert code == 0
    np.testing.assert_array_equal(b, np.where(np.arange(n) < 8, a, -1.0).astype("float32"))


# --------------------------------------------------------------------------- vectors


@pytest.mark.parametrize("lanes", [4, 8, 16])
@pytest.mark.parametrize("dtype", ["float32", "int32", "float64"])
def test_ramp_vector_load_store_with_scalar_tail(lanes, dtype):
    n = 37
    ap, A, _ = flat_buffer("A", n, dtype)
    bp, B, _ = flat_buffer("B", n, dtype)
    io, j = Var("i.outer"), Var("i.tail")
    vec = Ramp(io * lanes, 1, lanes)
    two = tir.const(2, dtype)
    main = For(
        io,
        0,
        n // lanes,
        ForKind.SERIAL,
        BufferStore(
            B,
            BufferLoad(A, (vec,)) * Broadcast(two, lanes) + Broadcast(tir.const(1, dtype), lanes),
            (vec,),
        ),
    )
    tail = For(
        j,
        n // lanes * lanes,
        n - n // lanes * lanes,
        ForKind.SERIAL,
        BufferStore(B, BufferLoad(A, (j,)) * two + tir.const(1, dtype), (j,)),
    )
    func = prim_func("vec", [ap, bp], {ap: A, bp: B}, SeqStmt((main, tail)))
    a = (RNG.standard_normal(n) * 10).astype(dtype)
    code, (_, b) = _run(func, a, np.zeros(n, dtype))
    assert code == 0
    np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)
    ir_text = codegen_llvm.build([func]).llvm_ir
    assert f"<{lanes} x" in ir_text


def test_strided_ramp_gathers_and_scatters():
    n = 32
    ap, A, _ = flat_buffer("A", n, "float32")
    bp, B, _ = flat_buffer("B", n, "float32")
    io = Var("i.outer")
    src, dst = Ramp(io, 2, 8), Ramp(io * 8 + 1, 3, 8)  # B[1 + 8k .. by 3] = A[k .. by 2]
    body = For(io, 0, 1, ForKind.SERIAL, BufferStore(B, BufferLoad(A, (src,)), (dst,)))
    func = prim_func("gather", [ap, bp], {ap: A, bp: B}, body)
    a = RNG.standard_normal(n).astype("float32")
    code, (_, b) = _run(func, a, np.zeros(n, "float32"))
    assert code == 0
    expected = np.zeros(n, "float32")
    expected[1 : 1 + 3 * 8 : 3] = a[0:16:2]
    np.testing.assert_array_equal(b, expected)


def test_vector_bool_store_and_load():
    n = 16
    ap, A, _ = flat_buffer("A", n, "float32")
    mp, M, _ = flat_buffer("M", n, "bool")
    bp, B, _ = flat_buffer("B", n, "float32")
    v = Ramp(0, 1, n)
    zero = Broadcast(tir.const(0.0, "float32"), n)
    body = SeqStmt(
        (
            BufferStore(M, BufferLoad(A, (v,)) > zero, (v,)),
            BufferStore(B, tir.Select(BufferLoad(M, (v,)), BufferLoad(A, (v,)), zero), (v,)),
        )
    )
    func = prim_func("relu_mask", [ap, mp, bp], {ap: A, mp: M, bp: B}, body)
    a = RNG.standard_normal(n).astype("float32")
    code, (_, m, b) = _run(func, a, np.zeros(n, bool), np.zeros(n, "float32"))
    assert code == 0
    np.testing.assert_array_equal(m, a > 0)
    np.testing.assert_array_equal(b, np.maximum(a, 0))


def test_sixteen_lane_float32_ramp_uses_zmm_registers():
    n = 64
    ap, A, _ = flat_buffer("A", n)
    bp, B, _ = flat_buffer("B", n)
    io = Var("i.outer")
    vec = Ramp(io * 16, 1, 16)
    body = For(
        io,
        0,
        n // 16,
        ForKind.SERIAL,
        BufferStore(B, tir.exp(BufferLoad(A, (vec,))) + BufferLoad(A, (vec,)), (vec,)),
    )
    func = prim_func("vexp", [ap, bp], {ap: A, bp: B}, body)
    assert "zmm" in _asm(_copy_scaled("v16", 64, ForKind.VECTORIZED))
    a = RNG.standard_normal(n).astype("float32")
    code, (_, b) = _run(func, a, np.zeros(n, "float32"))
    assert code == 0
    np.testing.assert_allclose(b, np.exp(a) + a, rtol=1e-5)
    ir_text = codegen_llvm.build([func]).llvm_ir
    assert "load <16 x float>" in ir_text


def test_vectorized_loop_with_symbolic_extent_gets_loop_metadata_and_vector_code():
    n = Var("n")
    func = _copy_scaled("vscale", n, ForKind.VECTORIZED)
    asm = _asm(func)
    assert "zmm" in asm or "ymm" in asm
    a = RNG.standard_normal(53).astype("float32")
    code, (_, b) = _run(func, a, np.zeros(53, "float32"))
    assert code == 0
    np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)


def test_loop_metadata_is_attached_before_optimisation():
    cg = codegen_llvm.CodeGenLLVM(*_tm())
    cg.add_function(_copy_scaled("unrolled", 8, ForKind.UNROLLED))
    cg.add_function(_copy_scaled("vectorized", Var("n"), ForKind.VECTORIZED))
    text = str(cg.module)
    assert '"llvm.loop.unroll.full"' in text
    assert (
        '"llvm.loop.vectorize.enable", i1 1' in text
        or '"llvm.loop.vectorize.enable", i1 true' in text
    )
    assert '"target-cpu"=' in text and '"prefer-vector-width"="512"' in text
    assert "noalias" in text and "captures(none)" in text


def _tm():
    from minitvm.target import Target

    t = Target("llvm")
    return t.create_target_machine(), t.cpu, t.features


def test_unrolled_loop_runs_correctly():
    func = _copy_scaled("unroll8", 8, ForKind.UNROLLED, "float64")
    a = RNG.standard_normal(8)
    code, (_, b) = _run(func, a, np.zeros(8))
    assert code == 0
    np.testing.assert_allclose(b, a * 2 + 1)


def test_ir_names_values_after_buffers_and_loops():
    cg = codegen_llvm.CodeGenLLVM(*_tm())
    n = Var("n")
    ap, A, _ = flat_buffer("A", n)
    io = Var("i.outer")
    cg.add_function(
        prim_func("named", [ap], {ap: A}, For(io, 0, n, ForKind.SERIAL, BufferStore(A, 0.0, (io,))))
    )
    text = str(cg.module)
    assert '%"i.outer"' in text and '%"A"' in text


# --------------------------------------------------------------------------- allocation, asserts


def test_local_allocate_is_a_stack_slot_promoted_to_registers():
    n = 16
    ap, A, _ = flat_buffer("A", n)
    bp, B, _ = flat_buffer("B", 1)
    acc = decl_buffer((1,), "float32", "acc")
    i = Var("k")
    body = Allocate(
        acc.data,
        "float32",
        (1,),
        tir.const(True),
        SeqStmt(
            (
                BufferStore(acc, 0.0, (0,)),
                For(
                    i,
                    0,
                    n,
                    ForKind.SERIAL,
                    BufferStore(acc, BufferLoad(acc, (0,)) + BufferLoad(A, (i,)), (0,)),
                ),
                BufferStore(B, BufferLoad(acc, (0,)), (0,)),
            )
        ),
        annotations={"storage_scope": "local"},
    )
    func = prim_func("sum", [ap, bp], {ap: A, bp: B}, body)
    a = RNG.standard_normal(n).astype("float32")
    code, (_, b) = _run(func, a, np.zeros(1, "float32"))
    assert code == 0
    np.testing.assert_allclose(b[0], a.sum(), rtol=1e-5)
    ir_text = codegen_llvm.build([func]).llvm_ir
    assert "alloca" not in ir_text and "aligned_alloc" not in ir_text


@pytest.mark.parametrize("symbolic", [False, True])
def test_large_or_symbolic_allocate_uses_heap(symbolic):
    n = 40000  # 160 KB of float32: too big for the stack
    size = Var("n") if symbolic else n
    ap, A, _ = flat_buffer("A", size)
    tmp = decl_buffer((size,), "float32", "tmp")
    i, j = Var("i"), Var("j")
    body = Allocate(
        tmp.data,
        "float32",
        (size,),
        tir.const(True),
        SeqStmt(
            (
                For(i, 0, size, ForKind.SERIAL, BufferStore(tmp, BufferLoad(A, (i,)) + 1.0, (i,))),
                For(
                    j,
                    0,
                    size,
                    ForKind.SERIAL,
                    BufferStore(A, BufferLoad(tmp, (size - 1 - j,)), (j,)),
                ),
            )
        ),
    )
    func = prim_func("rev", [ap], {ap: A}, body)
    assert "aligned_alloc" in codegen_llvm.build([func]).llvm_ir
    a = RNG.standard_normal(n).astype("float32")
    code, (out,) = _run(func, a)
    assert code == 0
    np.testing.assert_allclose(out, (a + 1)[::-1], rtol=1e-6)


def test_allocate_with_non_integer_extent_is_build_error():
    ap, A, _ = flat_buffer("A", 4)
    v = Var("buf_x", "handle")
    body = Allocate(v, "float32", (tir.const(2.5, "float32"),), tir.const(True), Evaluate(0))
    with pytest.raises(BuildError, match="allocation 'buf_x' has non-integer extent"):
        codegen_llvm.build([prim_func("bad_alloc", [ap], {ap: A}, body)])


def test_assert_failure_returns_nonzero_code_naming_the_message():
    n = Var("n")
    ap, A, _ = flat_buffer("A", n)
    body = AssertStmt(
        n > 4, "n must exceed 4", AssertStmt(n < 100, "n must be below 100", Evaluate(0))
    )
    func = prim_func("checked", [ap], {ap: A}, body)
    result = codegen_llvm.build([func])
    assert result.func_infos[0]["errors"] == ["n must exceed 4", "n must be below 100"]
    loaded = Loaded(result)
    assert loaded("checked", aligned_copy(np.zeros(8, "float32"))) == 0
    assert loaded("checked", aligned_copy(np.zeros(3, "float32"))) == 1
    assert loaded("checked", aligned_copy(np.zeros(200, "float32"))) == 2


def test_assert_and_while_conditions_written_with_python_equality_build():
    # `a == b` on expressions is an EqualOp until used as IR; a statement keeping it as is
    # reached the code generator and failed ("cannot emit the expression EqualOp")
    n = Var("n")
    ap, A, _ = flat_buffer("A", n)
    body = AssertStmt(n == 8, "n must be 8", Evaluate(0))
    assert isinstance(body.condition, tir.EQ)
    assert isinstance(tir.While(n != 8, Evaluate(0)).condition, tir.NE)
    loaded = Loaded(codegen_llvm.build([prim_func("eq", [ap], {ap: A}, body)]))
    assert loaded("eq", aligned_copy(np.zeros(8, "float32"))) == 0
    assert loaded("eq", aligned_copy(np.zeros(3, "float32"))) == 1


# --------------------------------------------------------------------------- parallel


@pytest.fixture(scope="module")
def thread_pool():
    threadpool = pytest.importorskip(
        "minitvm.runtime.threadpool", reason="runtime thread pool not available"
    )
    return threadpool.ensure_pool()


def test_parallel_loop_runs_every_iteration(thread_pool):
    m, n = Var("m"), 16
    ap, bp = Var("a", "handle"), Var("b", "handle")
    A = decl_buffer((m * n,), "float32", "A")
    B = decl_buffer((m * n,), "float32", "B")
    alpha = Var("alpha", "float32")
    i, j, off = Var("i"), Var("j"), Var("off")
    inner = For(
        j, 0, n, ForKind.SERIAL, BufferStore(B, BufferLoad(A, (off + j,)) * alpha, (off + j,))
    )
    body = For(i, 0, m, ForKind.PARALLEL, LetStmt(off, i * n, inner))
    A2 = decl_buffer((m, n), "float32", "A", data=A.data)
    B2 = decl_buffer((m, n), "float32", "B", data=B.data)
    func = prim_func("par", [ap, bp, alpha], {ap: A2, bp: B2}, body)
    a = RNG.standard_normal((13, n)).astype("float32")
    code, (_, b, _) = _run(func, a, np.zeros((13, n), "float32"), 3.0)
    assert code == 0
    np.testing.assert_allclose(b, a * 3.0, rtol=1e-6)
    assert "minitvm_parallel_for" in codegen_llvm.build([func]).llvm_ir


def test_parallel_loop_captures_outer_loop_vars_and_runs_nested_parallel_serially(thread_pool):
    n = 8
    ap, A, _ = flat_buffer("A", n * n * 3, "int32")
    t, i, j = Var("t"), Var("i"), Var("j")
    store = BufferStore(A, t * 100 + i * 10 + j, (t * n * n + i * n + j,))
    body = For(
        t,
        0,
        3,
        ForKind.SERIAL,
        For(i, 0, n, ForKind.PARALLEL, For(j, 0, n, ForKind.PARALLEL, store)),
    )
    func = prim_func("nested", [ap], {ap: A}, body)
    code, (a,) = _run(func, np.zeros(n * n * 3, "int32"))
    assert code == 0
    tt, ii, jj = np.meshgrid(np.arange(3), np.arange(n), np.arange(n), indexing="ij")
    np.testing.assert_array_equal(a, (tt * 100 + ii * 10 + jj).ravel())
    cg = codegen_llvm.CodeGenLLVM(*_tm())
    cg.add_function(func)
    assert str(cg.module).count("define internal void") == 1  # one task: the inner loop is serial


def test_assert_inside_parallel_body_fails_the_call(thread_pool):
    n = 32
    ap, A, _ = flat_buffer("A", n, "float32")
    i = Var("i")
    body = For(
        i,
        0,
        n,
        ForKind.PARALLEL,
        AssertStmt(BufferLoad(A, (i,)) >= 0.0, "A must be non-negative", BufferStore(A, 1.0, (i,))),
    )
    func = prim_func("par_check", [ap], {ap: A}, body)
    good = np.ones(n, "float32")
    assert _raw_code(func, good) == 0
    bad = good.copy()
    bad[20] = -1.0
    assert _raw_code(func, bad) == 1
    with pytest.raises(MiniTVMError, match="par_check"):
        run(func, bad)


# --------------------------------------------------------------------------- inputs and errors


def test_irmodule_input_builds_every_prim_func():
    mod = IRModule({"f": _copy_scaled("f", 8), "g": _copy_scaled("g", 4)})
    result = codegen_llvm.build(mod)
    assert [i["name"] for i in result.func_infos] == ["f", "g"]
    assert result.target.startswith("llvm")
    assert result.object_code[:4] == b"\x7fELF"


def test_thread_binding_is_build_error_naming_the_loop():
    ap, A, _ = flat_buffer("A", 32)
    tx = Var("threadIdx.x")
    body = For(
        tx,
        0,
        32,
        ForKind.THREAD_BINDING,
        BufferStore(A, 0.0, (tx,)),
        thread_binding=IterVar(None, tx, 1, "threadIdx.x"),
    )
    with pytest.raises(
        BuildError,
        match=r"loop 'threadIdx.x' is bound to a GPU thread; building it needs a GPU target",
    ):
        codegen_llvm.build([prim_func("gpu", [ap], {ap: A}, body)])


def test_unlowered_block_is_build_error():
    ap, A, _ = flat_buffer("A", 4)
    blk = Block((), (), (), "C", BufferStore(A, 0.0, (0,)))
    with pytest.raises(
        BuildError, match="block 'C' reached the code generator; lower the function first"
    ):
        codegen_llvm.build(
            [prim_func("blk", [ap], {ap: A}, BlockRealize((), tir.const(True), blk))]
        )


def test_multi_dim_access_is_build_error():
    ap = Var("a", "handle")
    A = decl_buffer((4, 4), "float32", "A")
    body = BufferStore(A, 0.0, (1, 2))
    with pytest.raises(
        BuildError, match="buffer 'A' is accessed with 2 indices; codegen needs flattened"
    ):
        codegen_llvm.build([prim_func("md", [ap], {ap: A}, body)])


def test_undefined_variable_is_build_error():
    ap, A, _ = flat_buffer("A", 4)
    ghost = Var("ghost")
    with pytest.raises(BuildError, match="variable 'ghost' is used but not defined"):
        codegen_llvm.build([prim_func("undef", [ap], {ap: A}, BufferStore(A, 1.0, (ghost,)))])


def test_missing_global_symbol_is_build_error():
    ap, A, _ = flat_buffer("A", 4)
    func = tir.PrimFunc((ap,), Evaluate(0), buffer_map={ap: A})
    with pytest.raises(BuildError, match="without attrs\\['global_symbol'\\]"):
        codegen_llvm.build([func])


def test_unknown_extern_dtype_string_constant_is_build_error():
    ap, A, _ = flat_buffer("A", 4)
    body = Evaluate(tir.call_extern("int32", "puts", tir.StringImm("hi")))
    with pytest.raises(BuildError, match="string constant 'hi' cannot be a value"):
        codegen_llvm.build([prim_func("s", [ap], {ap: A}, body)])


def test_handle_param_without_buffer_is_build_error():
    h = Var("h", DataType("handle"))
    with pytest.raises(BuildError, match="param 'h' is a handle without a buffer"):
        codegen_llvm.build([prim_func("h", [h], {}, Evaluate(0))])


def test_heap_allocation_failure_returns_out_of_memory_code():
    ap, A, _ = flat_buffer("A", 4)
    size = Var("size", "int64")
    tmp = decl_buffer((size,), "float32", "tmp")
    body = Allocate(tmp.data, "float32", (size,), tir.const(True), BufferStore(tmp, 1.0, (0,)))
    func = prim_func("huge", [ap, size], {ap: A}, body)
    result = codegen_llvm.build(func)
    assert result.func_infos[0]["errors"] == ["out of memory allocating 'tmp' of float32"]
    loaded = Loaded(result)
    assert loaded("huge", aligned_copy(np.zeros(4, "float32")), 1 << 50) == 1
    assert loaded("huge", aligned_copy(np.zeros(4, "float32")), 16) == 0


def test_buffer_elem_offset_is_added_to_the_index():
    n = 8
    ap, A, _ = flat_buffer("A", 16, "int32")
    view = decl_buffer((n,), "int32", "A_hi", data=A.data, elem_offset=8)
    i = Var("i")
    func = prim_func(
        "offset", [ap], {ap: A}, For(i, 0, n, ForKind.SERIAL, BufferStore(view, i, (i,)))
    )
    code, (a,) = _run(func, np.zeros(16, "int32"))
    assert code == 0
    np.testing.assert_array_equal(a, np.r_[np.zeros(8), np.arange(8)])


def test_let_bound_constant_and_vector_float16_math():
    n = 16
    ap, A, _ = flat_buffer("A", n, "float16")
    bp, B, _ = flat_buffer("B", n, "float16")
    c = Var("c", "float16")
    v = Ramp(0, 1, n)
    value = tir.Let(c, tir.const(0.5, "float16"), tir.exp(BufferLoad(A, (v,))) * Broadcast(c, n))
    func = prim_func("half", [ap, bp], {ap: A, bp: B}, BufferStore(B, value, (v,)))
    a = RNG.uniform(-2, 2, n).astype("float16")
    code, (_, b) = _run(func, a, np.zeros(n, "float16"))
    assert code == 0
    np.testing.assert_allclose(b.astype("float32"), (np.exp(a) * 0.5).astype("float32"), rtol=2e-3)


def test_extern_called_with_conflicting_types_is_build_error():
    ap, A, _ = flat_buffer("A", 4, "float64")
    body = SeqStmt(
        (
            BufferStore(A, tir.call_extern("float64", "cbrt", BufferLoad(A, (0,))), (0,)),
            BufferStore(A, tir.call_extern("float64", "cbrt", tir.const(1, "int32")), (1,)),
        )
    )
    with pytest.raises(BuildError, match="extern 'cbrt' is called with argument types"):
        codegen_llvm.build([prim_func("ext", [ap], {ap: A}, body)])


def test_vector_code_accepts_numpy_arrays_that_are_not_64_byte_aligned():
    n = 64
    ap, A, _ = flat_buffer("A", n)
    bp, B, _ = flat_buffer("B", n)
    io = Var("i.outer")
    vec = Ramp(io * 16, 1, 16)
    body = For(io, 0, n // 16, ForKind.SERIAL, BufferStore(B, BufferLoad(A, (vec,)) + 1.0, (vec,)))
    func = prim_func("unaligned", [ap, bp], {ap: A, bp: B}, body)
    base_a, base_b = (
        aligned_copy(np.arange(n + 1, dtype="float32")),
        aligned_copy(np.zeros(n + 1, "float32")),
    )
    a, b = base_a[1:], base_b[1:]  # 4 bytes past a 64-byte boundary
    run(func, a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_module_get_source_asm_uses_zmm_for_sixteen_float32_lanes():
    from minitvm.runtime.module import Module

    n = 64
    ap, A, _ = flat_buffer("A", n)
    io = Var("i.outer")
    vec = Ramp(io * 16, 1, 16)
    body = For(io, 0, n // 16, ForKind.SERIAL, BufferStore(A, BufferLoad(A, (vec,)) * 3.0, (vec,)))
    module = Module.from_codegen(codegen_llvm.build(prim_func("v16", [ap], {ap: A}, body)))
    assert "zmm" in module.get_source("asm")
    assert "<16 x float>" in module.get_source("ll")


def test_allocations_are_64_byte_aligned():
    ap, A, _ = flat_buffer("A", 64)
    tmp = decl_buffer((64,), "float32", "tmp")
    i = Var("i")
    body = Allocate(
        tmp.data,
        "float32",
        (64,),
        tir.const(True),
        SeqStmt(
            (
                For(i, 0, 64, ForKind.SERIAL, BufferStore(tmp, BufferLoad(A, (i,)), (i,))),
                For(i, 0, 64, ForKind.SERIAL, BufferStore(A, BufferLoad(tmp, (63 - i,)), (i,))),
            )
        ),
    )
    cg = codegen_llvm.CodeGenLLVM(*_tm())
    cg.add_function(prim_func("tmp64", [ap], {ap: A}, body))
    assert "alloca float, i64 64, align 64" in str(cg.module)


def test_store_of_mismatched_dtype_is_build_error():
    ap, A, _ = flat_buffer("A", 4, "float32")
    i = Var("i")
    body = For(i, 0, 4, ForKind.SERIAL, BufferStore(A, i, (i,)))
    with pytest.raises(
        BuildError, match="storing a int32 value into float32 buffer 'A'.*cast the value"
    ):
        codegen_llvm.build(prim_func("mismatch", [ap], {ap: A}, body))


def test_llvmlite_type_errors_become_build_errors_naming_the_function():
    ap, A, _ = flat_buffer("A", 4, "float32")
    i = Var("i")
    x = Var("x", "float64")
    bad = tir.Add(BufferLoad(A, (i,)), tir.const(1.0, "float32"))
    setfield(bad, "b", x)  # force operands that disagree (constructors would insert a Cast)
    body = For(
        i, 0, 4, ForKind.SERIAL, LetStmt(x, tir.const(2.0, "float64"), BufferStore(A, bad, (i,)))
    )
    with pytest.raises(BuildError, match="building 'mixed': LLVM IR construction failed"):
        codegen_llvm.build(prim_func("mixed", [ap], {ap: A}, body))


def test_function_names_never_collide_with_internal_ones():
    f, g = _copy_scaled("f", 8), _copy_scaled("f_compute", 8)
    result = codegen_llvm.build([f, g])
    assert [i["name"] for i in result.func_infos] == ["f", "f_compute"]
    with pytest.raises(BuildError, match="two functions are named 'f'"):
        codegen_llvm.build([f, _copy_scaled("f", 4)])


def test_vector_compare_not_select_casts_and_floor_ops():
    n = 16
    ap, A, _ = flat_buffer("A", n, "int32")
    bp, B, _ = flat_buffer("B", n, "float32")
    v = Ramp(0, 1, n)
    x = BufferLoad(A, (v,))
    three = Broadcast(tir.const(3, "int32"), n)
    cond = tir.Not(x > Broadcast(tir.const(0, "int32"), n))
    as_float = lambda e: tir.Cast("float32x16", e)
    value = tir.Select(cond, as_float(tir.floordiv(x, three)), as_float(tir.floormod(x, three)))
    value = value + tir.Cast("float32x16", tir.const(1, "int32"))  # scalar → vector cast
    func = prim_func("vecops", [ap, bp], {ap: A, bp: B}, BufferStore(B, value, (v,)))
    a = np.arange(-8, 8, dtype="int32")
    b = np.zeros(n, "float32")
    run(func, a, b)
    np.testing.assert_array_equal(b, np.where(a <= 0, a // 3, a % 3).astype("float32") + 1)
