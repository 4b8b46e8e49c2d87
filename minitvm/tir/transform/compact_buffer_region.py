"""TVM's block-level CompactBufferAllocation: shrink each `T.alloc_buffer` of an opaque block to
the region its accesses inside the block touch, and shift every access by the region start.

The region of an access is its index set with the loops inside the allocating block relaxed
over their ranges (and, for shared/warp memory, the enclosing thread loops whose threads all
see the one buffer); loops outside stay symbolic. An opaque use (`B.data` passed to a call)
counts as the enclosing block's declared reads/writes of `B`, or the whole buffer. Conditions
on the way (`T.where`, `if`, `T.if_then_else`) of the form `loop_var CMP bound` narrow the
loop's range. With `is_strict` the region never exceeds the original shape. An extent that
still depends on an enclosing loop becomes its constant upper bound, or the whole dimension.

The Allocate-level compaction used by the lowering pipeline is `compact_buffer_allocation`.
"""

from __future__ import annotations

from typing import Any

from ...arith.canonical import is_index_dtype
from ...error import BuildError
from ...ir.structural import structural_equal
from ..analysis.thread_scope import shares_storage
from ..buffer import Buffer
from ..expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BufferLoad,
    Call,
    FloorDiv,
    IntImm,
    Max,
    Min,
    Mul,
    Not,
    Op,
    Or,
    PrimExpr,
    Range,
    Sub,
    Var,
    binary,
)
from ..function import PrimFunc
from ..functor import Mutator, Visitor, map_outermost, post_order_visit, substitute
from ..stmt import (
    Allocate,
    AttrStmt,
    Block,
    BlockRealize,
    BufferRegion,
    BufferStore,
    DeclBuffer,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
)
from .compact_buffer_allocation import DimAligns, _allocate_aligns, aligned_strides


class _Dom:
    """Var → IntervalSet keyed by identity, readable by Analyzer.int_set (it calls .items())."""

    def __init__(self) -> None:
        self.sets: dict[int, tuple[Var, Any]] = {}

    def items(self) -> list[tuple[Var, Any]]:
        return list(self.sets.values())


_FLIP = {LT: GT, LE: GE, GT: LT, GE: LE, EQ: EQ}
_NEGATE = {LT: GE, LE: GT, GT: LE, GE: LT}  # not (a < b) -> a >= b


def _negate(cond: PrimExpr) -> PrimExpr:
    """`not cond` with the negation pushed through and/or onto comparisons where it can be."""
    if isinstance(cond, Or):
        return And(_negate(cond.a), _negate(cond.b))
    if isinstance(cond, And):
        return Or(_negate(cond.a), _negate(cond.b))
    if isinstance(cond, Not):
        return cond.a
    if type(cond) in _NEGATE:
        return _NEGATE[type(cond)](cond.a, cond.b)
    return Not(cond)


