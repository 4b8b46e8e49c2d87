"""Relay, the classic graph API, as a front end: programs are translated into relax and built
by the one relax pipeline (`relay.build`)."""

from __future__ import annotations

from .. import _lazy
from ..ir.module import GlobalVar, IRModule
from ..ir.transform import PassContext as build_config  # the classic spelling, same class
from . import (
    expr_functor,
    op,
    qnn,  # noqa: F401 (relay.qnn)
)
from .any_dim import Any  # noqa: F401 (relay.Any)
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
from .op import annotation, image, nn  # noqa: F401 (relay.annotation)
from .op.indexing import arange, gather, sparse_reshape
from .op.reduce import *
from .op.tensor import *
from .op.transform import *
from .parser import fromtext, parse, parse_expr  # noqa: F401 (the text format reader)
from .scope_builder import ScopeBuilder  # noqa: F401 (relay.ScopeBuilder)
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


_TABLE = {
    name: f"{__name__}{spec}" if isinstance(spec, str) else f"{__name__}{spec[0]}:{spec[1]}"
    for name, spec in _LAZY.items()
}
__getattr__ = _lazy.module_getattr(__name__, _TABLE)


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
    "arange",
    "bind",
    "build_config",
    "const",
    "expr_functor",
    "gather",
    "image",
    "nn",
    "op",
    "printer",
    "scalar_type",
    "sparse_reshape",
    "var",
]
__all__ += op.tensor.__all__
__all__ += op.transform.__all__
__all__ += op.reduce.__all__

# the Relay text form for str(expr) / print(mod), and load_module of relay.build's files
from ..contrib import graph_executor as _graph_executor  # noqa: F401
from . import printer
