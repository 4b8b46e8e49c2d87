"""compute_inline and reverse_compute_inline: fold an elementwise block into its neighbour."""

from __future__ import annotations

from typing import Any

from ...ir.structural import structural_equal
from ..analysis.region import infer_access_regions
from ..expr import LT, BufferLoad, FloorDiv, FloorMod, IterType, Var, logical_and
from ..function import PrimFunc
from ..functor import Mutator, Visitor, allows_deep_recursion, substitute
from ..stmt import Block, BlockRealize, BufferStore
from .binding import block_points, covers_domain, domain_points, invert_indices
from .common import analyzer, const_int, schedule_error
from .compute_location import _scope_of, scope_blocks
from .race import Unknown, eval_int
from .tree import Path, loops_above, replace_stmts, root_realize, walk


def _single_store(func: PrimFunc, r: BlockRealize, what: str) -> BufferStore:
    block = r.block
    name = block.name_hint
    if block.init is not None or any(iv.iter_type == IterType.CommReduce for iv in block.iter_vars):
        raise schedule_error(
            func,
            f"{what}: block '{name}' is a reduction; only blocks that compute each "
            "element once (no T.init, no reduction iterators) can be inlined",
            r,
        )
    if len(block.writes) != 1:
        raise schedule_error(
            func,
            f"{what}: block '{name}' writes {len(block.writes)} buffers; it must write exactly one",
            r,
        )
    if not isinstance(block.body, BufferStore):
        raise schedule_error(
            func,
            f"{what}: the body of block '{name}' is not a single store to "
            f"{block.writes[0].buffer.name}",
            r,
        )
    return block.body


def _as_distinct_iters(
    func: PrimFunc, r: BlockRealize, indices: tuple, buf: Any, what: str
) -> list[Var]:
    """The iter vars `indices` consist of; each iter var exactly once."""
    ids = {id(iv.var) for iv in r.block.iter_vars}
    seen: list[Var] = []
    for i in indices:
        if not (isinstance(i, Var) and id(i) in ids) or any(i is s for s in seen):
            shown = ", ".join(str(x) for x in indices)
            raise schedule_error(
                func,
                f"{what}: block '{r.block.name_hint}' accesses {buf.name}[{shown}]; each "
                "index must be a different iterator of the block, so that every element maps "
                "to one iteration",
                r,
            )
        seen.append(i)
    if len(seen) != len(r.block.iter_vars):
        raise schedule_error(
            func,
            f"{what}: block '{r.block.name_hint}' has iterators that do not index "
            f"{buf.name}; it cannot be inlined",
            r,
        )
    return seen


def _is_param_buffer(func: PrimFunc, buf: Any) -> bool:
    return any(b is buf for b in func.buffer_map.values())


def _drop_alloc(func: PrimFunc, buf: Any) -> PrimFunc:
    return _drop_allocs(func, {id(buf)})


def _drop_allocs(func: PrimFunc, buf_ids: set) -> PrimFunc:
    """`func` without the root allocations of the buffers whose ids are in `buf_ids`."""
    root = root_realize(func)
    if root is None or not any(id(b) in buf_ids for b in root.block.alloc_buffers):
        return func
    kept = tuple(b for b in root.block.alloc_buffers if id(b) not in buf_ids)
    return func.replace(body=root.replace(block=root.block.replace(alloc_buffers=kept)))


def _refresh_reads(block: Block, gone: set) -> Block:
    """Reads of `block` after its loads of the buffers whose ids are in `gone` were replaced by
    other loads: the regions newly read take the place of the first of them in the list (as
    TVM orders them); declared regions of other buffers (opaque accesses the inference cannot
    see) are kept."""
    inferred, _ = infer_access_regions(block)
    have = {id(rg.buffer) for rg in block.reads}
    fresh = [rg for rg in inferred if id(rg.buffer) not in have]
    out: list = []
    for rg in block.reads:
        if id(rg.buffer) in gone:
            out += fresh
            fresh = []
        else:
            out.append(rg)
    return block.replace(reads=tuple(out))


