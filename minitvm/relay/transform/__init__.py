"""Relay passes: each a pure function on Relay functions behind a one-line pass object.

mod = relay.transform.FoldConstant()(mod)
mod = tvm.transform.Sequential([relay.transform.FoldConstant(),
                                relay.transform.FuseOps(fuse_opt_level=2)])(mod)

A function pass runs on every Relay function of the module except fused kernels (functions
with the `Primitive` attribute), then type inference runs on the result, as in TVM, so the
printed module shows `/* ty=... */` after any pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...ir.module import IRModule
from ...ir.transform import (
    ModulePass,
    Pass,
    PassContext,
    PassInfo,
    Sequential,
    _make_pass_decorator,
    module_pass,
    register_required_pass,
)
from ..expr import Function
from ..type_infer import infer_type
from .convert_layout import convert_layout
from .dead_code_elimination import dead_code_elimination
from .defuse_ops import defuse_ops
from .eliminate_common_subexpr import eliminate_common_subexpr
from .flatten_atrous_conv import flatten_atrous_conv
from .fold_constant import fold_constant
from .fold_scale_axis import fold_scale_axis
from .fuse_ops import fuse_ops
from .simplify_inference import simplify_inference
from .to_a_normal_form import to_a_normal_form
from .to_graph_normal_form import to_graph_normal_form


class FunctionPass(Pass):
    """A pass applied to each Relay function of a module (what `function_pass` makes)."""


def _run_per_function(
    transform: Callable[[Function, IRModule, PassContext], Function], mod: Any
) -> Any:
    """transform(func, mod, ctx) on each non-primitive Relay function, then type inference."""
    ctx = PassContext.current()
    out = mod.copy()
    for gv, func in mod.functions_items():
        if isinstance(func, Function) and not func.attrs.get("Primitive"):
            out[gv] = transform(func, mod, ctx)
    return infer_type(out)


function_pass = _make_pass_decorator(FunctionPass, "transform_function", _run_per_function)
function_pass.__name__ = "function_pass"
function_pass.__doc__ = """Make a Relay function pass of a `fn(func, mod, ctx) -> func` or of a
class with `transform_function(self, func, mod, ctx)`: `@relay.transform.function_pass(opt_level=1)`."""


def _pass(
    fn: Callable[[Function], Function], name: str, opt_level: int, required: Sequence[str] = ()
) -> Pass:
    return FunctionPass(
        lambda mod: _run_per_function(lambda f, m, c: fn(f), mod), name, opt_level, required
    )


def InferType() -> Pass:
    """Fill `checked_type` of every expression (and each function's return type)."""
    return ModulePass(infer_type, "InferType", 0)


def FoldConstant(fold_qnn: bool = False) -> Pass:
    """Compute calls whose arguments are all constants; their results become constants."""
    return _pass(fold_constant, "FoldConstant", 2)


def EliminateCommonSubexpr(fskip: Callable[[Any], bool] | None = None) -> Pass:
    """Calls of the same op on the same arguments with the same attributes are computed once."""
    return _pass(lambda f: eliminate_common_subexpr(f, fskip), "EliminateCommonSubexpr", 3)


def FuseOps(fuse_opt_level: int = -1) -> Pass:
    """Group ops into `Primitive=1` functions (-1: the PassContext's opt_level; 0: one op each)."""
    return _pass(lambda f: fuse_ops(f, fuse_opt_level), "FuseOps", 0, ("InferType",))


def DefuseOps() -> Pass:
    """Inline every call of a Primitive function (undoes FuseOps)."""
    return _pass(defuse_ops, "DefuseOps", 0)


def InferTypeLocal(expr: Any) -> Any:
    """The type of `expr` (inferred on the spot, without a module)."""
    return infer_type(expr).checked_type


def SimplifyInference() -> Pass:
    """batch_norm becomes multiply/add by its folded scale and shift; dropout the identity."""
    return _pass(simplify_inference, "SimplifyInference", 0, ("InferType",))


def DeadCodeElimination(inline_once: bool = False, ignore_impurity: bool = False) -> Pass:
    """Drop let bindings nobody uses (and with inline_once, inline those used once)."""
    return _pass(lambda f: dead_code_elimination(f, inline_once), "DeadCodeElimination", 1)


def FoldScaleAxis() -> Pass:
    """Fold a per-output-channel constant scale after a conv2d into the conv's weight."""
    return _pass(fold_scale_axis, "FoldScaleAxis", 3, ("InferType",))


def FlattenAtrousConv() -> Pass:
    """space_to_batch_nd -> conv2d -> batch_to_space_nd (TF's dilated conv) as one dilated conv2d."""
    return _pass(flatten_atrous_conv, "FlattenAtrousConv", 0, ("InferType",))


def ConvertLayout(desired_layouts: Mapping[str, Sequence[str]]) -> Pass:
    """Compute conv2d / pools in `desired_layouts` ({"nn.conv2d": ["NHWC", "default"]})."""
    return _pass(lambda f: convert_layout(f, desired_layouts), "ConvertLayout", 3, ("InferType",))


def ToANormalForm() -> Pass:
    """Bind every intermediate value to a variable with `let` (the inverse of graph form)."""
    return _pass(to_a_normal_form, "ToANormalForm", 1)


def ToGraphNormalForm() -> Pass:
    """Replace let bindings by sharing: each bound value is used where its variable was."""
    return _pass(to_graph_normal_form, "ToGraphNormalForm", 1)


register_required_pass("InferType", InferType)

__all__ = [
    "ConvertLayout",
    "DeadCodeElimination",
    "DefuseOps",
    "EliminateCommonSubexpr",
    "FlattenAtrousConv",
    "FoldConstant",
    "FoldScaleAxis",
    "FunctionPass",
    "FuseOps",
    "InferType",
    "InferTypeLocal",
    "ModulePass",
    "Pass",
    "PassContext",
    "PassInfo",
    "Sequential",
    "SimplifyInference",
    "ToANormalForm",
    "ToGraphNormalForm",
    "convert_layout",
    "dead_code_elimination",
    "defuse_ops",
    "eliminate_common_subexpr",
    "flatten_atrous_conv",
    "fold_constant",
    "fold_scale_axis",
    "function_pass",
    "fuse_ops",
    "module_pass",
    "simplify_inference",
    "to_a_normal_form",
    "to_graph_normal_form",
]
