"""Relay operators: `relay.op.get(name)`, the constructors, and `relay.nn`."""

from . import nn, tensor
from ._registry import OpDef, call, get, list_op_names, register
from .tensor import *

__all__ = ["OpDef", "call", "get", "list_op_names", "nn", "register", "tensor"]
