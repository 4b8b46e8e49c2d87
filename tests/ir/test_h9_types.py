"""tvm.ir.PrimType / PointerType (structural ==, printed as TVMScript) and
tvm.ir.analysis.collect_call_map."""

import pytest

import minitvm as tvm
from minitvm.ir.analysis import collect_call_map
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T


def test_prim_and_pointer_types_compare_structurally_and_print_as_script():
    f32 = tvm.ir.PrimType("float32")
    ptr = tvm.ir.PointerType(f32, "shared")
    assert f32 == tvm.ir.PrimType("float32") and f32 != tvm.ir.PrimType("int32")
    assert ptr == tvm.ir.PointerType(tvm.ir.PrimType("float32"), "shared")
    assert ptr != tvm.ir.PointerType(f32, "global")
    assert hash(ptr) == hash(tvm.ir.PointerType(tvm.ir.PrimType("float32"), "shared"))
    assert str(f32) == "T.float32" and str(ptr) == 'T.handle("float32", "shared")'
    assert str(tvm.ir.PointerType(f32)) == 'T.handle("float32")'


def test_pointer_type_needs_an_element_type():
    with pytest.raises(TypeError, match="element_type must be an IR type"):
        tvm.ir.PointerType("float32")


def test_collect_call_map_lists_each_callee_once_in_order():
    @I.ir_module
    class Module:
        @T.prim_func
        def add_one(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
            for i in range(4):
                B[i] = A[i] + T.float32(1)

        @R.function
        def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            cls = Module
            y = R.call_tir(cls.add_one, (x,), out_sinfo=R.Tensor((4,), "float32"))
            z = R.call_tir(cls.add_one, (y,), out_sinfo=R.Tensor((4,), "float32"))
            return z

    calls = {g.name_hint: [c.name_hint for c in cs] for g, cs in collect_call_map(Module).items()}
    assert calls == {"add_one": [], "main": ["add_one"]}
    (callee,) = collect_call_map(Module)[Module.get_global_var("main")]
    assert callee is Module.get_global_var("add_one")
