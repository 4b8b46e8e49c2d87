"""tvm.contrib.pipeline_executor(_build): stages on threads, results as if run in sequence."""

import gc
import json
import os
import threading
import time

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor, pipeline_executor, pipeline_executor_build
from minitvm.error import ArgumentError, BuildError, RuntimeError_

RNG = np.random.default_rng(0)
W0 = RNG.standard_normal((32, 16)).astype("float32")
B0 = RNG.standard_normal((32,)).astype("float32")
W1 = RNG.standard_normal((8, 32)).astype("float32")


def _stage0():
    x = relay.var("data", shape=(2, 16))
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, relay.const(W0)), relay.const(B0)))
    return tvm.IRModule.from_expr(relay.Function([x], y))


def _stage1(weight_as_param=False):
    h = relay.var("data_n_0", shape=(2, 32))
    w = relay.var("w1", shape=(8, 32)) if weight_as_param else relay.const(W1)
    y = relay.tanh(relay.nn.dense(h, w))
    params = [h, w] if weight_as_param else [h]
    return tvm.IRModule.from_expr(relay.Function(params, y))


def _whole():
    x = relay.var("data", shape=(2, 16))
    h = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, relay.const(W0)), relay.const(B0)))
    return tvm.IRModule.from_expr(
        relay.Function([x], relay.tanh(relay.nn.dense(h, relay.const(W1))))
    )


def _numpy(x):
    return np.tanh(np.maximum(x @ W0.T + B0, 0) @ W1.T)


def _config(mod0, mod1):
    cfg = pipeline_executor_build.PipelineConfig()
    for mod in (mod0, mod1):
        cfg[mod].target = "llvm"
        cfg[mod].dev = tvm.cpu(0)
    cfg["input"]["data"].connect(cfg[mod0]["input"]["data"])
    cfg[mod0]["output"][0].connect(cfg[mod1]["input"]["data_n_0"])
    cfg[mod1]["output"][0].connect(cfg["output"][0])
    return cfg


@pytest.fixture(scope="module")
def factory():
    mod0, mod1 = _stage0(), _stage1()
    return pipeline_executor_build.build(_config(mod0, mod1)), (mod0, mod1)


def _sequential(mods, x):
    value = x
    for mod, name in zip(mods, ("data", "data_n_0")):
        m = graph_executor.GraphModule(relay.build(mod, "llvm")["default"](tvm.cpu()))
        m.set_input(name, value)
        m.run()
        value = m.get_output(0).numpy()
    return value


def test_config_prints_tvm_summary():
    text = str(_config(_stage0(), _stage1()))
    assert "|data: mod0:data" in text and "|output(0) : mod1.output(0)" in text
    assert "|mod0.output(0)-> mod1.data_n_0" in text


def test_pipeline_equals_sequence_whole_graph_and_numpy(factory):
    fac, mods = factory
    pm = pipeline_executor.PipelineModule(fac)
    assert (pm.num_inputs, pm.num_outputs) == (1, 1)
    whole = graph_executor.GraphModule(relay.build(_whole(), "llvm")["default"](tvm.cpu()))
    xs = [RNG.standard_normal((2, 16)).astype("float32") for _ in range(6)]
    for x in xs:  # several runs in flight: outputs come back in order
        pm.set_input("data", tvm.nd.array(x))
        pm.run()
    assert pm.num_executing_pipeline == 6
    for x in xs:
        out = pm.get_output()[0].numpy()
        np.testing.assert_array_equal(out, _sequential(mods, x))  # same kernels: bit-identical
        whole.set_input("data", x)
        whole.run()
        np.testing.assert_allclose(out, whole.get_output(0).numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(out, _numpy(x), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(pm.get_input("data").numpy(), xs[-1])
    pm.close()


def test_export_and_load_library_round_trip(factory, tmp_path):
    fac, mods = factory
    config = fac.export_library(str(tmp_path))
    assert os.path.basename(config) == "config" and sorted(os.listdir(tmp_path)) == [
        "config", "mod0.so", "mod1.so"]  # fmt: skip
    pm = pipeline_executor.PipelineModule.load_library(config)
    x = RNG.standard_normal((2, 16)).astype("float32")
    pm.set_input("data", x)
    pm.run()
    np.testing.assert_array_equal(pm.get_output()[0].numpy(), _sequential(mods, x))


def _tamper(path, edit):
    with open(path) as f:
        doc = json.load(f)
    edit(doc)
    with open(path, "w") as f:
        json.dump(doc, f)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d["modules"][0].update(lib="../mod0.so"), "lib must be a file name here"),
        (lambda d: d["modules"][0].update(lib="/etc/passwd"), "lib must be a file name here"),
        (lambda d: d.update(extra=1), "expected the fields format, modules, pipeline"),
        (lambda d: d.update(format="pickle"), "format 'pickle' is not"),
        (
            lambda d: d["pipeline"]["outputs"].__setitem__(0, ["stage", 5, 0]),
            "output 0: bad source",
        ),
        (
            lambda d: d["pipeline"]["stages"][0]["inputs"].update(data=["stage", 1, 0]),
            "stage 0 input 'data': bad source",
        ),
        (lambda d: d["pipeline"]["stages"][0].update(cpu_affinity=["0"]), "malformed stage 0"),
        (lambda d: d["modules"][1].update(dev=[1, -1]), "malformed module entry"),
    ],
)
def test_load_library_validates_every_field(factory, tmp_path, edit, message):
    fac, _ = factory
    config = fac.export_library(str(tmp_path))
    _tamper(config, edit)
    with pytest.raises(RuntimeError_, match=message):
        pipeline_executor.PipelineModule.load_library(config)


