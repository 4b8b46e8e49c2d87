"""`tvm.relax.ir`: relax's pass instruments (`relax.ir.instrument.WellFormedInstrument`)."""

from . import instrument
from .instrument import WellFormedInstrument

__all__ = ["WellFormedInstrument", "instrument"]