class _OpaqueUses(Visitor):
    """Blocks that reach one of `bufs` other than through BufferLoad: its data pointer (as
    access_ptr does) or a match_buffer over it; `found` maps id(buffer) to (block, how)."""

    def __init__(self, bufs: list) -> None:
        self.by_data = {id(b.data): b for b in bufs}
        self.by_id = {id(b): b for b in bufs}
        self.block = None
        self.found: dict[int, list] = {}

    def visit_Block(self, b: Block) -> None:
        outer, self.block = self.block, b
        for m in b.match_buffers:
            if id(m.source.buffer) in self.by_id:
                self.found.setdefault(id(m.source.buffer), []).append(
                    (b, "declares a match_buffer view of")
                )
        self.visit(b.init)
        self.visit(b.body)
        self.block = outer

    def visit_BufferLoad(self, e: BufferLoad) -> None:
        self.visit(e.indices)

    def visit_BufferStore(self, s: BufferStore) -> None:
        self.visit(s.value)
        self.visit(s.indices)

    def visit_Var(self, v: Var) -> None:
        buf = self.by_data.get(id(v))
        if buf is not None and v is buf.data and self.block is not None:
            self.found.setdefault(id(buf), []).append(
                (self.block, "takes the address of (an opaque access to)")
            )


class _InlineIndex:
    """The writers and the opaque users of the buffers `bufs` in `func`, found in one walk each,
    so that checking many blocks does not walk the function once per block."""

    def __init__(self, func: PrimFunc, bufs: list) -> None:
        ids = {id(b) for b in bufs}
        self.writers: dict[int, list] = {}
        for s, _ in walk(func.body):
            if isinstance(s, BlockRealize):
                for w in s.block.writes:
                    if id(w.buffer) in ids:
                        self.writers.setdefault(id(w.buffer), []).append(s)
        opaque = _OpaqueUses(bufs)
        opaque.visit(func.body)
        self.opaque = opaque.found


def _check_inline(func: PrimFunc, r: BlockRealize, index: _InlineIndex | None = None) -> tuple:
    """compute_inline's legality rules for block r: (its store, the buffer, its iter vars in the
    order the store indexes them); a ScheduleError naming the rule otherwise."""
    what = f"compute_inline(block '{r.block.name_hint}')"
    store = _single_store(func, r, what)
    buf = store.buffer
    if _is_param_buffer(func, buf):
        raise schedule_error(
            func,
            f"{what}: it writes {buf.name}, an output of the function; an output cannot "
            "be inlined (inline the consumer into it with reverse_compute_inline instead)",
            r,
        )
    params = _as_distinct_iters(func, r, store.indices, buf, what)
    index = index if index is not None else _InlineIndex(func, [buf])
    for other in index.writers.get(id(buf), ()):
        if other is not r:
            raise schedule_error(
                func,
                f"{what}: block '{other.block.name_hint}' also writes {buf.name}; only "
                "a buffer with a single producer can be inlined",
                r,
            )
    for other, how in index.opaque.get(id(buf), ()):
        raise schedule_error(
            func,
            f"{what}: block '{other.name_hint}' {how} {buf.name}; only element loads "
            f"{buf.name}[...] can be replaced by the inlined value",
            r,
        )
    return store, buf, params


