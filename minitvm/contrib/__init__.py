"""Helpers TVM keeps under `tvm.contrib` (`tvm.contrib.utils.tempdir()`, `tvm.contrib.cc`)."""

from .. import _lazy
from . import cc, download, utils

# Loaded on first use (it imports the runtime). pipeline_executor_build builds with relay, a
# floor above contrib: import it by name (`from tvm.contrib import pipeline_executor_build`).
_TABLE = {"pipeline_executor": f"{__name__}.pipeline_executor"}
__getattr__ = _lazy.module_getattr(__name__, _TABLE)

__all__ = ["cc", "download", "pipeline_executor", "utils"]
