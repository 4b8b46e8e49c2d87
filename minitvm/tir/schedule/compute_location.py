"""compute_at and reverse_compute_at: move a block under a loop, covering only the region needed."""

from __future__ import annotations

import contextlib
from typing import Any

from ..analysis.region import Interval, loop_domain, region_interval
from ..analysis.thread_scope import shares_storage
from ..expr import (
    GE,
    GT,
    LT,
    Add,
    BufferLoad,
    FloorDiv,
    IntImm,
    IterType,
    Max,
    Min,
    Mul,
    PrimExpr,
    Range,
    Sub,
    Var,
    binary,
    logical_and,
)
from ..function import PrimFunc
from ..functor import post_order_visit, substitute
from ..stmt import Block, BlockRealize, BufferRegion, For, ForKind, SeqStmt, Stmt, seq
from .common import analyzer, const_int, schedule_error
from .tree import Path, enclosing_block, loops_above, replace_stmts, uses_var, walk


def scope_blocks(scope_stmt: Stmt, scope_path: Path) -> list[tuple[BlockRealize, Path]]:
    """Blocks directly in a scope (not nested in a deeper block), in program order."""
    out = []
    depth = len(scope_path)
    for s, p in walk(scope_stmt, scope_path):
        if isinstance(s, BlockRealize) and not any(isinstance(a, Block) for a in p[depth:]):
            out.append((s, p))
    return out


def _scope_of(path: Path) -> tuple[Stmt, Path]:
    """The body of the innermost block on `path`, and the path down to that body."""
    for k in range(len(path) - 1, -1, -1):
        if isinstance(path[k], Block):
            return path[k].body, path[: k + 1]
    return path[0], ()


def _under(path: Path, node: Stmt) -> bool:
    return any(a is node for a in path)


def _mentions(e: PrimExpr, var: Var) -> bool:
    return uses_var(e, {id(var)})


def _buffers(regions: tuple) -> set[int]:
    return {id(r.buffer) for r in regions}


def _reads(r: BlockRealize) -> set[int]:
    """Buffers the block reads: its declared reads plus what its body loads (an accumulator
    that a reduction reads back is often left out of the declared reads)."""
    out = _buffers(r.block.reads)
    post_order_visit(
        r.block.body, lambda n: out.add(id(n.buffer)) if isinstance(n, BufferLoad) else None
    )
    return out


def _writes(r: BlockRealize) -> set[int]:
    return _buffers(r.block.writes)


def _bind_region(region: BufferRegion, r: BlockRealize) -> BufferRegion:
    """`region` (in r's iter vars) rewritten in terms of the loop vars r is bound to."""
    vmap = {iv.var: v for iv, v in zip(r.block.iter_vars, r.iter_values)}
    return substitute(region, vmap)


def _union(a: list, b: list, ana: Any) -> list:
    out = []
    for x, y in zip(a, b):
        if x is None or y is None:
            out.append(None)
        else:
            out.append(
                (ana.simplify(binary(Min, x[0], y[0])), ana.simplify(binary(Max, x[1], y[1])))
            )
    return out


def shared_across(loops: list[For], scope: str) -> list[For]:
    """The thread-bound loops among `loops` whose threads all see one buffer of `scope`: a
    shared buffer is filled once for all threads of a block, so one thread's iteration must
    produce what every thread of the block needs."""
    return [
        f
        for f in loops
        if f.kind == ForKind.THREAD_BINDING
        and f.thread_binding is not None
        and shares_storage(f.thread_binding.thread_tag, scope)
    ]


