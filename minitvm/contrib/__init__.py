"""Helpers TVM keeps under `tvm.contrib` (`tvm.contrib.utils.tempdir()`, `tvm.contrib.cc`)."""

from . import cc, download, utils

__all__ = ["cc", "download", "utils"]