class _Collector(Visitor):
    """The accessed region of every block-allocated buffer (see the module doc)."""

    def __init__(self, is_strict: bool) -> None:
        from ...arith import Analyzer

        self.is_strict = is_strict
        self.ana = Analyzer()  # knows every loop's range, for simplifying the results
        self.set_ana = Analyzer()  # binds nothing: outer loop vars stay symbolic in int_set
        self.ancestors: list[tuple[Var, str | None]] = []  # (loop var, thread tag or None)
        self.dom = _Dom()
        self.depth: dict[int, int] = {}  # id(buffer.data) -> ancestors at the allocation
        self.by_data: dict[int, Buffer] = {}
        self.accessed: dict[int, list[list[tuple[PrimExpr, PrimExpr] | None]]] = {}
        self.annotated: dict[int, tuple] = {}  # id(buffer) -> regions declared by the block
        self.regions: dict[int, tuple[Range, ...]] = {}  # id(data) -> final region
        self.buffers_of: dict[int, list[Buffer]] = {}  # id(data) -> the Buffers over it
        self.alloc_aligns: dict[int, tuple | None] = {}  # id(buffer) -> its Allocate's aligns
        self.lets: dict[int, PrimExpr] = {}  # id(let var) -> its value, lets inlined
        self.pending: list[PrimExpr] = []  # comparisons known true at this point

    # --- scopes ----------------------------------------------------------------------------
    def _enter_loop(self, var: Var, rng: Range, tag: str | None) -> None:
        self.ancestors.append((var, tag))
        self.ana.bind(var, rng, allow_override=True)
        self.dom.sets[id(var)] = (var, _interval(rng))

    def _exit_loop(self, var: Var) -> None:
        self.dom.sets.pop(id(var), None)
        self.ancestors.pop()

    def visit_For(self, loop: For) -> None:
        tag = None
        if loop.kind == ForKind.THREAD_BINDING and loop.thread_binding is not None:
            tag = loop.thread_binding.thread_tag
        self.visit(loop.min)
        self.visit(loop.extent)
        self._enter_loop(loop.loop_var, Range.from_min_extent(loop.min, loop.extent), tag)
        self.visit(loop.body)
        self._exit_loop(loop.loop_var)

    def visit_AttrStmt(self, attr: AttrStmt) -> None:
        iv = attr.node
        if attr.attr_key in ("thread_extent", "virtual_thread") and hasattr(iv, "var"):
            self.visit(attr.value)
            rng = Range.from_min_extent(IntImm(attr.value.dtype, 0), attr.value)
            self._enter_loop(iv.var, rng, iv.thread_tag)
            self.visit(attr.body)
            self._exit_loop(iv.var)
            return
        self.generic_visit(attr)

    def visit_LetStmt(self, let: LetStmt) -> None:
        self.visit(let.value)
        if is_index_dtype(let.value.dtype):
            self.ana.bind(let.var, let.value, allow_override=True)
            self.lets[id(let.var)] = self._inline_lets(let.value)
        self.visit(let.body)
        self.lets.pop(id(let.var), None)

    def _inline_lets(self, e: PrimExpr) -> PrimExpr:
        """`e` with the let-bound index vars in scope replaced by their values, so relaxing
        the loops they are computed from bounds them."""
        if not self.lets:
            return e
        return substitute(e, lambda v: self.lets.get(id(v)))

    def _with_condition(self, cond: PrimExpr, body: Any) -> None:
        """Visit `body` with the loop ranges narrowed by `cond` where it bounds a loop var."""
        saved, pending = dict(self.dom.sets), len(self.pending)
        for var, lo, hi in _var_bounds(self.set_ana, cond, self.dom):
            _, old = self.dom.sets[id(var)]
            self.dom.sets[id(var)] = (var, _intersect(self.ana, old, lo, hi))
        self.pending += [c for c in _conjuncts(cond) if type(c) in _FLIP]
        self.visit(body)
        self.dom.sets = saved
        del self.pending[pending:]

    def visit_IfThenElse(self, s: IfThenElse) -> None:
        self.visit(s.condition)
        self._with_condition(s.condition, s.then_case)
        if s.else_case is not None:
            self._with_condition(_negate(s.condition), s.else_case)

    def visit_Call(self, call: Call) -> None:
        if isinstance(call.op, Op) and call.op.name == "tir.if_then_else":
            cond, then, other = call.args
            self.visit(cond)
            self._with_condition(cond, then)
            self._with_condition(_negate(cond), other)
            return
        self.generic_visit(call)

    def visit_BlockRealize(self, realize: BlockRealize) -> None:
        for v in realize.iter_values:
            self.visit(v)
        self.visit(realize.predicate)
        self._with_condition(realize.predicate, realize.block)

    def visit_Block(self, block: Block) -> None:
        if block.iter_vars:
            raise BuildError(
                f"CompactBufferAllocation: block '{block.name_hint}' has iter vars; the pass "
                "works on opaque blocks, run ConvertBlocksToOpaque first"
            )
        saved = dict(self.annotated)
        declared: dict[int, list[BufferRegion]] = {}
        for r in (*block.reads, *block.writes):
            declared.setdefault(id(r.buffer), []).append(r)
        self.annotated.update({k: tuple(v) for k, v in declared.items()})
        for buf in block.alloc_buffers:
            if len(self.buffers_of.get(id(buf.data), ())) > 1:
                continue  # another Buffer views the same memory: its accesses would be missed
            self.depth[id(buf.data)] = len(self.ancestors)
            self.by_data[id(buf.data)] = buf
        for match in block.match_buffers:
            self._access(
                match.source.buffer, [(r.min, r.min + r.extent - 1) for r in match.source.region]
            )
        if block.init is not None:
            self.visit(block.init)
        self.visit(block.body)
        self.annotated = saved
        for buf in block.alloc_buffers:
            if id(buf.data) in self.accessed and self.by_data.get(id(buf.data)) is buf:
                self.regions[id(buf.data)] = self._narrow(buf)

    def visit_Allocate(self, alloc: Allocate) -> None:
        bufs = self.buffers_of.get(id(alloc.buffer_var), ())
        if len(bufs) != 1 or bufs[0].dtype != alloc.dtype:  # aliased: left alone, as in TVM
            self.generic_visit(alloc)
            return
        buf = bufs[0]
        self.depth[id(buf.data)] = len(self.ancestors)
        self.by_data[id(buf.data)] = buf
        self.alloc_aligns[id(buf)] = _allocate_aligns(alloc, buf)
        self.visit(alloc.body)
        if id(buf.data) in self.accessed:
            self.regions[id(buf.data)] = self._narrow(buf)

    def visit_DeclBuffer(self, decl: DeclBuffer) -> None:
        self.visit(decl.body)  # not decl.buffer: its data var is no opaque use

    def visit_Buffer(self, buf: Buffer) -> None:
        pass

    # --- accesses --------------------------------------------------------------------------
    def visit_BufferStore(self, store: BufferStore) -> None:
        self._access(store.buffer, [(i, i) for i in store.indices])
        for i in store.indices:
            self.visit(i)
        self.visit(store.value)

    def visit_BufferLoad(self, load: BufferLoad) -> None:
        self._access(load.buffer, [(i, i) for i in load.indices])
        for i in load.indices:
            self.visit(i)

    def visit_Var(self, var: Var) -> None:
        buf = self.by_data.get(id(var))
        if buf is None:
            return
        for r in self.annotated.get(id(buf), ()) or (None,):
            ranges = (
                r.region if r is not None else tuple(Range.from_min_extent(0, e) for e in buf.shape)
            )
            self._access(buf, [(x.min, x.min + x.extent - 1) for x in ranges])

    def _access(self, buf: Buffer, bounds: list[tuple[PrimExpr, PrimExpr]]) -> None:
        from ...arith.int_set import IntervalSet

        depth = self.depth.get(id(buf.data))
        if depth is None or self.by_data.get(id(buf.data)) is not buf:
            return
        scope = buf.scope()
        hidden = {}  # loops outside the allocation stay symbolic unless threads share it
        for var, tag in self.ancestors[:depth]:
            if tag is not None and shares_storage(tag, scope):
                continue
            if id(var) in self.dom.sets:
                hidden[id(var)] = self.dom.sets.pop(id(var))
        sets = []
        known = []  # (expr, its variable, range) of each bounded sub-expression
        for e, e_lo, e_hi in _bounded_exprs(self.pending, self.dom):
            if isinstance(e, Var):
                continue
            rng = self.set_ana.int_set(e, self.dom)
            lo_b = _tighter(self.ana, Max, rng.lo, e_lo)
            hi_b = _tighter(self.ana, Min, rng.hi, e_hi)
            if lo_b is not None and hi_b is not None:
                known.append((e, Var("t", e.dtype), IntervalSet(lo_b, hi_b, e.dtype)))
        for lo, hi in bounds:
            lo, hi = self._inline_lets(lo), (None if hi is lo else self._inline_lets(hi))
            hi = lo if hi is None else hi
            for e, t, rng in known:
                lo, hi = self._replace(lo, e, t), self._replace(hi, e, t)
                self.dom.sets[id(t)] = (t, rng)
            s_lo = self.set_ana.int_set(lo, self.dom)
            s_hi = s_lo if hi is lo else self.set_ana.int_set(hi, self.dom)
            ok = s_lo.has_lower_bound() and s_hi.has_upper_bound()
            # a bound still naming a relaxed variable is no bound of the whole region
            ok = ok and not _uses(s_lo.min_value, set(self.dom.sets))
            ok = ok and not _uses(s_hi.max_value, set(self.dom.sets))
            sets.append((s_lo.min_value, s_hi.max_value) if ok else None)
        for _, t, _ in known:
            self.dom.sets.pop(id(t), None)
        self.dom.sets.update(hidden)
        self.accessed.setdefault(id(buf.data), []).append(sets)

    def _replace(self, index: PrimExpr, sub: PrimExpr, var: Var) -> PrimExpr:
        """`index` with `sub` replaced by `var`: where it occurs, or in each outermost sum `s`
        whose difference `s - sub` is free of relaxed loops, as `(s - sub) + var`
        (`i * 64 + j * 8 + k` with `j * 8 + k`)."""
        out = _replace(index, sub, var)
        if out is not index:
            return out
        relaxed = set(self.dom.sets)
        diffs: dict[int, PrimExpr] = {}

        def match(n: Any) -> bool:
            if not isinstance(n, Add | Sub) or not _uses(n, relaxed):
                return False
            diff = self.ana.simplify(binary(Sub, n, sub))
            if _uses(diff, relaxed):
                return False
            diffs[id(n)] = diff
            return True

        return map_outermost(index, match, lambda n: diffs[id(n)] + var)

    def _narrow(self, buf: Buffer) -> tuple[Range, ...]:
        """The region of `buf` to keep: the union of its accesses, clamped when strict."""
        out = []
        accesses = self.accessed[id(buf.data)]
        loop_ids = {id(v) for v, _ in self.ancestors}
        for dim, shape in enumerate(buf.shape):
            zero = IntImm(shape.dtype, 0)
            parts = [a[dim] for a in accesses]
            if any(p is None for p in parts):
                out.append(Range.from_min_extent(zero, shape))
                continue
            lo = _fold(Min, [p[0] for p in parts])
            hi = _fold(Max, [p[1] for p in parts])
            lo, extent = self.ana.simplify(lo), self.ana.simplify(binary(Sub, hi, lo) + 1)
            if self.is_strict:
                lo = self.ana.simplify(binary(Max, zero, lo))
                if not _at_most_shape(self.ana, extent, shape):
                    extent = binary(Min, shape, extent)
                extent = self.ana.simplify(extent)
            if _reads_memory(extent):  # a data-dependent size cannot be allocated
                out.append(Range.from_min_extent(zero, shape))
                continue
            if _uses(extent, loop_ids):
                bound = self.ana.const_int_bound(extent).max_value
                if bound >= 2**62:
                    out.append(Range.from_min_extent(zero, shape))
                    continue
                extent = IntImm(extent.dtype, bound)
            out.append(Range.from_min_extent(lo, extent))
        return tuple(out)