def _touched_region(
    blocks: list[tuple[BlockRealize, Path]],
    loop: For,
    buf_id: int,
    use_writes: bool,
    ana: Any,
    extra: list[For] = (),
) -> list | None:
    """Union over `blocks` (all under `loop`) of the region of buffer `buf_id` they touch
    during one iteration of `loop`, in terms of loop vars at and above `loop` (those in
    `extra` are relaxed over their whole range too)."""
    total = None
    for r, p in blocks:
        k = next(i for i, a in enumerate(p) if a is loop)
        inner = [a for a in p[k + 1 :] if isinstance(a, For)]
        dom = loop_domain(inner + list(extra))
        for region in r.block.writes if use_writes else r.block.reads:
            if id(region.buffer) != buf_id:
                continue
            got = region_interval(_bind_region(region, r), dom, ana.simplify)
            total = got if total is None else _union(total, got, ana)
    return total


def _ceil_div(x: PrimExpr, a: int) -> PrimExpr:
    return binary(FloorDiv, binary(Add, x, a - 1), a)


def _affine_in(e: PrimExpr, v: Var, ana: Any) -> tuple[int, PrimExpr] | None:
    """(a, b) with e == a*v + b, a a non-zero constant and b free of v; else None."""
    from ...arith import affine_coeffs

    got = affine_coeffs(e, [v], ana)
    if got is None or got[0][v] == 0 or _mentions(got[1], v):
        return None
    return got[0][v], got[1]


def _solve(index: PrimExpr, v: Var, span: Interval, ana: Any, ext: int = 1) -> Interval | None:
    """The interval of v whose written range [index, index + ext - 1] meets `span` (index a
    monotone function of v: a*v + b, or, for a single point, such a form floordiv a positive
    constant); None for other forms. Every element of `span` written by some v is written by
    a v in the interval."""
    lo, hi = span
    if isinstance(index, FloorDiv) and (const_int(index.b) or 0) > 0 and ext == 1:
        c = const_int(index.b)
        lo, hi = binary(Mul, lo, c), binary(Add, binary(Mul, hi, c), c - 1)
        index = index.a
    got = _affine_in(index, v, ana)
    if got is None:
        return None
    a, b = got
    if a > 0 and ext == a and const_int(b) == 0:
        # tiles of width a: tile v holds [a*v, a*v + a - 1] (TVM's floordiv form)
        return ana.simplify(binary(FloorDiv, lo, a)), ana.simplify(binary(FloorDiv, hi, a))
    if a > 0:
        first = _ceil_div(binary(Sub, binary(Sub, lo, b), ext - 1), a)
        last = binary(FloorDiv, binary(Sub, hi, b), a)
    elif ext == 1:
        first = _ceil_div(binary(Sub, b, hi), -a)
        last = binary(FloorDiv, binary(Sub, b, lo), -a)
    else:
        return None
    return ana.simplify(first), ana.simplify(last)


def _solve_fused(index: PrimExpr, ivs: list, span: Interval, ana: Any) -> tuple | None:
    """For a point index (optionally floordiv a positive constant) a*vo + vi + b, where vi runs
    over exactly [0, a) (a layout transform's fused pair): (position of vo in `ivs`, the
    interval of vo whose rows [a*vo + b, a*vo + b + a - 1] meet `span`); else None."""
    from ...arith import affine_coeffs

    lo, hi = span
    if isinstance(index, FloorDiv) and (const_int(index.b) or 0) > 0:
        c = const_int(index.b)
        lo, hi = binary(Mul, lo, c), binary(Add, binary(Mul, hi, c), c - 1)
        index = index.a
    got = affine_coeffs(index, [iv.var for iv in ivs], ana)
    if got is None or any(_mentions(got[1], iv.var) for iv in ivs):
        return None
    coeffs = [got[0][iv.var] for iv in ivs]
    for outer, inner in ((0, 1), (1, 0)):
        a, iv = coeffs[outer], ivs[inner]
        whole = const_int(iv.dom.min) == 0 and const_int(iv.dom.extent) == a
        if coeffs[inner] == 1 and a > 1 and whole:
            b = got[1]
            first = _ceil_div(binary(Sub, binary(Sub, lo, b), a - 1), a)
            last = binary(FloorDiv, binary(Sub, hi, b), a)
            return outer, (ana.simplify(first), ana.simplify(last))
    return None


