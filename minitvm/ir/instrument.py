"""`tvm.ir.instrument` (TVM 0.9+ spelling): the pass instruments of `minitvm.instrument`."""

from .. import instrument as _instrument
from ..instrument import *  # the same names, one definition

__all__ = list(_instrument.__all__)
