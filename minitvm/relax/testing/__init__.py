"""TVM's `relax.testing`: helpers TVM's relax tests build workloads with (`relax.testing.nn`)."""

from . import nn

__all__ = ["nn"]
