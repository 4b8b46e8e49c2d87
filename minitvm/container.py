"""`tvm.container`: TVM's container names (Map, Array)."""

from .ir.container import Array, Map

__all__ = ["Array", "Map"]