def _at_most_shape(ana: Any, extent: PrimExpr, shape: PrimExpr) -> bool:
    """Whether extent <= shape, taking every variable of a symbolic shape as at least 1 (a
    shape `n * 8` is at least 8)."""
    if ana.can_prove(extent <= shape):
        return True
    factors, const = [shape], 1
    while factors:
        f = factors.pop()
        if isinstance(f, Mul):
            factors += [f.a, f.b]
        elif isinstance(f, IntImm):
            const *= f.value
        elif not isinstance(f, Var):
            return False
    return const > 0 and ana.can_prove(extent <= const)


def _reads_memory(e: PrimExpr) -> bool:
    found: list[Any] = []

    def note(n: Any) -> None:
        if isinstance(n, BufferLoad) or (isinstance(n, Call) and not getattr(n.op, "pure", False)):
            found.append(n)

    post_order_visit(e, note)
    return bool(found)


def _interval(rng: Range) -> Any:
    from ...arith.int_set import IntervalSet

    return IntervalSet.from_range(rng)


def _intersect(ana: Any, old: Any, lo: PrimExpr | None, hi: PrimExpr | None) -> Any:
    from ...arith.int_set import IntervalSet

    new_lo = (
        old.lo if lo is None else (lo if old.lo is None else ana.simplify(binary(Max, old.lo, lo)))
    )
    new_hi = (
        old.hi if hi is None else (hi if old.hi is None else ana.simplify(binary(Min, old.hi, hi)))
    )
    return IntervalSet(new_lo, new_hi, old.dtype)


