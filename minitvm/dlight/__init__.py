"""dlight: the default schedules, as TVM's `tvm.dlight` (rules applied to every PrimFunc nobody
scheduled). A rule per file under `cpu/` and `gpu/`; `base/` holds the rule interface and the
pass that applies rules. Sits above tir/te/topi and below relax (relax's DefaultSchedule and
DefaultGPUSchedule are thin wrappers over it); it never imports relax.

import minitvm.dlight as dl
with tvm.target.Target("opencl"):
    mod = dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.Fallback())(mod)
"""

from . import analysis, cpu, gpu
from .base import IS_SCHEDULED, ApplyDefaultSchedule, ScheduleRule, is_scheduled

__all__ = [
    "IS_SCHEDULED",
    "ApplyDefaultSchedule",
    "ScheduleRule",
    "analysis",
    "cpu",
    "gpu",
    "is_scheduled",
]
