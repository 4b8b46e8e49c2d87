"""`relay.qnn`: quantized operators (quantize, dequantize, requantize, add, subtract, mul,
concatenate) and CanonicalizeOps, which lowers them to core Relay ops."""

from . import op, transform
from .op import *

__all__ = ["op", "transform"] + op.__all__
