"""Loop primitives: split, fuse, reorder, loop kinds (parallel/vectorize/unroll/bind), annotate."""

from __future__ import annotations

import itertools
import math
from typing import Any

from ...ir.dtype import DataType
from ..expr import (
    LT,
    Add,
    And,
    FloorDiv,
    FloorMod,
    IntImm,
    IterType,
    IterVar,
    Mul,
    PrimExpr,
    Sub,
    Var,
    as_expr,
    binary,
    cast,
    logical_and,
)
from ..expr_build import flatten_operands
from ..function import PrimFunc
from ..functor import map_outermost, substitute
from ..names import is_call
from ..op import likely
from ..stmt import Block, BlockRealize, For, ForKind, IfThenElse, Stmt
from .common import (
    analyzer,
    const_int,
    describe_loop,
    is_one,
    is_reduction_block,
    is_zero,
    schedule_error,
    shown_factors,
)
from .tree import Path, loops_above, map_realizes, replace_stmt, uses_var, walk


def _mul_all(values: list[PrimExpr], like: PrimExpr) -> PrimExpr:
    out: PrimExpr = IntImm(like.dtype, 1)
    for v in values:
        out = binary(Mul, out, v)
    return out


def _check_factors(func: PrimFunc, loop: For, factors: list, what: str = "split") -> list:
    """Validate split (or loop_partition) factors; return them as PrimExprs (None kept for the
    one inferred)."""
    where = f"{what}({describe_loop(loop)})"
    shown = shown_factors(factors)
    if len(factors) < 1:
        raise schedule_error(func, f"{where}: factors must not be empty", loop)
    if sum(f is None for f in factors) > 1:
        raise schedule_error(
            func,
            f"{where}: factors {shown} contain more than one None; at most one factor "
            "may be inferred",
            loop,
        )
    out = []
    for f in factors:
        if f is None:
            out.append(None)
            continue
        if isinstance(f, bool) or not isinstance(f, int | PrimExpr):
            raise schedule_error(
                func, f"{where}: factor {f!r} is not an int, None or expression", loop
            )
        value = const_int(f)
        if value is not None and value <= 0:
            word = "0" if value == 0 else "a negative number"
            raise schedule_error(
                func,
                f"{where}: factors {shown} contain {word}; use positive integers, at most one None",
                loop,
            )
        expr = as_expr(f, like=loop.extent.dtype)
        if not expr.dtype.is_integer:
            raise schedule_error(func, f"{where}: factor `{expr}` is not an integer", loop)
        expr = cast(loop.extent.dtype, expr)
        out.append(expr if value is not None else analyzer().simplify(expr))
    return out


# the values vscale takes on AArch64 SVE (vector lengths of 128 to 2048 bits, powers of two)
_SVE_VSCALES = (1, 2, 4, 8, 16)


def _has_vscale(e: PrimExpr) -> bool:
    from ..expr import Call
    from ..functor import post_order_visit

    found: list = []
    post_order_visit(
        e, lambda n: found.append(n) if isinstance(n, Call) and n.op.name == "tir.vscale" else None
    )
    return bool(found)


def _targets_sve() -> bool:
    from ...target import Target

    t = Target.current()
    return t is not None and "aarch64" in (t.mtriple or "") and "+sve" in t.mattr


def prove_scalable(ana: Any, cond: PrimExpr) -> bool:
    """`ana.can_prove(cond)`; a condition on T.vscale() under an AArch64 SVE target (`with
    Target(...)`) is proved for every vscale SVE allows. Elsewhere vscale has no known values."""
    if ana.can_prove(cond):
        return True
    if not _has_vscale(cond) or not _targets_sve():
        return False

    def at(k: int) -> PrimExpr:
        """`cond` with vscale fixed to `k`."""
        return map_outermost(cond, lambda n: is_call(n, "tir.vscale"), lambda n: IntImm(n.dtype, k))

    return all(ana.can_prove(at(k)) for k in _SVE_VSCALES)


