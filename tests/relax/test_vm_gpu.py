"""relax.build for opencl/cuda and the VM on a GPU device: zoo models and a small
conv+batchnorm+relu+pool+dense net match the CPU build and numpy; device-placement errors.

OpenCL runs here through PoCL; the CUDA cases run wherever a CUDA device is present."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import ArgumentError
from minitvm.relax import pipeline
from minitvm.runtime.ndarray import DeviceNDArray
from minitvm.testing import zoo

_DEVICES = {"opencl": tvm.opencl(0), "cuda": tvm.cuda(0)}


def _device(kind):
    dev = _DEVICES[kind]
    reason = dev.unavailable_reason()
    if reason is not None:
        pytest.skip(f"no {kind} device: {reason}")
    return dev


gpu = pytest.mark.parametrize("kind", ["opencl", "cuda"])


def _zoo(name, batch):
    mod, params = zoo.get_model(name, batch_size=batch)
    mod = relax.transform.BindParams("main", params)(mod)
    x = np.random.default_rng(1).standard_normal(zoo.input_shape(name, batch)).astype("float32")
    return mod, x


@gpu
@pytest.mark.parametrize("name", ["mlp", "lenet"])
def test_zoo_model_on_gpu_matches_cpu_build(kind, name):
    dev = _device(kind)
    mod, x = _zoo(name, 2)
    want = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())["main"](x).numpy()
    ex = relax.build(mod, target=kind)
    assert ex.mod.type_key == kind
    vm = relax.VirtualMachine(ex, dev)
    for _ in range(2):  # the second call reuses the frame made by the first
        out = vm["main"](tvm.nd.array(x, dev))
        assert isinstance(out, DeviceNDArray) and out.device == dev
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-5)
    assert all(isinstance(c, DeviceNDArray) and c.device == dev for c in vm._constants)


def _small_net():
    """conv 3x3 (8 channels, pad 1) -> batch_norm -> relu -> 2x2 max pool -> flatten -> dense."""
    bb = relax.BlockBuilder()
    f32 = "float32"
    x = relax.Var("x", relax.TensorStructInfo((2, 3, 12, 12), f32))
    w = relax.Var("w", relax.TensorStructInfo((8, 3, 3, 3), f32))
    bn = [relax.Var(n, relax.TensorStructInfo((8,), f32)) for n in ("gamma", "beta", "mean", "var")]
    fw = relax.Var("fw", relax.TensorStructInfo((10, 8 * 6 * 6), f32))
    fb = relax.Var("fb", relax.TensorStructInfo((10,), f32))
    op = relax.op
    with bb.function("main", [x, w, *bn, fw, fb]):
        with bb.dataflow():
            y = bb.emit(op.nn.conv2d(x, w, 1, 1))
            y = bb.emit(
                relax.TupleGetItem(bb.emit(op.nn.batch_norm(y, *bn, axis=1, training=False)), 0)
            )
            y = bb.emit(op.nn.max_pool2d(bb.emit(op.nn.relu(y)), 2, 2, 0))
            y = bb.emit(op.reshape(y, (2, 8 * 6 * 6)))
            out = bb.emit_output(op.linear(y, fw, fb))
        bb.emit_func_output(out)
    return bb.get()


def _small_net_numpy(x, w, gamma, beta, mean, var, fw, fb):
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # n c i j kh kw
    y = np.einsum("ncijhw,ochw->noij", win, w)
    y = (y - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5) * gamma[:, None, None]
    y = np.maximum(y + beta[:, None, None], 0)
    y = y.reshape(2, 8, 6, 2, 6, 2).max(axis=(3, 5)).reshape(2, -1)
    return y @ fw.T + fb


@gpu
def test_conv_bn_relu_pool_dense_on_gpu_matches_numpy(kind):
    dev = _device(kind)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 12, 12)).astype("float32")
    w = rng.standard_normal((8, 3, 3, 3)).astype("float32")
    gamma, beta, mean = (rng.standard_normal(8).astype("float32") for _ in range(3))
    var = rng.uniform(0.5, 2.0, 8).astype("float32")
    fw = (rng.standard_normal((10, 288)) * 0.1).astype("float32")
    fb = rng.standard_normal(10).astype("float32")
    want = _small_net_numpy(x, w, gamma, beta, mean, var, fw, fb)
    # conv and batch-norm weights bound (device constants), the dense ones passed at run time
    params = {"w": w, "gamma": gamma, "beta": beta, "mean": mean, "var": var}
    ex = relax.build(_small_net(), target=kind, params=params)
    vm = relax.VirtualMachine(ex, dev)
    out = vm["main"](*(tvm.nd.array(a, dev) for a in (x, fw, fb)))
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)
    cpu = relax.VirtualMachine(relax.build(_small_net(), target="llvm", params=params), tvm.cpu())
    np.testing.assert_allclose(out.numpy(), cpu["main"](x, fw, fb).numpy(), rtol=1e-4, atol=1e-5)


@gpu
def test_host_inputs_are_refused_by_name(kind):
    dev = _device(kind)
    mod, x = _zoo("mlp", 1)
    vm = relax.VirtualMachine(relax.build(mod, target=kind), dev)
    with pytest.raises(ArgumentError, match=r"argument 'data' \(position 0\) is a numpy\.ndarray in host "
                       r"memory.*tvm\.nd\.array\(x, dev\)"):  # fmt: skip
        vm["main"](x)
    with pytest.raises(ArgumentError, match=r"argument 'data' \(position 0\) is on cpu\(0\)"):
        vm["main"](tvm.nd.array(x))


@gpu
def test_executable_and_device_must_agree(kind):
    dev = _device(kind)
    mod, _ = _zoo("mlp", 1)
    with pytest.raises(ArgumentError, match=rf"built for 'llvm'.*target='{kind}'"):
        relax.VirtualMachine(relax.build(mod, target="llvm"), dev)
    with pytest.raises(ArgumentError, match=rf"built for '{kind}'.*target='llvm'"):
        relax.VirtualMachine(relax.build(mod, target=kind), tvm.cpu())


@gpu
def test_time_evaluator_on_gpu(kind):
    dev = _device(kind)
    mod, x = _zoo("mlp", 2)
    vm = relax.VirtualMachine(relax.build(mod, target=kind), dev)
    result = vm.time_evaluator("main", dev, number=2, repeat=2)(tvm.nd.array(x, dev))
    assert len(result.results) == 2 and min(result.results) > 0


@gpu
def test_symbolic_batch_on_gpu(kind):
    dev = _device(kind)
    mod, params = zoo.get_model("mlp", batch_size=None)
    mod = relax.transform.BindParams("main", params)(mod)
    vm = relax.VirtualMachine(relax.build(mod, target=kind), dev)
    cpu = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    for batch in (3, 1):
        x = np.random.default_rng(batch).standard_normal((batch, 1, 28, 28)).astype("float32")
        out = vm["main"](tvm.nd.array(x, dev)).numpy()
        np.testing.assert_allclose(out, cpu["main"](x).numpy(), rtol=1e-4, atol=1e-6)


def test_gpu_pipeline_skips_cpu_layout_and_schedule():
    names = [p.name for p in pipeline.default_passes(
        "opencl", steps=pipeline.GPU_GRAPH_PIPELINE + pipeline.GPU_DEFAULT_PIPELINE)]  # fmt: skip
    assert "DefaultGPUSchedule" in names and "FuseOps" in names
    assert "AlterOpLayout" not in names and "DefaultSchedule" not in names
    cpu = [p.name for p in pipeline.default_passes(
        "llvm", steps=pipeline.GRAPH_PIPELINE + pipeline.DEFAULT_PIPELINE)]  # fmt: skip
    assert "AlterOpLayout" in cpu and "DefaultSchedule" in cpu and "DefaultGPUSchedule" not in cpu


@gpu
def test_gpu_executable_exports_and_loads(kind, tmp_path):
    dev = _device(kind)
    mod, x = _zoo("lenet", 1)
    ex = relax.build(mod, target=kind)
    path = str(tmp_path / "lenet_gpu.zip")
    ex.export_library(path)
    loaded = tvm.runtime.load_module(path)
    assert loaded.mod.type_key == kind
    assert loaded.mod.get_source() == ex.mod.get_source()
    want = relax.VirtualMachine(ex, dev)["main"](tvm.nd.array(x, dev)).numpy()
    got = relax.VirtualMachine(loaded, dev)["main"](tvm.nd.array(x, dev)).numpy()
    np.testing.assert_array_equal(got, want)


@gpu
def test_profile_on_gpu_lists_the_kernels(kind):
    dev = _device(kind)
    mod, x = _zoo("mlp", 1)
    ex = relax.build(mod, target=kind)
    report = relax.VirtualMachine(ex, dev).profile("main", tvm.nd.array(x, dev))
    kernels = {f["name"] for f in ex.mod.func_infos}
    assert kernels and kernels <= {row[0] for row in report.rows}


@gpu
def test_gpu_intermediates_share_the_planned_storages(kind):
    dev = _device(kind)
    mod, x = _zoo("lenet", 1)
    ex = relax.build(mod, target=kind)
    vm = relax.VirtualMachine(ex, dev)
    vm["main"](tvm.nd.array(x, dev))
    (frame,) = vm._functions["main"].frames.values()
    planned = [frame.regs[dst] for dst, *_ in vm._functions["main"].planned]
    stats = ex.memory_stats("main")
    assert len(planned) == stats["num_intermediates"] > stats["num_storages"]
    assert len(frame.storages) == stats["num_storages"]
    assert len({id(t.handle) for t in planned}) == stats["num_storages"]
