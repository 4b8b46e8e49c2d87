"""`tvm.tirx` (TVM 0.24's name of the tensor IR namespace): the module `minitvm.tir` itself.

`import minitvm.tirx`, `minitvm.tirx.transform` and `from tvm.tirx import PrimFunc` give the
same objects as their `tir` spellings.
"""

import sys

from . import _lazy, tir

_lazy.alias_module(__name__, tir.__name__)
sys.modules[__name__] = tir
