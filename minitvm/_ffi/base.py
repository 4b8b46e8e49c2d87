"""`tvm._ffi.base`: the error base class TVM code catches (`except tvm._ffi.base.TVMError`)."""

from ..error import TVMError

__all__ = ["TVMError"]