def _iter_spans(
    r: BlockRealize, region: BufferRegion, have: list | None, ana: Any
) -> dict[int, Interval | None]:
    """iter var index -> the interval of it that keeps `region` inside `have` (per dimension),
    or None (its whole domain) for an iterator found only in indices we cannot solve."""
    ivars = [iv.var for iv in r.block.iter_vars]
    out: dict[int, Interval | None] = {}
    for d, rng in enumerate(region.region):
        users = [k for k, v in enumerate(ivars) if _mentions(rng.min, v)]
        span = have[d] if have is not None else None
        ext = const_int(rng.extent)
        solved = None
        if len(users) == 1 and ext is not None and ext >= 1 and span is not None:
            solved = _solve(rng.min, ivars[users[0]], span, ana, ext)
        elif len(users) == 2 and ext == 1 and span is not None:
            fused = _solve_fused(rng.min, [r.block.iter_vars[k] for k in users], span, ana)
            if fused is not None:  # the outer of the two gets the interval, the inner stays whole
                users, solved = [users[fused[0]]], fused[1]
        for k in users:
            if solved is not None and out.get(k) is None:
                out[k] = solved
            else:
                out.setdefault(k, None)
    return out


def _clamp(span: Interval | None, iv: Any, ana: Any) -> Interval | None:
    """`span` cut to the iter var's domain where that is free (TVM's rule): when the span
    lies in the domain keep it, when it covers the domain take the domain, when the
    intersection has constant ends take the intersection; else keep it (a predicate guards)."""
    if span is None:
        return None
    dlo = iv.dom.min
    dhi = ana.simplify(binary(Sub, binary(Add, iv.dom.min, iv.dom.extent), 1))
    if ana.can_prove(GE(span[0], dlo)) and ana.can_prove(GE(dhi, span[1])):
        return span
    if ana.can_prove(GE(dlo, span[0])) and ana.can_prove(GE(span[1], dhi)):
        return None
    lo = ana.simplify(binary(Max, span[0], dlo))
    hi = ana.simplify(binary(Min, span[1], dhi))
    if const_int(lo) is not None and const_int(hi) is not None and const_int(lo) <= const_int(hi):
        return lo, hi
    return span


def _rebind(
    func: PrimFunc,
    r: BlockRealize,
    intervals: list[Interval | None],
    outer: list[For],
    preserve_unit_loops: bool,
) -> Stmt:
    """A loop nest running block r once for each iter var value in `intervals` (None: its
    whole domain), guarded to stay inside each iter var's domain."""
    with contextlib.ExitStack() as facts:
        ana = analyzer(outer)
        for f in outer:  # a loop's body runs only when its (symbolic) extent is positive
            if const_int(f.extent) is None:
                facts.enter_context(ana.constraint_scope(GT(f.extent, 0)))
        return _rebind_with(r, intervals, preserve_unit_loops, ana)


def _rebind_with(
    r: BlockRealize, intervals: list[Interval | None], preserve_unit_loops: bool, ana: Any
) -> Stmt:
    new_loops: list[For] = []
    bindings = []
    for iv, span in zip(r.block.iter_vars, intervals):
        dom = iv.dom
        span = _clamp(span, iv, ana)
        lo, ext = (
            (dom.min, dom.extent)
            if span is None
            else (span[0], ana.simplify(binary(Add, binary(Sub, span[1], span[0]), 1)))
        )
        lo = ana.simplify(lo)
        if const_int(ext) == 1 and not preserve_unit_loops:
            bindings.append(lo)
            continue
        v = Var(f"ax{len(new_loops)}", iv.var.dtype)
        loop = For(v, IntImm(v.dtype, 0), ext, ForKind.SERIAL, seq())
        new_loops.append(loop)
        ana.bind(v, Range.from_min_extent(0, ext))
        # min + ax, unsimplified, as TVM writes it (a unit ax stays visible in the binding)
        bindings.append(v if const_int(lo) == 0 else binary(Add, lo, v))
    pred: PrimExpr = IntImm("bool", 1)
    for iv, b in zip(r.block.iter_vars, bindings):
        lo, end = iv.dom.min, binary(Add, iv.dom.min, iv.dom.extent)
        for cond in (GE(b, lo), LT(b, end)):
            if not ana.can_prove(cond):
                pred = cond if const_int(pred) == 1 else logical_and(pred, cond)
    body: Stmt = BlockRealize(tuple(bindings), ana.simplify(pred), r.block)
    for loop in reversed(new_loops):
        body = loop.replace(body=body)
    return body


