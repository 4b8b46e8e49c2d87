"""Shape arithmetic for the VM: tir PrimExprs over symbolic dims become Python source over the
heap `h` of bound dims (`h[0] * 4`), compiled once into lambdas (never re-interpreted per call).

The source is what the VM program stores in JSON; `compile_shape_fn` re-validates it (only
integer arithmetic on `h[i]`, `min`, `max`) before compiling, so a loaded file cannot run code.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence

from ...error import BuildError, RuntimeError_
from ...tir import expr as tx

_BINOPS = {
    tx.Add: "+",
    tx.Sub: "-",
    tx.Mul: "*",
    tx.FloorDiv: "//",
    tx.FloorMod: "%",
    tx.Div: "//",
    tx.Mod: "%",
}  # dims are non-negative: truncating == flooring
_CALLS = {tx.Min: "min", tx.Max: "max"}
_ALLOWED = (
    ast.Expression,
    ast.Lambda,
    ast.arguments,
    ast.arg,
    ast.Tuple,
    ast.BinOp,
    ast.UnaryOp,
    ast.USub,
    ast.Constant,
    ast.Subscript,
    ast.Name,
    ast.Load,
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.FloorDiv,
    ast.Mod,
    ast.Call,
)


def to_source(e: tx.PrimExpr, slots: dict, what: str) -> str:
    """Python source of `e` where the dim bound in heap slot k is `h[k]`."""
    if isinstance(e, int):
        return str(e)
    if isinstance(e, tx.IntImm):
        return str(e.value)
    if isinstance(e, tx.Var):
        for v, k in slots.items():
            if v is e:
                return f"h[{k}]"
        raise BuildError(
            f"{what}: symbolic dim '{e.name}' is not bound by any parameter's shape; bind it "
            "with a parameter of that shape or bb.match_cast"
        )
    if isinstance(e, tx.Cast):
        return to_source(e.value, slots, what)
    if type(e) in _BINOPS:
        op = _BINOPS[type(e)]
        return f"({to_source(e.a, slots, what)} {op} {to_source(e.b, slots, what)})"
    if type(e) in _CALLS:
        return f"{_CALLS[type(e)]}({to_source(e.a, slots, what)}, {to_source(e.b, slots, what)})"
    raise BuildError(f"{what}: cannot compute the shape expression {e} at run time")


def compile_shape_fn(sources: Sequence[str], where: str) -> Callable[[list], tuple]:
    """`fn(h) -> tuple of ints` for the given per-entry sources (validated, compiled once)."""
    text = "lambda h: (" + "".join(f"{s}, " for s in sources) + ")"
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as err:
        raise RuntimeError_(f"{where}: malformed shape expression in the VM program") from err
    for node in ast.walk(tree):
        ok = isinstance(node, _ALLOWED)
        if isinstance(node, ast.Name):
            ok = node.id in ("h", "min", "max")
        elif isinstance(node, ast.Constant):
            ok = type(node.value) is int
        elif isinstance(node, ast.Call):
            ok = isinstance(node.func, ast.Name) and node.func.id in ("min", "max")
        if not ok:
            raise RuntimeError_(
                f"{where}: the VM program's shape expression {text!r} is not "
                "plain integer arithmetic"
            )
    return eval(
        compile(tree, f"<shape of {where}>", "eval"), {"__builtins__": {}, "min": min, "max": max}
    )
