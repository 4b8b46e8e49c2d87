"""TVM's pipeline executor build API: wire Relay modules into a pipeline and build each stage.

    pipe_config = pipeline_executor_build.PipelineConfig()
    pipe_config[mod0].target = "llvm"
    pipe_config["input"]["data"].connect(pipe_config[mod0]["input"]["data"])
    pipe_config[mod0]["output"][0].connect(pipe_config[mod1]["input"]["x"])
    pipe_config[mod1]["output"][0].connect(pipe_config["output"][0])
    factory = pipeline_executor_build.build(pipe_config)

`build` gives a `PipelineExecutorFactoryModule`; `pipeline_executor.PipelineModule(factory)`
runs it, `export_library(directory)` writes each stage's library plus a JSON config.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..error import ArgumentError, BuildError
from ..runtime import Device, cpu
from .pipeline_executor import PipelineExecutorFactoryModule


class _Binding:
    """One end of a connection: a global input/output/param group, or a module's input/output/
    param. `connect` records an edge; which edges are legal is `_LEGAL`."""

    def __init__(self, owner: Any, io_type: str, name: str | int):
        self.owner, self.io_type, self.name = owner, io_type, name
        self.bindings: list[_Binding] = []
        self.parents: list[_Binding] = []

    def is_global(self) -> bool:
        return isinstance(self.owner, PipelineConfig)

    def _kind(self) -> tuple[str, str]:
        return ("global" if self.is_global() else "module", self.io_type)

    def __repr__(self) -> str:
        where = "" if self.is_global() else f"mod{self.owner.idx}."
        return f"{where}{self.io_type}({self.name})"

    def connect(self, other: _Binding) -> None:
        """An edge self -> other; BuildError for edges TVM does not allow."""
        if not isinstance(other, _Binding):
            raise ArgumentError(f"connect: expected a pipeline binding, got {type(other).__name__}")
        rule = (self._kind(), other._kind())
        if rule not in _LEGAL:
            raise BuildError(
                f"connect: {self!r} -> {other!r} is not a pipeline connection; allowed: global "
                "input -> module input, module output -> module input or global output, "
                "param group -> module param"
            )
        if not self.is_global() and not other.is_global() and self.owner is other.owner:
            raise BuildError(f"connect: {self!r} -> {other!r} connects a module to itself")
        if other.parents and rule[1] != (("module", "param")):
            raise BuildError(f"connect: {other!r} is already fed by {other.parents[0]!r}")
        self.bindings.append(other)
        other.parents.append(self)


_LEGAL = {
    (("global", "input"), ("module", "input")),
    (("module", "output"), ("module", "input")),
    (("module", "output"), ("global", "output")),
    (("global", "param"), ("module", "param")),
}


class _BindingGroup:
    """`cfg["input"]`, `cfg[mod]["output"]`, ...: bindings made on first use, by name or index."""

    def __init__(self, owner: Any, io_type: str, check: Callable[[str | int], None] | None = None):
        self.owner, self.io_type, self.check = owner, io_type, check
        self.bindings: dict[str | int, _Binding] = {}

    def __getitem__(self, key: str | int) -> _Binding:
        if self.io_type == "output" and isinstance(key, str) and key.isdigit():
            key = int(key)  # TVM writes the global outputs "0" or 0
        if not isinstance(key, str | int) or isinstance(key, bool):
            raise ArgumentError(
                f"pipeline {self.io_type}: key must be a name or index, got {key!r}"
            )
        if self.check is not None:
            self.check(key)
        if key not in self.bindings:
            self.bindings[key] = _Binding(self.owner, self.io_type, key)
        return self.bindings[key]

    def items(self):
        return self.bindings.items()

    def values(self):
        return self.bindings.values()


class ModuleConfig:
    """`pipe_config[mod]`: how one stage is built (target, dev, build_func, cpu_affinity) and its
    input/output/param bindings."""

    def __init__(self, mod: Any, idx: int):
        self.mod, self.idx = mod, idx
        self.target: Any = "llvm"
        self.dev: Device = cpu(0)
        self.build_func: Callable | None = None
        self.cpu_affinity: str = ""
        self.export_cc: Any = None
        self.params: dict | None = None
        self.input = _BindingGroup(self, "input", self._check_input)
        self.output = _BindingGroup(self, "output", self._check_output)
        self.param = _Binding(self, "param", "param")

    def _input_names(self) -> list[str] | None:
        if "main" not in self.mod:
            return None
        params = getattr(self.mod["main"], "params", None)
        return None if params is None else [p.name_hint for p in params]

    def _check_input(self, name: str | int) -> None:
        names = self._input_names()
        if names is not None and name not in names:
            raise BuildError(f"pipeline mod{self.idx}: no input named {name!r}; inputs: {names}")

    def _check_output(self, index: str | int) -> None:
        if not isinstance(index, int) or index < 0:
            raise BuildError(f"pipeline mod{self.idx}: outputs are indexed 0, 1, ..; got {index!r}")

    def __getitem__(self, key: str) -> Any:
        table = {"input": self.input, "output": self.output, "param": self.param}
        if key not in table:
            raise ArgumentError(f"pipe_config[mod][{key!r}]: use 'input', 'output' or 'param'")
        return table[key]


class PipelineConfig:
    """The pipeline's wiring: `cfg[mod]` per stage, `cfg["input"]`, `cfg["output"]`,
    `cfg["param_group"]` for the whole pipeline."""

    def __init__(self) -> None:
        self.mod_configs: list[ModuleConfig] = []
        self.input = _BindingGroup(self, "input")
        self.output = _BindingGroup(self, "output")
        self.param_group = _BindingGroup(self, "param")

    def __getitem__(self, key: Any) -> Any:
        named = {"input": self.input, "output": self.output, "param_group": self.param_group}
        if isinstance(key, str):
            if key not in named:
                raise ArgumentError(f"pipe_config[{key!r}]: use 'input', 'output' or 'param_group'")
            return named[key]
        for cfg in self.mod_configs:
            if cfg.mod is key:
                return cfg
        if not hasattr(key, "functions"):
            raise ArgumentError(f"pipe_config[...]: expected an IRModule, got {type(key).__name__}")
        cfg = ModuleConfig(key, len(self.mod_configs))
        self.mod_configs.append(cfg)
        return cfg

    def __str__(self) -> str:
        lines = ["Inputs"]
        for name, b in self.input.items():
            lines += [f"  |{name}: " + ", ".join(f"mod{t.owner.idx}:{t.name}" for t in b.bindings)]
        lines.append("output")
        for name, b in self.output.items():
            lines += [f"  |output({name}) : " + ", ".join(repr(p) for p in b.parents)]
        lines.append("connections")
        for cfg in self.mod_configs:
            for b in cfg.output.values():
                for t in b.bindings:
                    if not t.is_global():
                        lines.append(
                            f"  |mod{cfg.idx}.output({b.name})-> mod{t.owner.idx}.{t.name}"
                        )
        return "\n".join(lines)

    def get_config(self) -> dict:
        """The wiring as data (what export_library writes), stages in run order."""
        order = self._run_order()
        new_idx = {cfg.idx: i for i, cfg in enumerate(order)}
        stages = []
        for cfg in order:
            inputs = {str(b.name): _source(b.parents[0], new_idx) for b in cfg.input.values()}
            if any(src is None for src in inputs.values()):
                raise BuildError(f"pipeline mod{cfg.idx}: an input binding is not connected")
            stages.append({"inputs": inputs, "cpu_affinity": _affinity(cfg.cpu_affinity),
                           "params": [str(p.name) for p in cfg.param.parents]})  # fmt: skip
        outputs = []
        for i in range(len(self.output.bindings)):
            b = self.output.bindings.get(i)
            if b is None or not b.parents:
                raise BuildError(f"pipeline: global output {i} is not connected (outputs 0..n-1)")
            outputs.append(_source(b.parents[0], new_idx))
        inputs = {str(name): [[new_idx[t.owner.idx], str(t.name)] for t in b.bindings]
                  for name, b in self.input.items()}  # fmt: skip
        return {"inputs": inputs, "outputs": outputs, "stages": stages}

    def _run_order(self) -> list[ModuleConfig]:
        """The stages topologically sorted (a module runs after every module it reads)."""
        if not self.mod_configs:
            raise BuildError("pipeline: no modules; configure pipe_config[mod] first")
        deps = {cfg.idx: set() for cfg in self.mod_configs}
        for cfg in self.mod_configs:
            for b in cfg.input.values():
                if not b.parents:
                    raise BuildError(f"pipeline: mod{cfg.idx} input {b.name!r} is not connected")
                src = b.parents[0]
                if not src.is_global():
                    deps[cfg.idx].add(src.owner.idx)
        order, done = [], set()
        while len(order) < len(deps):
            ready = [i for i in sorted(deps) if i not in done and deps[i] <= done]
            if not ready:
                raise BuildError("pipeline: the module connections form a cycle")
            done.update(ready)
            order += [self.mod_configs[i] for i in ready]
        return order


def _source(b: _Binding, new_idx: dict[int, int]) -> list | None:
    """Where a value comes from: ["input", name] or ["stage", stage index, output index]."""
    if b.is_global():
        return ["input", str(b.name)]
    return ["stage", new_idx[b.owner.idx], int(b.name)]


def _affinity(text: str) -> list[int]:
    """cpu_affinity "0,1" -> [0, 1]; BuildError for anything but comma-separated CPU numbers."""
    if not text:
        return []
    cores = [c.strip() for c in str(text).split(",")]
    if not all(c.isdigit() for c in cores):
        raise BuildError(f"pipeline: cpu_affinity must be like '0,1', got {text!r}")
    return [int(c) for c in cores]


def build(pipe_config: PipelineConfig) -> PipelineExecutorFactoryModule:
    """Build every stage with its build_func (default relay.build) for its target."""
    from ..relay import build as relay_build

    if not isinstance(pipe_config, PipelineConfig):
        raise ArgumentError(f"build: expected a PipelineConfig, got {type(pipe_config).__name__}")
    config = pipe_config.get_config()
    libs, devices = [], []
    for cfg in pipe_config._run_order():
        build_func = cfg.build_func or relay_build
        libs.append(build_func(cfg.mod, cfg.target, params=cfg.params, mod_name="default"))
        devices.append(cfg.dev)
    return PipelineExecutorFactoryModule(libs, devices, config)
