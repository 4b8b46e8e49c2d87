"""`tvm.s_tir` (TVM 0.24): the schedulable-TensorIR namespace. Its names are minitvm's own
objects: `Schedule` is `tir.Schedule`, `s_tir.meta_schedule` is `minitvm.meta_schedule`,
`s_tir.dlight` is `minitvm.dlight`, `s_tir.schedule` is `tir.schedule`; `s_tir.transform` holds
the TIR passes and the default GPU schedule pass.
"""

from .. import _lazy

# submodule -> the module it is (one object under both names)
_SUBMODULES = {
    "schedule": "minitvm.tir.schedule",
    "meta_schedule": "minitvm.meta_schedule",
    "dlight": "minitvm.dlight",
    "tensor_intrin": "minitvm.tir.tensor_intrin",
    "analysis": "minitvm.tir.analysis",
}
for _name, _real in _SUBMODULES.items():
    _lazy.alias_module(f"{__name__}.{_name}", _real)

_TABLE = {name: f"{__name__}.{name}" for name in _SUBMODULES}
_TABLE["transform"] = f"{__name__}.transform"
_TABLE.update(
    (name, f"minitvm.tir.schedule:{name}")
    for name in ("Schedule", "ScheduleError", "ScheduleState", "StmtSRef", "Trace")
)
_TABLE["SBlockScope"] = "minitvm.tir.schedule:BlockScope"  # 0.24 renamed Block to SBlock
_TABLE["TensorIntrin"] = "minitvm.tir:TensorIntrin"
__getattr__ = _lazy.module_getattr(__name__, _TABLE)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_TABLE))