def add_predicate(stmt: Stmt, cond: PrimExpr) -> Stmt:
    """AND `cond` into the predicate of every block realized directly under `stmt`."""
    found = False

    def guard(r: BlockRealize) -> BlockRealize:
        nonlocal found
        found = True
        pred = r.predicate
        is_true = isinstance(pred, IntImm) and pred.value == 1
        return r.replace(predicate=cond if is_true else logical_and(pred, cond))

    out = map_realizes(stmt, guard)
    return out if found else IfThenElse(likely(cond), stmt)


def simplify_bindings(
    stmt: Stmt,
    loops: list[For],
    keep: tuple = (),
    predicate: bool = True,
    only: tuple = (),
    as_is: tuple = (),
) -> Stmt:
    """Simplify the iter_values (and, if `predicate`, the predicates) of the blocks under
    `stmt`; with `only` (loops), just the values that use those loops. Loops in `keep` are
    left unbound, so a unit loop stays visible in the bindings (TVM's preserve_unit_iters).
    A value that is one of the objects in `as_is` stays as it is."""
    outer = list(loops)
    inner = [s for s, _ in walk(stmt) if isinstance(s, For)]
    kept = {id(f.loop_var) for f in keep}
    ana = analyzer([f for f in outer + inner if id(f.loop_var) not in kept])
    touched = {id(f.loop_var) for f in only}

    def one(v: PrimExpr) -> PrimExpr:
        if any(v is a for a in as_is):
            return v
        return ana.simplify(v) if not touched or uses_var(v, touched) else v

    def simp(r: BlockRealize) -> BlockRealize:
        values = tuple(one(v) for v in r.iter_values)
        same = all(a is b for a, b in zip(values, r.iter_values))
        pred = ana.simplify(r.predicate) if predicate else r.predicate
        return r.replace(iter_values=r.iter_values if same else values, predicate=pred)

    return map_realizes(stmt, simp)


def _check_plain_loop(func: PrimFunc, what: str, loop: For) -> None:
    """split/fuse take serial-or-kind loops without annotations or thread binding that start
    at 0 (TVM's rules: an annotation or a binding would not carry over to the new loops)."""
    if loop.annotations or loop.thread_binding is not None:
        why = "is bound to a thread" if loop.thread_binding is not None else "has annotations"
        raise schedule_error(
            func,
            f"{what}: loop '{loop.loop_var.name}' {why} ({dict(loop.annotations) or ''}"
            f"{loop.thread_binding.thread_tag if loop.thread_binding is not None else ''}); "
            "split or fuse it before annotating or binding it",
            loop,
        )
    if not is_zero(loop.min):
        raise schedule_error(
            func,
            f"{what}: loop '{loop.loop_var.name}' starts at {loop.min}, not 0; only loops "
            "that start at 0 can be split or fused",
            loop,
        )


