"""TVM's graph executor API over a relax VM Executable: what `relay.build` returns.

`relay.build` gives a `GraphExecutorFactoryModule`; `lib["default"](dev)` makes a runtime
instance, wrapped by `GraphModule` (`set_input`, `run`, `get_output`, `benchmark`).
`export_library` writes the relax Executable's zip (object code, program.json, constants)
plus graph.json (input and output names, shapes, dtypes); `tvm.runtime.load_module` reads it
back without compiling.
"""

from __future__ import annotations

import json
import time
import zipfile
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..error import ArgumentError, DTypeError, MiniTVMError, RuntimeError_, ShapeError
from ..runtime import Device, NDArray, cpu
from ..runtime import module as _rt_module
from ..runtime import ndarray as _nd
from ..runtime.device_module import DeviceModule

KIND = "relay.GraphExecutorFactory"
_GRAPH = "graph.json"


def _tensor_info(name: str, shape: Sequence[int], dtype: str) -> dict:
    return {"name": name, "shape": [int(d) for d in shape], "dtype": str(dtype)}


class GraphExecutorFactoryModule:
    """A built Relay program: `lib["default"](dev)` makes an executor; `export_library` saves it.

    `graph` holds the program's inputs, outputs and the parameters bound at build time.
    """

    def __init__(self, executable: Any, graph: dict, mod_name: str = "default"):
        self.executable = executable
        self.graph = graph
        self.mod_name = mod_name

    # TVM's attributes of the factory
    @property
    def graph_json(self) -> str:
        return json.dumps(self.graph)

    @property
    def lib(self) -> GraphExecutorFactoryModule:
        return self

    @property
    def params(self) -> dict:
        return {}  # bound into the executable as constants at build time

    def get_graph_json(self) -> str:
        return self.graph_json

    def get_lib(self) -> GraphExecutorFactoryModule:
        """The compiled code (the factory itself: kernels and VM program travel together)."""
        return self

    def get_params(self) -> dict:
        return {}

    def __iter__(self):
        """The pre-2020 `graph, lib, params = relay.build(...)` unpacking."""
        return iter((self.graph_json, self, {}))

    def __getitem__(self, key: str) -> Any:
        if key != self.mod_name:
            raise MiniTVMError(
                f"the built module is named {self.mod_name!r}; use lib[{self.mod_name!r}](dev), "
                f"not lib[{key!r}]"
            )
        return self.create

    def create(self, device: Device | None = None) -> GraphRuntime:
        """A fresh executor instance on `device` (inputs unset)."""
        return GraphRuntime(self, device or cpu(0))

    def export_library(self, file_name: str, fcompile: Any = None, **unused_options: Any) -> None:
        """One zip file (whatever the suffix: .tar, .so) that `tvm.runtime.load_module` reads."""
        from ..relax.vm import executable as _exe

        ex = self.executable
        extra = {_exe._PROGRAM: json.dumps(ex.program).encode(), _GRAPH: self.graph_json.encode()}
        for i, a in enumerate(ex.constants):
            extra[f"{_exe._CONST_DIR}{i}.npy"] = _npy_bytes(a)
        native = ex.mod
        if isinstance(native, DeviceModule):  # GPU kernels travel as their JSON and source
            extra.update(_exe._device_members(native))
            native = None
        _rt_module.write_module_zip(file_name, native, kind=KIND, extra=extra)

    def __repr__(self) -> str:
        names = [i["name"] for i in self.graph["inputs"]]
        return (
            f"<GraphExecutorFactoryModule inputs={names}, {len(self.graph['outputs'])} output(s)>"
        )


