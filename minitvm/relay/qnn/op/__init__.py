"""`relay.qnn.op`: the QNN operator constructors."""

from .binary import add, concatenate, mul, subtract
from .qnn import dequantize, quantize, requantize, requantize_config

__all__ = [
    "add",
    "concatenate",
    "dequantize",
    "mul",
    "quantize",
    "requantize",
    "requantize_config",
    "subtract",
]
