"""tvm.script.ir_builder: IRBuilder scopes and the IRModule frame."""

import pytest

import minitvm as tvm
from minitvm.script import tir as T
from minitvm.script.ir_builder import IRBuilder
from minitvm.script.ir_builder import ir as I


@T.prim_func
def _add_one(A: T.Buffer((4,), "float32")):
    for i in range(4):
        A[i] = A[i] + T.float32(1)


def test_builders_nest_and_current_needs_one():
    with pytest.raises(ValueError, match="no IRBuilder"):
        IRBuilder.current()
    with IRBuilder() as outer:
        with IRBuilder() as inner:
            assert IRBuilder.current() is inner
        assert IRBuilder.current() is outer
    assert not IRBuilder.is_in_scope()


def test_ir_module_frame_builds_declared_functions():
    with IRBuilder() as ib:
        with I.ir_module():
            gvar = I.decl_function("add_one")
            I.def_function("add_one", _add_one)
            I.module_attrs({"note": "x"})
    mod = ib.get()
    assert list(mod) == ["add_one"] and mod.get_global_var("add_one") is gvar
    assert mod.attrs["note"] == "x"
    tvm.ir.assert_structural_equal(mod["add_one"], _add_one)


def test_ir_builder_misuse_is_reported():
    with IRBuilder() as ib:
        with pytest.raises(ValueError, match="nothing has been built"):
            ib.get()
        with pytest.raises(ValueError, match="inside `with I.ir_module"):
            I.decl_function("f")
        with pytest.raises(ValueError, match="declared but never defined"):
            with I.ir_module():
                I.decl_function("f")
