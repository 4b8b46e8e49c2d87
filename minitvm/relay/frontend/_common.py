"""What the classic importers share: renaming main's inputs and splitting its params off."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...error import FrontendError
from ...ir.module import IRModule
from ...relax.expr import Function, Var
from ...relax.frontend.common import detach_params
from ...relax.functor import ExprMutator


def split_params(mod: IRModule, n_inputs: int, where: str) -> tuple[IRModule, dict[str, Any]]:
    """(module, {param name: NDArray}): main's params after its first `n_inputs` are weights
    whose values the importer kept in the attr "params"."""
    mod, values = detach_params(mod)
    main = mod["main"]
    weights = list(main.params[n_inputs:])
    arrays = values.get("main", [])
    if len(arrays) != len(weights):
        raise FrontendError(
            f"{where}: the importer gave {len(arrays)} parameter values for {len(weights)} "
            "weight inputs; this is a bug in minitvm, please report it"
        )
    names = [w.name_hint for w in weights]
    if len(set(names)) != len(names):
        raise FrontendError(f"{where}: several weights share a name ({sorted(names)})")
    return mod, dict(zip(names, arrays))


def rename_inputs(mod: IRModule, names: Sequence[str], where: str) -> IRModule:
    """`mod` whose main takes its first len(names) inputs under these names (the names the
    user will pass to `set_input`)."""
    main = mod["main"]
    if not isinstance(main, Function):
        raise FrontendError(f"{where}: the importer produced no relax 'main' function")
    if len(names) > len(main.params):
        raise FrontendError(
            f"{where}: {len(names)} input names for a model with {len(main.params)} inputs"
        )
    taken = {p.name_hint for p in main.params[len(names):]}
    clash = sorted(set(names) & taken)
    if clash or len(set(names)) != len(names):
        raise FrontendError(
            f"{where}: input names must be distinct and differ from the weights' names; "
            f"{clash or sorted(names)} collide"
        )
    new = [Var(n, p.struct_info) for n, p in zip(names, main.params)]
    mutator = ExprMutator()
    mutator.var_map = dict(zip(main.params, new))
    body = mutator.visit_expr(main.body)
    params = tuple(new) + tuple(main.params[len(names):])
    out = IRModule(attrs=mod.attrs)
    for gv, func in mod.functions_items():
        out[gv] = main.replace(params=params, body=body) if gv.name_hint == "main" else func
    return out