def split(
    func: PrimFunc,
    loop: For,
    path: Path,
    factors: list,
    preserve_unit_iters: bool = True,
    disable_predication: bool = False,
) -> tuple[PrimFunc, list[Var]]:
    """Split `loop` into len(factors) nested loops (outermost first); returns the new loop vars."""
    _check_plain_loop(func, f"split({describe_loop(loop)})", loop)
    factors = _check_factors(func, loop, list(factors))
    ext = loop.extent
    ana = analyzer(loops_above(path))
    known = [f for f in factors if f is not None]
    prod = _mul_all(known, ext)
    if None in factors:
        inferred = ana.simplify(FloorDiv(binary(Add, ext, binary(Sub, prod, 1)), prod))
        factors = [inferred if f is None else f for f in factors]
        exact_cond = binary(FloorMod, ext, prod).equal(0)
    else:
        prod = ana.simplify(prod)
        covers = prove_scalable(ana, prod >= ext)
        if not covers:
            raise schedule_error(
                func,
                f"split({describe_loop(loop)}): factors {shown_factors(factors)} multiply to {prod}, which "
                f"does not cover the loop extent {ext}; make the product at least the extent, or "
                "pass None for one factor to infer it",
                loop,
            )
        exact_cond = prod.equal(ext)
    exact = ana.can_prove(exact_cond)  # the guard stays unless provable without vscale (TVM)
    names = [f"{loop.loop_var.name}_{k}" for k in range(len(factors))]
    new_vars = [Var(n, loop.loop_var.dtype) for n in names]
    fused: PrimExpr = new_vars[0]
    for v, f in zip(new_vars[1:], factors[1:]):
        fused = binary(Add, binary(Mul, fused, f), v)
    value = fused if is_zero(loop.min) else binary(Add, loop.min, fused)
    body = substitute(loop.body, {loop.loop_var: value})
    if not exact and disable_predication:
        exact = prove_scalable(ana, exact_cond)  # vscale's values on SVE divide the extent
    if not exact and disable_predication:
        raise schedule_error(
            func,
            f"split({describe_loop(loop)}, disable_predication=True): cannot prove that the "
            f"factors' product divides the extent {ext}, so the last iterations would run "
            "out of bounds without a predicate; use factors that divide the extent",
            loop,
        )
    new_loops = [For(v, 0, f, ForKind.SERIAL, body) for v, f in zip(new_vars, factors)]
    units = [f for f in new_loops if is_one(f.extent)] if preserve_unit_iters else []
    # a binding that was the loop itself stays i_0 * f + i_1 when a factor is symbolic (TVM's
    # form; simplifying would distribute the product)
    symbolic = any(const_int(f) is None for f in factors)
    body = simplify_bindings(
        body,
        loops_above(path) + new_loops,
        keep=units,
        predicate=False,
        only=new_loops,
        as_is=(value,) if symbolic else (),
    )
    if not exact:  # as TVM writes it: the fused index, unsimplified, below the extent
        body = add_predicate(body, LT(fused, ext))
    for v, f in reversed(list(zip(new_vars, factors))):
        body = For(v, IntImm(v.dtype, 0), f, ForKind.SERIAL, body)
    return replace_stmt(func, loop, body), new_vars


def fuse(func: PrimFunc, loops: list[For], path: Path) -> tuple[PrimFunc, Var]:
    """Fuse directly nested loops (outermost first) into one; returns the fused loop var."""
    for outer, inner in itertools.pairwise(loops):
        if outer.body is not inner:
            names = ", ".join(f"'{f.loop_var.name}'" for f in loops)
            raise schedule_error(
                func,
                f"fuse({names}): loop '{inner.loop_var.name}' is not directly nested in "
                f"loop '{outer.loop_var.name}' (the body of '{outer.loop_var.name}' is not "
                "exactly that loop); fuse only adjacent loops of one chain, outermost first",
                inner,
            )
    for f in loops:
        _check_plain_loop(func, "fuse(" + ", ".join(g.loop_var.name for g in loops) + ")", f)
    for f in loops:
        if uses_var([g.extent for g in loops] + [g.min for g in loops], {id(f.loop_var)}):
            raise schedule_error(
                func, f"fuse: the extent of a fused loop depends on loop '{f.loop_var.name}'", f
            )
    # the widest index dtype, so the fused extent (a product) and the var agree; int64 when the
    # product may reach 2**31 (symbolic extents), where an int32 fused var would wrap
    dtype = max((f.loop_var.dtype for f in loops), key=lambda t: t.bits)
    extents = [f.extent for f in loops]
    ana = analyzer(loops_above(path))
    sizes = [ana.const_int_bound(e).max_value for e in extents]  # bounded, if not constant
    if dtype.bits < 64 and math.prod(max(x, 0) for x in sizes) >= 2**31:
        dtype = DataType("int64")
        extents = [cast(dtype, e) for e in extents]
    fused = Var("_".join(f.loop_var.name for f in loops) + "_fused", dtype)
    vmap: dict = {}
    for k, f in enumerate(loops):
        # TVM's form: (fused % (inner * extent)) // inner, the outermost without the %
        inner = _mul_all(extents[k + 1 :], fused)
        part: PrimExpr = fused
        if k > 0:
            part = binary(FloorMod, part, binary(Mul, inner, extents[k]))
        if k + 1 < len(loops):
            part = binary(FloorDiv, part, inner)
        part = part if is_zero(f.min) else binary(Add, f.min, part)
        vmap[f.loop_var] = cast(f.loop_var.dtype, part)
    body = substitute(loops[-1].body, vmap)
    total = ana.simplify(_mul_all(extents, fused))
    new = For(fused, IntImm(dtype, 0), total, ForKind.SERIAL, body)
    new = new.replace(body=simplify_bindings(body, loops_above(path) + [new]))
    return replace_stmt(func, loops[0], new), fused


