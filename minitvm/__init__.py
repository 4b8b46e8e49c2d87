"""minitvm: a deep-learning compiler and training framework in Python (TVM-compatible names).

`import minitvm as tvm` runs code written for the classic TVM API (TE schedules, tvm.lower,
tvm.build), the dlsys autodiff assignment (2018 flat names such as `tvm.placeholder`), and the
MLC course (TensorIR, TVMScript).
"""

import importlib
import importlib.abc
import importlib.util
import sys

from . import error, ir, arith, tir, te, target, runtime, codegen, script, driver, testing  # noqa: I001
from . import relax, topi, autodiff  # graph level, operator library, training
from . import contrib, instrument, _ffi, container
from . import relay  # the classic graph front end (onto relax); also registers its file loader
from . import meta_schedule  # tuning: tvm.meta_schedule.tune_tir without an explicit import
from . import autotvm  # template tuning: tvm.autotvm.template / tuner / apply_history_best
from .contrib import graph_executor as _graph_executor  # noqa: F401 (registers its file loader)
from .convert import convert  # also tvm.runtime.convert, set below
from .driver import build, lower
from .error import MiniTVMError, TVMError
from .ir import IRModule, assert_structural_equal, structural_equal, structural_hash, transform
from .runtime import (
    Device, Module, cl, context, cpu, cuda, device, get_global_func, gpu, load_module,
    metal, opencl, register_func, register_global_func, rocm, vulkan,
)
from .relax.pipeline import compile  # noqa: A004 (tvm.compile, TVM 0.20+)
from .runtime import ndarray as nd
from .runtime import ndarray
from .target import Target
from .ir.dtype import DataType  # tvm.DataType

# The 2018 flat names of the dlsys assignment (`tvm.placeholder`, `tvm.sum`, ...).
from .te import compute, placeholder, reduce_axis, sum, max, min, exp, log, var, size_var  # noqa: A004
from .te import create_schedule
from .tir import const, select, if_then_else, all, any  # noqa: A004

runtime.convert = convert  # tvm.runtime.convert (the runtime package itself stays below tir)

__version__ = "0.1.0"

# tvm.ir.Range is TVM's spelling of the range node; ir/ sits below tir/, so it is attached here.
ir.Range = tir.Range


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves `tvm.x.y` to `minitvm.x.y` once a user sets `sys.modules['tvm'] = minitvm`.

    Without it, `from tvm.script import tir as T` would load a second copy of minitvm.script
    under the name `tvm.script`, with its own IRModule class that minitvm's own checks reject.
    Works for any alias of a minitvm package (`sys.modules['topi'] = minitvm.topi` too).
    """

    def find_spec(self, fullname, path=None, target=None):
        head, _, rest = fullname.partition(".")
        aliased = sys.modules.get(head)
        real_head = getattr(aliased, "__name__", "")
        ours = real_head == __name__ or real_head.startswith(__name__ + ".")
        if not rest or head == real_head or not ours:
            return None
        real = f"{real_head}.{rest}"
        try:
            module = importlib.import_module(real)
        except ModuleNotFoundError as err:
            if err.name != real:
                raise  # the module exists but needs something missing: say what
            return None
        return importlib.util.spec_from_loader(fullname, self, origin=module.__name__)

    def create_module(self, spec):
        return sys.modules[spec.origin]

    def exec_module(self, module):
        pass  # already executed under its real name


# `any` here is tir.any (the 2018 flat name), hence the explicit loop.
if not [f for f in sys.meta_path if type(f).__name__ == "_AliasFinder"]:
    sys.meta_path.insert(0, _AliasFinder())
