"""Relay operators: `relay.op.get(name)`, the constructors, and `relay.nn`."""

from . import image, indexing, nn, sparse, tensor
from ._registry import OpDef, call, get, list_op_names, register
from .indexing import *
from .tensor import *

__all__ = ["OpDef", "call", "get", "image", "list_op_names", "nn", "register", "sparse", "tensor"]
__all__ += indexing.__all__
