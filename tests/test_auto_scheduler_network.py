"""auto_scheduler.extract_tasks / TaskScheduler / ApplyHistoryBest on a small Relay model."""

import numpy as np

import minitvm as tvm
from minitvm import auto_scheduler, relay
from minitvm.contrib import graph_executor


def _model():
    x = relay.var("data", shape=(8, 16), dtype="float32")
    w = relay.var("w", shape=(24, 16), dtype="float32")
    y = relay.nn.relu(relay.nn.dense(x, w))
    mod = tvm.IRModule.from_expr(relay.Function([x, w], y))
    w_np = np.random.default_rng(1).standard_normal((24, 16)).astype("float32")
    return mod, {"w": tvm.nd.array(w_np)}, w_np


def test_extract_tune_and_apply_history_best(tmp_path):
    from minitvm.meta_schedule.relax_integration import lower_to_kernels

    mod, params, w_np = _model()
    log = str(tmp_path / "net.json")
    tasks, weights = auto_scheduler.extract_tasks(mod["main"], params, "llvm")
    assert tasks and all(w >= 1 for w in weights)
    assert "T.prim_func" in str(tasks[0].compute_dag) or "def main" in str(tasks[0].compute_dag)
    options = auto_scheduler.TuningOptions(
        num_measure_trials=4,
        measure_callbacks=[auto_scheduler.RecordToFile(log)],
        runner=auto_scheduler.LocalRunner(number=1, repeat=1, min_repeat_ms=0),
        verbose=0,
    )
    auto_scheduler.TaskScheduler(tasks, weights).tune(options)

    history = auto_scheduler.ApplyHistoryBest(log)
    rmod = auto_scheduler.relay_integration._relax_module(mod)
    kernels = lower_to_kernels(rmod, "llvm", params)
    with history:
        applied = tvm.relax.transform.ApplyCurrentDatabase()(kernels)
    tuned = [gv for gv, f in applied.functions_items() if f is not kernels[gv.name_hint]]
    assert tuned, "ApplyHistoryBest gave no kernel its tuned schedule"

    with history, tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    module = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    x = np.random.default_rng(2).standard_normal((8, 16)).astype("float32")
    module.set_input("data", tvm.nd.array(x))
    module.run()
    np.testing.assert_allclose(
        module.get_output(0).numpy(), np.maximum(x @ w_np.T, 0), rtol=1e-5, atol=1e-5
    )
