"""`simplify_fc_transpose.convert(func, params)`: `nn.dense(x, transpose(w))` with `w` a bound
param becomes `nn.dense(x, w.T)` with the transposed weight stored as the new param `<w>.T`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...runtime import ndarray as _nd
from ..expr import Call, Function, Op, Var
from ..expr_functor import ExprMutator
from ..ty import TensorType
from ._weights import as_function, as_numpy


class _FoldTranspose(ExprMutator):
    def __init__(self, params: dict):
        super().__init__()
        self.params = params
        self.new_params: dict[str, Any] = {}
        self.new_vars: dict[str, Var] = {}

    def visit_call(self, call: Call) -> Any:
        new = super().visit_call(call)
        if not (isinstance(call.op, Op) and call.op.name == "nn.dense"):
            return new
        t = call.args[1]
        if not (isinstance(t, Call) and isinstance(t.op, Op) and t.op.name == "transpose"):
            return new
        w = t.args[0]
        if not isinstance(w, Var) or w.name_hint not in self.params:
            return new
        value = as_numpy(self.params[w.name_hint])
        if value.ndim != 2 or t.attrs.axes not in (None, (1, 0)):
            return new
        name = w.name_hint + ".T"
        if name not in self.new_vars:
            folded = np.ascontiguousarray(value.T)
            self.new_params[name] = _nd.array(folded)
            self.new_vars[name] = Var(name, TensorType(folded.shape, str(folded.dtype)))
        return Call(new.op, [new.args[0], self.new_vars[name]], new.attrs, new.type_args)


def convert(func: Any, params: dict) -> tuple[Function, dict]:
    """(new function, params) with weight transposes folded into new params `<w>.T`."""
    func = as_function(func)
    mutator = _FoldTranspose(dict(params))
    body = mutator.visit(func.body)
    if body is func.body:
        return func, dict(params)
    new_params = list(func.params) + list(mutator.new_vars.values())
    return Function(new_params, body, None, func.type_params, func.attrs), {
        **params,
        **mutator.new_params,
    }