def reorder(func: PrimFunc, located: list[tuple[For, Path]]) -> PrimFunc:
    """Reorder loops of one chain: the listed loops take each other's places in the given order."""
    names = ", ".join(f"'{f.loop_var.name}'" for f, _ in located)
    seen: set[int] = set()
    for f, _ in located:
        if id(f.loop_var) in seen:
            raise schedule_error(
                func,
                f"reorder({names}): loop '{f.loop_var.name}' is listed twice; list each loop once",
                f,
            )
        seen.add(id(f.loop_var))
    by_depth = sorted(located, key=lambda lp: len(lp[1]))
    top, top_path = by_depth[0]
    for f, p in by_depth[1:]:
        if not any(a is top for a in p) or any(isinstance(a, Block) for a in p[len(top_path) :]):
            raise schedule_error(
                func,
                f"reorder({names}): loops '{top.loop_var.name}' and '{f.loop_var.name}' "
                "are not in one loop chain (neither is nested in the other); reorder only loops "
                "that enclose the same block",
                f,
            )
    bottom = by_depth[-1][0]
    chain = [top]
    while chain[-1] is not bottom:
        body = chain[-1].body
        if not isinstance(body, For):
            raise schedule_error(
                func,
                f"reorder({names}): loop '{chain[-1].loop_var.name}' has a body that is not "
                "a single loop, so the loops between the reordered ones do not form one chain",
                chain[-1],
            )
        chain.append(body)
    listed = {id(f): k for k, (f, _) in enumerate(located)}
    order = iter([f for f, _ in located])
    headers = [next(order) if id(f) in listed else f for f in chain]
    chain_vars = {id(f.loop_var) for f in chain}
    for f in chain:
        if uses_var((f.min, f.extent), chain_vars):
            raise schedule_error(
                func,
                f"reorder({names}): the extent of loop '{f.loop_var.name}' depends on "
                "another loop of the chain",
                f,
            )
    _check_order_free(func, names, [f for f, h in zip(chain, headers) if f is not h], bottom)
    _check_affine_under(func, names, chain, bottom)
    body = bottom.body
    for f in reversed(headers):
        body = f.replace(body=body)
    return replace_stmt(func, top, body)


def _is_iter_binding(value: PrimExpr, loops: list[For]) -> bool:
    """TVM's affine binding over `loops` (other variables are constants): quasi-affine, and a
    plain sum of loops with some loop at stride 1 (`l * 16` alone skips values: not onto)."""
    from ...arith.affine import affine_coeffs

    ids = {id(f.loop_var) for f in loops}
    if not uses_var(value, ids):
        return True
    if not _affine(value, ids):
        return False
    got = affine_coeffs(value, [f.loop_var for f in loops])
    strides = [abs(c) for c in got[0].values() if c != 0] if got is not None else []
    return not strides or min(strides) == 1


