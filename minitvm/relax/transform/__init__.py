"""Graph-level passes: each a pure function on IRModules behind a one-line Pass object.

mod = relax.transform.LegalizeOps()(mod)
mod = tvm.transform.Sequential([relax.transform.FoldConstant(),
                                relax.transform.DeadCodeElimination()])(mod)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...ir.transform import Pass
from .bind_params import bind_params, bind_params_function
from .dead_code_elimination import dead_code_elimination, remove_unused_bindings
from .eliminate_common_subexpr import eliminate_common_subexpr
from .fold_constant import fold_constant
from .legalize_ops import legalize_ops


def LegalizeOps() -> Pass:
    return Pass(legalize_ops, "LegalizeOps")


def BindParams(func_name: str, params: Mapping[Any, Any]) -> Pass:
    return Pass(lambda mod: bind_params(mod, func_name, params), "BindParams")


def FoldConstant() -> Pass:
    return Pass(fold_constant, "FoldConstant")


def DeadCodeElimination(entry_functions: Sequence[str] | None = None) -> Pass:
    return Pass(lambda mod: dead_code_elimination(mod, entry_functions), "DeadCodeElimination")


def EliminateCommonSubexpr() -> Pass:
    return Pass(eliminate_common_subexpr, "EliminateCommonSubexpr")


__all__ = [
    "BindParams",
    "DeadCodeElimination",
    "EliminateCommonSubexpr",
    "FoldConstant",
    "LegalizeOps",
    "bind_params",
    "bind_params_function",
    "dead_code_elimination",
    "eliminate_common_subexpr",
    "fold_constant",
    "legalize_ops",
    "remove_unused_bindings",
]