def _insert_at(
    func: PrimFunc,
    what: str,
    loop: For,
    new: Stmt,
    producers: list,
    consumers: list,
    index: int,
    default_last: bool,
) -> For:
    """`loop` with `new` inserted among its body's statements after every one holding a
    producer and before every one holding a consumer: index -1 takes the last such
    position, -2 the first, k >= 0 position k (TVM's convention)."""
    items = list(loop.body.seq) if isinstance(loop.body, SeqStmt) else [loop.body]

    def holds(blocks: list) -> list[int]:
        ids = {id(b) for b in blocks}
        return [i for i, st in enumerate(items) if any(id(x) in ids for x, _ in walk(st))]

    low = max(holds(producers), default=-1) + 1
    high = min(holds(consumers), default=len(items))
    if index == -1:
        pos = high if default_last else low
    elif index == -2:
        pos = low
    elif isinstance(index, int) and low <= index <= high:
        pos = index
    else:
        raise schedule_error(
            func,
            f"{what}: index={index} is not a valid insertion point; use -1, -2 or a position "
            f"in [{low}, {high}] of loop '{loop.loop_var.name}''s body (after its producers, "
            "before its consumers)",
            loop,
        )
    items.insert(pos, new)
    return loop.replace(body=seq(*items))


def _self_reads(block: Block) -> bool:
    """True when the block's body loads a buffer that the block writes."""
    outs = _buffers(block.writes)
    found: list = []
    post_order_visit(
        block.body,
        lambda n: found.append(n) if isinstance(n, BufferLoad) and id(n.buffer) in outs else None,
    )
    return bool(found)


def _check_idempotent(func: PrimFunc, what: str, r: BlockRealize) -> None:
    """A block that reads what it writes without an init accumulates: running it again on an
    overlapping region (which moving it may do) would add twice."""
    if r.block.init is None and _self_reads(r.block):
        raise schedule_error(
            func,
            f"{what}: block '{r.block.name_hint}' updates "
            f"{r.block.writes[0].buffer.name} in place (it reads it and has no init); it cannot "
            "be moved. Move the block before decompose_reduction",
            r,
        )


def _check_sole_writer(func: PrimFunc, what: str, r: BlockRealize, blocks: list) -> None:
    """The moved block must be the only writer of its outputs in the scope (a complete block):
    a region it recomputes per loop iteration must not be shared with another writer."""
    outs = _writes(r)
    for b, _ in blocks:
        if b is not r and _writes(b) & outs:
            raise schedule_error(
                func,
                f"{what}: block '{r.block.name_hint}' is not a complete block: block "
                f"'{b.block.name_hint}' also writes "
                f"{r.block.writes[0].buffer.name}; merge the writers into one block first",
                r,
            )


def _check_same_scope(func, what, r_path, loop, loop_path, r):
    if _under(r_path, loop):
        raise schedule_error(
            func,
            f"{what}: block '{r.block.name_hint}' is already inside loop "
            f"'{loop.loop_var.name}' (the loop is an ancestor of block "
            f"'{r.block.name_hint}'); pick a loop that does not enclose it",
            loop,
        )
    if enclosing_block(r_path) is not enclosing_block(loop_path):
        raise schedule_error(
            func,
            f"{what}: loop '{loop.loop_var.name}' is not in the same block scope as block "
            f"'{r.block.name_hint}' (one of them is nested in another block); pick a loop of "
            "the block's own scope",
            loop,
        )


