"""Names TVM v0.19's unit tests import (issue 27): tvm.ir.VDevice, tvm.ir.diagnostics,
tvm.ir.base and IRBuilder.pointer, each with TVM's documented behaviour."""

import pytest

import minitvm as tvm
from minitvm.script import tir as T


def test_vdevice_fields_and_structural_equality():
    v = tvm.ir.VDevice("cuda", 1, "global")
    assert (v.target, v.vdevice_id, v.memory_scope) == ("cuda", 1, "global")
    d = tvm.ir.VDevice()
    assert (d.target, d.vdevice_id, d.memory_scope) == (None, 0, "global")
    assert tvm.ir.structural_equal(tvm.ir.VDevice("llvm"), tvm.ir.VDevice("llvm", 0, "global"))
    assert not tvm.ir.structural_equal(tvm.ir.VDevice("llvm"), tvm.ir.VDevice("llvm", 1))
    target = tvm.target.Target("llvm")
    assert tvm.ir.VDevice(target).target is target


@pytest.mark.parametrize(
    "args, match",
    [((3,), "target must be a Target"), (("llvm", "0"), "vdevice_id"), (("llvm", 0, 1), "scope")],
)
def test_vdevice_bad_fields_are_refused(args, match):
    with pytest.raises(tvm.error.MiniTVMError, match=match):
        tvm.ir.VDevice(*args)


_BAD = """@T.prim_func
def f(a: T.handle):
    A = T.match_buffer(a, (4,), "float32")
    A[0, 1] = T.float32(1)
"""


def test_override_renderer_sees_the_parse_error_with_its_line():
    seen = []
    tvm.ir.diagnostics.override_renderer(lambda ctx: seen.extend(ctx.diagnostics))
    try:
        with pytest.raises(tvm.error.DiagnosticError):
            tvm.script.from_source(_BAD)
    finally:
        tvm.ir.diagnostics.override_renderer(None)
    assert len(seen) == 1
    (d,) = seen
    assert d.span.line == 4 and d.level == tvm.ir.diagnostics.DiagnosticLevel.ERROR
    assert "indices" in d.message
    # the default again: raised, nothing collected
    with pytest.raises(tvm.error.DiagnosticError):
        tvm.script.from_source(_BAD)
    assert len(seen) == 1


def test_ir_base_module_has_tvm_names():
    from minitvm.ir import base

    assert base.assert_structural_equal is tvm.ir.assert_structural_equal
    assert base.structural_equal is tvm.ir.structural_equal
    assert base.save_json is tvm.ir.save_json


def test_ir_builder_pointer_is_a_flat_array_of_its_type():
    ib = tvm.tir.ir_builder.create()
    p = ib.pointer("float32", name="data")
    with ib.for_range(0, 8, "i") as i:
        p[i] = p[i] * 2.0
    loop = ib.get()
    store = loop.body
    assert isinstance(store, tvm.tir.BufferStore)
    assert store.buffer.name == "data" and str(store.buffer.dtype) == "float32"
    assert store.value.a.buffer.data is store.buffer.data


def test_t_ptr_is_a_typed_handle_parameter():
    @T.prim_func(private=True)
    def with_ptr(A_data: T.ptr("float32"), n: T.int32):
        A = T.decl_buffer(16, "float32", data=A_data)
        for i in range(16):
            A[i] = T.float32(0)

    @T.prim_func(private=True)
    def with_handle(A_data: T.handle("float32"), n: T.int32):
        A = T.decl_buffer(16, "float32", data=A_data)
        for i in range(16):
            A[i] = T.float32(0)

    tvm.ir.assert_structural_equal(with_ptr, with_handle)
    assert with_ptr.params[0].dtype == tvm.DataType("handle")
    with pytest.raises(tvm.error.ParseError, match="not a dtype"):
        T.ptr("floaty")
