"""dl.gpu rules: each binds threads for its kind of kernel and the result lowers for OpenCL;
kernels without shared memory are checked against numpy by the reference interpreter (thread
loops run serially), and everything runs on an OpenCL or CUDA device when there is one."""

import numpy as np
import pytest

import minitvm as tvm
import minitvm.dlight as dl
from minitvm import te, topi
from minitvm.driver import lower_gpu
from minitvm.target import Target
from minitvm.testing.tir_interp import run_prim_func


def _matmul():
    A = te.placeholder((64, 32), name="A")
    B = te.placeholder((32, 48), name="B")
    r = te.reduce_axis((0, 32), name="k")
    C = te.compute((64, 48), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return [A, B, topi.nn.relu(C)], lambda a, b: np.maximum(a @ b, 0)


def _gemv():
    W = te.placeholder((96, 80), name="W")
    x = te.placeholder((80,), name="x")
    r = te.reduce_axis((0, 80), name="k")
    y = te.compute((96,), lambda i: te.sum(W[i, r] * x[r], axis=r), name="y")
    return [W, x, y], lambda w, v: w @ v


def _row_max():
    X = te.placeholder((40, 70), name="X")
    return [X, topi.max(X, axis=1)], lambda x: x.max(axis=1)


def _softmax():
    X = te.placeholder((8, 40), name="X")
    return (
        [X, topi.nn.softmax(X)],
        lambda x: (
            np.exp(x - x.max(1, keepdims=True))
            / np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True)
        ),
    )


def _add():
    A = te.placeholder((300,), name="A")
    B = te.placeholder((300,), name="B")
    return [A, B, topi.add(A, B)], lambda a, b: a + b


def _inputs(tensors, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal([int(d) for d in t.shape]).astype("float32") for t in tensors[:-1]]


def _schedule(rule, tensors, kind="opencl"):
    mod = tvm.IRModule({"main": te.create_prim_func(tensors)})
    with Target(kind):
        func = dl.ApplyDefaultSchedule(rule)(mod)["main"]
    assert func.attrs.get(dl.IS_SCHEDULED), f"{rule!r} did not apply"
    assert "T.thread_binding" in func.script()
    lower_gpu([func], Target(kind))  # binds every loop it must, within the target's limits
    return func


RULES = [
    (dl.gpu.Matmul(), _matmul),
    (dl.gpu.GEMV(), _gemv),
    (dl.gpu.Reduction(), _row_max),
    (dl.gpu.GeneralReduction(), _softmax),
    (dl.gpu.Fallback(), _add),
    (dl.gpu.Fallback(), _softmax),
]
IDS = ["Matmul", "GEMV", "Reduction", "GeneralReduction", "Fallback", "Fallback-softmax"]


@pytest.mark.parametrize("rule, case", RULES, ids=IDS)
def test_each_gpu_rule_binds_threads_and_lowers_for_opencl(rule, case):
    tensors, _ = case()
    _schedule(rule, tensors)


@pytest.mark.parametrize("rule, case", RULES[1:], ids=IDS[1:])
def test_thread_per_output_rules_match_numpy_in_the_interpreter(rule, case):
    tensors, ref = case()
    func = _schedule(rule, tensors)
    inputs = _inputs(tensors)
    out = np.zeros([int(d) for d in tensors[-1].shape], "float32")
    run_prim_func(func, *inputs, out)
    np.testing.assert_allclose(out, ref(*inputs), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rule", [dl.gpu.GEMV(), dl.gpu.Reduction()], ids=["GEMV", "Reduction"])
def test_output_reductions_accumulate_in_a_register(rule):
    tensors, _ = _gemv() if isinstance(rule, dl.gpu.GEMV) else _row_max()
    text = _schedule(rule, tensors).script()
    assert '"local"' in text, text


@pytest.mark.parametrize(
    "rule, case",
    [
        (dl.gpu.Matmul(), _add),
        (dl.gpu.GEMV(), _matmul),
        (dl.gpu.Reduction(), _gemv),
        (dl.gpu.GeneralReduction(), _row_max),
    ],
    ids=["Matmul", "GEMV", "Reduction", "GeneralReduction"],
)
def test_a_gpu_rule_declines_kernels_it_does_not_fit(rule, case):
    tensors, _ = case()
    assert rule.apply(te.create_prim_func(tensors), Target("opencl"), False) is None


def test_default_gpu_rules_are_what_default_gpu_schedule_gives():
    from minitvm.ir.structural import structural_equal

    for case in (_matmul, _softmax, _add):
        func = te.create_prim_func(case()[0])
        with Target("opencl"):
            via_rules = dl.ApplyDefaultSchedule(*dl.gpu.DEFAULT_RULES)(tvm.IRModule({"main": func}))
        expected = dl.gpu.default_gpu_schedule_func(func).with_attr(dl.IS_SCHEDULED, True)
        assert structural_equal(via_rules["main"], expected)


def _device_reason(kind: str):
    return getattr(tvm, kind)(0).unavailable_reason()


@pytest.mark.parametrize("kind", ["opencl", "cuda"])
@pytest.mark.parametrize("rule, case", RULES, ids=IDS)
def test_each_gpu_rule_runs_on_a_device_and_matches_numpy(rule, case, kind):
    reason = _device_reason(kind)
    if reason is not None:
        pytest.skip(f"no {kind} device: {reason}")
    tensors, ref = case()
    func = _schedule(rule, tensors, kind)
    inputs = _inputs(tensors)
    dev = getattr(tvm, kind)(0)
    out = np.zeros([int(d) for d in tensors[-1].shape], "float32")
    args = [tvm.nd.array(x, dev) for x in (*inputs, out)]
    tvm.build(func, target=kind)(*args)
    np.testing.assert_allclose(args[-1].numpy(), ref(*inputs), rtol=1e-4, atol=1e-4)
