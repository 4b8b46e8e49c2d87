"""Relay operators: `relay.op.get(name)`, the constructors, and `relay.nn`."""

from . import annotation, image, indexing, nn, reduce, sparse, tensor, transform
from ._registry import OpDef, call, get, list_op_names, register
from .indexing import *
from .reduce import *
from .tensor import *
from .transform import *

__all__ = [
    "OpDef",
    "annotation",
    "call",
    "get",
    "image",
    "list_op_names",
    "nn",
    "reduce",
    "register",
    "sparse",
    "tensor",
    "transform",
]
__all__ += indexing.__all__
__all__ += transform.__all__
__all__ += reduce.__all__
