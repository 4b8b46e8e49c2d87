"""Graph-level IR (Relax-style): functions of dataflow blocks binding calls of ops.

`relax.Var`, `relax.TensorStructInfo`, `relax.const`, `relax.op.*`, `relax.BlockBuilder`,
`relax.call_tir`, `relax.transform.*`.
"""

from . import eval_ref, functor, op, printer, transform
from . import analysis, expr_functor, vm_build
from . import frontend  # importers (torch, onnx load on first use)
from . import backend  # TVM 0.20+ dispatch passes
from . import training  # TVM's relax.training: losses, optimizers, SetupTrainer, Trainer
from .block_builder import BlockBuilder
from .expr import (
    Binding,
    BindingBlock,
    Call,
    Constant,
    DataTypeImm,
    DataflowBlock,
    DataflowVar,
    Expr,
    ExternFunc,
    Function,
    GlobalVar,
    If,
    MatchCast,
    Op,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
    const,
    get_shape_of,
)
from .expr_functor import PyExprMutator, PyExprVisitor
from .op import call_dps_packed, call_tir, call_tir_inplace, call_tir_with_grad
from .vm import Executable, VirtualMachine, build, load_executable  # relax.build, ...
from .vm import ExecBuilder  # TVM's hand-written VM programs
from .pipeline import get_pipeline, register_pipeline  # TVM 0.20+ named pipelines
from .base_py_module import BasePyModule  # TVM 0.24: Python methods beside compiled ones
from .struct_info import (
    DynTensorType,
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)

__all__ = [
    "BasePyModule",
    "Binding",
    "BindingBlock",
    "BlockBuilder",
    "Call",
    "Constant",
    "DataTypeImm",
    "DataflowBlock",
    "DataflowVar",
    "DynTensorType",
    "Executable",
    "Expr",
    "ExternFunc",
    "FuncStructInfo",
    "Function",
    "GlobalVar",
    "If",
    "MatchCast",
    "ObjectStructInfo",
    "Op",
    "PrimStructInfo",
    "PrimValue",
    "PyExprMutator",
    "PyExprVisitor",
    "SeqExpr",
    "ShapeExpr",
    "ShapeStructInfo",
    "StringImm",
    "StructInfo",
    "TensorStructInfo",
    "Tuple",
    "TupleGetItem",
    "TupleStructInfo",
    "Var",
    "VarBinding",
    "VirtualMachine",
    "build",
    "analysis",
    "backend",
    "call_dps_packed",
    "call_tir",
    "call_tir_inplace",
    "call_tir_with_grad",
    "const",
    "eval_ref",
    "expr_functor",
    "functor",
    "get_pipeline",
    "get_shape_of",
    "load_executable",
    "op",
    "printer",
    "register_pipeline",
    "transform",
    "vm_build",
]

from .rewriter import PatternMatchingRewriter  # noqa: E402  (R.rewriter's result type)

__all__ += ["PatternMatchingRewriter"]
