"""Checks on a PrimFunc that arrives already scheduled (TVMScript): the same legality rules
the primitives enforce, run once before lowering.

- `verify_loop_kinds`: a parallel, vectorized or thread-bound loop carries no reduction and
  no other update of one element from two iterations (the rules of `Schedule.parallel`).
- `verify_block_bindings`: every block binding stays inside its iterator's domain.
"""

from __future__ import annotations

from typing import Any

from ..expr import (
    LT,
    Add,
    And,
    Cast,
    FloorDiv,
    FloorMod,
    IterType,
    Mul,
    Range,
    Var,
    cast,
    logical_and,
    make_const,
)
from ..expr_build import flatten_operands
from ..function import PrimFunc
from ..stmt import Allocate, Block, BlockRealize, BufferStore, DeclBuffer, For, ForKind, LetStmt
from .binding import block_points
from .common import const_int, schedule_error
from .loop_transform import check_loop_kind
from .tree import uses_var, walk

_CHECKED_KINDS = (ForKind.PARALLEL, ForKind.VECTORIZED, ForKind.THREAD_BINDING)


def verify_loop_kinds(func: PrimFunc) -> None:
    """Raise ScheduleError when a parallel/vectorized/thread-bound loop of `func` would race."""
    for s, path in walk(func.body):
        if isinstance(s, For) and s.kind in _CHECKED_KINDS:
            check_loop_kind(func, s, s.kind, path)
            _check_plain_stores(func, s)


def _check_plain_stores(func: PrimFunc, loop: For) -> None:
    """Stores outside blocks (already-lowered TVMScript) that accumulate into one element from
    every iteration of `loop`, e.g. `for k in T.parallel(n): s[0] = s[0] + a[k]`."""
    if loop.kind is ForKind.VECTORIZED or const_int(loop.extent) == 1:
        return  # a vectorized plain store is the vectorizer's to check or scalarize
    for s, path in walk(loop.body):
        if not isinstance(s, BufferStore) or any(isinstance(p, Block) for p in path):
            continue
        if _private_to_iteration(s.buffer, path):
            continue
        if uses_var(list(s.indices), {id(loop.loop_var)}):
            if not _iterations_write_apart(loop, s, path):
                raise schedule_error(
                    func,
                    f"loop '{loop.loop_var.name}' is {loop.kind.name.lower()}, but the store "
                    f"{s.buffer.name}[{', '.join(map(str, s.indices))}] cannot be proven to "
                    "write different elements in different iterations, so iterations may race; "
                    "make the loop serial or index the store by the loop variable",
                    loop,
                )
            continue
        reads_back = []
        from ..functor import post_order_visit

        post_order_visit(
            s.value,
            lambda n, out=reads_back, buf=s.buffer: (
                out.append(n) if getattr(n, "buffer", None) is buf else None
            ),
        )
        if reads_back:
            raise schedule_error(
                func,
                f"loop '{loop.loop_var.name}' is {loop.kind.name.lower()}, but every iteration "
                f"updates the same element of {s.buffer.name} (it reads it back); make the "
                "loop serial or give each iteration its own element",
                loop,
            )


def _private_to_iteration(buf: Any, path: tuple) -> bool:
    """Whether `buf` is allocated inside the loop body (each iteration has its own)."""
    return any(
        (isinstance(p, Allocate) and p.buffer_var is buf.data)
        or (isinstance(p, DeclBuffer) and p.buffer.data is buf.data and _is_allocated(p, path))
        for p in path
    )


def _is_allocated(decl: Any, path: tuple) -> bool:
    return any(isinstance(p, Allocate) and p.buffer_var is decl.buffer.data for p in path)


def _iterations_write_apart(loop: For, store: BufferStore, path: tuple) -> bool:
    """Some index of `store` strictly increases (or decreases) from iteration v to v + 1 of
    `loop` whatever the inner loops do: then no two iterations write one element."""
    from ...arith import Analyzer
    from ..functor import substitute

    inner = [p for p in path if isinstance(p, For) and p is not loop]
    if any(isinstance(p, LetStmt) for p in path):
        return False  # a let-bound index is not analysed
    ana = Analyzer()
    v = loop.loop_var
    ana.bind(v, Range.from_min_extent(loop.min, loop.extent - 1))  # v and v + 1 both run
    again = {}
    for f in inner:
        twin = Var(f.loop_var.name + "_next", f.loop_var.dtype)
        again[f.loop_var] = twin
        ana.bind(f.loop_var, Range.from_min_extent(f.min, f.extent))
    for f in inner:  # the next iteration's inner loops, over their own (maybe v-dependent) ranges
        nxt = {v: v + 1, **again}
        ana.bind(
            again[f.loop_var],
            Range.from_min_extent(substitute(f.min, nxt), substitute(f.extent, nxt)),
        )
    for index in store.indices:
        step = substitute(index, {v: v + 1, **again}) - index
        if ana.can_prove(step >= 1) or ana.can_prove(step <= -1):
            return True
    return False


