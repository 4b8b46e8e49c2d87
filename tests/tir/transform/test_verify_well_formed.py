import pytest
import tir_builders as tb

from minitvm import tir
from minitvm.error import InternalError
from minitvm.tir import Allocate, BufferStore, For, ForKind, LetStmt, SeqStmt
from minitvm.tir.analysis import verify_well_formed
from minitvm.tir.transform import lower_primfunc


def _func(body, *bufs):
    return tb.func_of(list(bufs), body).replace(body=body)


def test_block_functions_and_their_lowered_forms_are_well_formed():
    for build in (tb.matmul, tb.split_sum, tb.softmax):
        func = build()
        verify_well_formed(func, flat=False)
        verify_well_formed(lower_primfunc(func, verify=False), allow_blocks=False, flat=True)


def test_undefined_variable():
    A = tir.decl_buffer((4,), "float32", "A")
    i = tir.Var("i")
    with pytest.raises(InternalError, match="variable 'i' is used outside the scope"):
        verify_well_formed(_func(BufferStore(A, 0.0, (i,)), A))


def test_variable_defined_twice():
    A = tir.decl_buffer((4,), "float32", "A")
    i = tir.Var("i")
    loop = For(i, 0, 4, ForKind.SERIAL, BufferStore(A, 0.0, (i,)))
    with pytest.raises(InternalError, match="variable 'i' is defined twice"):
        verify_well_formed(_func(SeqStmt((loop, loop)), A), pass_name="my_pass")


def test_error_names_the_pass():
    A = tir.decl_buffer((4,), "float32", "A")
    x = tir.Var("x")
    body = LetStmt(x, 1, LetStmt(x, 2, BufferStore(A, 0.0, (x,))))
    with pytest.raises(InternalError, match="pass 'my_pass' produced ill-formed TIR"):
        verify_well_formed(_func(body, A), pass_name="my_pass")


def test_undeclared_buffer():
    A = tir.decl_buffer((4,), "float32", "A")
    T = tir.decl_buffer((4,), "float32", "T")
    with pytest.raises(InternalError, match="buffer 'T' is accessed but not declared"):
        verify_well_formed(_func(BufferStore(T, A[0], (0,)), A))


def test_allocate_declares_its_memory():
    A = tir.decl_buffer((4,), "float32", "A")
    T = tir.decl_buffer((4,), "float32", "T")
    body = Allocate(T.data, "float32", (4,), True, BufferStore(A, T[0], (0,)))
    verify_well_formed(_func(body, A), allow_blocks=False, flat=True)


def test_block_left_after_block_lowering():
    with pytest.raises(InternalError, match="block 'root' remains after block lowering"):
        verify_well_formed(tb.matmul(), allow_blocks=False)


def test_index_count():
    A = tir.decl_buffer((4, 2), "float32", "A")
    with pytest.raises(
        InternalError, match=r"buffer 'A' has 2 indices, expected 1 \(after flattening\)"
    ):
        verify_well_formed(_func(BufferStore(A, 0.0, (0, 1)), A), flat=True)
    flat = tir.decl_buffer((8,), "float32", "A", data=A.data)
    with pytest.raises(InternalError, match="buffer 'A' is not the declared buffer of its memory"):
        verify_well_formed(_func(BufferStore(flat, 0.0, (0,)), A), flat=False)
