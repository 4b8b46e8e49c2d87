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
    """`fn(h) -> tuple of ints` for the given per-entry sources (validated, compiled once).

    The sources may come from a loaded file, so each must be integer arithmetic in the grammar
    `to_source` writes (ints, `h[k]`, + - * // %, unary -, min/max of two): anything else —
    a tuple times a huge int, a slice, a nested lambda — is refused before it is compiled."""
    entries = []
    for text in sources:
        try:
            tree = ast.parse(text, mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
            raise RuntimeError_(f"{where}: malformed shape expression in the VM program") from err
        if not _is_int_expr(tree, 0):
            raise RuntimeError_(
                f"{where}: the VM program's shape expression {text[:80]!r} is not plain integer "
                "arithmetic over h[k] (+ - * // % min max)"
            )
        if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
            raise RuntimeError_(
                f"{where}: a shape expression of the VM program has more than {MAX_NODES} terms"
            )
        entries.append(_CheckedDivision().visit(tree))
    body = ast.Tuple(elts=entries, ctx=ast.Load())
    args = ast.arguments(
        posonlyargs=[], args=[ast.arg(arg="h")], kwonlyargs=[], kw_defaults=[], defaults=[]
    )
    tree = ast.fix_missing_locations(ast.Expression(ast.Lambda(args=args, body=body)))
    scope = {"__builtins__": {}, "min": min, "max": max, "_div": _div, "_mod": _mod}
    return eval(compile(tree, f"<shape of {where}>", "eval"), scope)


MAX_NODES = 20000  # per expression: bounds the size (and the time) of the integers computed


class _CheckedDivision(ast.NodeTransformer):
    """`a // b` and `a % b` become `_div(a, b)` / `_mod(a, b)`, which refuse a zero divisor."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        name = {ast.FloorDiv: "_div", ast.Mod: "_mod"}.get(type(node.op))
        if name is None:
            return node
        return ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=[node.left, node.right],
                        keywords=[])  # fmt: skip


def _div(a: int, b: int) -> int:
    if b == 0:
        raise RuntimeError_("a shape expression of the VM program divides by zero")
    return a // b


def _mod(a: int, b: int) -> int:
    if b == 0:
        raise RuntimeError_("a shape expression of the VM program takes a remainder by zero")
    return a % b


_MAX_DEPTH, _MAX_CONST = 64, 2**63
_INT_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)


def _is_int_expr(node: ast.AST, depth: int) -> bool:
    """Whether `node` is in the shape-expression grammar (see compile_shape_fn)."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(node, ast.Constant):
        return type(node.value) is int and abs(node.value) < _MAX_CONST
    if isinstance(node, ast.Subscript):  # h[k]
        index = node.slice
        return (
            isinstance(node.value, ast.Name)
            and node.value.id == "h"
            and isinstance(index, ast.Constant)
            and type(index.value) is int
            and 0 <= index.value < _MAX_CONST
        )
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, ast.USub) and _is_int_expr(node.operand, depth + 1)
    if isinstance(node, ast.BinOp):
        return (
            isinstance(node.op, _INT_BINOPS)
            and _is_int_expr(node.left, depth + 1)
            and _is_int_expr(node.right, depth + 1)
        )
    if isinstance(node, ast.Call):
        return (
            isinstance(node.func, ast.Name)
            and node.func.id in ("min", "max")
            and len(node.args) == 2
            and not node.keywords
            and all(_is_int_expr(a, depth + 1) for a in node.args)
        )
    return False
