"""Shared IR base: nodes, dtypes, structural equality, IRModule and pass infrastructure."""

from . import instrument  # tvm.ir.instrument (TVM 0.9+ spelling of tvm.instrument)
from . import transform
from .dtype import DataType
from .json_io import load_json, save_json
from .module import BaseFunc, GlobalVar, IRModule
from .node import FrozenDict, Node, node
from .op import Op
from .structural import assert_structural_equal, structural_equal, structural_hash

__all__ = [
    "DataType",
    "BaseFunc",
    "GlobalVar",
    "IRModule",
    "FrozenDict",
    "Node",
    "Op",
    "node",
    "assert_structural_equal",
    "structural_equal",
    "structural_hash",
    "instrument",
    "transform",
    "load_json",
    "save_json",
]
