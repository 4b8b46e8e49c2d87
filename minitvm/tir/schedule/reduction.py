"""Reduction primitives: decompose_reduction (init into its own block) and rfactor."""

from __future__ import annotations

from typing import Any

from ...ir.structural import structural_equal
from ..analysis.region import infer_access_regions
from ..buffer import decl_buffer
from ..expr import Add, And, BufferLoad, IterType, IterVar, Max, Min, Mul, Range, Var, const_value
from ..function import PrimFunc
from ..functor import post_order_visit, substitute
from ..op import if_then_else
from ..stmt import Block, BlockRealize, BufferStore, For, ForKind, LetStmt, SeqStmt, Stmt, seq
from .common import add_root_alloc, analyzer, is_quasi_affine, schedule_error, unique_name
from .state import ScheduleState
from .tree import Path, enclosing_block, find_loop, loops_above, replace_stmts, uses_var, walk

_COMBINERS = (Add, Mul, Max, Min)


def _rebuild_nest(loops: list[For], inner: Stmt) -> Stmt:
    for f in reversed(loops):
        inner = f.replace(body=inner)
    return inner


def _fresh_loops(loops: list[For], suffix: str) -> tuple[list[For], dict]:
    """Copies of `loops` (bodies to be filled later) with new vars; returns them and the var map."""
    vmap: dict = {}
    out = []
    for f in loops:
        v = Var(f.loop_var.name + suffix, f.loop_var.dtype)
        vmap[f.loop_var] = v
        out.append(
            For(
                v,
                substitute(f.min, vmap),
                substitute(f.extent, vmap),
                f.kind,
                seq(),
                f.thread_binding,
                f.annotations,
            )
        )
    return out, vmap


def _at_min(pred: Any, loops: list[For]) -> Any:
    """`pred` with the given loops' vars at their first iteration (the guard of an init)."""
    return substitute(pred, {f.loop_var: f.min for f in loops})


def _insert_next_to(func: PrimFunc, loop_var: Var, new: Stmt, after: bool) -> PrimFunc:
    """Insert `new` right before/after the loop whose var is `loop_var`, as its sibling."""
    found = find_loop(func, loop_var)
    assert found is not None
    target, path = found
    parent = path[-1] if path else None
    if isinstance(parent, SeqStmt):
        items = list(parent.seq)
        k = next(i for i, s in enumerate(items) if s is target)
        items.insert(k + 1 if after else k, new)
        return replace_stmts(func, {id(parent): seq(*items)}, [parent])
    pair = seq(target, new) if after else seq(new, target)
    return replace_stmts(func, {id(target): pair}, [target])


