"""`relay.testing`: classic workloads as (mod, params) — vgg, resnet, mobilenet, mlp."""

from . import dcgan, init, layers, mlp, mobilenet, resnet, squeezenet, vgg
from .init import create_workload


def rand(dtype: str = "float32", *shape: int):
    """A runtime array of `shape` with uniform [0, 1) values cast to `dtype` (TVM's test helper)."""
    import numpy as np

    from ...runtime import ndarray

    return ndarray.array(np.random.rand(*shape).astype(dtype))


def run_infer_type(expr):
    """`expr` with types inferred (a Function comes back with its ret_type filled)."""
    from ...ir.module import IRModule
    from ..expr import Function
    from ..type_infer import infer_type

    if isinstance(expr, Function):
        return infer_type(IRModule.from_expr(expr))["main"]
    return infer_type(expr)


def run_opt_pass(expr, opt_pass):
    """Run a Relay pass (or a list of passes) on `expr`; returns the resulting main or body."""
    from ...ir.module import IRModule
    from ...ir.transform import PassContext, Sequential
    from ..analysis import free_vars
    from ..expr import Function
    from ..transform import InferType

    is_func = isinstance(expr, Function)
    mod = IRModule.from_expr(expr if is_func else Function(free_vars(expr), expr))
    passes = list(opt_pass) if isinstance(opt_pass, list | tuple) else [opt_pass]
    with PassContext(opt_level=3):  # as TVM's helper: every pass given runs
        mod = Sequential([InferType(), *passes, InferType()])(mod)
    return mod["main"] if is_func else mod["main"].body


__all__ = [
    "create_workload",
    "dcgan",
    "init",
    "layers",
    "mlp",
    "mobilenet",
    "rand",
    "resnet",
    "run_infer_type",
    "run_opt_pass",
    "squeezenet",
    "vgg",
]
