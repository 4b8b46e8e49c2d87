"""`verify_ssa` (every variable defined once) and `expr_deep_equal` (equality with vars by
identity), TVM's `tir.analysis` checks."""

from __future__ import annotations

from typing import Any

from ...ir.structural import structural_equal
from ..expr import Let, PrimExpr, Var
from ..function import PrimFunc
from ..functor import pre_order_visit
from ..stmt import Allocate, AllocateConst, Block, For, LetStmt

# node class -> the variables it defines
_DEFINES = {
    For: lambda n: (n.loop_var,),
    LetStmt: lambda n: (n.var,),
    Let: lambda n: (n.var,),
    Allocate: lambda n: (n.buffer_var,),
    AllocateConst: lambda n: (n.buffer_var,),
    Block: lambda n: tuple(iv.var for iv in n.iter_vars),
}


def expr_deep_equal(lhs: PrimExpr, rhs: PrimExpr) -> bool:
    """Whether two expressions are the same tree, free variables compared by identity.

    `expr_deep_equal(x + 1, x + 1)` is True; with two different `Var("x")` it is False.
    """
    return bool(structural_equal(lhs, rhs, map_free_vars=False))


def verify_ssa(func: PrimFunc) -> bool:
    """Whether every variable of `func` is defined once (a parameter, loop var, let, allocation
    or block iter var). A `Let` expression may bind its var again to a deep-equal value (TVM's
    weak SSA for a shared Let node)."""
    defined: dict[int, Any] = {id(p): None for p in func.params}
    ok = [True]

    def visit(n: Any) -> None:
        rule = _DEFINES.get(type(n))
        if rule is None:
            return
        for var in rule(n):
            if id(var) not in defined:
                defined[id(var)] = n.value if isinstance(n, Let) else var
                continue
            prev = defined[id(var)]
            if not (
                isinstance(n, Let)
                and isinstance(prev, PrimExpr)
                and not isinstance(prev, Var)
                and expr_deep_equal(prev, n.value)
            ):
                ok[0] = False

    pre_order_visit(func.body, visit)
    return ok[0]
