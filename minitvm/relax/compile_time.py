"""`relax.analysis.computable_at_compile_time`: which values of a function depend only on its
compile-time parameters (those after the `num_input` attribute, e.g. model weights)."""

from __future__ import annotations

from typing import Any

from ..error import MiniTVMError
from ..tir.expr import Var as TirVar
from ..tir.functor import post_order_visit
from . import expr as rx


def _uses(value: Any) -> tuple[list[Any], list[TirVar]]:
    """The relax and symbolic (tir) variables `value` reads."""
    relax_vars: list[Any] = []
    tir_vars: list[TirVar] = []

    def visit(n: Any) -> None:
        if isinstance(n, rx.Var):
            relax_vars.append(n)
        elif isinstance(n, TirVar):
            tir_vars.append(n)

    post_order_visit(value, visit)
    return relax_vars, tir_vars


def computable_at_compile_time(func: rx.Function) -> list[rx.Var]:
    """The parameters after `num_input` and every binding that uses only them (and symbolic
    variables they define), in order; empty without a `num_input` attribute.

    >>> computable_at_compile_time(func)   # func(A, W) with num_input=1: [W, W2 = W * 2, ...]
    """
    from .analysis import definable_tir_vars_in_struct_info

    if not isinstance(func, rx.Function):
        raise MiniTVMError(
            "relax.analysis.computable_at_compile_time: expected a relax.Function, got "
            f"{type(func).__name__}"
        )
    num_input = func.attrs.get("num_input")
    if num_input is None:
        return []
    known = list(func.params[int(num_input) :])
    known_ids = {id(v) for v in known}
    known_tir = {id(t) for p in known for t in definable_tir_vars_in_struct_info(p.struct_info)}
    body = func.body
    for block in body.blocks if isinstance(body, rx.SeqExpr) else ():
        for binding in block.bindings:
            relax_vars, tir_vars = _uses(binding.value)
            if not all(id(v) in known_ids for v in relax_vars):
                continue
            if not all(id(t) in known_tir for t in tir_vars):
                continue
            known.append(binding.var)
            known_ids.add(id(binding.var))
            if isinstance(binding, rx.MatchCast):
                known_tir.update(
                    id(t) for t in definable_tir_vars_in_struct_info(binding.struct_info)
                )
    return known
