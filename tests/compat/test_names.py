"""Single TVM names with TVM's semantics, each checked against numpy or TVM's documented behaviour."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, topi
from minitvm.error import DTypeError, ShapeError, TEError


def test_copyfrom_converts_numpy_sources_to_the_array_dtype():
    a = tvm.nd.empty((2, 3), "float32")
    a.copyfrom(np.arange(6, dtype="float64").reshape(2, 3) / 4)
    np.testing.assert_array_equal(a.numpy(), np.arange(6, dtype="float32").reshape(2, 3) / 4)
    b = tvm.nd.empty((3,), "int32")
    b.copyfrom(np.array([1.7, -2.2, 3.0]))  # C-style truncation, as np.asarray(x, dtype) does
    np.testing.assert_array_equal(b.numpy(), [1, -2, 3])


def test_copyfrom_still_checks_shape_and_ndarray_dtype():
    a = tvm.nd.empty((2, 2), "float32")
    with pytest.raises(ShapeError, match=r"source has shape \(3,\), this array has shape \(2, 2\)"):
        a.copyfrom(np.zeros(3))
    with pytest.raises(DTypeError, match=r"source NDArray has dtype float64, this array has dtype "
                                         r"float32; convert with tvm.nd.array"):
        a.copyfrom(tvm.nd.array(np.zeros((2, 2))))


def test_topi_broadcast_to_matches_numpy():
    A = te.placeholder((3, 1), "float32", name="A")
    C = topi.broadcast_to(A, (2, 3, 4))
    assert C.op.tag == "broadcast"
    f = tvm.build(te.create_prim_func([A, C]), target="llvm")
    x = np.random.default_rng(0).standard_normal((3, 1)).astype("float32")
    out = tvm.nd.empty((2, 3, 4), "float32")
    f(tvm.nd.array(x), out)
    np.testing.assert_array_equal(out.numpy(), np.broadcast_to(x, (2, 3, 4)))


def test_topi_broadcast_to_rejects_a_shape_numpy_rejects():
    A = te.placeholder((3, 2), "float32", name="A")
    with pytest.raises(TEError, match=r"broadcast_to"):
        topi.broadcast_to(A, (3, 4))
    with pytest.raises(TEError, match=r"cannot broadcast A of shape \(3, 2\) to \(2,\)"):
        topi.broadcast_to(A, (2,))


# ----------------------------------------------------------------------------- MLC-course names


def _run_vm(mod, *arrays):
    ex = tvm.compile(mod, target="llvm")
    vm = tvm.relax.VirtualMachine(ex, tvm.cpu())
    return vm["main"](*[tvm.runtime.tensor(a) for a in arrays]).numpy()


def _exp_module(return_dataflow_var: bool):
    from minitvm import relax

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    with bb.function("main"):
        with bb.dataflow():
            lv = bb.emit_te(topi.exp, x)
            gv = bb.emit_output(lv)
        bb.emit_func_output(lv if return_dataflow_var else gv, [x])
    return bb.get()


def test_tvm_compile_takes_tir_and_relax_modules():
    A = te.placeholder((4,), "float32", name="A")
    B = te.compute((4,), lambda i: A[i] * 2.0, name="B")
    lib = tvm.compile(tvm.IRModule({"main": te.create_prim_func([A, B])}), target="llvm")
    a = tvm.runtime.tensor(np.arange(4, dtype="float32"))
    b = tvm.runtime.tensor(np.zeros(4, "float32"))
    lib["main"](a, b)
    np.testing.assert_array_equal(b.numpy(), np.arange(4) * 2)
    x = np.random.default_rng(1).standard_normal((2, 3)).astype("float32")
    np.testing.assert_allclose(_run_vm(_exp_module(False), x), np.exp(x), rtol=1e-6)


def test_tvm_compile_rejects_other_objects():
    from minitvm.error import BuildError

    with pytest.raises(BuildError, match="tvm.compile: expected an IRModule.*got str"):
        tvm.compile("main")
    with pytest.raises(BuildError, match=r"unknown keyword argument\(s\) \['opt'\]"):
        tvm.compile(tvm.IRModule(), opt=3)


def test_modern_runtime_names_are_the_classic_objects():
    assert tvm.runtime.Tensor is tvm.nd.NDArray
    assert isinstance(tvm.runtime.tensor(np.zeros(2, "float32"), tvm.cpu()), tvm.runtime.Tensor)
    assert tvm.register_global_func is tvm.register_func
    assert tvm.runtime.register_global_func is tvm.register_func

    @tvm.register_global_func("compat.test.twice", override=True)
    def twice(v):
        return v * 2

    assert tvm.get_global_func("compat.test.twice")(21) == 42


def test_emit_func_output_of_a_dataflow_var_passed_to_emit_output():
    mod = _exp_module(True)
    body = mod["main"].body
    assert not isinstance(body.body, tvm.relax.DataflowVar)  # returns the var emit_output bound
    x = np.random.default_rng(2).standard_normal((2, 3)).astype("float32")
    np.testing.assert_allclose(_run_vm(mod, x), np.exp(x), rtol=1e-6)


def test_ir_op_get_and_call_with_none_attrs():
    from minitvm import relax

    mul = tvm.ir.Op.get("relax.multiply")
    assert mul is relax.Op.get("relax.multiply")
    x = relax.Var("x", relax.TensorStructInfo((2,), "float32"))
    call = relax.Call(mul, [x, x], None, None)
    assert call.sinfo_args == () and call.struct_info.shape[0].value == 2
    with pytest.raises(tvm.MiniTVMError, match="unknown relax op 'relax.no_such_op'"):
        tvm.ir.Op.get("relax.no_such_op")


def test_remove_all_unused_drops_dead_bindings():
    from minitvm import relax

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((2,), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            bb.emit(relax.op.exp(x))  # unused
            gv = bb.emit_output(relax.op.negative(x))
        bb.emit_func_output(gv)
    func = bb.get()["main"]
    pruned = relax.analysis.remove_all_unused(func)
    assert len(pruned.body.blocks[0].bindings) == 1
    with pytest.raises(tvm.MiniTVMError, match="expected a relax.Function or an IRModule, got int"):
        relax.analysis.remove_all_unused(3)


def test_2022_spellings_warn_and_name_the_modern_one():
    from minitvm import relax

    with pytest.warns(DeprecationWarning, match=r"use relax.TensorStructInfo\(shape, dtype\)"):
        ty = relax.DynTensorType(2, "float32")
    x = relax.Var("x", (2, 3), ty)
    assert tvm.ir.structural_equal(x.struct_info, relax.TensorStructInfo((2, 3), "float32"))
    assert tvm.ir.structural_equal(relax.Var("y", x.shape_, x._checked_type_).struct_info, x.struct_info)
    c = relax.const(np.ones((2, 3)), ty)
    assert c.data.dtype == "float32"
    with pytest.raises(tvm.MiniTVMError, match="the third argument must be a relax.DynTensorType"):
        relax.Var("z", (2, 3), "float32")
    with pytest.raises(tvm.MiniTVMError, match="ndim=3 disagrees with shape of 2 dims"):
        relax.Var("z", (2, 3), relax.DynTensorType(3, "float32"))
    with pytest.warns(DeprecationWarning, match=r"use relax.build\(mod, target\) or tvm.compile"):
        ex = relax.vm_build.build(_exp_module(False), target="llvm")
    assert isinstance(ex, relax.Executable)
    assert relax.vm.build is relax.build


def test_topi_nn_conv2d_matmul_flatten_match_numpy():
    rng = np.random.default_rng(3)
    data = te.placeholder((1, 2, 5, 5), "float32", name="data")
    kern = te.placeholder((3, 2, 3, 3), "float32", name="kern")
    conv = topi.nn.conv2d(data, kern, 1, 1, 1)
    flat = topi.nn.flatten(conv)
    w = te.placeholder((75, 4), "float32", name="w")
    bias = te.placeholder((4,), "float32", name="bias")
    out = topi.nn.matmul(flat, w, bias)
    f = tvm.build(te.create_prim_func([data, kern, w, bias, out]), target="llvm")
    x, k = rng.standard_normal((1, 2, 5, 5)), rng.standard_normal((3, 2, 3, 3))
    wv, bv = rng.standard_normal((75, 4)), rng.standard_normal(4)
    res = tvm.nd.empty((1, 4), "float32")
    f(*[tvm.nd.array(v.astype("float32")) for v in (x, k, wv, bv)], res)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    ref_conv = np.einsum("ncyxrq,ocrq->noyx", win, k)
    np.testing.assert_allclose(res.numpy(), ref_conv.reshape(1, -1) @ wv + bv, rtol=1e-4, atol=1e-4)
    with pytest.raises(TEError, match="topi.nn.conv2d: layouts NCHW/HWIO are not supported"):
        topi.nn.conv2d(data, kern, 1, 1, 1, data_layout="NCHW", kernel_layout="HWIO")


def test_2022_dense_and_relu_spellings_warn_and_compute_x_times_w_transposed():
    from minitvm import relax

    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    w = relax.const(np.arange(12, dtype="float32").reshape(4, 3))
    with pytest.warns(DeprecationWarning, match=r"use relax.op.linear\(x, w\)"):
        call = relax.op.dense(x, w)
    assert call.op is tvm.ir.Op.get("relax.nn.dense") and relax.op.dense is relax.op.nn.dense
    with pytest.warns(DeprecationWarning, match="use relax.op.nn.relu"):
        relu = relax.op.relu(x)
    assert relu.op is tvm.ir.Op.get("relax.nn.relu")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(call)
        bb.emit_func_output(gv)
    a = np.random.default_rng(4).standard_normal((2, 3)).astype("float32")
    np.testing.assert_allclose(_run_vm(bb.get(), a), a @ w.data.numpy().T, rtol=1e-5)


# ----------------------------------------------------------------------------- tutorial topi names


def test_elemwise_sum_get_const_tuple_and_adaptive_pool():
    n = te.var("n")
    A = te.placeholder((n, 3), "float32", name="A")
    B = te.placeholder((n, 3), "float32", name="B")
    assert topi.utils.get_const_tuple(A.shape) == (n, 3)  # TVM keeps a symbolic dim
    assert topi.utils.get_const_tuple((te.const(2, "int64"), 5)) == (2, 5)
    with pytest.raises(TEError, match="my_op: dim 0 is symbolic"):
        topi.utils.get_const_tuple(A.shape, "my_op")
    S = topi.elemwise_sum([A, B, A])
    f = tvm.build(te.create_prim_func([A, B, S]), target="llvm")
    a, b = (np.random.default_rng(k).standard_normal((4, 3)).astype("float32") for k in (5, 6))
    out = tvm.nd.empty((4, 3), "float32")
    f(tvm.nd.array(a), tvm.nd.array(b), out)
    np.testing.assert_allclose(out.numpy(), a + b + a, rtol=1e-6)
    with pytest.raises(TEError, match=r"topi.elemwise_sum: C has shape \(3,\)"):
        topi.elemwise_sum([A, te.placeholder((3,), name="C")])
    D = te.placeholder((1, 2, 4, 4), "float32", name="D")
    P = topi.nn.adaptive_pool(D, (2, 2), "avg")
    fp = tvm.build(te.create_prim_func([D, P]), target="llvm")
    d = np.random.default_rng(7).standard_normal((1, 2, 4, 4)).astype("float32")
    res = tvm.nd.empty((1, 2, 2, 2), "float32")
    fp(tvm.nd.array(d), res)
    np.testing.assert_allclose(res.numpy(), d.reshape(1, 2, 2, 2, 2, 2).mean(axis=(3, 5)), rtol=1e-5)
