"""Shapes as run-time values: R.shape_of / R.tensor_to_shape / R.shape_to_tensor, and reshape,
full and broadcast_to to a shape known only at run time (numpy is the oracle)."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import DTypeError, ShapeError
from minitvm.relax.struct_info import ShapeStructInfo, TensorStructInfo
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T


@I.ir_module
class Dynamic:
    @R.function
    def main(x: R.Tensor((2, 6), "float32"), s: R.Tensor((2,), "int64")):
        n = T.int64()
        m = T.int64()
        with R.dataflow():
            sh = R.tensor_to_shape(s)
            sh2 = R.match_cast(sh, R.Shape([n, m]))
            y = R.reshape(x, sh2)
            z = R.add(y, y)
            t = R.shape_to_tensor(R.shape_of(z))
            R.output(z, t)
        return (z, t)


@pytest.fixture(scope="module")
def vm():
    return relax.VirtualMachine(relax.build(Dynamic, "llvm"), tvm.cpu())


def _x():
    return np.arange(12, dtype="float32").reshape(2, 6)


def test_struct_info_rules():
    x = relax.Var("x", TensorStructInfo((3, tvm.tir.Var("n", "int64")), "float32"))
    s = relax.op.shape_of(x)
    bb = relax.BlockBuilder()
    with bb.function("f", [x]):
        sv = bb.emit(s)
        t = bb.emit(relax.op.shape_to_tensor(sv))
        back = bb.emit(relax.op.tensor_to_shape(t))
        bb.emit_func_output(back)
    assert isinstance(sv.struct_info, ShapeStructInfo) and sv.struct_info.ndim == 2
    assert t.struct_info.shape[0].value == 2 and str(t.struct_info.dtype) == "int64"
    back_sinfo = back.struct_info  # values known only at run time
    assert isinstance(back_sinfo, ShapeStructInfo) and back_sinfo.values is None
    assert back_sinfo.ndim == 2


def test_tensor_to_shape_refuses_float_and_2d_at_compile_time():
    bb = relax.BlockBuilder()
    f = relax.Var("f", TensorStructInfo((2,), "float32"))
    m = relax.Var("m", TensorStructInfo((2, 2), "int64"))
    with bb.function("g", [f, m]):
        with pytest.raises(DTypeError, match="tensor_to_shape: data has dtype float32"):
            bb.emit(relax.op.tensor_to_shape(f))
        with pytest.raises(ShapeError, match="tensor_to_shape: data has rank 2"):
            bb.emit(relax.op.tensor_to_shape(m))
        bb.emit_func_output(f)


@pytest.mark.parametrize("dims", [(3, 4), (12, 1), (1, 12), (6, 2)])
def test_reshape_to_runtime_shape_matches_numpy(vm, dims):
    z, t = vm["main"](tvm.nd.array(_x()), tvm.nd.array(np.array(dims, "int64")))
    np.testing.assert_array_equal(z.numpy(), 2 * _x().reshape(dims))
    np.testing.assert_array_equal(t.numpy(), np.array(dims, "int64"))


def test_wrong_element_count_is_refused_at_run_time(vm):
    with pytest.raises(ShapeError, match=r"R.reshape: cannot reshape x of shape \(2, 6\)"):
        vm["main"](tvm.nd.array(_x()), tvm.nd.array(np.array([5, 3], "int64")))


def test_negative_dims_are_refused_at_run_time(vm):
    with pytest.raises(ShapeError, match="R.tensor_to_shape: data holds \\[-3, -4\\]"):
        vm["main"](tvm.nd.array(_x()), tvm.nd.array(np.array([-3, -4], "int64")))


def test_builtins_refuse_hostile_values_directly():
    get = tvm.get_global_func
    with pytest.raises(DTypeError, match="R.tensor_to_shape: data has dtype float32"):
        get("vm.builtin.tensor_to_shape")(tvm.nd.array(np.ones(2, "float32")))
    with pytest.raises(ShapeError, match="it must be 1-d"):
        get("vm.builtin.tensor_to_shape")(tvm.nd.array(np.ones((1, 2), "int64")))
    with pytest.raises(ShapeError, match="only 1 broadcasts"):
        get("vm.builtin.minitvm.broadcast_to")(tvm.nd.array(np.ones(3, "float32")), (2, 4))
    with pytest.raises(ShapeError, match="negative dim"):
        get("vm.builtin.minitvm.full")((2, -1), tvm.nd.array(np.float32(1.0)))


def test_huge_or_bad_shapes_fail_cleanly_in_a_subprocess():
    """A count check that slipped would read out of bounds: run the hostile calls apart."""
    code = textwrap.dedent(
        """
        import numpy as np
        import minitvm as tvm
        from minitvm import relax
        from minitvm.error import MiniTVMError
        from tests.relax.test_op_tensor_to_shape import Dynamic
        vm = relax.VirtualMachine(relax.build(Dynamic, "llvm"), tvm.cpu())
        x = tvm.nd.array(np.ones((2, 6), "float32"))
        for bad in ([2**40, 2**40], [13, 1], [0, 12], [-1, 12]):
            try:
                vm["main"](x, tvm.nd.array(np.array(bad, "int64")))
            except MiniTVMError:
                continue
            raise SystemExit(f"no error for {bad}")
        print("refused all")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=".",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "refused all" in done.stdout


def test_full_and_broadcast_to_a_shape_variable():
    bb = relax.BlockBuilder()
    s = relax.Var("s", TensorStructInfo((2,), "int64"))
    x = relax.Var("x", TensorStructInfo((1, 1), "float32"))
    n, m = tvm.tir.Var("n", "int64"), tvm.tir.Var("m", "int64")
    with bb.function("main", [x, s]):
        with bb.dataflow():
            sh = bb.match_cast(bb.emit(relax.op.tensor_to_shape(s)), ShapeStructInfo([n, m]))
            f = bb.emit(relax.op.full(sh, relax.const(np.float32(2.5))))
            b = bb.emit(relax.op.broadcast_to(x, sh))
            out = bb.emit_output(relax.Tuple((f, b)))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    xv = np.full((1, 1), 7.0, "float32")
    f, b = vm["main"](tvm.nd.array(xv), tvm.nd.array(np.array([3, 5], "int64")))
    np.testing.assert_array_equal(f.numpy(), np.full((3, 5), 2.5, "float32"))
    np.testing.assert_array_equal(b.numpy(), np.broadcast_to(xv, (3, 5)))
    with pytest.raises(ShapeError, match="R.tensor_to_shape: data holds \\[3, -5\\]"):
        vm["main"](tvm.nd.array(xv), tvm.nd.array(np.array([3, -5], "int64")))


def test_script_round_trip():
    text = Dynamic.script()
    for name in ("R.tensor_to_shape(", "R.shape_of(", "R.shape_to_tensor("):
        assert name in text
    tvm.ir.assert_structural_equal(tvm.script.from_source(text), Dynamic)
