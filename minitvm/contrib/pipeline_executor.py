"""TVM's pipeline executor: stages (graph executor modules) run on their own threads, joined by
queues, so run n+1's first stage overlaps run n's later ones.

    m = pipeline_executor.PipelineModule(factory)   # or PipelineModule.load_library(config)
    m.set_input("data", x); m.run(); outputs = m.get_output()

Each `run()` snapshots the current inputs and params; `get_output()` returns the outputs of the
oldest run not yet collected, in order. The results equal running the stages one after another.
"""

from __future__ import annotations

import json
import os
import queue
import threading
from typing import Any

import numpy as np

from ..error import ArgumentError, RuntimeError_
from ..runtime import Device
from ..runtime import ndarray as _nd
from .graph_executor import GraphModule

CONFIG_FORMAT = "minitvm.pipeline_executor/1"
CONFIG_FILE = "config"
_MAX_CONFIG_BYTES = 1 << 20
_STOP = object()


class PipelineExecutorFactoryModule:
    """What `build` returns: each stage's built library, its device, and the wiring."""

    def __init__(self, libs: list[Any], devices: list[Device], config: dict):
        self.libs, self.devices, self.config = libs, devices, config

    @property
    def num_stages(self) -> int:
        return len(self.libs)

    def export_library(self, directory_path: str) -> str:
        """Write mod<i>.so per stage and a JSON `config` in `directory_path`; returns the
        config's path (for `PipelineModule.load_library`). The directory is made if missing."""
        os.makedirs(directory_path, exist_ok=True)
        modules = []
        for i, (lib, dev) in enumerate(zip(self.libs, self.devices)):
            name = f"mod{i}.so"
            lib.export_library(os.path.join(directory_path, name))
            modules.append({"lib": name, "dev": [dev.device_type, dev.device_id]})
        doc = {"format": CONFIG_FORMAT, "modules": modules, "pipeline": self.config}
        path = os.path.join(directory_path, CONFIG_FILE)
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
        return path


class _Frame:
    """One run travelling down the pipeline: its inputs, params, every stage's outputs."""

    def __init__(self, inputs: dict[str, np.ndarray], params: dict[str, dict]):
        self.inputs, self.params = inputs, params
        self.outputs: dict[tuple[int, int], np.ndarray] = {}
        self.error: BaseException | None = None

    def value(self, src: list) -> np.ndarray:
        """The value of a source: ["input", name] or ["stage", stage index, output index]."""
        return self.inputs[src[1]] if src[0] == "input" else self.outputs[(src[1], src[2])]


