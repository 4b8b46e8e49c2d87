"""Helpers TVM keeps under `tvm.contrib` (`tvm.contrib.utils.tempdir()`)."""

from . import utils

__all__ = ["utils"]
