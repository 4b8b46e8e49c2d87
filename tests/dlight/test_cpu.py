"""dl.cpu rules: each schedules its kind of PrimFunc (parallel / vector loops), builds for llvm
and matches numpy; the default rule list gives what relax's DefaultSchedule gives."""

import numpy as np
import pytest

import minitvm as tvm
import minitvm.dlight as dl
from minitvm import te, topi
from minitvm.ir.structural import structural_equal
from minitvm.tir.functor import post_order_visit
from minitvm.tir.stmt import For, ForKind


def _matmul(m=64, k=48, n=64):
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    inputs = [
        np.random.default_rng(0).standard_normal((m, k)),
        np.random.default_rng(1).standard_normal((k, n)),
    ]
    return [A, B, C], inputs, lambda a, b: a @ b


def _gemv(n=256, k=512):
    X = te.placeholder((1, k), name="X")
    W = te.placeholder((n, k), name="W")
    r = te.reduce_axis((0, k), name="k")
    Y = te.compute((1, n), lambda i, j: te.sum(X[i, r] * W[j, r], axis=r), name="Y")
    rng = np.random.default_rng(2)
    return (
        [X, W, Y],
        [rng.standard_normal((1, k)), rng.standard_normal((n, k))],
        lambda x, w: x @ w.T,
    )


def _row_sum(rows=96, cols=128):
    X = te.placeholder((rows, cols), name="X")
    return (
        [X, topi.sum(X, axis=1)],
        [np.random.default_rng(3).standard_normal((rows, cols))],
        (lambda x: x.sum(axis=1)),
    )


def _layer_norm(rows=64, cols=256):
    X = te.placeholder((rows, cols), name="X")
    g = te.placeholder((cols,), name="g")
    b = te.placeholder((cols,), name="b")
    rng = np.random.default_rng(4)
    inputs = [
        rng.standard_normal((rows, cols)),
        rng.standard_normal(cols),
        rng.standard_normal(cols),
    ]

    def ref(x, gamma, beta):
        mean, var = x.mean(axis=1, keepdims=True), x.var(axis=1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-5) * gamma + beta

    return [X, g, b, topi.nn.layer_norm(X, g, b, axis=-1)], inputs, ref


def _add_relu(shape=(128, 96)):
    A = te.placeholder(shape, name="A")
    B = te.placeholder(shape, name="B")
    out = topi.nn.relu(topi.add(A, B))
    rng = np.random.default_rng(5)
    return (
        [A, B, out],
        [rng.standard_normal(shape), rng.standard_normal(shape)],
        (lambda a, b: np.maximum(a + b, 0)),
    )


def _loop_kinds(func) -> set:
    kinds: set = set()
    post_order_visit(func.body, lambda n: kinds.add(n.kind) if isinstance(n, For) else None)
    return kinds


def _check(func, tensors, inputs, ref) -> None:
    inputs = [x.astype("float32") for x in inputs]
    out = np.zeros([int(d) for d in tensors[-1].shape], "float32")
    args = [tvm.nd.array(x) for x in (*inputs, out)]
    tvm.build(func, target="llvm")(*args)
    np.testing.assert_allclose(args[-1].numpy(), ref(*inputs), rtol=1e-4, atol=1e-4)


def _apply(rule, tensors):
    mod = tvm.IRModule({"main": te.create_prim_func(tensors)})
    out = dl.ApplyDefaultSchedule(rule)(mod)["main"]
    assert out.attrs.get(dl.IS_SCHEDULED), f"{rule!r} did not apply"
    return out


@pytest.mark.parametrize(
    "rule, case, kind",
    [
        (dl.cpu.Matmul(), _matmul, ForKind.VECTORIZED),
        (dl.cpu.GEMV(), _gemv, ForKind.VECTORIZED),
        (dl.cpu.Reduction(), _row_sum, ForKind.VECTORIZED),
        (dl.cpu.GeneralReduction(), _layer_norm, ForKind.PARALLEL),
        (dl.cpu.ElementWise(), _add_relu, ForKind.VECTORIZED),
        (dl.cpu.Fallback(), _matmul, ForKind.PARALLEL),
    ],
    ids=["Matmul", "GEMV", "Reduction", "GeneralReduction", "ElementWise", "Fallback"],
)
def test_each_cpu_rule_schedules_its_kernel_and_matches_numpy(rule, case, kind):
    tensors, inputs, ref = case()
    func = _apply(rule, tensors)
    assert kind in _loop_kinds(func), func.script()
    _check(func, tensors, inputs, ref)


@pytest.mark.parametrize(
    "rule, case",
    [
        (dl.cpu.Matmul(), _add_relu),
        (dl.cpu.GEMV(), _matmul),  # a matmul reduces along k, read strided in B: not a GEMV
        (dl.cpu.Reduction(), _matmul),
        (dl.cpu.GeneralReduction(), _matmul),
        (dl.cpu.ElementWise(), _row_sum),
    ],
    ids=["Matmul", "GEMV", "Reduction", "GeneralReduction", "ElementWise"],
)
def test_a_rule_declines_kernels_it_does_not_fit(rule, case):
    tensors, _, _ = case()
    assert rule.apply(te.create_prim_func(tensors), None, False) is None


def test_per_block_gives_each_block_the_first_rule_that_takes_it():
    tensors, inputs, _ = _matmul()
    relu = topi.nn.relu(tensors[-1])
    tensors = [*tensors[:2], relu]
    func = _apply(dl.cpu.PerBlock(dl.cpu.Reduction(), dl.cpu.Matmul()), tensors)
    assert "C_local" in func.script()  # Matmul's register tile, the relu folded into its write-back
    _check(func, tensors, inputs, lambda a, b: np.maximum(a @ b, 0))


@pytest.mark.parametrize("case", [_matmul, _gemv, _row_sum, _layer_norm, _add_relu])
def test_default_rules_are_what_default_schedule_gives(case):
    tensors, inputs, ref = case()
    func = te.create_prim_func(tensors)
    via_rules = dl.ApplyDefaultSchedule(*dl.cpu.DEFAULT_RULES)(tvm.IRModule({"main": func}))
    assert structural_equal(via_rules["main"], dl.cpu.default_schedule_func(func))
    _check(via_rules["main"], tensors, inputs, ref)


def test_relax_default_schedule_is_the_dlight_cpu_schedule():
    from minitvm import relax

    tensors, _, _ = _matmul()
    mod = tvm.IRModule({"main": te.create_prim_func(tensors)})
    assert structural_equal(
        relax.transform.DefaultSchedule()(mod)["main"], dl.cpu.default_schedule(mod)["main"]
    )
