"""compute_inline and reverse_compute_inline: fold an elementwise block into its neighbour."""

from __future__ import annotations

from typing import Any

from ...ir.structural import structural_equal
from ..analysis.region import infer_access_regions
from ..expr import BufferLoad, IterType, Var
from ..function import PrimFunc
from ..functor import Mutator, Visitor, substitute
from ..stmt import Block, BlockRealize, BufferStore
from ..expr import logical_and
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
    root = root_realize(func)
    if root is None or not any(b is buf for b in root.block.alloc_buffers):
        return func
    kept = tuple(b for b in root.block.alloc_buffers if b is not buf)
    return func.replace(body=root.replace(block=root.block.replace(alloc_buffers=kept)))


def _refresh_reads(block: Block, gone: Any) -> Block:
    """Reads of `block` after its loads of buffer `gone` were replaced by other loads: the
    regions newly read take the place of `gone` in the list (as TVM orders them); declared
    regions of other buffers (opaque accesses the inference cannot see) are kept."""
    inferred, _ = infer_access_regions(block)
    have = {id(rg.buffer) for rg in block.reads}
    fresh = [rg for rg in inferred if id(rg.buffer) not in have]
    out: list = []
    for rg in block.reads:
        out += fresh if rg.buffer is gone else [rg]
        fresh = [] if rg.buffer is gone else fresh
    return block.replace(reads=tuple(out))


class _OpaqueUses(Visitor):
    """Blocks that reach buffer `buf` other than through BufferLoad: its data pointer (as
    access_ptr does) or a match_buffer over it."""

    def __init__(self, buf: Any) -> None:
        self.buf, self.block, self.found = buf, None, []

    def visit_Block(self, b: Block) -> None:
        outer, self.block = self.block, b
        if any(m.source.buffer is self.buf for m in b.match_buffers):
            self.found.append((b, "declares a match_buffer view of"))
        self.visit(b.init)
        self.visit(b.body)
        self.block = outer

    def visit_BufferLoad(self, e: BufferLoad) -> None:
        self.visit(e.indices)

    def visit_BufferStore(self, s: BufferStore) -> None:
        self.visit(s.value)
        self.visit(s.indices)

    def visit_Var(self, v: Var) -> None:
        if v is self.buf.data and self.block is not None:
            self.found.append((self.block, "takes the address of (an opaque access to)"))


class _InlineLoads(Mutator):
    """Replace every load of `buf` by `value` with `params` bound to the load's indices."""

    def __init__(self, buf: Any, params: list[Var], value: Any) -> None:
        super().__init__()
        self.buf, self.params, self.value = buf, params, value
        self.ana = analyzer()

    def visit_BufferLoad(self, e: BufferLoad) -> Any:
        e = self.generic_visit(e)
        if e.buffer is not self.buf:
            return e
        return self.ana.simplify(substitute(self.value, dict(zip(self.params, e.indices))))

    def visit_Block(self, b: Block) -> Block:
        out = self.generic_visit(b)
        reads_it = any(rg.buffer is self.buf for rg in b.reads)
        return _refresh_reads(out, self.buf) if out is not b and reads_it else out


def compute_inline(func: PrimFunc, r: BlockRealize, path: Path) -> PrimFunc:
    """Remove block r and substitute its value at every load of the buffer it writes."""
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
    for other, _ in walk(func.body):
        if isinstance(other, BlockRealize) and other is not r:
            if any(w.buffer is buf for w in other.block.writes):
                raise schedule_error(
                    func,
                    f"{what}: block '{other.block.name_hint}' also writes {buf.name}; only "
                    "a buffer with a single producer can be inlined",
                    r,
                )
    opaque = _OpaqueUses(buf)
    opaque.visit(func.body)
    for other, how in opaque.found:
        raise schedule_error(
            func,
            f"{what}: block '{other.name_hint}' {how} {buf.name}; only element loads "
            f"{buf.name}[...] can be replaced by the inlined value",
            r,
        )
    func = replace_stmts(func, {id(r): None}, [r])
    func = func.replace(body=_InlineLoads(buf, params, store.value).visit(func.body))
    return _drop_alloc(func, buf)


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
    new_store = BufferStore(
        store.buffer, new_value, tuple(ana.simplify(substitute(i, inverse)) for i in store.indices)
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
    producer, producer_path = producer_at
    if covers_domain(r, loops_above(path)) is not True:
        raise schedule_error(
            func,
            f"{what}: cannot prove that block '{name}' runs every point of its iteration "
            "domain exactly once (its loops or T.where cut it); the producer would then "
            "write elements the consumer never computed",
            r,
        )
    shown = ", ".join(str(x) for x in load_idx)
    inverse = invert_indices(list(r.block.iter_vars), list(load_idx), list(pstore.indices))
    if inverse is None:
        raise schedule_error(
            func,
            f"{what}: block '{name}' reads {buf.name}[{shown}]; cannot recover its iterators "
            "from that index (it must be an injective affine or div/mod map of them)",
            r,
        )
    verdict = _check_by_points(r, load_idx, producer_at, pstore, inverse)
    if verdict is None:
        verdict = _check_by_analysis(r, load_idx, producer_at, pstore, inverse)
    if verdict:
        raise schedule_error(func, f"{what}: {verdict}", r)
    return inverse


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
    if len(distinct) != len(pstore.indices) or covers_domain(
        producer, loops_above(producer_path)
    ) is not True:
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
        if not p_ana.can_prove_equal(substitute(idx, inverse), at):
            return f"cannot prove that its read index {idx} maps each element back to itself"
    return ""


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
    ana = analyzer(loops_above(producer_path))
    pred = producer.predicate
    for iv in consumer.block.iter_vars:
        at = substitute(inverse[iv.var], to_loops)
        for cond in (at >= iv.dom.min, at < iv.dom.min + iv.dom.extent):
            cond = ana.simplify(cond)
            if not ana.can_prove(cond):
                pred = cond if const_int(pred) == 1 else logical_and(pred, cond)
    return ana.simplify(pred)


def _replace_load(expr: Any, buf: Any, value: Any) -> Any:
    class _R(Mutator):
        def visit_BufferLoad(self, e: BufferLoad) -> Any:
            return value if e.buffer is buf else self.generic_visit(e)

    return _R().visit(expr)
