"""TVM-compatible struct-info constructors (issue 27): TensorStructInfo from a relax shape value,
the `vdevice` parameter, and PrimStructInfo(value=...). Expected results follow TVM v0.19's
documented signatures and its op tests (shape taken from the shape value, vdevice carried
from operands to results)."""

import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.error import ArgumentError, MiniTVMError
from minitvm.ir import VDevice
from minitvm.script import relax as R


def _eq(a, b):
    tvm.ir.assert_structural_equal(a, b)


# ------------------------------------------------------------------ shape given as a relax expr


def test_shape_from_shape_var_with_values():
    n = tir.Var("n", "int64")
    s = relax.Var("s", relax.ShapeStructInfo((n, 4)))
    sinfo = relax.TensorStructInfo(s, "float32")
    assert sinfo.ndim == 2
    assert sinfo.shape[0] is n and sinfo.shape[1].value == 4


def test_shape_from_shape_var_with_only_ndim():
    s = relax.Var("s", relax.ShapeStructInfo(ndim=3))
    sinfo = relax.TensorStructInfo(s, "float16")
    assert sinfo.shape is None and sinfo.ndim == 3 and str(sinfo.dtype) == "float16"


def test_shape_from_unknown_shape_var():
    s = relax.Var("s", relax.ShapeStructInfo())
    sinfo = relax.TensorStructInfo(s, "float32")
    assert sinfo.shape is None and sinfo.ndim == -1


def test_shape_from_shape_expr():
    _eq(relax.TensorStructInfo(relax.ShapeExpr((2, 3)), "float32"), relax.TensorStructInfo((2, 3)))


def test_shape_var_of_non_shape_is_refused():
    x = relax.Var("x", relax.TensorStructInfo((2,), "float32"))
    with pytest.raises(ArgumentError, match="R.Shape"):
        relax.TensorStructInfo(x, "float32")


def test_op_result_matches_shape_var_form():
    # TVM's op tests: full(s, v) with s a shape var of known values gives TensorStructInfo(s)
    bb = relax.BlockBuilder()
    v = relax.Var("v", R.Tensor((), "float32"))
    s = relax.Var("s", relax.ShapeStructInfo((2, 3)))
    got = bb.normalize(relax.op.full(s, v)).struct_info
    _eq(got, relax.TensorStructInfo(s, "float32"))
    _eq(got, relax.TensorStructInfo((2, 3), "float32"))


def test_script_tensor_with_shape_var():
    s = relax.Var("s", relax.ShapeStructInfo(ndim=2))
    assert R.Tensor(s, "float32").ndim == 2


# ------------------------------------------------------------------ vdevice


def test_vdevice_keyword_and_third_positional():
    dev = VDevice("llvm", 0, "global")
    a = relax.TensorStructInfo((2, 3), "float32", dev)
    b = relax.TensorStructInfo((2, 3), "float32", vdevice=VDevice("llvm"))
    assert a.vdevice is dev and a.ndim == 2
    _eq(a, b)
    assert not tvm.ir.structural_equal(a, relax.TensorStructInfo((2, 3), "float32"))
    assert not tvm.ir.structural_equal(
        a, relax.TensorStructInfo((2, 3), "float32", VDevice("cuda", 0))
    )


def test_int_third_positional_stays_ndim():
    sinfo = relax.TensorStructInfo(None, "float32", 2)
    assert sinfo.ndim == 2 and sinfo.vdevice is None


def test_vdevice_must_be_a_vdevice():
    with pytest.raises(ArgumentError, match="VDevice"):
        relax.TensorStructInfo((2,), "float32", vdevice="llvm")


def test_script_tensor_vdevice():
    dev = VDevice("llvm")
    assert R.Tensor((2, 3), "float32", dev).vdevice is dev
    assert R.Tensor("float32", ndim=2, vdevice=dev).ndim == 2
    assert R.Tensor((2, 3), "float32", 2).vdevice is None  # old order: ndim
    with pytest.raises(ArgumentError, match="global infos"):
        R.Tensor((2, 3), "float32", "llvm")


def test_op_result_carries_operand_vdevice():
    # TVM's binary-op inference: one operand on vdevice0, the other unplaced -> vdevice0
    dev = VDevice("llvm")
    bb = relax.BlockBuilder()
    x = relax.Var("x", R.Tensor((2, 3), "float32", dev))
    y = relax.Var("y", R.Tensor((2, 3), "float32"))
    got = bb.normalize(relax.op.add(x, y)).struct_info
    _eq(got, relax.TensorStructInfo((2, 3), "float32", dev))