def _conjuncts(cond: PrimExpr) -> list[PrimExpr]:
    out, stack = [], [cond]
    while stack:
        c = stack.pop()
        if isinstance(c, Call) and isinstance(c.op, Op) and c.op.name == "tir.likely":
            stack.append(c.args[0])
        elif isinstance(c, And):
            stack += [c.a, c.b]
        else:
            out.append(c)
    return out


def _bounded_exprs(conds: list[PrimExpr], dom: _Dom) -> list[tuple[PrimExpr, Any, Any]]:
    """(e, lo, hi) for each of the comparisons `conds` bounding an expression `e` of relaxed vars by
    `lo <= e <= hi` (either side None) where the bounds are free of relaxed vars."""
    out = []
    relaxed = set(dom.sets)
    for c in conds:
        kind = type(c)
        if kind not in _FLIP:
            continue
        a, b = c.a, c.b
        if not _uses(a, relaxed):
            a, b, kind = b, a, _FLIP[kind]
        if not _uses(a, relaxed) or _uses(b, relaxed) or not a.dtype.is_int:
            continue  # `e < b` is `e <= b - 1` only for integers
        lo = {GT: b + 1, GE: b, EQ: b}.get(kind)
        hi = {LT: b - 1, LE: b, EQ: b}.get(kind)
        out.append((a, lo, hi))
    return out