def decompose_reduction(
    func: PrimFunc, r: BlockRealize, path: Path, loop: For
) -> tuple[PrimFunc, str, str]:
    """Move the init of reduction block r into a new block `<name>_init` placed before `loop`;
    r becomes `<name>_update`. Returns the function and the two blocks' names."""
    block = r.block
    name = block.name_hint
    what = f"decompose_reduction(block '{name}', loop '{loop.loop_var.name}')"
    if block.init is None:
        raise schedule_error(func, f"{what}: block '{name}' has no init (T.init) to decompose", r)
    loops = loops_above(path)
    if not any(f is loop for f in loops):
        raise schedule_error(
            func,
            f"{what}: loop '{loop.loop_var.name}' does not enclose block '{name}'; pick one "
            "of the loops returned by get_loops(block)",
            loop,
        )
    chain = loops[next(i for i, f in enumerate(loops) if f is loop) :]
    spatial = [
        (iv, v)
        for iv, v in zip(block.iter_vars, r.iter_values)
        if iv.iter_type != IterType.CommReduce
    ]
    reduce = [
        (iv, v)
        for iv, v in zip(block.iter_vars, r.iter_values)
        if iv.iter_type == IterType.CommReduce
    ]
    s_ids = {id(f.loop_var) for f in chain if uses_var([v for _, v in spatial], {id(f.loop_var)})}
    r_ids = {id(f.loop_var) for f in chain if uses_var([v for _, v in reduce], {id(f.loop_var)})}
    above = loops[: next(i for i, f in enumerate(loops) if f is loop)]
    for f in above:
        if uses_var([v for _, v in reduce], {id(f.loop_var)}):
            raise schedule_error(
                func,
                f"{what}: loop '{f.loop_var.name}' above it drives reduction iterator(s) of "
                f"'{name}', so the init would run on every iteration of '{f.loop_var.name}'; "
                "decompose at a loop outside all reduction loops",
                loop,
            )
    if s_ids & r_ids:
        raise schedule_error(
            func, f"{what}: a loop below it drives both spatial and reduction iterators", loop
        )
    for f in chain:
        if id(f.loop_var) not in s_ids | r_ids and not _is_unit(f):  # a unit loop repeats nothing
            raise schedule_error(
                func,
                f"{what}: loop '{f.loop_var.name}' drives no iterator of '{name}' (it "
                "repeats the whole reduction, e.g. after compute_at), so a hoisted init would run "
                f"only once; decompose at a loop inside '{f.loop_var.name}'",
                loop,
            )
    keep_loops = [f for f in chain if id(f.loop_var) in s_ids]
    new_loops, vmap = _fresh_loops(keep_loops, "_init")
    ivs = [IterVar(iv.dom, Var(iv.var.name, iv.var.dtype), iv.iter_type) for iv, _ in spatial]
    ivmap = {iv.var: new.var for (iv, _), new in zip(spatial, ivs)}
    init_body = substitute(block.init, ivmap)
    writes = tuple(substitute(w, ivmap) for w in block.writes)
    drop = [f for f in chain if id(f.loop_var) not in s_ids]
    pred = analyzer(loops).simplify(substitute(_at_min(r.predicate, drop), vmap))
    values = tuple(substitute(v, vmap) for _, v in spatial)
    init_name = unique_name(func, f"{name}_init")
    update_name = unique_name(func, f"{name}_update")  # TVM's names for the two halves
    init_block = Block(
        tuple(ivs), (), writes, init_name, init_body, annotations=block.annotations
    )  # TVM copies the block's annotations onto both halves
    new_loops = [_own_thread_var(f) for f in new_loops]
    nest = _rebuild_nest(new_loops, BlockRealize(values, pred, init_block))
    # without its init the update reads what it writes: those regions go first, as in TVM
    read_ids = {id(rg.buffer) for rg in block.reads}
    reads = tuple(w for w in block.writes if id(w.buffer) not in read_ids) + block.reads
    update = block.replace(init=None, name_hint=update_name, reads=reads)
    func = replace_stmts(func, {id(r): r.replace(block=update)}, [r])
    return _insert_next_to(func, loop.loop_var, nest, after=False), init_name, update_name


# combiner -> the init value it needs, or None when any init works (max/min are idempotent:
# folding the init in once per partial result gives the same answer)
_IDENTITY = {Add: 0, Mul: 1, Max: None, Min: None}
_KIND_NAME = {Add: "sum", Mul: "product"}