class PipelineModule:
    """Runs a `PipelineExecutorFactoryModule` as a thread pipeline (one thread per stage)."""

    def __init__(self, module: PipelineExecutorFactoryModule):
        if not isinstance(module, PipelineExecutorFactoryModule):
            raise ArgumentError(
                f"PipelineModule expects pipeline_executor_build.build(...)'s result, got "
                f"{type(module).__name__}; load an export with PipelineModule.load_library"
            )
        self.config = module.config
        self.stages = [
            GraphModule(lib["default"](dev)) for lib, dev in zip(module.libs, module.devices)
        ]
        self._inputs: dict[str, np.ndarray] = {}
        self._params: dict[str, dict] = {}
        self._queues = [queue.Queue() for _ in range(len(self.stages) + 1)]
        self._pending = 0
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(
                target=_stage_loop,
                args=(i, stage, spec, self._queues[i], self._queues[i + 1]),
                daemon=True,
                name=f"pipeline-stage-{i}",
            )
            for i, (stage, spec) in enumerate(zip(self.stages, self.config["stages"]))
        ]
        for t in self._threads:
            t.start()

    @staticmethod
    def load_library(config_file_name: str) -> PipelineModule:
        """A PipelineModule from the `config` file export_library wrote (data only: every
        field is checked; the stage libraries load through runtime.load_module)."""
        return PipelineModule(_load_factory(config_file_name))

    # ------------------------------------------------------------------ inputs
    @property
    def num_inputs(self) -> int:
        return len(self.config["inputs"])

    @property
    def num_outputs(self) -> int:
        return len(self.config["outputs"])

    @property
    def num_executing_pipeline(self) -> int:
        """Runs started and not yet collected by get_output."""
        return self._pending

    def get_input_pipeline_map(self, name: str) -> tuple[str, str]:
        """(stage index, input name) the global input `name` feeds (the first one)."""
        self._check_input(name)
        idx, inner = self.config["inputs"][name][0]
        return str(idx), inner

    def _check_input(self, key: str) -> None:
        if key not in self.config["inputs"]:
            raise ArgumentError(
                f"pipeline: no global input named {key!r}; inputs: {list(self.config['inputs'])}"
            )

    def set_input(self, key: str, value: Any) -> None:
        """Set global input `key` for the following run() calls."""
        self._check_input(key)
        self._inputs[key] = np.array(value.numpy() if hasattr(value, "numpy") else value)

    def get_input(self, key: str) -> Any:
        self._check_input(key)
        if key not in self._inputs:
            raise ArgumentError(f"pipeline get_input: input {key!r} is not set")
        return _nd.array(self._inputs[key])

    def set_params(self, params_group_name: str, params_data: dict) -> None:
        """Set the params of the stages connected to param group `params_group_name`."""
        groups = {g for s in self.config["stages"] for g in s["params"]}
        if params_group_name not in groups:
            raise ArgumentError(
                f"pipeline set_params: no param group {params_group_name!r}; "
                f"groups: {sorted(groups)}"
            )
        self._params[params_group_name] = {
            k: np.array(v.numpy() if hasattr(v, "numpy") else v) for k, v in params_data.items()
        }

    # ------------------------------------------------------------------ running
    def run(self) -> None:
        """Start one run on the current inputs; it returns before the run finishes."""
        missing = [n for n in self.config["inputs"] if n not in self._inputs]
        if missing:
            raise ArgumentError(f"pipeline run: inputs {missing} are not set; call set_input")
        with self._lock:
            self._pending += 1
        self._queues[0].put(_Frame(dict(self._inputs), dict(self._params)))

    def get_output(self, synchronize: bool = True, sleep_interval: int = 100) -> list | None:
        """The outputs of the oldest uncollected run (waits for it unless synchronize=False,
        which returns None when it is not ready)."""
        if self._pending == 0:
            raise ArgumentError("pipeline get_output: no run is pending; call run() first")
        try:
            frame = self._queues[-1].get(block=synchronize)
        except queue.Empty:
            return None
        if frame is _STOP:
            raise RuntimeError_("pipeline get_output: the pipeline was closed")
        with self._lock:
            self._pending -= 1
        if frame.error is not None:
            raise RuntimeError_(f"pipeline: a stage failed: {frame.error}") from frame.error
        return [_nd.array(frame.value(src)) for src in self.config["outputs"]]

    def close(self) -> None:
        """Stop the stage threads (also done when the module is garbage-collected)."""
        if self._threads:
            self._queues[0].put(_STOP)
            self._threads = []

    def __del__(self) -> None:
        queues = getattr(self, "_queues", None)
        if queues and getattr(self, "_threads", None):
            queues[0].put(_STOP)


def _stage_loop(idx: int, stage: GraphModule, spec: dict, inbox: queue.Queue, outbox: queue.Queue):
    """One stage's thread: run each frame through the stage, pass it on (no reference to the
    PipelineModule, so dropping the module stops its threads)."""
    if spec["cpu_affinity"] and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, spec["cpu_affinity"])  # pid 0: this thread on Linux
    while True:
        frame = inbox.get()
        if frame is _STOP:
            outbox.put(_STOP)
            return
        if frame.error is None:
            try:
                _run_stage(idx, stage, spec, frame)
            except Exception as err:  # noqa: BLE001 - carried to get_output, re-raised there
                frame.error = err
        outbox.put(frame)


def _run_stage(idx: int, stage: GraphModule, spec: dict, frame: _Frame) -> None:
    for group in spec["params"]:
        if group in frame.params:
            stage.set_input(**frame.params[group])
    for name, src in spec["inputs"].items():
        stage.set_input(name, frame.value(src))
    stage.run()
    for o in range(stage.get_num_outputs()):
        frame.outputs[(idx, o)] = stage.get_output(o).numpy().copy()


# ----------------------------------------------------------------------------- loading


def _fail(path: str, what: str) -> RuntimeError_:
    return RuntimeError_(f"PipelineModule.load_library('{path}'): {what}; export it again")


def _is_index(value: Any, bound: int) -> bool:
    return type(value) is int and 0 <= value < bound


