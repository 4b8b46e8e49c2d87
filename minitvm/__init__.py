"""minitvm: a deep-learning compiler and training framework in Python (TVM-compatible names).

`import minitvm as tvm` runs code written for the classic TVM API (TE schedules, tvm.lower,
tvm.build), the dlsys autodiff assignment (2018 flat names such as `tvm.placeholder`), and the
MLC course (TensorIR, TVMScript).
"""

import importlib
import importlib.abc
import importlib.util
import sys

from . import _lazy, error  # noqa: F401 (tvm.error)
from ._version import __version__  # noqa: F401
from .error import MiniTVMError, TVMError  # noqa: F401 (tvm.TVMError)

# Everything else loads on first use (`tvm.relay`, `tvm.build`, ...), so `import minitvm` costs
# little; a name resolves once and is then an ordinary attribute of this package.
_SUBPACKAGES = (
    "ir", "arith", "tir", "te", "target", "runtime", "codegen", "script", "driver", "testing",
    "relax", "topi", "autodiff", "contrib", "instrument", "_ffi", "container", "relay",
    "meta_schedule", "autotvm", "auto_scheduler", "env", "train", "training", "cli", "dlight", "rpc",
    "tirx", "s_tir", "ffi",  # TVM 0.22-0.24 names (aliases of the packages above)
)  # fmt: skip
_NAMES = {
    # the classic and modern top-level API
    "build": "driver:build", "lower": "driver:lower", "compile": "relax.pipeline:compile",
    "IRModule": "ir:IRModule", "transform": "ir:transform",
    "assert_structural_equal": "ir:assert_structural_equal",
    "structural_equal": "ir:structural_equal", "structural_hash": "ir:structural_hash",
    "DataType": "ir.dtype:DataType", "Target": "target:Target",
    "nd": "runtime.ndarray", "ndarray": "runtime.ndarray", "parser": "relay.parser",
    # the 2018 flat names of the dlsys assignment (`tvm.placeholder`, `tvm.sum`, ...)
    "compute": "te:compute", "placeholder": "te:placeholder", "reduce_axis": "te:reduce_axis",
    "sum": "te:sum", "max": "te:max", "min": "te:min", "exp": "te:exp", "log": "te:log",
    "var": "te:var", "size_var": "te:size_var", "create_schedule": "te:create_schedule",
    "const": "tir:const", "select": "tir:select", "if_then_else": "tir:if_then_else",
    "all": "tir:all", "any": "tir:any",
}  # fmt: skip
_NAMES.update((name, f"runtime:{name}") for name in (
    "Device", "Module", "cl", "context", "cpu", "cuda", "device", "get_global_func", "gpu",
    "load_module", "metal", "opencl", "register_func", "register_global_func", "rocm", "vulkan",
))  # fmt: skip
_TABLE = {name: f"{__name__}.{name}" for name in _SUBPACKAGES}
_TABLE.update((name, f"{__name__}.{spec}") for name, spec in _NAMES.items())
_TABLE["convert"] = f"{__name__}._convert:convert"  # tvm.convert is the function
__getattr__ = _lazy.module_getattr(__name__, _TABLE)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_TABLE))


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
            spec = _TABLE.get(rest) if real_head == __name__ else None
            if spec is None or ":" in spec:  # not a module known under a second name
                return None
            module = importlib.import_module(spec)  # `tvm.parser` is relay.parser, `tvm.nd` ..
        return importlib.util.spec_from_loader(fullname, self, origin=module.__name__)

    def create_module(self, spec):
        return sys.modules[spec.origin]

    def exec_module(self, module):
        pass  # already executed under its real name


# `any` here is tir.any (the 2018 flat name), hence the explicit loop.
if not [f for f in sys.meta_path if type(f).__name__ == "_AliasFinder"]:
    sys.meta_path.insert(0, _AliasFinder())