def _npy_bytes(a: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


class GraphRuntime:
    """One executor instance: the VM, the current inputs and the last outputs."""

    def __init__(self, factory: GraphExecutorFactoryModule, device: Device):
        from ..relax.vm import VirtualMachine

        self.factory = factory
        self.device = device
        self.vm = VirtualMachine(factory.executable, device)
        self.input_info = factory.graph["inputs"]
        self.output_info = factory.graph["outputs"]
        self.inputs: list[NDArray | None] = [None] * len(self.input_info)
        self.outputs: list[NDArray] = []


class GraphModule:
    """TVM's graph executor wrapper: `m = GraphModule(lib["default"](dev)); m.set_input("data",
    x); m.run(); y = m.get_output(0).numpy()`."""

    def __init__(self, module: Any):
        if isinstance(module, GraphModule):
            module = module.module
        if not isinstance(module, GraphRuntime):
            raise ArgumentError(
                f"GraphModule expects lib['default'](dev) of a relay.build result, got "
                f"{type(module).__name__}"
            )
        self.module = module
        self._names = [i["name"] for i in module.input_info]

    # ------------------------------------------------------------------ inputs
    def _index(self, key: int | str) -> int:
        if isinstance(key, int):
            if not 0 <= key < len(self._names):
                raise ArgumentError(
                    f"input index {key} out of range: the module has {len(self._names)} "
                    f"input(s) {self._names}"
                )
            return key
        if key in self._names:
            return self._names.index(key)
        bound = key in self.module.factory.graph.get("bound_params", ())
        why = (
            " (it is a parameter bound as a constant by relay.build(..., params=); rebuild to "
            "change it)"
            if bound
            else ""
        )
        raise ArgumentError(f"set_input: no input named {key!r}{why}; the inputs are {self._names}")

    def get_input_index(self, name: str) -> int:
        return self._index(name)

    def set_input(self, key: int | str | None = None, value: Any = None, **params: Any) -> None:
        """Set input `key` (name or index) to `value`, and every `name=value` in `params`."""
        if key is not None:
            self._set(self._index(key), value)
        for name, v in params.items():
            self._set(self._index(name), v)

    def _set(self, index: int, value: Any) -> None:
        info = self.module.input_info[index]
        array = value.numpy() if hasattr(value, "numpy") else np.asarray(value)
        if list(array.shape) != info["shape"]:
            raise ShapeError(
                f"set_input: input {info['name']!r} has shape {tuple(info['shape'])}, got an "
                f"array of shape {array.shape}"
            )
        if str(array.dtype) != info["dtype"]:
            raise DTypeError(
                f"set_input: input {info['name']!r} has dtype {info['dtype']}, got "
                f"{array.dtype}; convert with .astype({info['dtype']!r})"
            )
        current = self.module.inputs[index]
        if current is None:
            self.module.inputs[index] = _nd.array(array, self.module.device)
        else:
            current.copyfrom(array)

    def load_params(self, params_bytes: bytes | bytearray) -> None:
        """Set inputs from `relay.save_param_dict` bytes."""
        from ..runtime.params import load_param_dict

        self.set_input(**load_param_dict(params_bytes))

    def get_input(self, index: int | str, out: NDArray | None = None) -> NDArray:
        value = self.module.inputs[self._index(index)]
        if value is None:
            raise ArgumentError(f"get_input: input {self._names[self._index(index)]!r} is not set")
        return value if out is None else out.copyfrom(value)

    def get_num_inputs(self) -> int:
        return len(self._names)

    def get_input_info(self) -> tuple[dict, dict]:
        """({name: shape}, {name: dtype}) of the inputs."""
        info = self.module.input_info
        return ({i["name"]: tuple(i["shape"]) for i in info}, {i["name"]: i["dtype"] for i in info})

    # ------------------------------------------------------------------ running
    def run(self, **input_dict: Any) -> None:
        """Run the program on the current inputs (after setting those given by name)."""
        if input_dict:
            self.set_input(**input_dict)
        missing = [n for n, v in zip(self._names, self.module.inputs) if v is None]
        if missing:
            raise ArgumentError(f"run: inputs {missing} are not set; call set_input first")
        out = self.module.vm["main"](*self.module.inputs)
        self.module.outputs = list(out) if isinstance(out, tuple | list) else [out]

    def get_num_outputs(self) -> int:
        return len(self.module.output_info)

    def get_output(self, index: int, out: NDArray | None = None) -> NDArray:
        """Output `index` of the last run, copied into `out` when given."""
        n = self.get_num_outputs()
        if not 0 <= index < n:
            raise ArgumentError(f"get_output: index {index} out of range; the module has {n}")
        if not self.module.outputs:
            raise ArgumentError("get_output: the module has not run yet; call run() first")
        value = self.module.outputs[index]
        if out is None:
            return value
        if tuple(out.shape) != tuple(value.shape) or str(out.dtype) != str(value.dtype):
            raise ShapeError(
                f"get_output({index}): out is {tuple(out.shape)} {out.dtype}, the output is "
                f"{tuple(value.shape)} {value.dtype}"
            )
        return out.copyfrom(value)

    def benchmark(
        self,
        device: Device | None = None,
        func_name: str = "run",
        repeat: int = 5,
        number: int = 5,
        min_repeat_ms: float | None = None,
        end_to_end: bool = False,
        **kwargs: Any,
    ) -> BenchmarkResult:
        """Time `run()`: `repeat` rounds of `number` runs after one warm-up run."""
        if func_name != "run":
            raise ArgumentError(f"benchmark: only func_name='run' is supported, got {func_name!r}")
        if kwargs:
            self.set_input(**kwargs)
        self.run()
        results = []
        for _ in range(repeat):
            start = time.perf_counter()
            count = 0
            while True:
                for _ in range(number):
                    self.run()
                count += number
                elapsed = time.perf_counter() - start
                if min_repeat_ms is None or elapsed * 1e3 >= min_repeat_ms:
                    break
            results.append(elapsed / count)
        return BenchmarkResult(results)

    def __getitem__(self, name: str) -> Any:
        return getattr(self, name)


class BenchmarkResult:
    """Per-repeat mean run times in seconds; prints TVM's summary table in milliseconds."""

    def __init__(self, results: Sequence[float]):
        self.results = list(results)
        a = np.asarray(self.results)
        self.mean, self.median = float(a.mean()), float(np.median(a))
        self.max, self.min, self.std = float(a.max()), float(a.min()), float(a.std())

    def __str__(self) -> str:
        cols = (self.mean, self.median, self.max, self.min, self.std)
        head = (
            f"{'mean (ms)':>12}{'median (ms)':>14}{'max (ms)':>12}{'min (ms)':>12}{'std (ms)':>12}"
        )
        row = "".join(f"{v * 1e3:>{w}.4f}" for v, w in zip(cols, (12, 14, 12, 12, 12)))
        return f"Execution time summary:\n{head}\n{row}"

    __repr__ = __str__


def create(graph_json_str: str, libmod: Any, device: Device | Sequence[Device]) -> GraphModule:
    """TVM's `graph_executor.create(graph_json, lib, dev)` for a relay.build result."""
    if isinstance(device, list | tuple):
        device = device[0]
    if not isinstance(libmod, GraphExecutorFactoryModule):
        raise ArgumentError(
            f"graph_executor.create: lib must be what relay.build returned (or its get_lib()), "
            f"got {type(libmod).__name__}"
        )
    if graph_json_str is not None and json.loads(graph_json_str) != libmod.graph:
        raise ArgumentError("graph_executor.create: the graph JSON is not the one of this lib")
    return GraphModule(libmod.create(device))


# ----------------------------------------------------------------------------- loading


def _check_graph(path: str, graph: Any) -> dict:
    """graph.json is data: every field has the expected type before it is used."""

    def fail(what: str) -> RuntimeError_:
        return RuntimeError_(f"load_module('{path}'): {_GRAPH}: {what}; export it again")

    if not isinstance(graph, dict) or set(graph) != {"inputs", "outputs", "bound_params"}:
        raise fail("expected the fields inputs, outputs, bound_params")
    for key in ("inputs", "outputs"):
        for item in graph[key]:
            ok = (
                isinstance(item, dict)
                and set(item) == {"name", "shape", "dtype"}
                and isinstance(item["name"], str)
                and isinstance(item["dtype"], str)
                and isinstance(item["shape"], list)
                and all(type(d) is int and d >= 0 for d in item["shape"])
            )
            if not ok:
                raise fail(f"malformed entry in {key}")
    if not all(isinstance(n, str) for n in graph["bound_params"]):
        raise fail("bound_params must be names")
    return graph


def _load(path: str, zf: zipfile.ZipFile, meta: dict) -> GraphExecutorFactoryModule:
    from ..relax.vm import executable as _exe

    ex = _exe._load(path, zf, meta)
    try:
        graph = json.loads(_rt_module.read_member(path, zf, _GRAPH))
    except (ValueError, RecursionError) as err:
        raise RuntimeError_(f"load_module('{path}'): {_GRAPH} is not valid JSON ({err})") from err
    return GraphExecutorFactoryModule(ex, _check_graph(path, graph))


_rt_module.register_loader(KIND, _load)