def _start(
    primitive: str, func: PrimFunc, r: BlockRealize, r_path: Path, loop: For, loop_path: Path
) -> tuple[str, str, list[tuple[BlockRealize, Path]]]:
    """The checks compute_at and reverse_compute_at (`primitive`) share: (r's name, the
    message prefix, the blocks of r's scope)."""
    name = r.block.name_hint
    what = f"{primitive}(block '{name}', loop '{loop.loop_var.name}')"
    _check_same_scope(func, what, r_path, loop, loop_path, r)
    _check_idempotent(func, what, r)
    scope, scope_path = _scope_of(r_path)
    return name, what, scope_blocks(scope, scope_path)


def _finish(
    func: PrimFunc,
    what: str,
    r: BlockRealize,
    intervals: list,
    outer: list[For],
    loop: For,
    producers: list,
    consumers: list,
    index: int,
    preserve_unit_loops: bool,
) -> PrimFunc:
    """`func` with block r, its iterators over `intervals`, moved under `loop` (after the
    blocks that hold `producers`, before those that hold `consumers`)."""
    new = _rebind(func, r, intervals, outer, preserve_unit_loops)
    new_loop = _insert_at(func, what, loop, new, producers, consumers, index, True)
    return replace_stmts(func, {id(r): None, id(loop): new_loop}, [r, loop])


def compute_at(
    func: PrimFunc,
    r: BlockRealize,
    r_path: Path,
    loop: For,
    loop_path: Path,
    preserve_unit_loops: bool = False,
    index: int = -1,
) -> PrimFunc:
    """Move producer block r under `loop`, computing only what consumers there read."""
    name, what, blocks = _start("compute_at", func, r, r_path, loop, loop_path)
    outs = _writes(r)
    consumers = [(b, p) for b, p in blocks if b is not r and _reads(b) & outs]
    inside = [(b, p) for b, p in consumers if _under(p, loop)]
    if not consumers:
        raise schedule_error(
            func,
            f"{what}: '{name}' is an output block (no block of its scope reads what it "
            "writes), so there is nothing to compute it for; only a producer can be computed "
            "at a consumer's loop",
            r,
        )
    if not inside:
        raise schedule_error(
            func,
            f"{what}: no block under loop '{loop.loop_var.name}' reads what '{name}' "
            "writes; compute a block at a loop of one of its consumers",
            loop,
        )
    for b, _ in inside:
        if _writes(b) & outs:
            raise schedule_error(
                func,
                f"{what}: block '{b.block.name_hint}' under the loop also writes what "
                f"'{name}' writes; recomputing '{name}' there would overwrite its updates",
                loop,
            )
    _check_sole_writer(func, what, r, blocks)
    outside = [b for b, p in consumers if not _under(p, loop)]
    if outside:
        raise schedule_error(
            func,
            f"{what}: block '{outside[0].block.name_hint}' outside the loop also reads "
            f"what '{name}' writes; it would see a partial result (compute_at requires all "
            f"the consumers of '{name}' to be under the loop). Move that block under the "
            "loop too, or use cache_read first",
            loop,
        )
    order = [b for b, _ in blocks]
    first_inside = min(order.index(b) for b, p in blocks if _under(p, loop))
    here = order.index(r)
    if here > first_inside:
        raise schedule_error(
            func,
            f"{what}: block '{name}' comes after the loop; use reverse_compute_at to move "
            "a consumer under a producer's loop",
            loop,
        )
    ins = _reads(r) | outs
    for b, p in blocks[here + 1 : first_inside]:
        if _writes(b) & ins:
            raise schedule_error(
                func,
                f"{what}: block '{b.block.name_hint}' between '{name}' and the loop writes "
                f"a buffer '{name}' uses; moving '{name}' past it would change the result",
                loop,
            )
    outer = loops_above(loop_path) + [loop]
    ana = analyzer(outer)
    if len(r.block.writes) != 1:
        raise schedule_error(
            func,
            f"{what}: block '{name}' writes {len(r.block.writes)} buffers; compute_at "
            "needs a block with exactly one output",
            r,
        )
    write = r.block.writes[0]
    above = [a for a in loop_path if isinstance(a, For)] + [loop]
    extra = shared_across(above, write.buffer.scope())
    need = _touched_region(inside, loop, id(write.buffer), False, ana, extra)
    # the producer may compute more than the consumers need (it is pure), never less
    intervals: list = [None] * len(r.block.iter_vars)
    for k, span in _iter_spans(r, write, need, ana).items():
        intervals[k] = span
    producers = [b for b, _ in blocks if b is not r and _writes(b) & _reads(r)]
    inside_blocks = [b for b, _ in inside]
    return _finish(
        func, what, r, intervals, outer, loop, producers, inside_blocks, index, preserve_unit_loops
    )