class _InlineLoads(Mutator):
    """Replace every load of an inlined buffer by its producer's value, the producer's iter vars
    bound to the load's indices (then simplified); loads in that value of other inlined buffers
    are replaced in turn, so one walk inlines a whole chain. `producers` maps id(buffer) to
    (buffer, iter vars, value)."""

    def __init__(self, func: PrimFunc, producers: dict[int, tuple]) -> None:
        super().__init__()
        self.func, self.producers = func, producers
        self.active: list[int] = []  # the buffers being expanded (a cycle would never end)
        self.ana = analyzer()

    def visit_BufferLoad(self, e: BufferLoad) -> Any:
        e = self.generic_visit(e)
        got = self.producers.get(id(e.buffer))
        if got is None:
            return e
        buf, params, value = got
        if id(buf) in self.active:
            raise schedule_error(
                self.func,
                f"compute_inline: the value written to {buf.name} reads {buf.name} (itself or "
                "through other inlined blocks); a block that reads what it writes cannot be "
                "inlined",
            )
        self.active.append(id(buf))
        out = self.visit(self.ana.simplify(substitute(value, dict(zip(params, e.indices)))))
        self.active.pop()
        return out

    def visit_Block(self, b: Block) -> Block:
        out = self.generic_visit(b)
        gone = {id(rg.buffer) for rg in b.reads if id(rg.buffer) in self.producers}
        return _refresh_reads(out, gone) if out is not b and gone else out


def compute_inline(func: PrimFunc, r: BlockRealize, path: Path) -> PrimFunc:
    """Remove block r and substitute its value at every load of the buffer it writes."""
    return compute_inline_many(func, [r])


@allows_deep_recursion
def compute_inline_many(func: PrimFunc, realizes: list) -> PrimFunc:
    """compute_inline of every block of `realizes`, in one walk of `func`: each is checked as
    compute_inline checks it, against `func` as given, before anything changes. The result
    computes what inlining them one by one computes; each inlined value is simplified as it is
    substituted, before the loads inside it are replaced (one by one, a value is simplified
    again with its own inlined producers in it, which can fold a little more)."""
    realizes = list({id(r): r for r in realizes}.values())
    if not realizes:
        return func
    bufs = [
        _single_store(func, r, f"compute_inline(block '{r.block.name_hint}')").buffer
        for r in realizes
    ]
    index = _InlineIndex(func, bufs)
    producers = {}
    for r in realizes:
        store, buf, params = _check_inline(func, r, index)
        producers[id(buf)] = (buf, params, store.value)
    given = func
    func = replace_stmts(func, {id(r): None for r in realizes}, realizes)
    func = func.replace(body=_InlineLoads(given, producers).visit(func.body))
    return _drop_allocs(func, set(producers))


class _Loads(Visitor):
    def __init__(self, buf: Any) -> None:
        self.buf, self.found = buf, []

    def visit_BufferLoad(self, e: BufferLoad) -> None:
        if e.buffer is self.buf:
            self.found.append(e)
        self.generic_visit(e)


