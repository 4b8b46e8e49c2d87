"""`tvm.ir.base`: TVM's module of node-level helpers, under the same names (the objects live
in node.py, structural.py and json_io.py)."""

from .json_io import load_json, save_json
from .node import Node
from .structural import (
    assert_structural_equal,
    get_first_structural_mismatch,
    structural_equal,
    structural_hash,
)

__all__ = [
    "Node",
    "assert_structural_equal",
    "get_first_structural_mismatch",
    "load_json",
    "save_json",
    "structural_equal",
    "structural_hash",
]
