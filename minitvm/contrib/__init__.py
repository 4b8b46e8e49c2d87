"""Helpers TVM keeps under `tvm.contrib` (`tvm.contrib.utils.tempdir()`, `tvm.contrib.cc`)."""

from . import cc, utils

__all__ = ["cc", "utils"]