def _guards_a_binding(cond: PrimExpr, values: list[PrimExpr], ids: set[int]) -> bool:
    """A predicate conjunct TVM's iterator analysis accepts: loop-free, or a bound on (part
    of) a binding, `x < bound` as split writes it, `lo <= x` as compute_at does."""
    from ...ir.structural import structural_equal
    from ..expr import GE, GT, LE
    from ..functor import post_order_visit

    if not uses_var(cond, ids):
        return True
    if not isinstance(cond, LT | LE | GT | GE):
        return False
    sides = [x for x in (cond.a, cond.b) if uses_var(x, ids)]
    if len(sides) != 1:
        return False
    parts: list = []
    for v in values:
        post_order_visit(v, parts.append)
    return any(structural_equal(sides[0], p) for p in parts if isinstance(p, PrimExpr))


def _check_affine_under(func: PrimFunc, names: str, chain: list[For], bottom: For) -> None:
    """TVM's rule: the blocks under the reordered loops bind their iterators affinely over the
    loops from the top of the range down (outer loops count as constants), and any predicate
    only bounds such a binding; otherwise the new loop order is refused."""
    for s, p in walk(bottom.body):
        if not isinstance(s, BlockRealize) or any(isinstance(a, Block) for a in p):
            continue
        loops = chain + [a for a in p if isinstance(a, For)]
        for iv, v in zip(s.block.iter_vars, s.iter_values):
            if not _is_iter_binding(v, loops):
                raise schedule_error(
                    func,
                    f"reorder({names}): block '{s.block.name_hint}' binds '{iv.var.name}' to "
                    f"{v}, which is not an affine binding of the loops being reordered (only "
                    "sums of loops times constants with a loop at stride 1, floordiv/floormod "
                    "by constants); reorder loops the block binds affinely",
                    s,
                )
        ids = {id(f.loop_var) for f in loops}
        # a unit loop's var is its start (a split by a factor above the extent leaves
        # `outer * 64 + inner < 4` with outer in [0, 1), which guards `inner` alone)
        unit = {f.loop_var: f.min for f in loops if const_int(f.extent) == 1}
        values = list(s.iter_values)
        if unit:
            ana = analyzer([])
            values = [ana.simplify(substitute(v, unit)) for v in values]
        for c in flatten_operands(s.predicate, And):
            if unit:
                c = ana.simplify(substitute(c, unit))
            if not _guards_a_binding(c, values, ids):
                raise schedule_error(
                    func,
                    f"reorder({names}): block '{s.block.name_hint}' has the predicate {c}, "
                    "which does not bound one of its bindings (as a split's guard does), so "
                    "its iteration space is not a box of the reordered loops; reorder before "
                    "adding the predicate",
                    s,
                )


def _check_order_free(func: PrimFunc, names: str, moved: list[For], bottom: For) -> None:
    """A loop that drives a scan (ordered) or opaque iterator carries an order the block relies
    on; moving it past other loops changes which iterations come first."""
    ids = {id(f.loop_var) for f in moved}
    for s, _ in walk(bottom.body):
        if not isinstance(s, BlockRealize):
            continue
        for iv, v in zip(s.block.iter_vars, s.iter_values):
            if iv.iter_type in (IterType.Ordered, IterType.Opaque) and uses_var(v, ids):
                raise schedule_error(
                    func,
                    f"reorder({names}): a moved loop drives iterator '{iv.var.name}' of block "
                    f"'{s.block.name_hint}', which is {iv.iter_type.name.lower()} (its "
                    "iterations must run in order); reorder only loops over spatial or "
                    "reduction iterators",
                    s,
                )


# loop kind -> (verb used in messages, what it would break on a reduction)
_KIND_VERB = {
    ForKind.PARALLEL: ("parallel", "parallelizing it would race on"),
    ForKind.VECTORIZED: ("vectorize", "vectorizing it would combine lanes of"),
    ForKind.THREAD_BINDING: ("bind", "binding it to threads would race on"),
}


