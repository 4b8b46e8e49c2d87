"""Shape arithmetic for the VM: tir PrimExprs over symbolic dims become Python source over the
heap `h` of bound dims (`h[0] * 4`), compiled once into lambdas (never re-interpreted per call).

The source is what the VM program stores in JSON; `compile_shape_fn` re-validates it (only
integer arithmetic on `h[i]`, `min`, `max`) before compiling, so a loaded file cannot run code.
"""

from __future__ import annotations

import ast
import re
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
    entries = [_checked_sum(text, where) for text in sources]
    body = ast.Tuple(elts=entries, ctx=ast.Load())
    args = ast.arguments(
        posonlyargs=[], args=[ast.arg(arg="h")], kwonlyargs=[], kw_defaults=[], defaults=[]
    )
    tree = ast.fix_missing_locations(ast.Expression(ast.Lambda(args=args, body=body)))
    scope = {"__builtins__": {}, "min": min, "max": max, "_div": _div, "_mod": _mod}
    return eval(compile(tree, f"<shape of {where}>", "eval"), scope)


MAX_NODES = 20000  # per expression: bounds the size (and the time) of the integers computed


def _checked_sum(text: str, where: str) -> ast.expr:
    """The validated tree of one expression, read as a sum of top-level terms.

    A function's memory statistics are one flat sum with a term per intermediate (hundreds in
    a training step), which Python parses as a left-leaning chain as deep as the sum is long.
    Each term is parsed and held to the depth limit on its own; equal terms are counted once
    (`t * count`) and the terms are re-associated as a balanced tree, so nesting stays
    logarithmic in their number. Integer addition is exact, so the value does not change."""
    terms: dict[str, list] = {}  # a term's text -> [its tree, count], in first-seen order
    nodes = 0  # of the distinct terms: each is compiled once, however often it occurs
    for piece in _top_level_terms(text, where):
        piece = piece.strip()
        if piece in terms:
            terms[piece][1] += 1
            continue
        try:
            tree = ast.parse(piece, mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
            raise RuntimeError_(f"{where}: malformed shape expression in the VM program") from err
        if not _is_int_expr(tree, 0):
            raise RuntimeError_(
                f"{where}: the VM program's shape expression {text[:80]!r} is not plain integer "
                "arithmetic over h[k] (+ - * // % min max)"
            )
        nodes += sum(1 for _ in ast.walk(tree))
        if nodes > MAX_NODES:
            raise RuntimeError_(
                f"{where}: a shape expression of the VM program has more than {MAX_NODES} terms"
            )
        terms[piece] = [tree, 1]
    counted = [
        t if n == 1 else ast.BinOp(t, ast.Mult(), ast.Constant(n)) for t, n in terms.values()
    ]
    return _CheckedDivision().visit(_balanced_sum(counted))


def _top_level_terms(text: str, where: str) -> list[str]:
    """`text` split at each `+` outside brackets. + and - share one precedence level and
    associate left, so `a - b + c - d` is `(a - b) + (c - d)`: the pieces sum to the whole.
    Anything odd this lets through (`a + + b`, a stray bracket) fails to parse as a piece."""
    pieces, depth, start = [], 0, 0
    for m in _TOKEN.finditer(text):
        c = m.group()
        depth += _DEPTH_STEP[c]
        if depth < 0:
            raise RuntimeError_(f"{where}: malformed shape expression in the VM program")
        if c == "+" and depth == 0:
            pieces.append(text[start : m.start()])
            start = m.end()
    pieces.append(text[start:])
    return pieces


_TOKEN = re.compile(r"[()\[\]+]")
_DEPTH_STEP = {"(": 1, "[": 1, ")": -1, "]": -1, "+": 0}


def _balanced_sum(terms: list) -> ast.expr:
    """`t0 + t1 + ...` as a tree of depth log2(len(terms)) (iterative: one level per pass)."""
    while len(terms) > 1:
        pairs = [ast.BinOp(a, ast.Add(), b) for a, b in zip(terms[::2], terms[1::2])]
        terms = pairs + terms[len(pairs) * 2 :]
    return terms[0]


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