def reverse_compute_inline(func: PrimFunc, r: BlockRealize, path: Path) -> PrimFunc:
    """Remove consumer block r, making its producer write r's output directly."""
    name = r.block.name_hint
    what = f"reverse_compute_inline(block '{name}')"
    store = _single_store(func, r, what)
    scope, scope_path = _scope_of(path)
    blocks = scope_blocks(scope, scope_path)
    read_ids = {id(rg.buffer) for rg in r.block.reads}
    producers = [
        (b, p)
        for b, p in blocks
        if b is not r and read_ids & {id(w.buffer) for w in b.block.writes}
    ]
    bufs = {
        id(w.buffer): w.buffer
        for b, _ in producers
        for w in b.block.writes
        if id(w.buffer) in read_ids
    }
    if len(bufs) != 1 or len(producers) != 1:
        raise schedule_error(
            func,
            f"{what}: it must read exactly one buffer written by exactly one other block; "
            f"it reads {len(bufs)} produced buffers from {len(producers)} blocks",
            r,
        )
    (buf,) = bufs.values()
    producer, producer_path = producers[0]
    pstore = _single_store(func, producer, what.replace(name, producer.block.name_hint))
    if _is_param_buffer(func, buf):
        raise schedule_error(
            func,
            f"{what}: {buf.name}, which it reads, is an output of the function and must "
            "still be written",
            r,
        )
    loads = _Loads(buf)
    loads.visit(store.value)
    first = loads.found[0].indices
    for ld in loads.found[1:]:
        if not all(structural_equal(a, b) for a, b in zip(ld.indices, first)):
            raise schedule_error(
                func,
                f"{what}: it reads {buf.name} at more than one place; reverse inlining "
                "needs a single elementwise read",
                r,
            )
    for b, _ in blocks:
        if b is not r and b is not producer and any(rg.buffer is buf for rg in b.block.reads):
            raise schedule_error(
                func,
                f"{what}: block '{b.block.name_hint}' also reads {buf.name}; it would no "
                "longer be computed",
                r,
            )
    inverse = _consumer_inverse(func, r, path, first, (producer, producer_path), pstore, what)
    ana = analyzer()
    new_value = ana.simplify(substitute(_replace_load(store.value, buf, pstore.value), inverse))
    # an index that is one iterator takes its inverse as built (TVM's form); others simplify
    by_id = {id(v): e for v, e in inverse.items()}
    new_store = BufferStore(
        store.buffer,
        new_value,
        tuple(
            by_id[id(i)] if id(i) in by_id else ana.simplify(substitute(i, inverse))
            for i in store.indices
        ),
    )
    block = producer.block.replace(body=new_store)
    reads, writes = infer_access_regions(block)
    block = block.replace(
        reads=tuple(rg for rg in reads if rg.buffer is not store.buffer), writes=writes
    )
    pred = _inlined_predicate(producer, producer_path, r, inverse)
    new_producer = producer.replace(block=block, predicate=pred)
    func = replace_stmts(func, {id(r): None, id(producer): new_producer}, [r, producer])
    return _drop_alloc(func, buf)


def _consumer_inverse(
    func: PrimFunc,
    r: BlockRealize,
    path: Path,
    load_idx: tuple,
    producer_at: tuple,
    pstore: BufferStore,
    what: str,
) -> dict:
    """Each iter var of consumer `r` as an expression of the producer's iter vars, proven to
    visit each element the consumer reads exactly where the producer writes it."""
    name, buf = r.block.name_hint, pstore.buffer
    if not _runs_domain_once(r, loops_above(path)):
        raise schedule_error(
            func,
            f"{what}: cannot prove that block '{name}' runs every point of its iteration "
            "domain exactly once (its loops or T.where cut it); the producer would then "
            "write elements the consumer never computed",
            r,
        )
    shown = ", ".join(str(x) for x in load_idx)
    ivs, targets = list(r.block.iter_vars), list(pstore.indices)
    # TVM's written form first (low + high * c, unsimplified); any candidate must pass the proof
    candidates = [_radix_inverse(ivs, list(load_idx), targets)]
    candidates.append(invert_indices(ivs, list(load_idx), targets))
    candidates = [c for c in candidates if c is not None]
    if not candidates:
        raise schedule_error(
            func,
            f"{what}: block '{name}' reads {buf.name}[{shown}]; cannot recover its iterators "
            "from that index (it must be an injective affine or div/mod map of them)",
            r,
        )
    for inverse in candidates:
        # the symbolic proof first: it costs a few simplifications where enumerating a conv's
        # epilogue evaluated every index at up to MAX_POINTS points (seconds per model build);
        # what it cannot prove is decided point by point where the blocks are countable
        verdict = _check_by_analysis(r, load_idx, producer_at, pstore, inverse)
        if verdict:
            by_points = _check_by_points(r, load_idx, producer_at, pstore, inverse)
            verdict = verdict if by_points is None else by_points
        if not verdict:
            return inverse
    raise schedule_error(func, f"{what}: {verdict}", r)


