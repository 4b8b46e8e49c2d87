"""Small helpers shared by the tuning modules: targets, module keys, FLOP estimates."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..error import MiniTVMError, TuningError
from ..ir import IRModule
from ..ir.structural import structural_hash
from ..target import Target
from ..tir import Add, Call, Div, For, IntImm, Max, Min, Mul, PrimFunc, Sub


def derived_object(cls: type) -> type:
    """TVM's decorator for Python subclasses of its objects (PyDatabase, PyRunner ...), which
    it wraps for its FFI; minitvm's objects are Python classes, so the class is returned as
    it is."""
    if not isinstance(cls, type):
        raise TuningError(f"derived_object decorates a class, got {type(cls).__name__}")
    return cls


def default_str(obj: Any) -> str:
    """TVM's text of a Python-derived tuning object: `meta_schedule.Name(0x7f...)`."""
    return f"meta_schedule.{type(obj).__name__}({hex(id(obj))})"


def parse_target(target: Any) -> Target:
    """A Target from a Target or a string; TVM's `--num-cores=1` spelling is accepted."""
    if isinstance(target, Target):
        return target
    if not isinstance(target, str):
        raise TuningError(f"target must be a string or a Target, got {type(target).__name__}")
    # TVM's target parser takes both "-opt" and "--opt"; the course writes "--num-cores=1".
    words = [w[1:] if w.startswith("--") else w for w in target.split()]
    return Target(" ".join(words))


class TuneContextPart:
    """Base of what a TuneContext initializes with its task (schedule rules, postprocessors,
    mutators): `target` is the task's; `clone` copies the settings; repr is TVM's name."""

    target: Any = None

    def _initialize_with_tune_context(self, context: Any) -> None:
        target = getattr(context, "target", None)
        self.target = None if target is None else parse_target(target)

    def clone(self) -> Any:
        out = object.__new__(type(self))
        out.__dict__.update(self.__dict__)
        return out

    def __repr__(self) -> str:
        return f"meta_schedule.{type(self).__name__}"


def normalize_mod(mod: Any) -> IRModule:
    """An IRModule whose PrimFunc is "main" (a bare PrimFunc is wrapped, as TVM does)."""
    if isinstance(mod, PrimFunc):
        return IRModule({"main": mod})
    if not isinstance(mod, IRModule):
        raise TuningError(f"tuning takes an IRModule or a PrimFunc, got {type(mod).__name__}")
    return mod


def main_func(mod: IRModule) -> PrimFunc:
    """The one PrimFunc a tuning task works on ("main", or the only one)."""
    prims = {gv.name_hint: f for gv, f in mod.items() if isinstance(f, PrimFunc)}
    if "main" in prims:
        return prims["main"]
    if len(prims) == 1:
        return next(iter(prims.values()))
    raise TuningError(
        f"a tuning task needs one PrimFunc named 'main', the module has {sorted(prims)}; "
        "put the function to tune alone in an IRModule"
    )


def mod_key(mod: IRModule) -> int:
    """Structural hash of a module's functions by name (candidates and workloads are keyed
    by it; equal keys are confirmed by structural_equal where it matters)."""
    return hash(tuple(sorted((gv.name_hint, _func_hash(f)) for gv, f in mod.items())))


def _func_hash(func: Any) -> int:
    # structural_hash follows the attrs' insertion order while structural_equal ignores it
    # (a module parsed back from its script has them in another order): hash them sorted
    attrs = getattr(func, "attrs", None)
    if attrs:
        func = func.replace(attrs=type(attrs)(sorted(attrs.items())))
    return structural_hash(func)


_FLOP_NODES = (Add, Sub, Mul, Div, Max, Min, Call)


def estimate_flops(mod: Any) -> float:
    """Floating-point operations of one call (static loop extents; arithmetic on floats)."""
    func = main_func(normalize_mod(mod))
    return float(_count(func.body, 1))


def _count(node: Any, scale: int) -> int:
    """Walk a node's fields; loops multiply, float arithmetic nodes add `scale` each."""
    if isinstance(node, (list, tuple)):
        return sum(_count(x, scale) for x in node)
    if not dataclasses.is_dataclass(node) or isinstance(node, type):
        return 0
    if isinstance(node, For):
        extent = node.extent.value if isinstance(node.extent, IntImm) else 1
        return _count(node.body, scale * extent)
    own = scale if isinstance(node, _FLOP_NODES) and _is_float(node) else 0
    return own + sum(
        _count(getattr(node, f.name), scale)
        for f in dataclasses.fields(node)
        if f.name not in ("buffer", "buffer_map", "dtype", "iter_vars", "reads", "writes")
    )


def _is_float(node: Any) -> bool:
    return str(getattr(node, "dtype", "")).startswith(("float", "bfloat"))


def mod_to_text(mod: IRModule) -> str:
    """A module as TVMScript (what prints parses back equal); used by workloads and workers."""
    return mod.script()


def mod_from_text(text: str, where: str) -> IRModule:
    """Parse `mod_to_text` output. The TVMScript parser evaluates only its own namespaces
    (T, R, I), so a tampered text is a TuningError, never code that runs."""
    from ..script import from_source

    try:
        mod = from_source(text)
    except MiniTVMError as err:
        raise TuningError(f"{where}: the module does not parse: {err}") from err
    if isinstance(mod, PrimFunc):
        mod = IRModule({"main": mod})
    if not isinstance(mod, IRModule):
        raise TuningError(f"{where}: holds a {type(mod).__name__}, not an IRModule")
    return mod
