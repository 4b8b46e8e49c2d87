"""Relay, the classic graph API, as a front end: programs are translated into relax and built
by the one relax pipeline (`relay.build`)."""

from __future__ import annotations

import importlib
import typing as _typing  # not `Any`: relay.Any is TVM's symbolic dim, not typing.Any

from ..ir.module import GlobalVar, IRModule
from . import expr_functor, op
from .expr import (
    Call,
    Constant,
    Expr,
    Function,
    If,
    Let,
    Op,
    Tuple,
    TupleGetItem,
    TupleWrapper,
    Var,
    bind,
    const,
    var,
)
from .expr_functor import ExprFunctor, ExprMutator, ExprVisitor
from .op import nn
from .op.tensor import *
from .ty import FuncType, TensorType, TupleType, Type, scalar_type

# Loaded on first use: passes, analysis, printer, build and the model zoo import more of
# minitvm (and each other), so `import minitvm.relay` stays cheap and free of cycles.
_LAZY = {
    "transform": ".transform",
    "analysis": ".analysis",
    "printer": ".printer",
    "testing": ".testing",
    "type_infer": ".type_infer",
    "build_module": ".build_module",
    "backend": ".backend",
    "frontend": ".frontend",
    "build": (".build_module", "build"),
    "save_param_dict": (".build_module", "save_param_dict"),
    "load_param_dict": (".build_module", "load_param_dict"),
    "create_executor": (".build_module", "create_executor"),
    "optimize": (".build_module", "optimize"),
}


def __getattr__(name: str) -> _typing.Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'minitvm.relay' has no attribute {name!r}")
    module, attr = (target, None) if isinstance(target, str) else target
    value = importlib.import_module(module, __name__)
    value = getattr(value, attr) if attr else value
    globals()[name] = value
    return value


__all__ = [
    "Call",
    "Constant",
    "Expr",
    "ExprFunctor",
    "ExprMutator",
    "ExprVisitor",
    "FuncType",
    "Function",
    "GlobalVar",
    "IRModule",
    "If",
    "Let",
    "Op",
    "TensorType",
    "Tuple",
    "TupleGetItem",
    "TupleType",
    "TupleWrapper",
    "Type",
    "Var",
    "bind",
    "const",
    "expr_functor",
    "nn",
    "op",
    "printer",
    "scalar_type",
    "var",
]
__all__ += op.tensor.__all__

# the Relay text form for str(expr) / print(mod), and load_module of relay.build's files
from ..contrib import graph_executor as _graph_executor  # noqa: F401
from . import printer
