"""`tvm.ir.instrument` (TVM 0.9+ spelling): the pass instruments of `minitvm.instrument`."""

from ..instrument import (
    PassInstrument,
    PassPrintingInstrument,
    PassTimingInstrument,
    PrintAfterAll,
    PrintBeforeAll,
    pass_instrument,
)

__all__ = [
    "PassInstrument",
    "PassPrintingInstrument",
    "PassTimingInstrument",
    "PrintAfterAll",
    "PrintBeforeAll",
    "pass_instrument",
]
