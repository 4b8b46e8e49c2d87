"""Importers of models from other frameworks into the graph IR (relax).

`torch` (from_fx, from_exported_program) and `onnx` (from_onnx) are imported on first use,
so `import minitvm` needs neither PyTorch nor onnx installed.
"""

from __future__ import annotations

import importlib
from typing import Any

from .common import detach_params

__all__ = ["detach_params", "nn", "onnx", "torch"]

_LAZY = ("torch", "onnx", "nn")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
