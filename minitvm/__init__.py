"""minitvm: a deep-learning compiler and training framework in Python (TVM-compatible names).

`import minitvm as tvm` runs code written for the classic TVM API (TE schedules, tvm.lower,
tvm.build), the dlsys autodiff assignment (2018 flat names such as `tvm.placeholder`), and the
MLC course (TensorIR, TVMScript).
"""

from . import error, ir, arith, tir, te, target, runtime, codegen, script, driver, testing  # noqa: I001
from . import relax, topi, autodiff  # graph level, operator library, training
from .driver import build, lower
from .error import MiniTVMError, TVMError
from .ir import IRModule, assert_structural_equal, structural_equal, structural_hash, transform
from .runtime import (
    Device, Module, cl, context, cpu, cuda, device, get_global_func, gpu, load_module,
    metal, opencl, register_func, rocm, vulkan,
)
from .runtime import ndarray as nd
from .runtime import ndarray
from .target import Target

# The 2018 flat names of the dlsys assignment (`tvm.placeholder`, `tvm.sum`, ...).
from .te import compute, placeholder, reduce_axis, sum, max, min, exp, log, var, size_var  # noqa: A004
from .te import create_schedule
from .tir import const, select, if_then_else, all, any  # noqa: A004

__version__ = "0.1.0"
