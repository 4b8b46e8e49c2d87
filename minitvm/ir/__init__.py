"""Shared IR base: nodes, dtypes, structural equality, IRModule and pass infrastructure."""

from .. import _lazy
from . import (
    analysis,  # tvm.ir.analysis (collect_call_map)
    diagnostics,  # tvm.ir.diagnostics (override_renderer: parse errors as Diagnostics)
    instrument,  # tvm.ir.instrument (TVM 0.9+ spelling of tvm.instrument)
    transform,
)
from .container import Array, Map
from .dtype import DataType
from .json_io import load_json, save_json
from .module import BaseFunc, GlobalVar, IRModule
from .node import FrozenDict, Node, node
from .op import Op
from .structural import assert_structural_equal, structural_equal, structural_hash
from .type import PointerType, PrimType, Type
from .vdevice import DummyGlobalInfo, GlobalInfo, VDevice

__all__ = [
    "Array",
    "BaseFunc",
    "DataType",
    "DummyGlobalInfo",
    "FrozenDict",
    "GlobalInfo",
    "GlobalVar",
    "IRModule",
    "Map",
    "Node",
    "Op",
    "PointerType",
    "PrimType",
    "Type",
    "VDevice",
    "analysis",
    "assert_structural_equal",
    "diagnostics",
    "instrument",
    "load_json",
    "node",
    "save_json",
    "structural_equal",
    "structural_hash",
    "transform",
]

# tvm.ir.Range is TVM's spelling of the range node, which lives in tir/ (a stage above ir/):
# it resolves on first use through the public-surface table.
__getattr__ = _lazy.module_getattr(
    __name__, {"Range": "minitvm.tir:Range", "PrimExpr": "minitvm.tir:PrimExpr"}
)

from ._public_names import keep_public_functions

keep_public_functions(__name__)  # tvm.ir.node stays the decorator when ir/node.py is re-imported
