"""EliminateCommonSubexpr: a call of the same op, on the same arguments, with the same
attributes as an earlier one is replaced by that earlier call (the graph shares it).

Arguments count as the same when they are the same node after rewriting, or equal scalar
constants (`relay.const(2.0)` written twice). Calls inside a function are not merged with
calls outside it: each function body has its own table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..expr import Call, Constant, Expr, Function, Op, TupleGetItem
from ..expr_functor import ExprMutator


def _arg_key(e: Any) -> Any:
    if isinstance(e, Constant) and e.data.numpy().ndim == 0:
        a = e.data.numpy()
        return ("scalar", str(a.dtype), a.tobytes())
    return id(e)


class _CSE(ExprMutator):
    def __init__(self, fskip: Callable[[Any], bool] | None) -> None:
        super().__init__()
        self.fskip = fskip
        self.seen: list[dict[Any, Expr]] = [{}]
        self.keep: list[Any] = []  # keys hold ids: the nodes must outlive the table

    def visit_call(self, call: Call) -> Expr:
        new = super().visit_call(call)
        if not isinstance(new.op, Op) or (self.fskip is not None and self.fskip(new)):
            return new
        key = (new.op.name, tuple(_arg_key(a) for a in new.args), new.attrs)
        return self._share(key, new)

    def visit_tuple_getitem(self, item: TupleGetItem) -> Expr:
        new = super().visit_tuple_getitem(item)
        return self._share(("getitem", id(new.tuple_value), new.index), new)

    def _share(self, key: Any, new: Expr) -> Expr:
        table = self.seen[-1]
        if key in table:
            return table[key]
        table[key] = new
        self.keep.append(new)
        return new

    def visit_function(self, func: Function) -> Expr:
        if func.attrs.get("Primitive"):
            return func
        self.seen.append({})
        try:
            return super().visit_function(func)
        finally:
            self.seen.pop()


def eliminate_common_subexpr(
    func: Function, fskip: Callable[[Any], bool] | None = None
) -> Function:
    """`func` with repeated calls computed once; `fskip(call)` True keeps a call apart."""
    return _CSE(fskip).visit(func)