def _check_no_reduction(func: PrimFunc, loop: For, kind: ForKind) -> None:
    verb, consequence = _KIND_VERB[kind]
    for s, _ in walk(loop.body):
        if not isinstance(s, BlockRealize):
            continue
        for iv, value in zip(s.block.iter_vars, s.iter_values):
            if iv.iter_type == IterType.CommReduce and uses_var(value, {id(loop.loop_var)}):
                out = ", ".join(w.buffer.name for w in s.block.writes) or s.block.name_hint
                fix = "Parallelize" if kind is ForKind.PARALLEL else "Use"
                raise schedule_error(
                    func,
                    f"{verb}(loop '{loop.loop_var.name}' of block '{s.block.name_hint}'): "
                    f"the loop drives reduction iterator '{iv.var.name}'; {consequence} {out}. "
                    f"{fix} a spatial loop, or rfactor the reduction first.",
                    loop,
                )


def _enclosing_bindings(stmts: tuple) -> dict:
    """Iter var -> value in loop variables, for the blocks realized along `stmts` (outermost
    first): a nested block's indices use its parents' iterators."""
    out: dict = {}
    for a in stmts:
        if isinstance(a, BlockRealize):
            for iv, v in zip(a.block.iter_vars, a.iter_values):
                out[iv.var] = substitute(v, out) if out else v
    return out


def _check_disjoint_updates(func: PrimFunc, loop: For, path: Path, kind: ForKind) -> None:
    """Blocks that accumulate (an init, or reading what they write) must update different
    elements in different iterations of a loop that runs its iterations at the same time."""
    from .compute_location import _self_reads
    from .race import iterations_collide

    verb, _ = _KIND_VERB[kind]
    if const_int(loop.extent) == 1:
        return  # a single iteration cannot race with another
    for s, p in walk(loop.body, path + (loop,)):
        if not isinstance(s, BlockRealize):
            continue
        if s.block.init is None and not _self_reads(s.block):
            continue  # overlapping plain stores write the same values
        if _private_to_each_thread(loop, s.block):
            continue  # each thread of the loop updates its own copy (a "local" accumulator)
        below = p[len(path) + 1 :]  # statements between the loop and the block
        inner = [a for a in below if isinstance(a, For)]
        outer_bind = _enclosing_bindings(below)
        if iterations_collide(loop, s, inner, loops_above(path), outer_bind):
            out = ", ".join(w.buffer.name for w in s.block.writes)
            raise schedule_error(
                func,
                f"{verb}(loop '{loop.loop_var.name}'): block '{s.block.name_hint}' under "
                f"it accumulates into {out}, and different iterations of "
                f"'{loop.loop_var.name}' update the same elements of {out}; use a loop that "
                f"{out}'s index depends on",
                loop,
            )


def _private_to_each_thread(loop: For, block: Any) -> bool:
    """Whether every buffer `block` writes has one copy per thread of the thread-bound `loop`
    (scope local under threadIdx, shared under blockIdx): no two iterations share it."""
    from ..analysis.thread_scope import shares_storage, storage_rank

    tag = loop.thread_binding.thread_tag if loop.thread_binding is not None else ""
    if loop.kind != ForKind.THREAD_BINDING or not tag:
        return False
    scopes = [w.buffer.scope() for w in block.writes]
    return bool(scopes) and all(
        storage_rank(sc) > 0 and not shares_storage(tag, sc) for sc in scopes
    )


def _check_no_carried_update(func: PrimFunc, loop: For, kind: ForKind) -> None:
    """A block that reads a buffer it writes, at another element that depends on the loop
    (`A[i + 1] = A[i + 1] + A[i]`), hands a value from one iteration to the next: running the
    iterations at once (lanes or threads) would read values not yet written."""
    verb, _ = _KIND_VERB[kind]
    mine = {id(loop.loop_var)}
    ana = analyzer()
    # a buffer allocated by a block under the loop is fresh in every iteration: not shared
    private = {id(b) for n, _ in walk(loop.body) if isinstance(n, Block) for b in n.alloc_buffers}
    # loops whose iterations this one runs at once: itself and every loop inside it
    varying = mine | {id(n.loop_var) for n, _ in walk(loop.body) if isinstance(n, For)}
    for s, _ in walk(loop.body):
        if not isinstance(s, BlockRealize):
            continue
        hit = _carried_access(s, private, mine, varying, ana)
        if hit is not None:
            st, at, got = hit
            raise schedule_error(
                func,
                f"{verb}(loop '{loop.loop_var.name}'): block '{s.block.name_hint}' "
                f"reads {st.buffer.name}[{', '.join(map(str, got))}] and writes "
                f"{st.buffer.name}[{', '.join(map(str, at))}], so one iteration uses "
                "what another writes (a loop-carried dependence); keep this loop serial",
                loop,
            )


