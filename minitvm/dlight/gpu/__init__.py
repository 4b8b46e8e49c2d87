"""GPU rules of the default schedule (`dl.gpu`, TVM's names): Matmul (shared-memory tiles),
GEMV, Reduction, GeneralReduction (a thread per output, reductions in registers) and Fallback
(the simple binding); `relax.transform.DefaultGPUSchedule` applies DEFAULT_RULES.

with tvm.target.Target("opencl"):
    mod = dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(),
                                  dl.gpu.GeneralReduction(), dl.gpu.Fallback())(mod)
"""

from .base import GPUScheduleRule
from .default import DEFAULT_RULES, default_gpu_schedule, default_gpu_schedule_func
from .fallback import Fallback
from .gemv import GEMV
from .general_reduction import GeneralReduction
from .low_batch_gemv import LowBatchGEMV
from .matmul import Matmul
from .reduction import Reduction
from .rmsnorm import RMSNorm
from .transpose import Transpose

__all__ = [
    "DEFAULT_RULES",
    "GEMV",
    "Fallback",
    "GPUScheduleRule",
    "GeneralReduction",
    "LowBatchGEMV",
    "Matmul",
    "RMSNorm",
    "Reduction",
    "Transpose",
    "default_gpu_schedule",
    "default_gpu_schedule_func",
]
