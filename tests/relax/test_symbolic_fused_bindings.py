"""Kernels over several unknown dims: the default schedule fuses them into one parallel loop
of extent A*C*ceil(D/16), and the build's binding check must prove the outer part of that
loop stays inside A (found importing an ONNX model whose four dims are all named)."""

import numpy as np

import minitvm as tvm
from minitvm import relax, tir


def test_mean_keepdims_over_four_symbolic_dims_builds_and_matches():
    dims = [tir.Var(n, "int64") for n in "ABCD"]
    x = relax.Var("x", relax.TensorStructInfo(dims, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.add(relax.op.log(relax.op.abs(x)), x))
            out = bb.emit_output(relax.op.mean(y, axis=[1], keepdims=True))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    for shape in [(2, 3, 5, 7), (1, 4, 2, 33)]:
        a = np.random.rand(*shape).astype("float32") + 0.1
        got = vm["main"](tvm.nd.array(a)).numpy()
        want = (np.log(np.abs(a)) + a).mean(1, keepdims=True)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_loop_one_longer_than_the_domain_is_still_refused():
    """The loop-extent rule proves `v < hi` only when the loop ends by hi."""
    import pytest

    from minitvm.error import ScheduleError

    src = '''
@T.prim_func
def main(a: T.handle, b: T.handle):
    n = T.int64()
    m = T.int64()
    A = T.match_buffer(a, (n, m), "float32")
    B = T.match_buffer(b, (n, m), "float32")
    for f in T.parallel(n * m + T.int64(1)):
        with T.block("B"):
            vi = T.axis.spatial(n, f // m)
            vj = T.axis.spatial(m, f % m)
            B[vi, vj] = A[vi, vj]
'''
    func = tvm.script.from_source(src)
    with pytest.raises(ScheduleError, match="iterator 'vi'"):
        tvm.build(func, target="llvm")
    ok = tvm.script.from_source(src.replace("n * m + T.int64(1)", "n * m"))
    f = tvm.build(ok, target="llvm")
    a = np.random.rand(3, 5).astype("float32")
    b = tvm.nd.array(np.zeros_like(a))
    f(tvm.nd.array(a), b)
    np.testing.assert_allclose(b.numpy(), a)
