"""minitvm: a deep-learning compiler and training framework in Python (TVM-compatible names)."""

from . import error, ir, tir
from .error import MiniTVMError, TVMError

__version__ = "0.1.0"
