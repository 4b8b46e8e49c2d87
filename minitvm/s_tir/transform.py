"""`tvm.s_tir.transform` (TVM 0.24): the TIR passes (`minitvm.tir.transform`'s objects) plus
`DefaultGPUSchedule`, the module pass that gives every unscheduled kernel the default GPU
schedule of the current target (`with target: mod = DefaultGPUSchedule()(mod)`); each name is
the same object as where minitvm defines it."""

from typing import Any

_ELSEWHERE = {"DefaultGPUSchedule": "minitvm.relax.transform.default_gpu_schedule"}


def __getattr__(name: str) -> Any:
    import importlib

    module = importlib.import_module(_ELSEWHERE.get(name, "minitvm.tir.transform"))
    try:
        value = getattr(module, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value