def verify_block_bindings(func: PrimFunc) -> None:
    """Raise ScheduleError when a block binding can leave its iterator's domain."""
    dims = _shape_facts(func)
    for s, path in walk(func.body):
        if not isinstance(s, BlockRealize) or not s.block.iter_vars:
            continue
        bad = _binding_out_of_domain(s, path, dims)
        if bad is not None:
            iv, value, why = bad
            kind = "spatial" if iv.iter_type != IterType.CommReduce else "reduce"
            raise schedule_error(
                func,
                f"block '{s.block.name_hint}': iterator '{iv.var.name}' is declared as "
                f"T.axis.{kind}({_show_dom(iv.dom)}, ...) but bound to {value}, which {why}; "
                "fix the binding or the domain (or add a T.where that keeps it inside)",
                s,
            )


def _show_dom(dom: Range) -> str:
    return str(dom.extent) if const_int(dom.min) == 0 else f"({dom.min}, {dom.min + dom.extent})"


def _scope_analyzer(path: tuple) -> Any:
    """An analyzer with every loop and enclosing block iterator on `path` bound to its range."""
    from ...arith import Analyzer

    ana = Analyzer()
    for p in path:
        if isinstance(p, For):
            ana.bind(p.loop_var, Range.from_min_extent(p.min, p.extent))
        elif isinstance(p, Block):
            for iv in p.iter_vars:
                if iv.dom is not None:
                    ana.bind(iv.var, iv.dom)
    return ana


def _prove_below(ana: Any, e: Any, hi: Any, facts: tuple = (), loops: Any = None) -> bool:
    """e < hi; `a // d < hi` follows from `a < hi * d` when d > 0 (a fused loop's outer
    part, which the analyzer's interval bounds cannot see for a symbolic d), a loop variable
    is below hi when its loop ends by hi (`loops`: id(var) -> For; a fused extent of several
    symbolic dims, which interval bounds cannot compare either), and a guard `a < b` with
    `e - hi <= a - b` settles it whatever its terms (T.min/T.max of shapes)."""
    if ana.can_prove(e < hi):
        return True
    if _is_int_cast(e):  # narrowing is value-preserving when the wide value is in range
        return _prove_below(ana, e.value, cast(e.value.dtype, hi), facts, loops)
    loop = (loops or {}).get(id(e)) if isinstance(e, Var) else None
    if loop is not None and ana.can_prove(
        loop.min + loop.extent - cast(loop.extent.dtype, hi) <= 0
    ):
        return True
    if isinstance(e, FloorMod) and _divisor_positive(ana, e.b):  # x % d < d <= hi
        return ana.can_prove(e.b - cast(e.b.dtype, hi) <= 0)
    if any(ana.can_prove((e - hi) - (f.a - f.b) <= 0) for f in facts):
        return True
    return (
        isinstance(e, FloorDiv)
        and _divisor_positive(ana, e.b)
        and _prove_below(ana, e.a, hi * e.b, facts, loops)
    )


def _positive_parts(extent: Any) -> list:
    """`extent` and, for `E * c` with a constant c > 0, also E (both are > 0 when the loop runs)."""
    out = [extent]
    if isinstance(extent, Mul):
        for x, c in ((extent.a, extent.b), (extent.b, extent.a)):
            if (const_int(c) or 0) > 0:
                out.append(x)
    return out


def _prove_at_least(ana: Any, e: Any, lo: Any) -> bool:
    """e >= lo; for lo == 0 also by the signs of e's parts (`x % d * 16 + j` is >= 0 when
    d > 0, a fact the analyzer keeps but does not apply inside a symbolic floormod)."""
    if ana.can_prove(e >= lo):
        return True
    if _is_int_cast(e):
        return _prove_at_least(ana, e.value, cast(e.value.dtype, lo))
    return const_int(lo) == 0 and _nonnegative(ana, e)


