"""TVM 0.20-0.24 names: tvm.tirx / tvm.s_tir / tvm.script.tirx / tvm_ffi as aliases of minitvm's
own objects, relax.get_pipeline, tvm.compile(relax_pipeline=), relax.backend and
Target.from_device; and TVM 0.24's quick-start tutorial flow, run under `import tvm`."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import BuildError, TargetError
from minitvm.relax.frontend import nn


def test_tirx_and_script_tirx_are_tir_itself():
    import minitvm.tirx.transform as tirx_transform

    from minitvm.script import tir, tirx

    assert tvm.tirx is tvm.tir
    assert tirx_transform is tvm.tir.transform
    assert tvm.tir.transform.__name__ == "minitvm.tir.transform"  # not a second copy
    assert tvm.tir.transform.__spec__.name == "minitvm.tir.transform"
    assert tirx is tir


def test_s_tir_names_are_the_schedule_tuning_and_dlight_objects():
    from minitvm.s_tir.dlight import gpu

    from minitvm.s_tir import dlight, meta_schedule

    assert tvm.s_tir.Schedule is tvm.tir.Schedule
    assert tvm.s_tir.ScheduleError is tvm.tir.schedule.ScheduleError
    assert tvm.s_tir.schedule is tvm.tir.schedule
    assert dlight is tvm.dlight and gpu is tvm.dlight.gpu
    assert meta_schedule is tvm.meta_schedule
    assert tvm.s_tir.transform.DefaultGPUSchedule is relax.transform.DefaultGPUSchedule
    assert tvm.s_tir.transform.Simplify is tvm.tir.transform.Simplify
    assert not hasattr(tvm.s_tir.transform, "NoSuchPass")


def test_ffi_names_serve_code_written_for_tvm_ffi():
    ffi = tvm.ffi
    assert ffi.Tensor is tvm.runtime.Tensor and ffi.Device is tvm.runtime.Device
    assert ffi.Function is tvm.runtime.PackedFunc
    assert ffi.get_global_func is tvm.get_global_func

    @ffi.register_global_func("test_modern.twice", override=True)
    def twice(x):
        return 2 * x

    assert ffi.get_global_func("test_modern.twice")(4) == 8
    assert ffi.device("cuda:1") == tvm.cuda(1) and ffi.device("cpu") == tvm.cpu(0)
    x = np.arange(3, dtype="float32")
    np.testing.assert_array_equal(ffi.from_dlpack(x).numpy(), x)
    with pytest.raises(tvm.error.ArgumentError, match="name:index"):
        ffi.device("cuda:x")


def test_target_from_device():
    assert tvm.target.Target.from_device(tvm.cpu()).kind.name == "llvm"
    assert tvm.target.Target.from_device(tvm.cuda(0)).kind.name == "cuda"
    assert tvm.target.Target.from_device(tvm.opencl(0)).kind.name == "opencl"
    assert tvm.target.Target.from_device("cpu").kind.name == "llvm"
    with pytest.raises(TargetError, match="no target kind runs on"):
        tvm.target.Target.from_device(object())


class _MLP(nn.Module):
    def __init__(self):
        self.fc1, self.fc2 = nn.Linear(8, 16), nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(nn.op.relu(self.fc1(x)))


def _mlp():
    rng = np.random.default_rng(2)
    mod, params = _MLP().export_tvm({"forward": {"x": nn.spec.Tensor((2, 8), "float32")}})
    ws = [rng.standard_normal(p.shape).astype("float32") for _, p in params]
    x = rng.standard_normal((2, 8)).astype("float32")
    ref = np.maximum(x @ ws[0].T + ws[1], 0) @ ws[2].T + ws[3]
    return mod, [x, *ws], ref


@pytest.mark.parametrize(
    "pipeline",
    [
        lambda m: relax.get_pipeline("zero")(m),
        lambda m: relax.get_pipeline("default_build")(m),
        lambda m: relax.get_pipeline("static_shape_tuning", target="llvm", total_trials=0)(m),
        lambda m: m,
    ],
    ids=["zero", "default_build", "static_shape_tuning", "none"],
)
def test_named_pipelines_then_compile_match_numpy(pipeline):
    mod, args, ref = _mlp()
    lowered = pipeline(mod)
    ex = tvm.compile(lowered, tvm.target.Target("llvm"))
    out = relax.VirtualMachine(ex, tvm.cpu())["forward"](*[tvm.runtime.tensor(a) for a in args])
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5)


def test_zero_pipeline_legalizes_and_fuses():
    mod, _, _ = _mlp()
    lowered = relax.get_pipeline("zero")(mod)
    calls = lowered.script()
    assert "R.matmul" not in calls and "call_tir" in calls
    assert any(isinstance(f, tvm.tir.PrimFunc) for _, f in lowered.functions_items())


def test_register_pipeline_and_compile_with_relax_pipeline():
    seen = []

    @relax.register_pipeline("test_modern_names.counting")
    def counting():
        def run(mod):
            seen.append(tvm.target.Target.current().kind.name)
            return relax.get_pipeline("zero")(mod)

        return tvm.ir.transform.Pass(run, "Counting")

    with pytest.raises(BuildError, match="already registered"):
        relax.register_pipeline("test_modern_names.counting")
    mod, args, ref = _mlp()
    ex = tvm.compile(mod, "llvm", relax_pipeline="test_modern_names.counting")
    assert seen == ["llvm"]  # run once, under the compile target
    out = relax.VirtualMachine(ex, tvm.cpu())["forward"](*[tvm.runtime.tensor(a) for a in args])
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(BuildError, match="unknown pipeline 'nope'"):
        relax.get_pipeline("nope")
    with pytest.raises(BuildError, match="bad arguments"):
        relax.get_pipeline("zero", bogus=1)


def test_backend_dispatch_passes_leave_the_module_unchanged():
    mod, _, _ = _mlp()
    assert relax.backend.DispatchSampling()(mod) is mod
    assert relax.backend.DispatchSortScan()(mod) is mod


QUICK_START = """
import sys, numpy as np, minitvm
sys.modules["tvm"] = minitvm
import tvm
from tvm import relax
from tvm.relax.frontend import nn

class MLPModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(256, 10)

    def forward(self, x):
        return self.fc2(self.relu1(self.fc1(x)))

mod, param_spec = MLPModel().export_tvm(spec={"forward": {"x": nn.spec.Tensor((1, 784), "float32")}})
mod = relax.get_pipeline("zero")(mod)
target = tvm.target.Target("llvm")
ex = tvm.compile(mod, target)
device = tvm.cpu()
vm = relax.VirtualMachine(ex, device)
data = np.random.rand(1, 784).astype("float32")
params = [np.random.rand(*p.shape).astype("float32") for _, p in param_spec]
out = vm["forward"](tvm.runtime.tensor(data, device=device),
                    *[tvm.runtime.tensor(p, device=device) for p in params]).numpy()
ref = np.maximum(data @ params[0].T + params[1], 0) @ params[2].T + params[3]
np.testing.assert_allclose(out, ref, rtol=1e-4)
from tvm.s_tir import dlight as dl
print("QUICKSTART OK")
"""


def test_tvm_024_quick_start_runs_under_import_tvm():
    code = textwrap.dedent(QUICK_START)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert "QUICKSTART OK" in proc.stdout, proc.stderr[-3000:]