def _radix_inverse(iter_vars: list, indices: list, targets: list) -> dict | None:
    """Each iter var from the values `targets` of `indices`, when every index is an iter var,
    a mixed-radix sum of them, or an `x // c`, `x % c` pair of one (whose value is then
    `low + high * c`); None for any other form. The caller proves the round trip."""
    from ...arith import affine_coeffs

    groups, paired = [], set()
    for k, (a, ta) in enumerate(zip(indices, targets)):
        if k in paired:
            continue
        mate = None
        if isinstance(a, FloorDiv) and const_int(a.b) is not None:
            for m, b in enumerate(indices):
                if (
                    m not in paired
                    and isinstance(b, FloorMod)
                    and const_int(b.b) == const_int(a.b)
                    and structural_equal(a.a, b.a)
                ):
                    mate = m
                    break
        if mate is None:
            groups.append((a, ta))
        else:
            paired.add(mate)
            groups.append((a.a, targets[mate] + ta * a.b))
    dom = {id(iv.var): iv.dom for iv in iter_vars}
    ivars = [iv.var for iv in iter_vars]
    found: dict[int, Any] = {}
    for expr, value in groups:
        got = affine_coeffs(expr, ivars)
        if got is None or const_int(got[1]) != 0:
            return None
        terms = sorted(((c, v) for v, c in got[0].items() if c != 0), key=lambda t: t[0])
        stride = 1
        for k, (c, v) in enumerate(terms):
            ext = const_int(dom[id(v)].extent)
            last = k == len(terms) - 1
            if c != stride or id(v) in found or const_int(dom[id(v)].min) != 0:
                return None
            if ext is None and not last:
                return None
            q = value if stride == 1 else FloorDiv(value, stride)
            found[id(v)] = q if last else FloorMod(q, ext)
            stride *= ext if ext is not None else 1
    for iv in iter_vars:  # a unit iterator no index mentions sits at its minimum
        if id(iv.var) not in found and const_int(iv.dom.extent) == 1:
            found[id(iv.var)] = iv.dom.min
    if len(found) != len(ivars):
        return None
    return {v: found[id(v)] for v in ivars}


def _runs_domain_once(r: BlockRealize, loops: list) -> bool:
    """True when block r provably runs each point of its iteration domain exactly once."""
    return covers_domain(r, loops) is True or _mixed_radix_cover(r, loops)


def _mixed_radix_cover(r: BlockRealize, loops: list) -> bool:
    """Each binding is a mixed-radix sum of its own zero-based loops (as split and fuse make
    them) spanning exactly the iter's domain, no predicate, and every loop left over has
    extent 1; extents may be symbolic in the outermost place."""
    from ...arith import affine_coeffs

    if const_int(r.predicate) != 1:
        return False
    ana = analyzer(loops)
    by_var = {id(f.loop_var): f for f in loops}
    used: set[int] = set()
    for iv, v in zip(r.block.iter_vars, r.iter_values):
        got = affine_coeffs(v, [f.loop_var for f in loops], ana)
        if got is None:
            return False
        coeffs, base = got
        terms = sorted(((c, x) for x, c in coeffs.items() if c != 0), key=lambda t: t[0])
        stride: Any = 1
        for k, (c, x) in enumerate(terms):
            f = by_var[id(x)]
            if id(x) in used or c != stride or not ana.can_prove_equal(f.min, 0):
                return False
            used.add(id(x))
            ext = const_int(f.extent)
            if ext is None and k != len(terms) - 1:
                return False  # a symbolic extent only in the outermost place
            stride = stride * ext if ext is not None else f.extent * stride
        if not (
            ana.can_prove_equal(base, iv.dom.min) and ana.can_prove_equal(stride, iv.dom.extent)
        ):
            return False
    return all(id(f.loop_var) in used or ana.can_prove_equal(f.extent, 1) for f in loops)


def _eval_all(exprs: Any, env: dict) -> tuple:
    return tuple(eval_int(e, env) for e in exprs)


