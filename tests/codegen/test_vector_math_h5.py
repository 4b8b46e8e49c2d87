"""The cheaper float32 vector math of codegen/llvm_intrinsics.py (exp with one select after the
clamps, sigmoid of e^-|x|, erf through 2^Q, `tir.tanh` expanded through one exp instead of a
libm call per lane) stays within a few ulp of float64 references over dense
samples of float32, with ±0, ±inf, NaN, denormals and the overflow/underflow ends exact, in
vectorized and scalar loops, and inside matmul epilogues of relax modules against torch."""

from __future__ import annotations

import math
import types
import warnings

import numpy as np
import pytest
from llvmlite import ir

import minitvm as tvm
from minitvm import relax, te, tir
from minitvm.codegen import llvm_intrinsics as intr
from minitvm.ir.dtype import DataType

_erf64 = np.vectorize(math.erf, otypes=[np.float64])
_TINY = np.finfo(np.float32).smallest_subnormal


def _sigmoid64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


# name: (TIR intrinsic, float64 reference, sampled range, max ulp vectorized)
CASES = {
    "exp": (tir.exp, np.exp, (-104.5, 89.5), 1.0),
    "sigmoid": (tir.sigmoid, _sigmoid64, (-110.0, 110.0), 2.5),
    "tanh": (tir.tanh, np.tanh, (-20.0, 20.0), 3.0),
    "erf": (tir.erf, _erf64, (-6.0, 6.0), 3.0),
}
EDGES = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 1e-40, -1e-40, 1e-38, -1e-38,
         88.72, 88.73, -88.73, -103.9, -104.0, 104.0, 1e30, -1e30, 3.4e38, -3.4e38]  # fmt: skip


def _build(fn, n: int, lanes: int, target: str = "llvm"):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: fn(A[i]), name="B")
    sch = tvm.tir.Schedule(te.create_prim_func([A, B]))
    if lanes > 1:
        (i,) = sch.get_loops(sch.get_block("B"))
        _, inner = sch.split(i, [None, lanes])
        sch.vectorize(inner)
    return tvm.build(sch.mod["main"], target=target)


def _run(f, x: np.ndarray) -> np.ndarray:
    y = tvm.nd.array(np.zeros_like(x))
    f(tvm.nd.array(x), y)
    return y.numpy()