def _reducer(func: PrimFunc, r: BlockRealize, what: str) -> tuple[type, Any, Any]:
    """(combiner class, the accumulator store, the value combined in) of a reduction block,
    after checking that rfactor may regroup it: `C[idx] = C[idx] op value` with the very same
    indices, `value` free of C, and an init that is the identity of `op`."""
    body, name = r.block.body, r.block.name_hint
    stores = [s for s, _ in walk(body) if isinstance(s, BufferStore)]
    if r.block.init is not None and len({id(s.buffer) for s in stores}) > 1:
        raise schedule_error(
            func,
            f"{what}: block '{name}' updates {len(stores)} buffers together (a tuple "
            "reduction such as argmax); rfactor handles one accumulator: regrouping a tuple "
            "combiner changes which index wins a tie, so it is not provably exact",
            r,
        )
    if r.block.init is None or not isinstance(body, BufferStore):
        raise schedule_error(
            func,
            f"{what}: block '{name}' is not a reduction of the form "
            "`C[...] = C[...] op value` with an init",
            r,
        )
    v = body.value
    found = None
    if isinstance(v, _COMBINERS):
        for acc, other in ((v.a, v.b), (v.b, v.a)):
            if isinstance(acc, BufferLoad) and acc.buffer is body.buffer:
                found = (type(v), acc, other)
                break
    if found is None:
        raise schedule_error(
            func,
            f"{what}: the update of block '{name}' is `{v}`; rfactor needs "
            "`C[...] = C[...] + value` (or *, max, min)",
            r,
        )
    combiner, acc, rhs = found
    buf = body.buffer
    if not _same_indices(acc.indices, body.indices) or _loads(rhs, buf):
        raise schedule_error(
            func,
            f"{what}: the update of block '{name}' is `{body.buffer.name}"
            f"[{_show(body.indices)}] = {v}`; rfactor needs it to read {buf.name} only at the "
            "element it writes, as `C[idx] = C[idx] op value`",
            r,
        )
    reduce_ids = {id(iv.var) for iv in r.block.iter_vars if iv.iter_type == IterType.CommReduce}
    if uses_var(list(body.indices), reduce_ids):
        raise schedule_error(
            func,
            f"{what}: block '{name}' writes {buf.name}[{_show(body.indices)}], which depends "
            "on a reduction iterator; each element must be the result of one whole reduction",
            r,
        )
    init = r.block.init
    if not isinstance(init, BufferStore) or init.buffer is not buf:
        raise schedule_error(
            func, f"{what}: the init of '{name}' is not a single store to {buf.name}", r
        )
    if not _same_indices(init.indices, body.indices):
        raise schedule_error(
            func,
            f"{what}: the init of '{name}' writes {buf.name}[{_show(init.indices)}] but the "
            f"update writes {buf.name}[{_show(body.indices)}]",
            r,
        )
    identity = _IDENTITY[combiner]
    if identity is not None and const_value(init.value) != identity:
        raise schedule_error(
            func,
            f"{what}: the init of '{name}' sets {buf.name} to {init.value}, but rfactor of a "
            f"{_KIND_NAME[combiner]} needs the identity {identity} there (each partial "
            "result starts from the init, so another value would be counted once per part); "
            f"start from {identity} and combine the other value in a separate block",
            r,
        )
    if uses_var(init.value, reduce_ids) or _loads(init.value, buf):
        raise schedule_error(
            func, f"{what}: the init value {init.value} of '{name}' depends on the reduction", r
        )
    return combiner, body, rhs