def _check_by_points(
    r: BlockRealize, load_idx: tuple, producer_at: tuple, pstore: BufferStore, inverse: dict
) -> str | None:
    """Decide by enumerating both blocks: "" when legal, the reason when not, None if too big."""
    producer, producer_path = producer_at
    dom = domain_points(r)
    wpoints = block_points(producer, loops_above(producer_path))
    if dom is None or wpoints is None:
        return None
    try:
        p_ids = [id(iv.var) for iv in producer.block.iter_vars]
        c_ids = [id(iv.var) for iv in r.block.iter_vars]
        written = set()
        dom_set = set(dom)
        for w in wpoints:
            env = dict(zip(p_ids, w))
            at = _eval_all(pstore.indices, env)
            written.add(at)
            v = _eval_all([inverse[iv.var] for iv in r.block.iter_vars], env)
            if v in dom_set and _eval_all(load_idx, dict(zip(c_ids, v))) != at:
                return f"the inverse of its read index does not map element {at} back to it"
        for v in dom:
            at = _eval_all(load_idx, dict(zip(c_ids, v)))
            if at not in written:
                return (
                    f"block '{r.block.name_hint}' reads {pstore.buffer.name}{list(at)}, which "
                    f"its producer '{producer.block.name_hint}' does not write"
                )
    except Unknown:
        return None
    return ""


def _check_by_analysis(
    r: BlockRealize, load_idx: tuple, producer_at: tuple, pstore: BufferStore, inverse: dict
) -> str:
    """Decide symbolically: the producer fills a box that holds every element the consumer
    reads, and the inverse maps each written element back to it. "" when proven."""
    producer, producer_path = producer_at
    pname, bname = producer.block.name_hint, pstore.buffer.name
    p_vars = {id(iv.var): iv for iv in producer.block.iter_vars}
    distinct = {id(i) for i in pstore.indices if id(i) in p_vars}
    if len(distinct) != len(pstore.indices) or not _runs_domain_once(
        producer, loops_above(producer_path)
    ):
        return (
            f"cannot prove which elements of {bname} producer '{pname}' writes (write it "
            "with one iterator per dimension over loops that span its domain)"
        )
    c_ana = _iter_analyzer(r.block.iter_vars)
    for k, (idx, at) in enumerate(zip(load_idx, pstore.indices)):
        dom = p_vars[id(at)].dom
        inside = (idx >= dom.min) & (idx < dom.min + dom.extent)
        if not c_ana.can_prove(inside):
            return (
                f"cannot prove that the index {idx} it reads in dimension {k} of {bname} "
                f"stays inside what producer '{pname}' writes ({dom.min} .. "
                f"{dom.min + dom.extent} - 1)"
            )
    p_ana = _iter_analyzer(producer.block.iter_vars)
    for idx, at in zip(load_idx, pstore.indices):
        if _is_radix_round_trip(idx, at, inverse, r.block.iter_vars):
            continue
        if not p_ana.can_prove_equal(substitute(idx, inverse), at):
            return f"cannot prove that its read index {idx} maps each element back to itself"
    return ""