def _check_source(path: str, src: Any, inputs: dict, before: int, where: str) -> None:
    """A value source: ["input", name] of a global input, or ["stage", i, out] of an earlier
    stage (i < before)."""
    ok = isinstance(src, list) and src and src[0] in ("input", "stage")
    if ok and src[0] == "input":
        ok = len(src) == 2 and isinstance(src[1], str) and src[1] in inputs
    elif ok:
        ok = len(src) == 3 and _is_index(src[1], before) and _is_index(src[2], 1 << 16)
    if not ok:
        raise _fail(path, f"{where}: bad source {src!r}")


def _check_config(path: str, doc: Any) -> dict:
    """Every field of the config has the expected type and points inside the pipeline."""
    if not isinstance(doc, dict) or set(doc) != {"format", "modules", "pipeline"}:
        raise _fail(path, "expected the fields format, modules, pipeline")
    if doc["format"] != CONFIG_FORMAT:
        raise _fail(path, f"format {doc['format']!r} is not {CONFIG_FORMAT!r}")
    modules, pipe = doc["modules"], doc["pipeline"]
    if not isinstance(modules, list) or not modules:
        raise _fail(path, "modules must be a non-empty list")
    for m in modules:
        ok = isinstance(m, dict) and set(m) == {"lib", "dev"} and isinstance(m["lib"], str)
        ok = ok and os.path.basename(m["lib"]) == m["lib"] and m["lib"] not in ("", ".", "..")
        ok = ok and isinstance(m["dev"], list) and len(m["dev"]) == 2
        if not ok or not all(_is_index(d, 1 << 16) for d in m["dev"]):
            raise _fail(path, f"malformed module entry {m!r} (lib must be a file name here)")
    if not isinstance(pipe, dict) or set(pipe) != {"inputs", "outputs", "stages"}:
        raise _fail(path, "pipeline must have the fields inputs, outputs, stages")
    inputs, stages, n = pipe["inputs"], pipe["stages"], len(modules)
    if not isinstance(inputs, dict) or not isinstance(stages, list) or len(stages) != n:
        raise _fail(path, "pipeline inputs must be a dict and stages one entry per module")
    for name, targets in inputs.items():
        ok = isinstance(targets, list) and all(
            isinstance(t, list) and len(t) == 2 and _is_index(t[0], n) and isinstance(t[1], str)
            for t in targets
        )
        if not ok:
            raise _fail(path, f"input {name!r}: bad targets {targets!r}")
    for i, s in enumerate(stages):
        ok = isinstance(s, dict) and set(s) == {"inputs", "cpu_affinity", "params"}
        ok = ok and isinstance(s["inputs"], dict) and isinstance(s["params"], list)
        ok = ok and all(isinstance(p, str) for p in s["params"])
        ok = ok and isinstance(s["cpu_affinity"], list)
        if not ok or not all(_is_index(c, 1 << 16) for c in s["cpu_affinity"]):
            raise _fail(path, f"malformed stage {i}")
        for name, src in s["inputs"].items():
            _check_source(path, src, inputs, i, f"stage {i} input {name!r}")
    if not isinstance(pipe["outputs"], list):
        raise _fail(path, "pipeline outputs must be a list")
    for k, src in enumerate(pipe["outputs"]):
        _check_source(path, src, inputs, n, f"output {k}")
    return doc


def _load_factory(path: str) -> PipelineExecutorFactoryModule:
    from ..runtime import device, load_module

    if not isinstance(path, str | os.PathLike) or not os.path.isfile(path):
        raise RuntimeError_(f"PipelineModule.load_library: {path!r} is not a file")
    if os.path.getsize(path) > _MAX_CONFIG_BYTES:
        raise _fail(str(path), "the config is larger than 1 MiB")
    with open(path, encoding="utf-8") as f:
        try:
            doc = json.load(f)
        except (ValueError, RecursionError) as err:
            raise _fail(str(path), f"not valid JSON ({err})") from err
    doc = _check_config(str(path), doc)
    folder = os.path.dirname(os.path.abspath(path))
    libs, devices = [], []
    for m in doc["modules"]:
        lib = load_module(os.path.join(folder, m["lib"]))
        if not hasattr(lib, "create") or not hasattr(lib, "graph"):
            raise _fail(str(path), f"{m['lib']} is not a relay.build library")
        libs.append(lib)
        devices.append(_device(device, m["dev"], str(path)))
    return PipelineExecutorFactoryModule(libs, devices, doc["pipeline"])


def _device(make: Any, dev: list, path: str) -> Device:
    try:
        return make(dev[0], dev[1])
    except RuntimeError_ as err:
        raise _fail(path, f"unknown device {dev!r}") from err