def _carried_access(
    r: BlockRealize, private: set[int], mine: set[int], varying: set[int], ana: Any
) -> tuple | None:
    """(store, its indices, a load's indices) of block `r` where the load may read what another
    iteration of the loop `mine` writes; None when there is no such pair."""
    from ...ir.structural import structural_equal
    from ..expr import BufferLoad
    from ..functor import post_order_visit
    from ..stmt import BufferStore

    stores = [
        n
        for n, _ in walk(r.block.body)
        if isinstance(n, BufferStore) and id(n.buffer) not in private
    ]
    if not stores:
        return None
    loads: dict[int, list] = {}  # the loads of each buffer, collected once for all stores
    post_order_visit(
        r.block.body,
        lambda n: (
            loads.setdefault(id(n.buffer), []).append(n) if isinstance(n, BufferLoad) else None
        ),
    )
    bind = {iv.var: v for iv, v in zip(r.block.iter_vars, r.iter_values)}
    indices: dict[int, list] = {}  # an access's indices in the block's iteration, by id

    def at_iteration(access: Any) -> list:
        if id(access) not in indices:
            indices[id(access)] = [ana.simplify(substitute(i, bind)) for i in access.indices]
        return indices[id(access)]

    for st in stores:
        for ld in loads.get(id(st.buffer), ()):
            at, got = at_iteration(st), at_iteration(ld)
            same = all(structural_equal(a, b) for a, b in zip(at, got))
            if same or not uses_var(at + got, mine) or _apart(at, got, varying, ana):
                continue
            return st, at, got
    return None


def _apart(at: list, got: list, varying: set[int], ana: Any) -> bool:
    """Some dimension of the store and the load is fixed while the loop runs (no varying loop in
    it) and provably different (scan[t, i] written, scan[t - 1, i] read): never one element."""
    return any(not uses_var([a, b], varying) and ana.can_prove(a != b) for a, b in zip(at, got))


def check_loop_kind(func: PrimFunc, loop: For, kind: ForKind, path: Path = ()) -> None:
    """Raise ScheduleError when running `loop` as `kind` could change the results."""
    if kind in _KIND_VERB:
        _check_no_reduction(func, loop, kind)
        _check_no_carried_update(func, loop, kind)
    if kind in (ForKind.PARALLEL, ForKind.THREAD_BINDING):
        _check_disjoint_updates(func, loop, path, kind)


def _affine(e: Any, loop_vars: set[int]) -> bool:
    """Quasi-affine in the loop variables: sums of them times loop-free factors, floordiv /
    floormod by loop-free divisors (symbolic extents allowed), casts of such."""
    from ..expr import Add, Cast, FloorDiv, FloorMod, IntImm, Mul, Sub

    if isinstance(e, Var | IntImm):
        return True
    if isinstance(e, Cast):
        return _affine(e.value, loop_vars)
    if isinstance(e, Add | Sub):
        return _affine(e.a, loop_vars) and _affine(e.b, loop_vars)
    if isinstance(e, Mul):
        free_a, free_b = not uses_var(e.a, loop_vars), not uses_var(e.b, loop_vars)
        return (free_a and _affine(e.b, loop_vars)) or (free_b and _affine(e.a, loop_vars))
    if isinstance(e, FloorDiv | FloorMod):
        return not uses_var(e.b, loop_vars) and _affine(e.a, loop_vars)
    return not uses_var(e, loop_vars)