def _dense(lo: float, hi: float, stride: int) -> np.ndarray:
    """Every `stride`-th float32 bit pattern of [0, hi] and [lo, 0] (denormals included)."""
    parts = []
    for top, sign in ((hi, 1.0), (-lo, -1.0)):
        end = int(np.float32(top).view(np.int32))
        parts.append(sign * np.arange(0, end + 1, stride, dtype=np.int32).view(np.float32))
    x = np.concatenate(parts)
    return x[: len(x) // 16 * 16]


def _ulps(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|got - ref| in ulps of the float32-rounded reference (denormal steps below tiny)."""
    with np.errstate(over="ignore", invalid="ignore"):
        ref32 = ref.astype(np.float32)
        step = np.maximum(np.spacing(np.abs(ref32)).astype(np.float64), _TINY)
        err = np.abs(got.astype(np.float64) - ref) / step
    err[np.isinf(ref32) & (got == ref32)] = 0.0
    return err


@pytest.mark.parametrize("lanes", [16, 8, 1])
@pytest.mark.parametrize("name", list(CASES))
def test_math_within_a_few_ulp_of_float64_on_dense_samples(name: str, lanes: int) -> None:
    fn, ref, (lo, hi), limit = CASES[name]
    x = _dense(lo, hi, 40_000 if name == "erf" else 6_000)
    got = _run(_build(fn, len(x), lanes), x)
    with np.errstate(over="ignore"):
        err = _ulps(got, ref(x.astype(np.float64)))
    worst = int(np.argmax(err))
    assert err[worst] <= (limit if lanes > 1 else 2.5), (name, x[worst], got[worst])


@pytest.mark.parametrize("name", list(CASES))
def test_math_without_avx512_scales_by_exponent_bits_as_accurately(name: str) -> None:
    fn, ref, (lo, hi), limit = CASES[name]
    x = np.concatenate([_dense(lo, hi, 60_000), np.resize(np.array(EDGES, "float32"), 32)])
    f = _build(fn, len(x), 16, target="llvm -mcpu=haswell")
    assert "vscalefps" not in f.get_source("asm")
    got = _run(f, x)
    with np.errstate(over="ignore"):
        want = ref(x.astype(np.float64))
    assert np.array_equal(np.isnan(got), np.isnan(x))
    finite = ~np.isnan(x)
    assert _ulps(got[finite], want[finite]).max() <= limit


@pytest.mark.parametrize("lanes", [16, 1])
@pytest.mark.parametrize("name", list(CASES))
def test_math_edge_values_are_exact(name: str, lanes: int) -> None:
    fn, ref, _, _ = CASES[name]
    edge = np.array(EDGES, "float32")
    x = np.resize(edge, 32)
    got = _run(_build(fn, 32, lanes), x)[: len(edge)]
    with np.errstate(over="ignore"):
        want = ref(edge.astype(np.float64)).astype(np.float32)
    close = np.isclose(got, want, rtol=6e-7, atol=2 * _TINY, equal_nan=True)
    assert close.all(), (edge[~close], got[~close], want[~close])
    zero = edge == 0
    if name != "exp" and name != "sigmoid":  # odd functions keep the sign of zero
        assert np.array_equal(np.signbit(got[zero]), np.signbit(edge[zero]))


def _rule_ir(rule, lanes: int = 16) -> str:
    """The unoptimized IR a vector rule of llvm_intrinsics emits for one float32xN argument."""
    t = DataType("float32").with_lanes(lanes)
    ty = ir.VectorType(ir.FloatType(), lanes)
    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(ty, [ty]), "f")
    cg = types.SimpleNamespace(module=module, builder=ir.IRBuilder(fn.append_basic_block()))
    cg.builder.ret(rule(cg, fn.args[0], t))
    return str(fn)


def test_vector_tanh_is_one_exp_not_a_libm_call_per_lane() -> None:
    ll = _build(tir.tanh, 64, 16).get_source("ll")
    assert "tanhf" not in ll and "llvm.tanh" not in ll
    body = _rule_ir(lambda cg, x, t: intr._tanh(cg, [x], t))
    assert body.count("llvm.roundeven") == 1


def test_vector_exp_selects_only_for_nan_after_clamping() -> None:
    body = _rule_ir(intr.vector_exp)
    assert body.count(" select ") == 3  # two clamps and the NaN pass-through


def test_vector_erf_needs_no_clamped_exp_inside() -> None:
    body = _rule_ir(intr.vector_erf)
    assert body.count(" select ") == 3 and body.count("llvm.roundeven") == 1
    ll = _build(tir.erf, 64, 16).get_source("ll")
    assert "expf" not in ll and "erff" not in ll


def test_topi_tanh_is_the_tir_intrinsic() -> None:
    x = te.placeholder((4,), name="x")
    y = tvm.topi.tanh(x)
    assert y.op.body[0].op.name == "tir.tanh"


# ---------------------------------------------------------------- matmul epilogues vs torch
def _torch_module(act: str):
    import torch

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gate = torch.nn.Linear(64, 96, bias=False)
            self.up = torch.nn.Linear(64, 96, bias=False)
            self.down = torch.nn.Linear(96, 32)

        def forward(self, x):
            if act == "silu":
                h = torch.nn.functional.silu(self.gate(x)) * self.up(x)
            else:
                h = torch.nn.functional.gelu(self.gate(x), approximate=act)
            return self.down(h)

    torch.manual_seed(0)
    return Block().eval()


@pytest.mark.parametrize("act", ["silu", "none", "tanh"])
def test_matmul_with_activation_epilogue_matches_torch(act: str) -> None:
    import torch

    from minitvm.relax.frontend.torch import from_exported_program

    model = _torch_module(act)
    x = torch.randn(40, 64) * 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(model, (x,))
    vm = relax.VirtualMachine(relax.build(from_exported_program(ep), "llvm"), tvm.cpu())
    got = vm["main"](x.numpy())
    got = (got[0] if isinstance(got, (list, tuple)) else got).numpy()
    with torch.no_grad():
        want = model(x).numpy()
        want64 = model.double()(x.double()).numpy()  # after the float32 run: converts in place
    np.testing.assert_allclose(got, want64, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
