"""TVM's older pass spelling `tir.transform.DefaultGPUSchedule` (v0.23 and before) and the
relax.frontend.nn fixes made against TVM's own nn tests (v0.19 / v0.24)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, te
from minitvm.error import BuildError
from minitvm.ir.module import IRModule
from minitvm.relax.frontend import nn
from minitvm.relax.frontend.nn import spec
from minitvm.runtime.registry import get_global_func, register_func, remove_global_func
from minitvm.target import Target

_REASON = tvm.opencl(0).unavailable_reason()
requires_opencl = pytest.mark.skipif(_REASON is not None, reason=f"no OpenCL device: {_REASON}")


def _add_one_module() -> IRModule:
    A = te.placeholder((37, 19), name="A")
    B = te.compute(A.shape, lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    return IRModule({"main": te.create_prim_func([A, B])})


def _thread_tags(func) -> set:
    tags = set()

    def visit(node):
        binding = getattr(node, "thread_binding", None)
        if binding is not None:
            tags.add(binding.thread_tag)

    tvm.tir.stmt_functor.post_order_visit(func.body, visit)
    return tags


def test_tir_transform_default_gpu_schedule_is_the_s_tir_pass():
    import minitvm.s_tir.transform as s_tir_transform

    mod = _add_one_module()
    with Target("opencl"):
        old = tvm.tir.transform.DefaultGPUSchedule()(mod)
        new = s_tir_transform.DefaultGPUSchedule()(mod)
    tvm.ir.assert_structural_equal(old, new)
    assert {"blockIdx.x", "threadIdx.x"} <= _thread_tags(old["main"])


@requires_opencl
def test_tir_transform_default_gpu_schedule_runs_on_opencl():
    from minitvm import relax  # noqa: F401 (relax.transform registers the pass)

    with Target("opencl"):
        mod = tvm.tir.transform.DefaultGPUSchedule()(_add_one_module())
    f = tvm.build(mod, target="opencl")
    dev = tvm.opencl(0)
    a = np.random.default_rng(0).normal(size=(37, 19)).astype("float32")
    out = tvm.nd.array(np.zeros((37, 19), "float32"), dev)
    f(tvm.nd.array(a, dev), out)
    np.testing.assert_allclose(out.numpy(), a * 2.0 + 1.0, rtol=1e-6)


def test_tir_transform_default_gpu_schedule_says_what_to_import_when_unregistered():
    from minitvm import relax  # noqa: F401

    name = "tir.transform.DefaultGPUSchedule"
    saved = get_global_func(name)
    remove_global_func(name)
    try:
        with pytest.raises(BuildError, match="from tvm import relax"):
            tvm.tir.transform.DefaultGPUSchedule()
    finally:
        register_func(name, saved)


# ----------------------------------------------------------------------------- relax.frontend.nn


def _calls_of(func, op_name: str) -> int:
    return sum(
        1
        for block in func.body.blocks
        for b in block.bindings
        if isinstance(b.value, relax.Call) and getattr(b.value.op, "name", "") == op_name
    )


class _Timesteps(nn.Module):
    def forward(self, t: nn.Tensor):
        return nn.op.get_timestep_embedding(t, 10)


def _timestep_reference(t: np.ndarray, dim: int) -> np.ndarray:
    half = dim // 2
    freqs = np.exp(-np.log(10000.0) * np.arange(half, dtype="float64") / (half - 1))
    emb = t.astype("float64")[:, None] * freqs[None, :]
    return np.concatenate([np.sin(emb), np.cos(emb)], axis=-1)


def test_timestep_embedding_binds_the_angles_once_for_sin_and_cos():
    torch = pytest.importorskip("torch")
    mod, _ = _Timesteps().export_tvm({"forward": {"t": spec.Tensor([3], "float32")}})
    assert _calls_of(mod["forward"], "relax.exp") == 1  # was 2: sin and cos each recomputed it
    assert _calls_of(mod["forward"], "relax.sin") == _calls_of(mod["forward"], "relax.cos") == 1
    jm = _Timesteps().jit({"forward": {"t": spec.Tensor([3], "float32")}})
    t = np.array([0.0, 3.0, 250.0], "float32")
    out = jm["forward"](torch.from_numpy(t)).numpy()
    np.testing.assert_allclose(out, _timestep_reference(t, 10), rtol=2e-5, atol=2e-5)


class _MaxMin(nn.Module):
    def forward(self, a: nn.Tensor, b: nn.Tensor):
        return nn.op.maximum(x1=a, x2=b), nn.op.minimum(a, x2=b, name="low")


def test_maximum_minimum_take_tvms_keyword_names():
    torch = pytest.importorskip("torch")
    s = {"forward": {"a": spec.Tensor([2, 3], "float32"), "b": spec.Tensor([2, 3], "float32")}}
    jm = _MaxMin().jit(s)
    rng = np.random.default_rng(1)
    a, b = (rng.normal(size=(2, 3)).astype("float32") for _ in range(2))
    hi, lo = jm["forward"](torch.from_numpy(a), torch.from_numpy(b))
    np.testing.assert_array_equal(hi.numpy(), np.maximum(a, b))
    np.testing.assert_array_equal(lo.numpy(), np.minimum(a, b))
    mod, _ = _MaxMin().export_tvm(s)
    assert "low" in [b.var.name_hint for b in mod["forward"].body.blocks[0].bindings]
    with pytest.raises(TypeError, match=r"nn.op.maximum\(x1, x2"):
        nn.op.maximum(a=1, b=2)


def test_method_spec_from_torch_reads_shapes_dtypes_and_ints():
    torch = pytest.importorskip("torch")

    def forward(x, ids, n):
        return x

    ms = nn.spec.MethodSpec.from_torch(
        [torch.zeros(2, 5), torch.zeros(7, dtype=torch.int32), 4], forward
    )
    assert ms.arg_names == ["x", "ids", "n"]
    x, ids, n = ms.arg_specs
    assert (x.shape, x.dtype, ids.shape, ids.dtype) == ([2, 5], "float32", [7], "int32")
    assert isinstance(n, nn.spec.Int)
    assert (ms.param_mode, ms.effect_mode) == ("plain", "plain")
    with pytest.raises(TypeError, match="takes 3 arguments"):
        nn.spec.MethodSpec.from_torch([torch.zeros(2)], forward)
    with pytest.raises(TypeError, match="argument 'n' is a str"):
        nn.spec.MethodSpec.from_torch([torch.zeros(2), torch.zeros(2), "4"], forward)