def _same_indices(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(structural_equal(x, y) for x, y in zip(a, b))


def _show(indices: tuple) -> str:
    return ", ".join(str(i) for i in indices)


def _loads(expr: Any, buf: Any) -> bool:
    found: list = []
    post_order_visit(
        expr, lambda n: found.append(n) if isinstance(n, BufferLoad) and n.buffer is buf else None
    )
    return bool(found)


def _not_quasi_affine(r: BlockRealize) -> Any:
    """The first binding of `r` that is not quasi-affine in the loop vars, else None."""
    for v in r.iter_values:
        if not is_quasi_affine(v):
            return v
    return None


def _inline_let(func: PrimFunc, r: BlockRealize) -> BlockRealize:
    """`r` with a body `let v = e in C[idx] = v` (TVMScript's `v: T.f32 = ...; C[idx] = v`)
    rewritten as `C[idx] = e`, the form rfactor reads; any other body is returned unchanged."""
    body = r.block.body
    if isinstance(body, LetStmt) and isinstance(body.body, BufferStore):
        store = body.body
        if not uses_var([body.value], {id(body.var)}):
            new = store.replace(value=substitute(store.value, {body.var: body.value}))
            if not uses_var([new], {id(body.var)}):
                return r.replace(block=r.block.replace(body=new))
    return r


def _check_scope(func: PrimFunc, r: BlockRealize, path: Path, what: str) -> None:
    """The scope block holding `r` must be a stage pipeline (every read region is covered by
    its producers), as TVM requires: the partial results are written before they are read."""
    scope = enclosing_block(path)
    if scope is None:
        return
    state = ScheduleState(func)
    sref = state.get_sref(scope)
    if sref is not None and not state._stage_pipeline(sref):
        raise schedule_error(
            func,
            f"{what}: the scope block '{scope.name_hint}' holding '{r.block.name_hint}' is not "
            "a stage pipeline (a block reads a region its producers do not fully write, or "
            "there is a write-after-read dependency); rfactor needs a stage pipeline",
            r,
        )


def _check_loops(func, what, chain, loop, r, s_ids, r_ids) -> int:
    """Check TVM's loop conditions of rfactor; return the index in `chain` of the outermost
    loop driving a reduction iterator (or the rfactor loop when it drives none)."""
    name = r.block.name_hint
    first = [s for s, _ in walk(chain[0]) if isinstance(s, BlockRealize)]
    if first[0] is not r:
        raise schedule_error(
            func,
            f"{what}: the first block under the outermost loop '{chain[0].loop_var.name}' is "
            f"'{first[0].block.name_hint}', not '{name}'; the partial results are computed in "
            "a copy of the loop nest placed before that loop, so the reduction block must be "
            "the first one under it",
            chain[0],
        )
    top = None
    for k, f in enumerate(chain):
        v = id(f.loop_var)
        if v in s_ids and v in r_ids:
            raise schedule_error(
                func,
                f"{what}: loop '{f.loop_var.name}' drives both spatial and reduction iterators "
                f"of '{name}'",
                f,
            )
        if v in s_ids:
            if f is loop:
                raise schedule_error(
                    func,
                    f"{what}: loop '{f.loop_var.name}' does not drive a reduction iterator of "
                    f"'{name}' (it drives a spatial one); rfactor a loop over the reduction axis",
                    f,
                )
            continue
        if v in r_ids or f is loop:
            if v not in r_ids and not _is_unit(f):
                raise schedule_error(
                    func,
                    f"{what}: loop '{loop.loop_var.name}' does not drive a reduction iterator "
                    f"of '{name}'; rfactor a loop over the reduction axis",
                    f,
                )
            if top is None:
                top = k
                under = [s for s, _ in walk(f.body) if isinstance(s, BlockRealize)]
                if len(under) != 1:
                    raise schedule_error(
                        func,
                        f"{what}: the outermost reduction loop '{f.loop_var.name}' of '{name}' "
                        f"holds {len(under)} blocks; it must hold only '{name}'",
                        f,
                    )
            continue
        if not _is_unit(f):
            raise schedule_error(
                func,
                f"{what}: loop '{f.loop_var.name}' (extent {f.extent}) drives no iterator of "
                f"'{name}', so it repeats the whole reduction; rfactor needs every loop above "
                "the block to drive one of its iterators (or to have extent 1)",
                f,
            )
    assert top is not None
    for upper, lower in zip(chain[top:], chain[top + 1 :] + [r]):
        if upper.body is not lower:
            raise schedule_error(
                func,
                f"{what}: loop '{upper.loop_var.name}' holds other statements besides the loops "
                f"of '{name}'; rfactor needs a plain loop nest below the outermost reduction loop",
                upper,
            )
    return top


def _conjuncts(pred: Any) -> list:
    return [*_conjuncts(pred.a), *_conjuncts(pred.b)] if isinstance(pred, And) else [pred]


def _split_predicate(func, what, r, chain, r_ids) -> tuple[Any, Any]:
    """(the predicate over the other loops, kept on both new blocks; the conjuncts over the
    reduction loops, or None) of `r`'s predicate.

    A conjunct over reduction loops (the guard of a split whose factors do not divide the
    extent) goes into the partial block's value, `if_then_else(guard, value, identity)`, not
    its predicate: every partial slot is then written over the whole box of its iterators,
    so the result is the same reduction in another order (max/min: the same bits; sums:
    rounding), and a primitive that rebuilds the block's loops from its iterators' domains
    (compute_at) cannot drop the guard. TVM v0.19 refuses every such predicate."""
    if const_value(r.predicate) == 1 or not uses_var([r.predicate], r_ids):
        return r.predicate, None
    kept, guards = [], []
    for c in _conjuncts(r.predicate):
        if not uses_var([c], r_ids):
            kept.append(c)
        elif uses_var([c], {id(f.loop_var) for f in chain} - r_ids):
            raise schedule_error(
                func,
                f"{what}: block '{r.block.name_hint}' has the predicate {c}, over both "
                "reduction and spatial loops; rfactor cannot tell which partial results exist; "
                "split the reduction loop with factors that divide its extent",
                r,
            )
        else:
            guards.append(c)
    return _all_of(kept), _all_of(guards)


def _first_iteration_guarded(guard, chain, loop, r_ids) -> bool:
    """`guard` holds at the first iteration of the reduction loops other than `loop`, for every
    value of the rest: then it may also stay the partial block's predicate (whose `if likely`
    loop partitioning takes off the unguarded iterations), since each slot's init still runs."""
    others = [f for f in chain if f is not loop and id(f.loop_var) in r_ids]
    return analyzer(chain).can_prove(_at_min(guard, others))


def _all_of(conds: list) -> Any:
    out: Any = True
    for c in conds:
        out = c if out is True else And(out, c)
    return out


def rfactor(func: PrimFunc, loop: For, loop_path: Path, factor_axis: int) -> tuple[PrimFunc, str]:
    """Factor the reduction under `loop` into a partial block `<name>_rf` (one slot per `loop`
    iteration, in a copy of the loop nest placed before it) and the write-back block (the
    original name, in the original nest with the other reduction loops removed)."""
    what = f"rfactor(loop '{loop.loop_var.name}', factor_axis={factor_axis})"
    under = [(s, p) for s, p in walk(loop.body, loop_path + (loop,)) if isinstance(s, BlockRealize)]
    if len(under) != 1:
        raise schedule_error(
            func, f"{what}: the loop must enclose exactly one block, it encloses {len(under)}", loop
        )
    orig, path = under[0]
    name = orig.block.name_hint
    what = f"rfactor(loop '{loop.loop_var.name}' of block '{name}', factor_axis={factor_axis})"
    r = _inline_let(func, orig)
    block = r.block
    combiner, store, rhs = _reducer(func, r, what)
    bad = _not_quasi_affine(r)
    if bad is not None:
        raise schedule_error(
            func,
            f"{what}: block '{name}' has the binding {bad}, which is not quasi-affine "
            "(sums of loop variables times constants, floordiv/floormod by constants); "
            "rfactor cannot tell which reduction points each loop iteration covers",
            r,
        )
    if loop.kind != ForKind.SERIAL or loop.thread_binding is not None:
        raise schedule_error(
            func,
            f"{what}: loop '{loop.loop_var.name}' is {loop.kind.name.lower()}; rfactor needs a "
            "serial loop (parallelize the rfactor block's loop afterwards instead)",
            loop,
        )
    if const_value(loop.min) != 0:
        raise schedule_error(
            func,
            f"{what}: loop '{loop.loop_var.name}' starts at {loop.min}; its iteration is the "
            "index of the partial result, so rfactor needs a loop that starts at 0",
            loop,
        )
    _check_scope(func, orig, path, what)
    chain = loops_above(path)
    pairs = list(zip(block.iter_vars, r.iter_values))
    spatial = [(iv, v) for iv, v in pairs if iv.iter_type != IterType.CommReduce]
    reduce = [(iv, v) for iv, v in pairs if iv.iter_type == IterType.CommReduce]
    s_ids = {id(f.loop_var) for f in chain if uses_var([v for _, v in spatial], {id(f.loop_var)})}
    r_ids = {id(f.loop_var) for f in chain if uses_var([v for _, v in reduce], {id(f.loop_var)})}
    top = _check_loops(func, what, chain, loop, orig, s_ids, r_ids)
    wb_pred, guard = _split_predicate(func, what, r, chain, r_ids)
    _check_no_clobber(func, what, chain[0], orig)
    buf = store.buffer
    ndim = len(buf.shape)
    axis = factor_axis + ndim + 1 if factor_axis < 0 else factor_axis
    if not 0 <= axis <= ndim:
        raise schedule_error(
            func,
            f"{what}: factor_axis must be in [{-ndim - 1}, {ndim}] for {buf.name} of "
            f"{ndim} dimensions",
            loop,
        )
    shape = list(buf.shape)
    shape.insert(axis, loop.extent)
    # TVM's rfactor buffer is a copy of the original's node: a constant offset keeps its dtype
    offset = buf.elem_offset if const_value(buf.elem_offset) == 0 else 0
    rf_buf = decl_buffer(
        tuple(shape), buf.dtype, unique_name(func, f"{buf.name}_rf"), elem_offset=offset
    )

    # the rfactor block, in a fresh copy of the whole nest: the rfactor loop's iterator
    # (spatial) first, then the block's iterators, where a reduction iterator bound through
    # the rfactor loop is replaced by one reduction iterator per loop of its binding
    rf_loops, lmap = _fresh_loops(chain, "")
    rf_iv = _loop_iv(loop, IterType.DataPar)
    ivs, values = [rf_iv], [lmap[loop.loop_var]]
    vmap: dict = {loop.loop_var: rf_iv.var}
    touched = [(iv, v) for iv, v in reduce if uses_var([v], {id(loop.loop_var)})]
    for iv, v in pairs:
        if any(iv is t for t, _ in touched):
            continue
        new = IterVar(iv.dom, Var(iv.var.name, iv.var.dtype), iv.iter_type)
        ivs.append(new)
        values.append(substitute(v, lmap))
        vmap[iv.var] = new.var
    for f in chain:
        if f is not loop and uses_var([v for _, v in touched], {id(f.loop_var)}):
            new = _loop_iv(f, IterType.CommReduce)
            ivs.append(new)
            values.append(lmap[f.loop_var])
            vmap[f.loop_var] = new.var
    for iv, v in touched:
        vmap[iv.var] = substitute(v, vmap)
    has_reduce = any(iv.iter_type == IterType.CommReduce for iv in ivs)
    idx = [substitute(i, vmap) for i in store.indices]
    rf_idx = tuple(idx[:axis] + [rf_iv.var] + idx[axis:])
    value = substitute(rhs, vmap)
    rf_pred = substitute(wb_pred, lmap)
    if guard is not None:  # past the guard the slot takes the identity (`_split_predicate`)
        if has_reduce and _first_iteration_guarded(guard, chain, loop, r_ids):
            rf_pred = substitute(_all_of([wb_pred, guard]), lmap)
        guard = substitute(guard, vmap)
        if uses_var([guard], {id(f.loop_var) for f in chain}):
            raise schedule_error(
                func,
                f"{what}: block '{name}' has the predicate {r.predicate} over reduction loops "
                "that do not map one to one to its partial block's iterators; rfactor cannot "
                "tell which partial results exist; split with factors that divide the extent",
                r,
            )
        value = if_then_else(guard, value, substitute(block.init.value, vmap))
    if has_reduce:  # partial reduction over the other reduction loops
        rf_body = BufferStore(rf_buf, combiner(BufferLoad(rf_buf, rf_idx), value), rf_idx)
        rf_init = BufferStore(rf_buf, substitute(block.init.value, vmap), rf_idx)
    else:  # each slot holds one value: `init op value` is that value (init is the identity,
        # or max/min, where folding the init in once more in the write-back is harmless)
        rf_body, rf_init = BufferStore(rf_buf, value, rf_idx), None
    rf_block = Block(
        tuple(ivs),
        (),
        (),
        unique_name(func, f"{name}_rf"),
        rf_body,
        init=rf_init,
        annotations=block.annotations,
    )
    rf_block = _with_regions(rf_block, analyzer(rf_loops))
    rf_nest = _rebuild_nest(rf_loops, BlockRealize(tuple(values), rf_pred, rf_block))

    # the write-back block, in the original nest without the other reduction loops
    w_rf = _loop_iv(loop, IterType.CommReduce)
    w_ivs = [IterVar(iv.dom, Var(iv.var.name, iv.var.dtype), iv.iter_type) for iv, _ in spatial]
    wvmap = {iv.var: new.var for (iv, _), new in zip(spatial, w_ivs)}
    w_idx = tuple(substitute(i, wvmap) for i in store.indices)
    w_rf_idx = tuple(list(w_idx[:axis]) + [w_rf.var] + list(w_idx[axis:]))
    wb_block = Block(
        (w_rf, *w_ivs),
        (),
        (),
        name,
        BufferStore(buf, combiner(BufferLoad(buf, w_idx), BufferLoad(rf_buf, w_rf_idx)), w_idx),
        init=BufferStore(buf, substitute(block.init.value, wvmap), w_idx),
        annotations=block.annotations,
    )
    wb_block = _with_regions(wb_block, analyzer(chain))
    wb_values = (loop.loop_var,) + tuple(v for _, v in spatial)
    kept = [f for f in chain[top:] if f is loop or id(f.loop_var) not in r_ids]
    wb_nest = _rebuild_nest(kept, BlockRealize(wb_values, wb_pred, wb_block))

    if top == 0:  # the outermost loop itself is rebuilt: put both nests in its place
        func = replace_stmts(func, {id(chain[0]): seq(rf_nest, wb_nest)}, [chain[0]])
    else:
        func = replace_stmts(func, {id(chain[top]): wb_nest}, [chain[top]])
        func = _insert_next_to(func, chain[0].loop_var, rf_nest, after=False)
    return add_root_alloc(func, rf_buf), rf_block.name_hint


def _loop_iv(f: For, kind: IterType) -> IterVar:
    """An iterator over the range of loop `f`, named as TVM names it: 'v' + the loop's name."""
    return IterVar(
        Range.from_min_extent(f.min, f.extent), Var("v" + f.loop_var.name, f.loop_var.dtype), kind
    )


def _check_no_clobber(func, what, outer: For, r: BlockRealize) -> None:
    """The partial results are computed before `outer` runs, so no other block under it may
    write what the reduction block reads (its value would change between the iterations)."""
    read = {id(rg.buffer.data) for rg in r.block.reads}
    for s, _ in walk(outer.body):
        if isinstance(s, BlockRealize) and s is not r:
            for w in s.block.writes:
                if id(w.buffer.data) in read:
                    raise schedule_error(
                        func,
                        f"{what}: block '{s.block.name_hint}' under loop "
                        f"'{outer.loop_var.name}' writes {w.buffer.name}, which "
                        f"'{r.block.name_hint}' reads; the partial results would be computed "
                        "before that write",
                        s,
                    )


def _with_regions(block: Block, ana: Any) -> Block:
    reads, writes = infer_access_regions(block, ana.simplify)
    out_ids = {id(w.buffer) for w in writes}
    return block.replace(
        reads=tuple(rg for rg in reads if id(rg.buffer) not in out_ids), writes=writes
    )


def _own_thread_var(f: For) -> For:
    """`f` with a thread binding of its own (a fresh var): a copied loop nest binds the same
    thread again, through a new IterVar as TVM does, rather than sharing the original's."""
    tb = f.thread_binding
    if tb is None:
        return f
    var = Var(tb.var.name, tb.var.dtype)
    return f.replace(thread_binding=IterVar(tb.dom, var, tb.iter_type, tb.thread_tag))


def _is_unit(loop: For) -> bool:
    return getattr(loop.extent, "value", None) == 1