def _check_affine_bindings(func: PrimFunc, loop: For, kind: ForKind) -> None:
    """Blocks under a loop that runs its iterations at once need quasi-affine bindings where
    the loop drives them, and reduction blocks everywhere (TVM's rule: only then are their
    iteration sets the boxes the race checks reason about)."""
    verb, _ = _KIND_VERB[kind]
    loop_vars = {id(f.loop_var) for f, _ in walk(func.body) if isinstance(f, For)}
    for s, _ in walk(loop.body):
        if not isinstance(s, BlockRealize):
            continue
        reduction = is_reduction_block(s.block)  # all of its bindings must be affine
        for iv, v in zip(s.block.iter_vars, s.iter_values):
            if (reduction or uses_var(v, {id(loop.loop_var)})) and not _affine(v, loop_vars):
                raise schedule_error(
                    func,
                    f"{verb}(loop '{loop.loop_var.name}'): block '{s.block.name_hint}' binds "
                    f"'{iv.var.name}' to {v}, which is not quasi-affine in the loops; only "
                    "affine bindings (sums of loop variables times constants, floordiv/floormod "
                    "by constants) can run in parallel",
                    s,
                )


def check_schedule_kind(
    func: PrimFunc, loop: For, kind: ForKind, thread: str | None, path: Path
) -> None:
    """The legality rules of parallel/vectorize/unroll/bind at schedule time. Binding to a
    threadIdx axis may carry a reduction (a cross-thread reduction, as TVM allows): the
    build-time check (verify.py) refuses it unless the target lowers it without a race."""
    if kind in _KIND_VERB:
        _check_affine_bindings(func, loop, kind)
    if kind is ForKind.THREAD_BINDING and (thread or "").startswith("threadIdx."):
        _check_no_carried_update(func, loop, kind)
        return
    check_loop_kind(func, loop, kind, path)


def set_loop_kind(
    func: PrimFunc, loop: For, kind: ForKind, thread: str | None = None, path: Path = ()
) -> PrimFunc:
    """Mark `loop` parallel / vectorized / unrolled / bound to a thread axis."""
    check_schedule_kind(func, loop, kind, thread, path)
    if kind is ForKind.VECTORIZED and const_int(loop.extent) is None:
        pass  # a symbolic vector loop lowers to a scalar loop with vectorize metadata
    binding = None
    if kind is ForKind.THREAD_BINDING:
        binding = IterVar(  # no dom: the loop's own range is the thread extent (as TVM)
            None,
            Var(thread, loop.loop_var.dtype),
            IterType.ThreadIndex,
            thread,
        )
    return replace_stmt(func, loop, loop.replace(kind=kind, thread_binding=binding))


def annotate(func: PrimFunc, target: Any, key: str, value: Any) -> PrimFunc:
    """Set annotation `key` on a For or a Block."""
    new = target.replace(annotations=target.annotations.set(key, value))
    return replace_stmt(func, target, new)


def unannotate(func: PrimFunc, target: Any, key: str) -> PrimFunc:
    if key not in target.annotations:
        kind = "loop" if isinstance(target, For) else "block"
        name = target.loop_var.name if isinstance(target, For) else target.name_hint
        raise schedule_error(
            func,
            f"unannotate({kind} '{name}'): it has no annotation {key!r}; it has "
            f"{sorted(target.annotations)}",
            target,
        )
    from ...ir.node import FrozenDict

    kept = FrozenDict({k: v for k, v in target.annotations.items() if k != key})
    return replace_stmt(func, target, target.replace(annotations=kept))


def add_unit_loop(func: PrimFunc, target: Stmt) -> tuple[PrimFunc, Var]:
    """Wrap `target` (a BlockRealize or a For) in a new loop of extent 1; returns its var."""
    dtype = target.loop_var.dtype if isinstance(target, For) else DataType("int32")
    var = Var("u", dtype)
    new = For(var, IntImm(dtype, 0), IntImm(dtype, 1), ForKind.SERIAL, target)
    if func.body is target:  # the function body itself (a block without a root block)
        return func.replace(body=new), var
    return replace_stmt(func, target, new), var