def test_op_operands_on_different_vdevices_refused():
    bb = relax.BlockBuilder()
    x = relax.Var("x", R.Tensor((2, 3), "float32", VDevice("llvm")))
    y = relax.Var("y", R.Tensor((2, 3), "float32", VDevice("cuda", 0)))
    with pytest.raises(MiniTVMError, match="different virtual devices"):
        bb.normalize(relax.op.add(x, y)).struct_info  # noqa: B018 - inference raises


# ------------------------------------------------------------------ PrimStructInfo(value=)


def test_prim_struct_info_dtype_from_value():
    n = tir.Var("n", "int32")
    sinfo = relax.PrimStructInfo(value=n)
    assert str(sinfo.dtype) == "int32" and sinfo.value is n
    _eq(sinfo, relax.PrimStructInfo("int32", n))


def test_prim_struct_info_int_value_is_int64():
    sinfo = relax.PrimStructInfo(value=16)
    assert str(sinfo.dtype) == "int64" and sinfo.value.value == 16


def test_prim_struct_info_needs_dtype_or_value():
    with pytest.raises(TypeError, match="dtype or a value"):
        relax.PrimStructInfo()


# ------------------------------------------------------------------ relax.transform.Normalize


def _run_main(mod, *arrays):
    import numpy as np

    exe = relax.build(mod, "llvm")
    vm = relax.VirtualMachine(exe, tvm.cpu())
    return np.asarray(vm["main"](*[tvm.nd.array(a) for a in arrays]).numpy())


def test_normalize_binds_nested_calls():
    import numpy as np

    x = relax.Var("x", R.Tensor((2, 3), "float32"))
    body = relax.op.multiply(relax.op.add(x, x), relax.op.subtract(x, relax.const(1.0)))
    mod = tvm.IRModule({"main": relax.Function([x], body)})
    out = relax.transform.Normalize()(mod)["main"]
    assert isinstance(out.body, relax.SeqExpr)
    bindings = out.body.blocks[0].bindings
    assert [b.value.op.name for b in bindings] == ["relax.add", "relax.subtract", "relax.multiply"]
    assert all(isinstance(a, relax.Var | relax.Constant) for b in bindings for a in b.value.args)
    assert out.body.body is bindings[-1].var  # TVM binds a non-leaf result as well
    data = np.arange(6, dtype="float32").reshape(2, 3)
    got = _run_main(tvm.IRModule({"main": out}), data)
    np.testing.assert_allclose(got, (data + data) * (data - 1.0))


def test_normalize_splices_nested_seq_and_merges_blocks():
    x = relax.Var("x", R.Tensor((2,), "float32"))
    a, b, c = (relax.Var(n, R.Tensor((2,), "float32")) for n in "abc")
    inner = relax.SeqExpr([relax.BindingBlock([relax.VarBinding(a, relax.op.add(x, x))])], a)
    seq = relax.SeqExpr(
        [
            relax.BindingBlock([relax.VarBinding(b, inner)]),
            relax.BindingBlock([relax.VarBinding(c, relax.op.multiply(b, b))]),
        ],
        c,
    )
    mod = tvm.IRModule({"main": relax.Function([x], seq)})
    out = relax.transform.Normalize()(mod)["main"]
    assert len(out.body.blocks) == 1
    assert [bd.var for bd in out.body.blocks[0].bindings] == [a, b, c]
    assert out.body.blocks[0].bindings[1].value is a


def test_normalize_leaves_normal_form_alone():
    @R.function
    def main(x: R.Tensor((2,), "float32")):
        with R.dataflow():
            y = R.add(x, x)
            z = R.multiply(y, y)
            R.output(z)
        return z

    mod = tvm.IRModule({"main": main})
    assert relax.transform.Normalize()(mod)["main"] is main


def test_normalize_refuses_non_dataflow_inside_dataflow():
    x = relax.Var("x", R.Tensor((2,), "float32"))
    a = relax.Var("a", R.Tensor((2,), "float32"))
    lv = relax.DataflowVar("lv", R.Tensor((2,), "float32"))
    inner = relax.SeqExpr([relax.BindingBlock([relax.VarBinding(a, relax.op.add(x, x))])], a)
    seq = relax.SeqExpr([relax.DataflowBlock([relax.VarBinding(lv, inner)])], x)
    mod = tvm.IRModule({"main": relax.Function([x], seq)})
    with pytest.raises(MiniTVMError, match="non-dataflow block"):
        relax.transform.Normalize()(mod)


# ------------------------------------------------------------------ Function.bind_params / bind_symbolic_vars


