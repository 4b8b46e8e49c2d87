"""ToANormalForm: every call, tuple and projection is bound to a variable by a `let`, in an
order where each value is bound before its uses; the function returns the last variable.

Nested functions, `if` and `let` expressions are bound whole (their insides are not
rewritten). ToGraphNormalForm undoes it.
"""

from __future__ import annotations

from typing import Any

from ..analysis import dataflow_operands
from ..expr import Call, Expr, Function, Let, Tuple, TupleGetItem, Var

_BOUND = (Call, Tuple, TupleGetItem)




def _rebuild(e: Any, new: dict) -> Expr:
    """`e` with its operands replaced by the variables bound to them."""
    if isinstance(e, Call):
        return Call(e.op, [new.get(a, a) for a in e.args], e.attrs, e.type_args)
    if isinstance(e, Tuple):
        return Tuple([new.get(f, f) for f in e.fields])
    return TupleGetItem(new.get(e.tuple_value, e.tuple_value), e.index)


def _post_order(body: Expr) -> list:
    """The calls, tuples and projections of `body`, operands first, each once."""
    order, seen = [], set()
    stack: list[tuple[Any, bool]] = [(body, False)]
    while stack:
        e, expanded = stack.pop()
        if expanded:
            order.append(e)
        elif id(e) not in seen and isinstance(e, _BOUND):
            seen.add(id(e))
            stack.append((e, True))
            stack.extend((c, False) for c in reversed(dataflow_operands(e)))
    return order


def to_a_normal_form(func: Function) -> Function:
    """`func` with each intermediate value let-bound (see the module docstring)."""
    order = _post_order(func.body)
    if not order:
        return func
    new: dict[Any, Var] = {}
    bindings = []
    for e in order:
        var = Var("x")
        bindings.append((var, _rebuild(e, new)))
        new[e] = var
    body: Expr = new.get(func.body, func.body)
    for var, value in reversed(bindings):
        body = Let(var, value, body)
    return func.replace(body=body)
