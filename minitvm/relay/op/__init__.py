"""Relay operators: `relay.op.get(name)`, the constructors, and `relay.nn`."""

from . import nn, tensor
from ._registry import OpDef, call, get, list_op_names, register
from .tensor import *  # noqa: F403 - the elementwise, reduction and shape constructors

__all__ = ["OpDef", "call", "get", "list_op_names", "nn", "register", "tensor"]