def test_load_library_refuses_non_json(tmp_path):
    path = tmp_path / "config"
    path.write_text("{not json")
    with pytest.raises(RuntimeError_, match="not valid JSON"):
        pipeline_executor.PipelineModule.load_library(str(path))


def test_param_group_sets_a_stage_parameter():
    mod0, mod1 = _stage0(), _stage1(weight_as_param=True)
    cfg = _config(mod0, mod1)
    cfg["param_group"]["param_0"].connect(cfg[mod1]["param"])
    pm = pipeline_executor.PipelineModule(pipeline_executor_build.build(cfg))
    x = RNG.standard_normal((2, 16)).astype("float32")
    pm.set_params("param_0", {"w1": tvm.nd.array(W1)})
    pm.set_input("data", x)
    pm.run()
    pm.set_params("param_0", {"w1": tvm.nd.array(2 * W1)})  # later runs only
    pm.run()
    first, second = pm.get_output()[0].numpy(), pm.get_output()[0].numpy()
    np.testing.assert_allclose(first, _numpy(x), rtol=1e-4, atol=1e-5)
    h = np.maximum(x @ W0.T + B0, 0)
    np.testing.assert_allclose(second, np.tanh(h @ (2 * W1).T), rtol=1e-4, atol=1e-5)
    with pytest.raises(ArgumentError, match="no param group 'nope'"):
        pm.set_params("nope", {})


def test_stage_errors_reach_get_output(factory):
    fac, _ = factory
    pm = pipeline_executor.PipelineModule(fac)
    pm.set_input("data", np.zeros((2, 16), "float64"))  # wrong dtype: the stage refuses it
    pm.run()
    with pytest.raises(RuntimeError_, match="a stage failed: .*dtype float32"):
        pm.get_output()
    with pytest.raises(ArgumentError, match="no run is pending"):
        pm.get_output()


def test_bad_connections_are_refused():
    mod0, mod1 = _stage0(), _stage1()
    cfg = pipeline_executor_build.PipelineConfig()
    with pytest.raises(BuildError, match="is not a pipeline connection"):
        cfg["input"]["data"].connect(cfg["output"][0])
    with pytest.raises(BuildError, match="no input named 'nope'"):
        cfg[mod0]["input"]["nope"]
    cfg[mod0]["output"][0].connect(cfg[mod1]["input"]["data_n_0"])
    with pytest.raises(BuildError, match="already fed by"):
        cfg[mod0]["output"][0].connect(cfg[mod1]["input"]["data_n_0"])
    with pytest.raises(BuildError, match="input 'data' is not connected"):
        pipeline_executor_build.build(_half_config(mod0, mod1))
    with pytest.raises(ArgumentError, match="PipelineModule expects"):
        pipeline_executor.PipelineModule("config")


def _half_config(mod0, mod1):
    cfg = pipeline_executor_build.PipelineConfig()
    cfg[mod0]["input"]["data"]  # made but never connected
    cfg[mod0]["output"][0].connect(cfg[mod1]["input"]["data_n_0"])
    cfg[mod1]["output"][0].connect(cfg["output"][0])
    return cfg


def test_get_output_without_waiting_polls_until_ready(factory):
    fac, _ = factory
    pm = pipeline_executor.PipelineModule(fac)
    pm.set_input("data", np.ones((2, 16), "float32"))
    pm.run()
    out = None
    for _ in range(1000):
        out = pm.get_output(synchronize=False)
        if out is not None:
            break
        time.sleep(0.01)
    assert out is not None and out[0].shape == (2, 8)
    assert pm.num_executing_pipeline == 0


def _stage_threads():
    return [t for t in threading.enumerate() if t.name.startswith("pipeline-stage-")]


def test_close_and_garbage_collection_stop_the_stage_threads(factory):
    fac, _ = factory
    gc.collect()
    before = len(_stage_threads())
    pm = pipeline_executor.PipelineModule(fac)
    assert len(_stage_threads()) == before + 2
    pm.set_input("data", np.ones((2, 16), "float32"))
    pm.run()
    pm.close()
    pm.get_output()  # the run started before close still finishes
    del pm
    pm = pipeline_executor.PipelineModule(fac)
    del pm  # never closed: dropping it stops its threads
    gc.collect()
    for _ in range(500):
        if len(_stage_threads()) == before:
            break
        time.sleep(0.01)
    assert len(_stage_threads()) == before