def _matmul_func():
    m, k, n = (tir.Var(name, "int64") for name in "MKN")
    a = relax.Var("A", R.Tensor((m, k), "float32"))
    b = relax.Var("B", R.Tensor((k, n), "float32"))
    return relax.Function([a, b], relax.op.matmul(a, b)), (m, k, n)


@pytest.mark.parametrize("by_name", [True, False])
def test_bind_symbolic_vars_by_name_or_var(by_name):
    func, (m, k, n) = _matmul_func()
    keys = ("M", "K", "N") if by_name else (m, k, n)
    after = func.bind_symbolic_vars(dict(zip(keys, (128, 64, 32))))
    assert after is not func and func.params[0].struct_info.shape[0] is m  # input untouched
    assert [p.struct_info.static_shape() for p in after.params] == [(128, 64), (64, 32)]
    assert after.ret_struct_info.static_shape() == (128, 32)


def test_bind_symbolic_vars_simplifies_and_may_introduce_defined_vars():
    func, _ = _matmul_func()
    outside = tir.Var("outside", "int64")
    after = func.bind_symbolic_vars({"M": outside * 2, "K": outside})
    dims = after.params[0].struct_info.shape
    assert dims[1] is outside and tvm.ir.structural_equal(dims[0], outside * 2)


def test_bind_symbolic_vars_errors():
    func, (m, _, _) = _matmul_func()
    with pytest.raises(tvm.TVMError, match="no symbolic var named"):
        func.bind_symbolic_vars({"Q": 1})
    with pytest.raises(tvm.TVMError, match="not a symbolic var"):
        func.bind_symbolic_vars({tir.Var("M", "int64"): 1})
    with pytest.raises(tvm.TVMError, match="bound twice"):
        func.bind_symbolic_vars({m: 1, "M": 1})
    with pytest.raises(tvm.TVMError, match="no parameter of the function defines"):
        func.bind_symbolic_vars({"M": tir.Var("outside", "int64") * 2})
    n1, n2 = tir.Var("N", "int64"), tir.Var("N", "int64")
    x = relax.Var("x", R.Tensor((n1, n2), "float32"))
    with pytest.raises(tvm.TVMError, match="2 different symbolic vars"):
        relax.Function([x], x).bind_symbolic_vars({"N": 4})


@pytest.mark.parametrize("by_name", [True, False])
def test_bind_params_runs_like_numpy(by_name):
    import numpy as np

    n = tir.Var("n", "int64")
    x = relax.Var("x", R.Tensor((n,), "float32"))
    w = relax.Var("w", R.Tensor((n,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        y = bb.emit(relax.op.multiply(x, w))
        bb.emit_func_output(relax.op.add(y, w))
    func = bb.get()["main"]
    weights = np.array([1.0, -2.0, 0.5], "float32")
    after = func.bind_params({"w" if by_name else func.params[1]: weights})
    assert [p.name_hint for p in after.params] == ["x"]
    assert after.params[0].struct_info.static_shape() == (3,)  # n fixed by the array
    assert after.ret_struct_info.static_shape() == (3,)
    data = np.array([3.0, 4.0, 5.0], "float32")
    got = _run_main(tvm.IRModule({"main": after}), data)
    np.testing.assert_allclose(got, data * weights + weights)


def test_bind_params_errors():
    import numpy as np

    x = relax.Var("x", R.Tensor((4,), "float32"))
    func = relax.Function([x], x)
    with pytest.raises(tvm.TVMError, match="0 parameters named"):
        func.bind_params({"y": np.zeros(4, "float32")})
    with pytest.raises(tvm.TVMError, match="not a parameter"):
        func.bind_params({relax.Var("x", R.Tensor((4,), "float32")): np.zeros(4, "float32")})
    with pytest.raises(tvm.TVMError, match="needs 4"):
        func.bind_params({"x": np.zeros(5, "float32")})


def test_vdevice_is_printed_and_not_silently_dropped_on_reparse():
    from minitvm.error import ParseError

    x = relax.Var("x", R.Tensor((2,), "float32", VDevice("llvm", 0)))
    func = relax.Function([x], x)
    text = func.script()
    assert 'vdevice="llvm:0"' in text
    with pytest.raises((ArgumentError, ParseError), match="VDevice"):
        tvm.script.from_source(text)


def test_shape_expr_indexing():
    m, n = tir.Var("m", "int64"), tir.Var("n", "int64")
    s = relax.ShapeExpr([m, n])
    assert s[0] is m and s[-1] is n and s[-2] is m
    with pytest.raises(IndexError, match="ShapeExpr index out of range"):
        s[2]
    with pytest.raises(IndexError, match="ShapeExpr index out of range"):
        s[-3]
