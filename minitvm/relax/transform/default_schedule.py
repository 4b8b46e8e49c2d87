"""DefaultSchedule: the default CPU schedule of every PrimFunc nobody scheduled. The rules live
in `minitvm.dlight.cpu` (a rule per file); this module keeps the names relax code imports."""

from ...dlight import cpu as _cpu
from ...dlight.cpu import *  # the same names, one definition

__all__ = list(_cpu.__all__)