def reverse_compute_at(
    func: PrimFunc,
    r: BlockRealize,
    r_path: Path,
    loop: For,
    loop_path: Path,
    preserve_unit_loops: bool = False,
    index: int = -1,
) -> PrimFunc:
    """Move consumer block r under `loop`, consuming what the producers there just wrote."""
    name, what, blocks = _start("reverse_compute_at", func, r, r_path, loop, loop_path)
    ins = _reads(r)
    producers = [(b, p) for b, p in blocks if b is not r and _writes(b) & ins]
    inside = [(b, p) for b, p in producers if _under(p, loop)]
    if not inside:
        raise schedule_error(
            func,
            f"{what}: no block under loop '{loop.loop_var.name}' writes what '{name}' "
            "reads; move a consumer to a loop of one of its producers",
            loop,
        )
    outside = [b for b, p in producers if not _under(p, loop)]
    if outside:
        raise schedule_error(
            func,
            f"{what}: reverse_compute_at requires all the producers of '{name}' to be under "
            f"the loop, but block '{outside[0].block.name_hint}' is not; move it under loop "
            f"'{loop.loop_var.name}' first (reverse_compute_at or compute_at)",
            loop,
        )
    _check_sole_writer(func, what, r, blocks)
    for b, p in inside:
        k = next(i for i, a in enumerate(p) if a is loop)
        for f in [a for a in p[: k + 1] if isinstance(a, For)]:
            drives = [
                iv.var.name
                for iv, v in zip(b.block.iter_vars, b.iter_values)
                if iv.iter_type == IterType.CommReduce and _mentions(v, f.loop_var)
            ]
            if drives:
                raise schedule_error(
                    func,
                    f"{what}: loop '{f.loop_var.name}' drives reduction iterator "
                    f"'{drives[0]}' of producer '{b.block.name_hint}', so under loop "
                    f"'{loop.loop_var.name}' '{name}' would read partial sums; pick a loop outside "
                    "the producer's reduction loops",
                    loop,
                )
    order = [b for b, _ in blocks]
    here = order.index(r)
    last_inside = max(order.index(b) for b, p in blocks if _under(p, loop))
    if here < last_inside:
        raise schedule_error(
            func,
            f"{what}: block '{name}' comes before the loop; use compute_at to move a "
            "producer under a consumer's loop",
            loop,
        )
    touched = ins | _writes(r)
    for b, p in blocks[last_inside + 1 : here]:
        if not _under(p, loop) and (_writes(b) & touched or _reads(b) & _writes(r)):
            raise schedule_error(
                func,
                f"{what}: block '{b.block.name_hint}' between the loop and '{name}' "
                f"touches a buffer '{name}' uses; moving '{name}' before it would change the "
                "result",
                loop,
            )
    outer = loops_above(loop_path) + [loop]
    ana = analyzer(outer)
    intervals: list = [None] * len(r.block.iter_vars)
    produced_ids = {id(w.buffer) for b, _ in inside for w in b.block.writes} & ins
    produced: dict[int, list] = {}
    for read in r.block.reads:
        if id(read.buffer) not in produced_ids or id(read.buffer) in produced:
            continue
        have = _touched_region(inside, loop, id(read.buffer), True, ana)
        produced[id(read.buffer)] = have
        for k, span in _iter_spans(r, read, have, ana).items():
            if span is not None and intervals[k] is None:
                iv = r.block.iter_vars[k]
                if iv.iter_type == IterType.CommReduce and _covers_domain(span, iv, ana):
                    continue
                if iv.iter_type == IterType.CommReduce and not _tiles_domain(span, iv, outer, ana):
                    raise schedule_error(
                        func,
                        f"{what}: the loop produces {read.buffer.name} piece by piece "
                        f"along reduction iterator '{r.block.iter_vars[k].var.name}' of "
                        f"'{name}'; a reduction cannot be split across loop iterations",
                        loop,
                    )
                intervals[k] = span
    _check_cover(func, what, r, intervals, produced, ana, loop)
    consumers = [b for b, _ in blocks if b is not r and _reads(b) & _writes(r)]
    inside_blocks = [b for b, _ in inside]
    return _finish(
        func, what, r, intervals, outer, loop, inside_blocks, consumers, index, preserve_unit_loops
    )


