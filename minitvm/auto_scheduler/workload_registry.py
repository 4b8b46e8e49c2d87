"""register_workload and workload keys: a TE workload is a registered function plus its
arguments; its key is the JSON text `["name", arg0, arg1, ...]`, read back as data only."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..error import TuningError

# name -> the function that returns the workload's tensors (inputs first, outputs last)
WORKLOAD_FUNC_REGISTRY: dict[str, Callable] = {}


def register_workload(func_name: Any, f: Callable | None = None, override: bool = False) -> Any:
    """Register a function returning [inputs..., outputs...] as a workload; usable as a bare
    decorator (`@auto_scheduler.register_workload`) or with a name."""
    if callable(func_name) and f is None:
        func, name = func_name, func_name.__name__
    else:
        name = str(func_name)
        if f is None:
            return lambda g: register_workload(name, g, override)
        func = f
    # re-running a notebook cell registers the name again: the newest definition wins, so
    # `override` (TVM's flag) changes nothing here
    WORKLOAD_FUNC_REGISTRY[name] = func
    return func


def _check_arg(value: Any, name: str) -> Any:
    """Workload arguments are JSON scalars, lists of them, or None (they form the key)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_check_arg(v, name) for v in value]
    if hasattr(value, "value") and isinstance(value.value, int | float):  # IntImm / FloatImm
        return value.value
    raise TuningError(
        f"workload '{name}': argument {value!r} ({type(value).__name__}) cannot be part of a "
        "workload key; pass ints, floats, strings or lists of them"
    )


def make_workload_key(func: Any, args: Any) -> str:
    """The key of registered `func` (a function or its registered name) called with `args`."""
    name = func if isinstance(func, str) else getattr(func, "__name__", str(func))
    if name not in WORKLOAD_FUNC_REGISTRY:
        raise TuningError(
            f"workload function '{name}' is not registered; decorate it with "
            "@auto_scheduler.register_workload"
        )
    return json.dumps([name, *[_check_arg(a, name) for a in args]])


def decode_workload_key(workload_key: str) -> tuple[str, list]:
    """(name, args) of a key; anything but `["registered name", json args...]` is refused."""
    try:
        value = json.loads(workload_key)
    except (TypeError, ValueError) as err:
        raise TuningError(
            f"workload key {str(workload_key)[:80]!r} is not JSON text; expected "
            "'[\"registered_name\", arg0, ...]'"
        ) from err
    if not isinstance(value, list) or not value or not isinstance(value[0], str):
        raise TuningError(
            f"workload key {str(workload_key)[:80]!r} must be a JSON list starting with the "
            "registered function's name"
        )
    name, args = value[0], value[1:]
    if name not in WORKLOAD_FUNC_REGISTRY:
        raise TuningError(
            f"workload key names '{name}', which is not registered in this process; import "
            "the module that defines it (@auto_scheduler.register_workload) first"
        )
    return name, [_check_arg(a, name) for a in args]


def workload_tensors(name: str, args: list) -> list:
    """Call the registered function; it must return a list of te.Tensors."""
    from ..te.tensor import Tensor

    tensors = WORKLOAD_FUNC_REGISTRY[name](*args)
    if not isinstance(tensors, list | tuple) or not all(isinstance(t, Tensor) for t in tensors):
        raise TuningError(
            f"workload '{name}' returned {type(tensors).__name__}; a registered workload must "
            "return a list of te.Tensors (inputs first, outputs last)"
        )
    return list(tensors)
