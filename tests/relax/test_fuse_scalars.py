"""FuseOps + FuseTIR bind 0-d constants into fused kernels as immediates, and pow by 2 or 3
becomes products; the numbers stay numpy's."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.ir.transform import Sequential
from minitvm.relax import op
from minitvm.relax.transform.fuse_scalars import bind_scalars, scalar_constant
from minitvm.tir.function import PrimFunc
from minitvm.tir.functor import post_order_visit

T = relax.TensorStructInfo


def _gelu_tanh_module(exponent: float):
    """0.5 x (1 + tanh(c (x + k x^p))) @ w, as torch.export gives a tanh GELU: scalar consts."""
    x = relax.Var("x", T((4, 16), "float32"))
    w = relax.Var("w", T((16, 8), "float32"))
    rng = np.random.default_rng(0)
    w_data = rng.standard_normal((16, 8)).astype("float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            c = lambda v: relax.const(np.float32(v))
            cube = bb.emit(op.power(x, c(exponent)))
            inner = bb.emit(op.multiply(op.add(x, op.multiply(cube, c(0.044715))), c(0.79788)))
            h = bb.emit(op.multiply(op.multiply(x, c(0.5)), op.add(op.tanh(inner), c(1.0))))
            gv = bb.emit_output(op.matmul(h, w))
        bb.emit_func_output(gv)
    mod = bb.get()
    return mod, w_data


def _reference(x, w, exponent):
    x = x.astype(np.float64)
    h = 0.5 * x * (1 + np.tanh(0.79788 * (x + 0.044715 * x**exponent)))
    return h @ w


def _fused(mod):
    passes = ["LegalizeOps", "AnnotateTIROpPattern", "FuseOps", "FuseTIR"]
    return Sequential([getattr(relax.transform, p)() for p in passes])(mod)


def _calls(func, name):
    found = []
    post_order_visit(
        func.body,
        lambda n: (
            found.append(n)
            if isinstance(n, tir.Call) and getattr(n.op, "name", None) == name
            else None
        ),
    )
    return found


@pytest.mark.parametrize("exponent", [2.0, 3.0, 2.5])
def test_scalar_constants_become_immediates_and_results_match_numpy(exponent):
    mod, w = _gelu_tanh_module(exponent)
    fused = _fused(mod)
    prims = [f for _, f in fused.functions_items() if isinstance(f, PrimFunc)]
    kernel = next(f for f in prims if len(f.buffer_params()) == 3)  # x, w, out: no 0-d params
    assert all(b.shape for b in kernel.buffer_params())
    # pow by 2 or 3 is products; any other exponent stays a pow call
    assert bool(_calls(kernel, "tir.pow")) == (exponent == 2.5)
    x = np.random.default_rng(1).uniform(-3, 3, (4, 16)).astype("float32")
    x = np.abs(x) if exponent % 1 else x  # numpy's pow of a negative base is NaN there
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    got = vm["main"](tvm.nd.array(x), tvm.nd.array(w)).numpy()
    np.testing.assert_allclose(got, _reference(x, w, exponent), rtol=1e-5, atol=1e-5)


def test_scalar_constant_refuses_non_scalars_and_non_finite_values():
    assert scalar_constant(relax.const(np.float32(2.0))).value == 2.0
    assert scalar_constant(relax.const(np.ones((1,), "float32"))) is None
    assert scalar_constant(relax.const(np.float32(np.inf))) is None
    assert scalar_constant(relax.const(np.float16(2.0))) is None
    assert scalar_constant(relax.Var("v", T((), "float32"))) is None


def test_bind_scalars_keeps_a_written_scalar_buffer():
    """A 0-d param that the kernel writes is no value to substitute: it stays a buffer."""

    @tvm.script.tir.prim_func
    def writes(a: tvm.script.tir.Buffer((), "float32"), b: tvm.script.tir.Buffer((), "float32")):
        with tvm.script.tir.block("w"):
            a[()] = b[()] + tvm.script.tir.float32(1)

    assert bind_scalars(writes, {0: tir.const(2.0, "float32")}) is None
    bound = bind_scalars(writes, {1: tir.const(2.0, "float32")})
    assert bound is not None and "b[" not in bound.script()
