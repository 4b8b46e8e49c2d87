"""dlsys-style training API. For now: the kernel builders of the assignment."""

from . import kernels

__all__ = ["kernels"]