def _divisor_positive(ana: Any, d: Any) -> bool:
    """d > 0 wherever a binding divided by d is used: d >= 0 suffices, because a divisor of 0
    either stops the block from running (a fused extent n * 0) or is a run-time error (codegen
    checks every non-constant divisor), so no access is made with it."""
    if ana.can_prove(_widened(d) >= 0):
        return True
    # by the signs of its parts: `(a * b + 15) // 16`, a fused loop's count of vectors, is
    # >= 0 when the dim a * b is, a fact the analyzer keeps for a*b but not through the division
    return not isinstance(d, Var) and _nonnegative(ana, d)


def _widened(e: Any) -> Any:
    """The value under widening integer casts (same sign as the cast value)."""
    while _is_int_cast(e) and e.dtype.bits >= e.value.dtype.bits:
        e = e.value
    return e


def _is_int_cast(e: Any) -> bool:
    """An integer-to-integer cast (int64 offsets of a fused symbolic loop bound to int32)."""
    return isinstance(e, Cast) and e.dtype.is_int and e.value.dtype.is_int


def _nonnegative(ana: Any, e: Any) -> bool:
    if ana.can_prove(e >= 0):
        return True
    if isinstance(e, Add | Mul):
        return _nonnegative(ana, e.a) and _nonnegative(ana, e.b)
    if isinstance(e, FloorMod):
        return _divisor_positive(ana, e.b)
    if isinstance(e, FloorDiv):
        return _divisor_positive(ana, e.b) and _nonnegative(ana, e.a)
    if isinstance(e, Cast) and e.dtype.is_int and e.value.dtype.is_int:
        # widening keeps the sign; narrowing keeps it too when the value fits below the top bit
        if not _nonnegative(ana, e.value):
            return False
        return e.dtype.bits >= e.value.dtype.bits or ana.can_prove(
            e.value < make_const(e.value.dtype, 2 ** (e.dtype.bits - 1))
        )
    return False


def _shape_facts(func: PrimFunc) -> Any:
    """`n >= 0` for every non-constant dim of a param buffer (`n`, `a * b`): the argument
    checker binds or compares it to an array's shape, never negative."""
    facts = None
    for buf in func.buffer_map.values():
        for d in buf.shape:
            if const_int(d) is None and d.dtype.is_int:
                facts = d >= 0 if facts is None else logical_and(facts, d >= 0)
    return facts


def _binding_out_of_domain(r: BlockRealize, path: tuple, dims: Any = None) -> tuple | None:
    """(iter var, binding, reason) for the first binding not proven inside its domain."""
    ana = _scope_analyzer(path)
    # the block runs only where its predicate holds and every enclosing loop is non-empty
    facts = r.predicate
    for p in path:
        if isinstance(p, For) and const_int(p.extent) is None:
            for positive in _positive_parts(p.extent):
                facts = logical_and(positive > 0, facts)
    guards = tuple(c for c in flatten_operands(r.predicate, And) if isinstance(c, LT))
    loops_by_var = {id(p.loop_var): p for p in path if isinstance(p, For)}

    def proven(iv: Any, value: Any) -> bool:
        lo, hi = iv.dom.min, iv.dom.min + iv.dom.extent
        return _prove_at_least(ana, value, lo) and _prove_below(
            ana, value, hi, guards, loops_by_var
        )

    pairs = [(iv, v) for iv, v in zip(r.block.iter_vars, r.iter_values) if iv.dom is not None]
    with ana.constraint_scope(facts):
        unproven = [(iv, v) for iv, v in pairs if not proven(iv, v)]
    if unproven and dims is not None:
        # second try with the shape dims known non-negative (kept apart: simplifying them into
        # the loop facts can hide a fact the first try used)
        with ana.constraint_scope(dims), ana.constraint_scope(facts):
            unproven = [(iv, v) for iv, v in unproven if not proven(iv, v)]
    if not unproven:
        return None
    loops = [p for p in path if isinstance(p, For)]
    points = block_points(r, loops)
    if points is None:
        iv, value = unproven[0]
        return iv, value, "cannot be proven to stay inside it"
    index = {id(iv.var): k for k, iv in enumerate(r.block.iter_vars)}
    for iv, value in unproven:
        lo, ext = const_int(iv.dom.min), const_int(iv.dom.extent)
        reached = [p[index[id(iv.var)]] for p in points]
        if lo is None or ext is None:
            return iv, value, "cannot be proven to stay inside it"
        outside = [x for x in reached if not lo <= x < lo + ext]
        if outside:
            worst = max(outside) if max(outside) >= lo + ext else min(outside)
            return iv, value, f"reaches {worst}"
    return None


__all__ = ["verify_block_bindings", "verify_loop_kinds"]
