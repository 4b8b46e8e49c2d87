"""`from tvm.script import tirx as T` (TVM 0.24's name of the T namespace): the module
`minitvm.script.tir` itself."""

import sys

from . import tir

sys.modules[__name__] = tir