def _covers_domain(span: Interval, iv: Any, ana: Any) -> bool:
    last = binary(Sub, binary(Add, iv.dom.min, iv.dom.extent), 1)
    return ana.can_prove(GE(iv.dom.min, span[0])) and ana.can_prove(GE(span[1], last))


def _tiles_domain(span: Interval, iv: Any, loops: list[For], ana: Any) -> bool:
    """True when the pieces `span` of a reduction iterator, over all iterations of the
    serial (or thread-bound) `loops`, cut its domain into disjoint tiles visited once each,
    the tile at the domain's start first: span = [min + sum(c_i * l_i), ... + E - 1] with the
    c_i a mixed radix of tile width E over the loops' extents, E * prod(extents) = extent.
    Then splitting the reduction across those iterations adds every term exactly once."""
    from ...arith import affine_coeffs

    width = const_int(ana.simplify(binary(Sub, span[1], span[0])))
    total = const_int(iv.dom.extent)
    if width is None or total is None:
        return False
    width += 1
    got = affine_coeffs(span[0], [f.loop_var for f in loops], ana)
    if got is None or not ana.can_prove_equal(got[1], iv.dom.min):
        return False
    used = sorted(((c, f) for f, c in zip(loops, got[0].values()) if c != 0), key=lambda t: t[0])
    if any(c < 0 for c, _ in used):
        return False
    step = width
    for c, f in used:
        if c != step or not (const_int(f.min) == 0 and const_int(f.extent)):
            return False
        if f.kind in (ForKind.PARALLEL, ForKind.VECTORIZED):
            return False  # the tiles would be summed at once: a race
        step *= const_int(f.extent)
    return step == total and bool(used)


def _check_cover(func, what, r, intervals, produced, ana, loop) -> None:
    """Every element r reads (with its iterators in `intervals`) must be produced in the loop."""
    dom = {}
    for iv, span in zip(r.block.iter_vars, intervals):
        dom[id(iv.var)] = (
            span
            if span is not None
            else (iv.dom.min, binary(Sub, binary(Add, iv.dom.min, iv.dom.extent), 1))
        )
    for read in r.block.reads:
        have = produced.get(id(read.buffer))
        if have is None:
            continue
        need = region_interval(read, dom, ana.simplify)
        for d, (h, n) in enumerate(zip(have, need)):
            ok = (
                h is not None
                and n is not None
                and ana.can_prove(GE(n[0], h[0]))
                and ana.can_prove(GE(h[1], n[1]))
            )
            if not ok:
                raise schedule_error(
                    func,
                    f"{what}: one iteration of loop '{loop.loop_var.name}' does not produce "
                    f"all of {read.buffer.name} (dimension {d}) that block '{r.block.name_hint}' "
                    "needs; pick an outer loop",
                    loop,
                )