def _var_bounds(
    ana: Any, cond: PrimExpr, dom: _Dom
) -> list[tuple[Var, PrimExpr | None, PrimExpr | None]]:
    """(var, lo, hi) bounds on relaxed loop vars implied by the conjuncts of `cond` that are
    linear in them with constant coefficients (`tx * 4 + vec < 512` bounds tx by 127)."""
    from ...arith.linear_equation import detect_linear_equation

    out = []
    for c in _conjuncts(cond):  # `i != 0` with i starting at 0 is `i >= 1`
        v, b = (c.a, c.b) if isinstance(c, NE) and isinstance(c.a, Var) else (None, None)
        if v is not None and id(v) in dom.sets and isinstance(b, IntImm):
            own = dom.sets[id(v)][1]
            if isinstance(own.lo, IntImm) and own.lo.value == b.value:
                out.append((v, b + 1, None))
            elif isinstance(own.hi, IntImm) and own.hi.value == b.value:
                out.append((v, None, b - 1))
    for e, lo, hi in _bounded_exprs(_conjuncts(cond), dom):
        if isinstance(e, Var):
            out.append((e, lo, hi))
            continue
        found = _relaxed_vars(e, dom)
        variables = list({id(v): v for v in found}.values())
        coeffs = detect_linear_equation(e, variables)
        if not coeffs or not all(isinstance(k, IntImm) for k in coeffs[:-1]):
            continue
        for i, (v, k) in enumerate(zip(variables, coeffs)):
            if k.value == 0:
                continue
            rest = coeffs[-1]
            for j, (w, kw) in enumerate(zip(variables, coeffs)):
                if j != i and kw.value != 0:
                    rest = rest + kw * w
            rest_set = ana.int_set(rest, dom)
            m = abs(k.value)
            v_lo = v_hi = None
            if hi is not None and rest_set.has_lower_bound():  # k*v <= hi - rest
                bound = ana.simplify(hi - rest_set.min_value)
                if k.value > 0:
                    v_hi = ana.simplify(FloorDiv(bound, IntImm(bound.dtype, m)))
                else:
                    v_lo = ana.simplify(FloorDiv(0 - bound + (m - 1), IntImm(bound.dtype, m)))
            if lo is not None and rest_set.has_upper_bound():  # k*v >= lo - rest
                bound = ana.simplify(lo - rest_set.max_value)
                if k.value > 0:
                    v_lo = ana.simplify(FloorDiv(bound + (m - 1), IntImm(bound.dtype, m)))
                else:
                    v_hi = ana.simplify(FloorDiv(0 - bound, IntImm(bound.dtype, m)))
            # only constant bounds: a symbolic one (`ax1 >= 1 - h * 8`) would leave regions
            # like min(max(h * 8, 1) - 1, h * 8 - 1) that the simplifier cannot fold
            v_lo = v_lo if isinstance(v_lo, IntImm) else None
            v_hi = v_hi if isinstance(v_hi, IntImm) else None
            if v_lo is not None or v_hi is not None:
                out.append((v, v_lo, v_hi))
    return out


