"""ONNX importer: `from_onnx(model, shape_dict, ...)` turns an onnx.ModelProto into an IRModule.

`onnx` is imported on first use; converters live in `_ops` (one table keyed by op_type).
`load_model(path)` reads a file without running onnx's C++ on it (see `_loader`).
"""

from ._loader import load_model
from .onnx_frontend import SUPPORTED_OPSETS, from_onnx

__all__ = ["SUPPORTED_OPSETS", "from_onnx", "load_model"]
