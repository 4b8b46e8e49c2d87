"""An allocation prints once, in TVM's form (`B = T.decl_buffer(shape, dtype)`), and parses back
to the same Allocate + DeclBuffer; forms that one line cannot carry keep `T.allocate`."""

import numpy as np
import pytest

import minitvm
import minitvm.driver
from minitvm import te, tir
from minitvm.ir import assert_structural_equal
from minitvm.script import from_source
from minitvm.tir.stmt import Allocate, DeclBuffer


def _lowered_two_stage():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    C = te.compute((8,), lambda i: B[i] * 2, name="C")
    return minitvm.lower(te.create_schedule(C.op), [A, C])


def _first(stmt, kind):
    found = []
    tir.functor.post_order_visit(stmt, lambda n: isinstance(n, kind) and found.append(n))
    return found


def test_te_intermediate_prints_once_as_decl_buffer_and_round_trips():
    mod = _lowered_two_stage()
    text = mod.script()
    assert text.count("B = ") == 1 and 'B = T.decl_buffer((8,), "float32")' in text
    assert "T.allocate" not in text and "data=" not in text
    again = from_source(text)
    assert_structural_equal(mod["main"], again["main"])
    alloc = _first(again["main"].body, Allocate)[0]
    assert isinstance(alloc.body, DeclBuffer) and alloc.body.buffer.data is alloc.buffer_var


SCRIPT = """
@T.prim_func
def f(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    T.func_attr({"global_symbol": "f"})
    B = T.decl_buffer((8,), "float32", scope="global")
    B2 = T.Buffer((2, 4), "float32", data=B.data)
    for i in range(8):
        B[i] = A[i] * T.float32(3)
    for i in range(8):
        C[i] = B2[i // 4, i % 4] + T.float32(1)
"""


def test_decl_buffer_without_data_allocates_builds_and_matches_numpy():
    func = from_source(
        SCRIPT.replace("B2[i // 4, i % 4]", "B[i]").replace(
            '    B2 = T.Buffer((2, 4), "float32", data=B.data)\n', ""
        )
    )
    assert "B2" not in func.script()
    lib = minitvm.driver.build(func, target="llvm")
    a = np.arange(8, dtype="float32")
    c = minitvm.nd.array(np.zeros(8, "float32"))
    lib["f"](minitvm.nd.array(a), c)
    np.testing.assert_allclose(c.numpy(), a * 3 + 1)


def test_second_view_prints_over_b_data_and_round_trips():
    func = from_source(SCRIPT)
    text = func.script()
    assert 'B2 = T.Buffer((2, 4), "float32", data=B.data)' in text
    assert text.count("T.decl_buffer") == 1 and "T.allocate" not in text
    assert_structural_equal(func, from_source(text))


def test_allocate_without_scope_keeps_its_form_without_a_duplicate_buffer_line():
    src = """
@T.prim_func
def g(A: T.Buffer((4,), "float32")):
    p = T.allocate([4], "float32")
    B = T.decl_buffer((4,), "float32", data=p)
    for i in range(4):
        B[i] = A[i]
        A[i] = B[i] + T.float32(1)
"""
    func = from_source(src)
    text = func.script()
    assert text.count("B = ") == 1 and 'T.Buffer((4,), "float32", data=' not in text
    assert "T.allocate([4]" in text
    assert_structural_equal(func, from_source(text))


@pytest.mark.parametrize("scope", ["global", "local"])
def test_scoped_decl_buffer_round_trips(scope):
    src = f'''
@T.prim_func
def h(A: T.Buffer((4,), "float32")):
    B = T.decl_buffer((4,), "float32", scope="{scope}")
    for i in range(4):
        B[i] = A[i]
        A[i] = B[i] * T.float32(2)
'''
    func = from_source(src)
    alloc = _first(func.body, Allocate)[0]
    assert dict(alloc.annotations) == {"storage_scope": scope}
    assert_structural_equal(func, from_source(func.script()))