def _tighter(ana: Any, cls: type, own: Any, cond: Any) -> Any:
    """The bound `cls(own, cond)` of a sub-expression when it simplifies to one side; `own`
    otherwise (an unresolved max/min in a region start would defeat later simplification)."""
    if own is None or cond is None:
        return cond if own is None else own
    both = ana.simplify(binary(cls, own, cond))
    return own if isinstance(both, cls) else both


def _replace(e: PrimExpr, sub: PrimExpr, var: Var) -> PrimExpr:
    """`e` with every occurrence of the expression `sub` replaced by `var`."""
    return map_outermost(
        e, lambda n: isinstance(n, type(sub)) and structural_equal(n, sub), lambda n: var
    )


def _relaxed_vars(e: PrimExpr, dom: _Dom) -> list[Var]:
    found: list[Var] = []
    post_order_visit(
        e, lambda n: found.append(n) if isinstance(n, Var) and id(n) in dom.sets else None
    )
    return found


def _fold(cls: type, items: list[PrimExpr]) -> PrimExpr:
    acc = items[0]
    for x in items[1:]:
        if not (x is acc):
            acc = binary(cls, acc, x)
    return acc


def _uses(e: PrimExpr, var_ids: set[int]) -> bool:
    found: list[Any] = []
    post_order_visit(
        e, lambda n: found.append(n) if isinstance(n, Var) and id(n) in var_ids else None
    )
    return bool(found)