def _is_radix_round_trip(idx: Any, at: Any, inverse: dict, iter_vars: tuple) -> bool:
    """True when `idx` is a mixed-radix sum of zero-based iterators (unit coefficient on the
    smallest, each next one the product of the extents below it) and `inverse` gives each
    iterator as its digit of `at` (`at // stride % extent`, the last `at // stride`).

    Then `idx` under `inverse` equals `at` for every integer `at`: floor division by positive
    constants composes (`at // a // b == at // (a * b)`) and `q == q // e * e + q % e`, so the
    digits sum back to `at`. The simplifier has no rule merging `x // 2 % 2 * 2 + x % 2` back
    into `x % 4`, which left the row-matmul conv gradients' write-back to point enumeration."""
    from ...arith import affine_coeffs

    ivars = [iv.var for iv in iter_vars]
    got = affine_coeffs(idx, ivars)
    if got is None or const_int(got[1]) != 0:
        return False
    dom = {id(iv.var): iv.dom for iv in iter_vars}
    by_id = {id(v): e for v, e in inverse.items()}
    terms = sorted(((c, v) for v, c in got[0].items() if c != 0), key=lambda t: t[0])
    stride = 1
    for k, (c, v) in enumerate(terms):
        ext, last = const_int(dom[id(v)].extent), k == len(terms) - 1
        if c != stride or const_int(dom[id(v)].min) != 0 or id(v) not in by_id:
            return False
        if not last and (ext is None or ext < 1):
            return False
        q = at if stride == 1 else FloorDiv(at, stride)
        if not structural_equal(by_id[id(v)], q if last else FloorMod(q, ext)):
            return False
        stride *= ext if not last else 1
    return bool(terms)


def _iter_analyzer(iter_vars: tuple) -> Any:
    from ...arith import Analyzer

    ana = Analyzer()
    for iv in iter_vars:
        ana.bind(iv.var, iv.dom)
    return ana


def _inlined_predicate(
    producer: BlockRealize, producer_path: Path, consumer: BlockRealize, inverse: dict
) -> Any:
    """The producer's predicate and the consumer's domain (through `inverse`), in loop vars;
    conjuncts the producer's loops already guarantee are left out."""
    to_loops = {iv.var: v for iv, v in zip(producer.block.iter_vars, producer.iter_values)}
    loops = loops_above(producer_path)
    ana = analyzer(loops)
    conds = []
    for iv in consumer.block.iter_vars:
        at = _high_first(ana.simplify(substitute(inverse[iv.var], to_loops)), loops)
        for cond in (at >= iv.dom.min, at < iv.dom.min + iv.dom.extent):
            cond = ana.simplify(cond)
            if not ana.can_prove(cond):
                conds.append(cond)
    pred = producer.predicate
    for cond in _tighten_bounds(conds):
        pred = cond if const_int(pred) == 1 else logical_and(pred, cond)
    return ana.simplify(pred)


def _high_first(e: Any, loops: list) -> Any:
    """An affine sum of loop vars written with the larger coefficients first (i0 * 16 + i1),
    as TVM prints the guard; other expressions unchanged."""
    from ...arith import affine_coeffs

    got = affine_coeffs(e, [f.loop_var for f in loops])
    if got is None or const_int(got[1]) is None:
        return e
    terms = sorted(((c, v) for v, c in got[0].items() if c != 0), key=lambda t: -t[0])
    if len(terms) < 2 or any(c < 0 for c, _ in terms):
        return e
    out = None
    for c, v in terms:
        t = v if c == 1 else v * c
        out = t if out is None else out + t
    return out + got[1] if const_int(got[1]) != 0 else out


def _tighten_bounds(conds: list) -> list:
    """`x < B` next to `x % c < m` (B a multiple of c, m < c) becomes `x < B - c + m`: the
    values in between have x % c >= m, so the conjunction is unchanged (TVM's form)."""
    out = []
    for cond in conds:
        bound = const_int(cond.b) if isinstance(cond, LT) else None
        for other in conds if bound is not None else ():
            mod = other.a if isinstance(other, LT) else None
            c, m = (
                (const_int(mod.b), const_int(other.b))
                if isinstance(mod, FloorMod)
                else (None, None)
            )
            if (
                c
                and m is not None
                and 0 < m < c
                and bound % c == 0
                and structural_equal(mod.a, cond.a)
            ):
                cond = cond.a < bound - c + m
                break
        out.append(cond)
    return out


def _replace_load(expr: Any, buf: Any, value: Any) -> Any:
    class _R(Mutator):
        def visit_BufferLoad(self, e: BufferLoad) -> Any:
            return value if e.buffer is buf else self.generic_visit(e)

    return _R().visit(expr)
