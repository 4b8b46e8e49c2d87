"""Struct-info relations as TVM v0.19 defines them (base check, erasure, call derivation,
LCA, non-negative dims) and virtual devices named through a module's global infos."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax as rx
from minitvm import tir
from minitvm.error import ArgumentError, MiniTVMError, ShapeError
from minitvm.ir import DummyGlobalInfo, VDevice
from minitvm.ir.vdevice import global_infos_script, lookup_vdevice, printing_vdevices
from minitvm.script import ir as I
from minitvm.script import relax as R

BR = rx.analysis.BaseCheckResult
bcheck = rx.analysis.struct_info_base_check


def _eq(a, b):
    tvm.ir.assert_structural_equal(a, b)


def _nm():
    return tir.Var("n", "int64"), tir.Var("m", "int64")


# ------------------------------------------------------------------ struct_info_base_check


def test_base_check_grades_prim_shape_and_object():
    obj, i32, f32 = rx.ObjectStructInfo(), rx.PrimStructInfo("int32"), rx.PrimStructInfo("float32")
    n, _ = _nm()
    assert bcheck(obj, i32) == BR.PASS
    assert bcheck(i32, obj) == BR.FAIL_L1  # an object may be an int32 only at run time
    assert bcheck(i32, f32) == BR.FAIL_L0
    assert bcheck(rx.ShapeStructInfo(ndim=2), rx.ShapeStructInfo([1, n])) == BR.PASS
    assert bcheck(rx.ShapeStructInfo(ndim=2), rx.ShapeStructInfo()) == BR.FAIL_L1
    assert bcheck(rx.ShapeStructInfo(ndim=2), rx.ShapeStructInfo(ndim=3)) == BR.FAIL_L0
    assert bcheck(rx.ShapeStructInfo([1, 2]), rx.ShapeStructInfo(ndim=2)) == BR.FAIL_L2
    assert bcheck(rx.ShapeStructInfo([1, 2]), rx.ShapeStructInfo([1, n])) == BR.FAIL_L2
    assert bcheck(rx.ShapeStructInfo([1, 2]), rx.ShapeStructInfo([1, 3])) == BR.FAIL_L0


def test_base_check_tensor_dtype_rank_and_vdevice():
    n, m = _nm()
    t = rx.TensorStructInfo
    assert bcheck(t(ndim=2, dtype="float32"), t([n, m], "float32")) == BR.PASS
    assert bcheck(t(ndim=2, dtype="float32"), t([n, m], "int32")) == BR.FAIL_L0
    assert bcheck(t(ndim=2, dtype="float32"), t(dtype=None, ndim=2)) == BR.FAIL_L1
    assert bcheck(t([n, m, 1], "int32"), t([n, m, 2], "int32")) == BR.FAIL_L0
    llvm, cuda0, cuda2 = VDevice("llvm"), VDevice("cuda", 0), VDevice("cuda", 2)
    on = lambda v: t(ndim=2, dtype="float32", vdevice=v)
    assert bcheck(on(llvm), on(cuda0)) == BR.FAIL_L0
    assert bcheck(on(cuda0), on(cuda2)) == BR.FAIL_L0
    assert bcheck(on(cuda0), on(VDevice("cuda", 0, ""))) == BR.FAIL_L0  # memory scope differs
    assert bcheck(on(llvm), on(None)) == BR.FAIL_L1
    assert bcheck(on(None), on(llvm)) == BR.PASS
    assert t(ndim=2, dtype="float32").is_base_of(on(VDevice("llvm")))


def test_base_check_tuples_and_functions():
    n, _ = _nm()
    obj, t0 = rx.ObjectStructInfo(), rx.TensorStructInfo(dtype="int32")
    tup = rx.TupleStructInfo
    assert tup([obj, t0]).is_base_of(
        tup([rx.PrimStructInfo("int32"), rx.TensorStructInfo([n], "int32")])
    )
    assert bcheck(tup([obj, t0]), tup([obj, t0, obj])) == BR.FAIL_L0
    assert bcheck(tup([t0, obj]), tup([obj, t0])) == BR.FAIL_L1

    def fn(c):
        n, m = _nm()
        x = rx.TensorStructInfo([c, n, m], "float32")
        return rx.FuncStructInfo([x], rx.TensorStructInfo([c, n], "float32"))

    assert fn(1).is_base_of(fn(1))  # equal up to the names of the symbolic vars
    erased = rx.FuncStructInfo(
        [rx.TensorStructInfo(ndim=3, dtype="float32")], rx.TensorStructInfo(ndim=2, dtype="float32")
    )
    assert erased.is_base_of(fn(1))
    assert bcheck(fn(1), erased) == BR.FAIL_L2
    assert bcheck(fn(1), fn(2)) == BR.FAIL_L0
    impure = rx.FuncStructInfo([], rx.ObjectStructInfo(), purity=False)
    assert bcheck(rx.FuncStructInfo([], rx.ObjectStructInfo()), impure) == BR.FAIL_L0


def test_base_check_refuses_non_struct_info():
    with pytest.raises(MiniTVMError, match="derived must be a StructInfo"):
        bcheck(rx.ObjectStructInfo(), 3)


# ------------------------------------------------------------------ erase_to_well_defined


def test_erase_keeps_what_the_map_defines_and_substitutes():
    n, m = _nm()
    s = rx.ShapeStructInfo([1, n + 1, m])
    _eq(rx.analysis.erase_to_well_defined(s), rx.ShapeStructInfo(ndim=3))
    _eq(rx.analysis.erase_to_well_defined(s, {n: n, m: m}), s)
    _eq(rx.analysis.erase_to_well_defined(s, {n: 2, m: m + 1}), rx.ShapeStructInfo([1, 3, m + 1]))
    _eq(rx.analysis.erase_to_well_defined(s, {n: n}), rx.ShapeStructInfo(ndim=3))
    t = rx.TensorStructInfo([m + 1, n], "float32", vdevice=VDevice("llvm"))
    _eq(
        rx.analysis.erase_to_well_defined(t, {n: 2, m: 3}),
        rx.TensorStructInfo([4, 2], "float32", vdevice=VDevice("llvm")),
    )
    nested = rx.TupleStructInfo(
        [rx.TupleStructInfo([t, rx.ObjectStructInfo()]), rx.PrimStructInfo(value=n)]
    )
    _eq(
        rx.analysis.erase_to_well_defined(nested, {m: m}),
        rx.TupleStructInfo(
            [
                rx.TupleStructInfo(
                    [
                        rx.TensorStructInfo(ndim=2, dtype="float32", vdevice=VDevice("llvm")),
                        rx.ObjectStructInfo(),
                    ]
                ),
                rx.PrimStructInfo("int64"),
            ]
        ),
    )


# ------------------------------------------------------------------ derive_call_ret_struct_info


def _callee(c):
    n, m = _nm()
    x = rx.TensorStructInfo([n, m], "float32")
    return rx.FuncStructInfo([x], rx.TensorStructInfo([m + c, n], "float32"))


def _call(finfo, *arg_sinfos):
    f = rx.Var("f", finfo)
    return rx.Call(f, [rx.Var(f"a{i}", s) for i, s in enumerate(arg_sinfos)])


def test_derive_binds_callee_dims_from_the_arguments():
    n0 = tir.Var("n0", "int64")
    f = _callee(1)
    _eq(
        rx.analysis.derive_call_ret_struct_info(
            f, _call(f, rx.TensorStructInfo([10, 11], "float32"))
        ),
        rx.TensorStructInfo([12, 10], "float32"),
    )
    _eq(
        rx.analysis.derive_call_ret_struct_info(
            f, _call(f, rx.TensorStructInfo([n0, 3], "float32"))
        ),
        rx.TensorStructInfo([4, n0], "float32"),
    )
    # nothing binds n, m: the result keeps its rank only
    _eq(
        rx.analysis.derive_call_ret_struct_info(
            f, _call(f, rx.TensorStructInfo(ndim=2, dtype="float32"))
        ),
        rx.TensorStructInfo(ndim=2, dtype="float32"),
    )
    opaque = rx.FuncStructInfo.opaque_func(rx.PrimStructInfo("float32"))
    _eq(
        rx.analysis.derive_call_ret_struct_info(opaque, _call(opaque, rx.ObjectStructInfo())),
        rx.PrimStructInfo("float32"),
    )


def test_derive_refuses_wrong_count_and_kind():
    f = _callee(2)
    t = rx.TensorStructInfo(ndim=2, dtype="float32")
    with pytest.raises(MiniTVMError, match=r"takes 1 argument\(s\).*called with 2"):
        rx.analysis.derive_call_ret_struct_info(f, _call(f, t, rx.ObjectStructInfo()))
    with pytest.raises(MiniTVMError, match="argument 0 has struct info R.Object, which can never"):
        rx.analysis.derive_call_ret_struct_info(f, _call(f, rx.ObjectStructInfo()))


def test_block_builder_call_of_module_function_binds_its_dims_and_runs():
    # before: the result was the callee's R.Tensor(("n",)), leaking the callee's n
    bb = rx.BlockBuilder()
    n = tir.Var("n", "int64")
    x = rx.Var("x", R.Tensor((n,), "float32"))
    with bb.function("twice", [x]):
        out = bb.emit(rx.op.add(x, x))
        bb.emit_func_output(out)
    gv = bb.get().get_global_var("twice")
    y = rx.Var("y", R.Tensor((4,), "float32"))
    with bb.function("main", [y]):
        z = bb.emit(rx.Call(gv, [y]))
        bb.emit_func_output(z)
    _eq(z.struct_info, rx.TensorStructInfo((4,), "float32"))
    vm = rx.VirtualMachine(rx.build(bb.get(), "llvm"), tvm.cpu())
    a = np.random.default_rng(0).standard_normal(4).astype("float32")
    np.testing.assert_allclose(vm["main"](tvm.nd.array(a)).numpy(), a + a, rtol=1e-6, atol=1e-6)


def test_block_builder_refuses_a_call_that_can_never_match():
    bb = rx.BlockBuilder()
    x = rx.Var("x", R.Tensor((2,), "float32"))
    with bb.function("f", [x]):
        bb.emit_func_output(x)
    gv = bb.get().get_global_var("f")
    y = rx.Var("y", R.Tensor((2,), "int32"))
    with pytest.raises(MiniTVMError, match="argument 0 has struct info"), bb.function("main", [y]):
        bb.emit(rx.Call(gv, [y]))


def test_testing_scope_normalizes_outside_functions():
    n, m = _nm()
    bb = rx.BlockBuilder()
    with bb.testing_scope(def_vars=[n, m]):
        x = rx.Var("x", R.Tensor((n, m), "float32"))
        _eq(bb.normalize(rx.op.add(x, x)).struct_info, rx.TensorStructInfo((n, m), "float32"))
    with pytest.raises(MiniTVMError, match="def_vars must be tir.Vars"):
        bb.testing_scope(def_vars=["n"])


# ------------------------------------------------------------------ LCA, non-negative dims, ==


def test_lca_of_functions_equal_up_to_renaming_is_that_function():
    def fn(c):
        n, m = _nm()
        return rx.FuncStructInfo(
            [rx.TensorStructInfo([c, n, m], "float32")], rx.TensorStructInfo([c, n], "float32")
        )

    a = fn(1)
    _eq(rx.analysis.struct_info_lca(a, fn(1)), a)  # before: an opaque function
    _eq(
        rx.analysis.struct_info_lca(fn(1), fn(2)),
        rx.FuncStructInfo(None, rx.TensorStructInfo(ndim=2, dtype="float32")),
    )


def test_collect_non_negative_expressions_skips_prim_values():
    n, m = _nm()
    sinfo = rx.TupleStructInfo(
        [
            rx.TensorStructInfo([1024, m, n - 2], "float32"),
            rx.ShapeStructInfo([m, n]),
            rx.PrimStructInfo(value=n + 5),
        ]
    )
    got = rx.analysis.collect_non_negative_expressions(sinfo)
    assert len(got) == 3
    for have, want in zip(got, [m, n - 2, n]):
        _eq(have, want)


def test_struct_info_equality_is_structural():
    n, _ = _nm()
    assert rx.TensorStructInfo([1, n + 1], "float32") == rx.TensorStructInfo([1, n + 1], "float32")
    assert rx.TensorStructInfo([1, n], "float32") != rx.TensorStructInfo([1, n], "int32")
    assert rx.TensorStructInfo(ndim=2) != 2


def test_struct_info_refuses_bad_rank_and_values():
    with pytest.raises(ShapeError, match="ndim=-2 must be a non-negative int"):
        rx.TensorStructInfo(ndim=-2)
    with pytest.raises(ShapeError, match="ndim=3 disagrees with 2 values"):
        rx.ShapeStructInfo([1, 2], ndim=3)
    with pytest.raises(ArgumentError, match="values must be a list of dims"):
        rx.ShapeStructInfo(1)
    with pytest.raises(MiniTVMError, match="fields must be a list"):
        rx.TupleStructInfo(1)
    with pytest.raises(ArgumentError, match="ndim=3 disagrees with shape"):
        R.Tensor((2, 3), "float32", ndim=3)
    with pytest.raises(ArgumentError, match="ndim=-2"):
        R.Tensor(dtype="float32", ndim=-2)


# ------------------------------------------------------------------ vdevice and global infos


_VDEVICES = [
    VDevice("llvm"),
    VDevice("cuda", 0),
    VDevice("metal", 0, "global"),
    VDevice("cuda -arch=sm_80", 0),
]


def test_lookup_vdevice_by_kind_index_and_position():
    assert lookup_vdevice(_VDEVICES, "llvm") is _VDEVICES[0]
    assert lookup_vdevice(_VDEVICES, "cuda:1") is _VDEVICES[3]  # second cuda entry
    assert lookup_vdevice(_VDEVICES, "vdevice:2") is _VDEVICES[2]
    with pytest.raises(ArgumentError, match="has 2 entries of kind 'cuda'; index 2"):
        lookup_vdevice(_VDEVICES, "cuda:2")
    with pytest.raises(ArgumentError, match='no "vdevice" list'):
        lookup_vdevice((), "llvm")
    with pytest.raises(ArgumentError, match="must be an index"):
        lookup_vdevice(_VDEVICES, "cuda:x")


def test_module_global_infos_name_the_vdevices_of_annotations():
    @I.ir_module
    class Mod:
        I.module_global_infos(
            {
                "vdevice": [
                    I.vdevice("llvm"),
                    I.vdevice("cuda", 0),
                    I.vdevice("metal", 0, "global"),
                    I.vdevice("cuda -arch=sm_80", 0),
                ]
            }
        )

        @R.function
        def foo(a: R.Tensor((8,), "float32", "cuda:1"), c: R.Tensor((8,), "float32", "vdevice:3")):
            s = R.add(a, c)
            return s

    assert list(Mod.global_infos["vdevice"]) == _VDEVICES
    a, c = Mod["foo"].params
    assert a.struct_info.vdevice == _VDEVICES[3] and c.struct_info.vdevice == _VDEVICES[3]
    _eq(
        Mod["foo"].body.body.struct_info, rx.TensorStructInfo((8,), "float32", vdevice=_VDEVICES[3])
    )
    token = printing_vdevices.set(tuple(_VDEVICES))
    try:  # printed as its place among the module's cuda devices, as TVM
        assert 'vdevice="cuda:1"' in str(a.struct_info)
    finally:
        printing_vdevices.reset(token)
    assert global_infos_script(Mod.global_infos).startswith(
        'I.module_global_infos({"vdevice": [I.vdevice("llvm", 0, "global"), '
    )


def test_vdevice_name_without_module_list_is_refused():
    with pytest.raises(Exception, match='no "vdevice" list'):

        @R.function
        def foo(a: R.Tensor((8,), "float32", "llvm")):
            return a


def test_update_global_info_and_structural_equality():
    mod = tvm.IRModule()
    mod.update_global_info("dummy", [DummyGlobalInfo(), DummyGlobalInfo()])
    other = tvm.IRModule()
    assert not tvm.ir.structural_equal(mod, other)
    other.update_global_info("dummy", [DummyGlobalInfo(), DummyGlobalInfo()])
    tvm.ir.assert_structural_equal(mod, other)
    with pytest.raises(MiniTVMError, match="is not a GlobalInfo"):
        mod.update_global_info("vdevice", ["llvm"])


def test_tensors_on_a_named_llvm_vdevice_build_and_run():
    @I.ir_module
    class Mod:
        I.module_global_infos({"vdevice": [I.vdevice("llvm", 0, "global")]})

        @R.function
        def main(a: R.Tensor((4,), "float32", "llvm"), b: R.Tensor((4,), "float32", "llvm")):
            c = R.multiply(a, b)
            return c

    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(4).astype("float32") for _ in range(2))
    vm = rx.VirtualMachine(rx.build(Mod, "llvm"), tvm.cpu())
    np.testing.assert_allclose(
        vm["main"](tvm.nd.array(a), tvm.nd.array(b)).numpy(), a * b, rtol=1e-6, atol=1e-6
    )


def test_module_with_global_infos_prints_and_parses_back():
    @I.ir_module
    class Mod:
        I.module_attrs({"attr": 10})
        I.module_global_infos(
            {"vdevice": [I.vdevice("llvm"), I.vdevice("cuda", 0), I.vdevice("cuda -arch=sm_80", 0)]}
        )

        @R.function
        def foo(a: R.Tensor((8,), "float32", "cuda:1"), b: R.Tensor((8,), "float32", "llvm")):
            return a

    text = Mod.script()
    assert 'I.module_global_infos({"vdevice": [I.vdevice("llvm", 0, "global"), ' in text
    assert 'vdevice="cuda:1"' in text and 'vdevice="llvm:0"' in text
    back = tvm.script.from_source(text)
    tvm.ir.assert_structural_equal(back, Mod)
    assert back["foo"].params[0].struct_info.vdevice == VDevice("cuda -arch=sm_80", 0)
    other = tvm.IRModule({"foo": Mod["foo"]})
    assert not tvm.ir.structural_equal(other, Mod)  # the global infos differ


def test_opaque_func_takes_purity_and_has_no_derive_func():
    f = rx.FuncStructInfo.opaque_func(ret=rx.ShapeStructInfo(ndim=2), purity=False)
    assert f.params is None and f.derive_func is None and not f.purity
    with pytest.raises(ArgumentError, match="derive_func is not supported"):
        rx.FuncStructInfo.opaque_func(derive_func=lambda call, ctx: None)


def test_global_infos_survive_a_json_round_trip():
    mod = tvm.IRModule({"foo": _PARSED_WITH_VDEVICE["foo"]})
    mod.update_global_info("vdevice", _VDEVICES)
    mod.update_global_info("dummy", [DummyGlobalInfo()])
    back = tvm.ir.load_json(tvm.ir.save_json(mod))  # before: the global infos were dropped
    assert list(back.global_infos) == ["vdevice", "dummy"]
    tvm.ir.assert_structural_equal(back, mod)


@I.ir_module
class _PARSED_WITH_VDEVICE:
    I.module_global_infos({"vdevice": [I.vdevice("llvm")]})

    @R.function
    def foo(a: R.Tensor((8,), "float32", "llvm")):
        return a