class _Rewrite(Mutator):
    """Reallocate the compacted buffers and shift every access and declared region."""

    def __init__(self, new: dict[int, tuple[Buffer, Buffer, tuple[Range, ...]]]) -> None:
        super().__init__()
        self.new = new  # id(old data) -> (old buffer, new buffer, region)

    def _info(self, buf: Buffer) -> Any:
        info = self.new.get(id(buf.data))
        return info if info is not None and info[0] is buf else None

    def _shift(self, buf: Buffer, indices: tuple) -> tuple[Buffer, tuple]:
        info = self._info(buf)
        if info is None:
            return buf, indices
        return info[1], tuple(binary(Sub, i, r.min) for i, r in zip(indices, info[2]))

    def visit_BufferLoad(self, load: BufferLoad) -> Any:
        indices = tuple(self.visit(i) for i in load.indices)
        buf, indices = self._shift(load.buffer, indices)
        if buf is load.buffer and all(a is b for a, b in zip(indices, load.indices)):
            return load
        return BufferLoad(buf, indices, load.dtype)

    def visit_BufferStore(self, store: BufferStore) -> Any:
        value = self.visit(store.value)
        indices = tuple(self.visit(i) for i in store.indices)
        buf, indices = self._shift(store.buffer, indices)
        same = buf is store.buffer and value is store.value
        if same and all(a is b for a, b in zip(indices, store.indices)):
            return store
        return BufferStore(buf, value, indices)

    def _region(self, r: BufferRegion) -> BufferRegion:
        info = self._info(r.buffer)
        if info is None:
            return r
        ranges = tuple(
            Range.from_min_extent(binary(Sub, x.min, base.min), x.extent)
            for x, base in zip(r.region, info[2])
        )
        return BufferRegion(info[1], ranges)

    def visit_Allocate(self, alloc: Allocate) -> Any:
        alloc = self.generic_visit(alloc)
        info = self.new.get(id(alloc.buffer_var))
        return alloc if info is None else alloc.replace(extents=info[1].shape)

    def visit_DeclBuffer(self, decl: DeclBuffer) -> Any:
        decl = self.generic_visit(decl)
        info = self._info(decl.buffer)
        return decl if info is None else decl.replace(buffer=info[1])

    def visit_Block(self, block: Block) -> Any:
        block = self.generic_visit(block)
        allocs = tuple(self._info(b)[1] if self._info(b) else b for b in block.alloc_buffers)
        matches = tuple(m.replace(source=self._region(m.source)) for m in block.match_buffers)
        return block.replace(
            alloc_buffers=allocs,
            reads=tuple(self._region(r) for r in block.reads),
            writes=tuple(self._region(r) for r in block.writes),
            match_buffers=matches,
        )


def _buffers_of(body: Any) -> dict[int, list[Buffer]]:
    """id(data var) -> the distinct Buffer objects declared or accessed over it."""
    seen: dict[int, dict[int, Buffer]] = {}

    def note(n: Any) -> None:
        bufs = ()
        if isinstance(n, BufferLoad | BufferStore | DeclBuffer):
            bufs = (n.buffer,)
        elif isinstance(n, Block):
            bufs = (*n.alloc_buffers, *(m.buffer for m in n.match_buffers))
            bufs += tuple(m.source.buffer for m in n.match_buffers)
        for b in bufs:
            seen.setdefault(id(b.data), {})[id(b)] = b

    post_order_visit(body, note)
    return {k: list(v.values()) for k, v in seen.items()}


def _aligns(func: PrimFunc) -> dict[int, tuple]:
    """(axis, factor, offset) triples per id(buffer) from the blocks' storage_align requests."""
    aligns = DimAligns()
    post_order_visit(func.body, lambda n: aligns.record(n) if isinstance(n, Block) else None)
    return {
        key: tuple((axis, f, o) for axis, (f, o, _) in sorted(seen.items()))
        for key, seen in aligns.by_buffer.items()
    }


def compact_buffer_region(func: PrimFunc, is_strict: bool = True) -> PrimFunc:
    """Shrink every block-allocated buffer to its accessed region (see the module doc)."""
    if func.attrs.get("from_legacy_te_schedule"):
        return func
    collector = _Collector(is_strict)
    collector.buffers_of = _buffers_of(func.body)
    collector.visit(func.body)
    if not collector.regions:
        return func
    aligns = {**_aligns(func), **collector.alloc_aligns}
    new = {}
    for key, region in collector.regions.items():
        old = collector.by_data[key]
        shape = tuple(r.extent for r in region)
        align = aligns.get(id(old))
        strides = aligned_strides(shape, align) if align else ()
        new[key] = (old, old.replace(shape=shape, strides=strides), region)
    return func.replace(body=_Rewrite(new).visit(func.body))
