"""Reduction primitives: decompose_reduction (init into its own block) and rfactor."""

from __future__ import annotations

from typing import Any

from ..analysis.region import infer_access_regions
from ..buffer import decl_buffer
from ...ir.structural import structural_equal
from ..expr import Add, BufferLoad, IterType, IterVar, Max, Min, Mul, Range, Var, const_value
from ..function import PrimFunc
from ..functor import post_order_visit, substitute
from ..stmt import Block, BlockRealize, BufferStore, For, ForKind, SeqStmt, Stmt, seq
from .common import add_root_alloc, analyzer, is_quasi_affine, schedule_error, unique_name
from .tree import Path, find_loop, loops_above, replace_stmts, uses_var, walk

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
    init_block = Block(tuple(ivs), (), writes, init_name, init_body)
    nest = _rebuild_nest(new_loops, BlockRealize(values, pred, init_block))
    update = block.replace(init=None, name_hint=update_name)
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
        raise schedule_error(func, f"{what}: the init of '{name}' is not a single store to {buf.name}", r)
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


def rfactor(func: PrimFunc, loop: For, loop_path: Path, factor_axis: int) -> tuple[PrimFunc, str]:
    """Factor the reduction under `loop` into a partial block `<name>_rf` (one slot per `loop`
    iteration) and a write-back block (the original name) that combines the slots."""
    what = f"rfactor(loop '{loop.loop_var.name}', factor_axis={factor_axis})"
    under = [(s, p) for s, p in walk(loop.body, loop_path + (loop,)) if isinstance(s, BlockRealize)]
    if len(under) != 1:
        raise schedule_error(
            func, f"{what}: the loop must enclose exactly one block, it encloses {len(under)}", loop
        )
    r, path = under[0]
    block = r.block
    name = block.name_hint
    what = f"rfactor(loop '{loop.loop_var.name}' of block '{name}', factor_axis={factor_axis})"
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
    chain = loops_above(path)
    pairs = list(zip(block.iter_vars, r.iter_values))
    spatial = [(iv, v) for iv, v in pairs if iv.iter_type != IterType.CommReduce]
    reduce = [(iv, v) for iv, v in pairs if iv.iter_type == IterType.CommReduce]
    rf_id = {id(loop.loop_var)}
    if not uses_var([v for _, v in reduce], rf_id):
        raise schedule_error(
            func,
            f"{what}: loop '{loop.loop_var.name}' does not drive a reduction iterator of "
            f"'{name}'; rfactor a loop over the reduction axis",
            loop,
        )
    s_loops = [f for f in chain if uses_var([v for _, v in spatial], {id(f.loop_var)})]
    r_loops = [f for f in chain if uses_var([v for _, v in reduce], {id(f.loop_var)})]
    if {id(f) for f in s_loops} & {id(f) for f in r_loops}:
        raise schedule_error(
            func, f"{what}: a loop drives both spatial and reduction iterators", loop
        )
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
    rf_buf = decl_buffer(tuple(shape), buf.dtype, unique_name(func, f"{buf.name}_rf"))

    # the rfactor block: spatial iters, then one iter per reduction loop (the rf loop spatial)
    s_ivs = [IterVar(iv.dom, Var(iv.var.name, iv.var.dtype), iv.iter_type) for iv, _ in spatial]
    loop_ivs = [
        IterVar(
            Range(f.min, f.extent),
            Var("v" + f.loop_var.name, f.loop_var.dtype),
            IterType.DataPar if f is loop else IterType.CommReduce,
        )
        for f in r_loops
    ]
    lmap = {f.loop_var: iv.var for f, iv in zip(r_loops, loop_ivs)}
    vmap = {iv.var: new.var for (iv, _), new in zip(spatial, s_ivs)}
    vmap.update({iv.var: substitute(v, lmap) for iv, v in reduce})
    rf_var = loop_ivs[r_loops.index(loop)].var
    idx = [substitute(i, vmap) for i in store.indices]
    rf_idx = tuple(idx[:axis] + [rf_var] + idx[axis:])
    acc = BufferLoad(rf_buf, rf_idx)
    init_value = substitute(block.init.value, vmap) if isinstance(block.init, BufferStore) else None
    if init_value is None:
        raise schedule_error(func, f"{what}: the init of '{name}' is not a single store", r)
    rf_block = Block(
        tuple(s_ivs + loop_ivs),
        (),
        (),
        unique_name(func, f"{name}_rf"),
        BufferStore(rf_buf, combiner(acc, substitute(rhs, vmap)), rf_idx),
        init=BufferStore(rf_buf, init_value, rf_idx),
    )
    ana = analyzer(chain)
    rf_block = _with_regions(rf_block, ana)
    rf_values = tuple(v for _, v in spatial) + tuple(f.loop_var for f in r_loops)
    rf_realize = BlockRealize(rf_values, r.predicate, rf_block)

    # the write-back nest goes right after the outermost loop that holds only this block; it
    # re-creates the spatial loops and the rf loop below that point, in the original order
    own = [k for k, f in enumerate(chain) if _only_block(f, r)]
    if not own or any(any(f is g for g in r_loops) for f in chain[: own[0]]):
        raise schedule_error(
            func,
            f"{what}: the reduction loops of '{name}' are shared with other blocks (after "
            "compute_at); rfactor before moving blocks into its loops",
            loop,
        )
    top = chain[own[0]]
    wb_src = [f for f in chain[own[0] :] if any(f is g for g in s_loops) or f is loop]
    wb_loops, wmap = _fresh_loops(wb_src, "")
    wb_loops = [
        f.replace(kind=ForKind.SERIAL, thread_binding=None)
        if f.loop_var is wmap[loop.loop_var]
        else f
        for f in wb_loops
    ]
    w_ivs = [IterVar(iv.dom, Var(iv.var.name, iv.var.dtype), iv.iter_type) for iv, _ in spatial]
    w_rf = IterVar(
        Range(loop.min, loop.extent),
        Var("v" + loop.loop_var.name, loop.loop_var.dtype),
        IterType.CommReduce,
    )
    wvmap = {iv.var: new.var for (iv, _), new in zip(spatial, w_ivs)}
    w_idx = tuple(substitute(i, wvmap) for i in store.indices)
    w_rf_idx = tuple(list(w_idx[:axis]) + [w_rf.var] + list(w_idx[axis:]))
    wb_block = Block(
        tuple(w_ivs) + (w_rf,),
        (),
        (),
        name,
        BufferStore(buf, combiner(BufferLoad(buf, w_idx), BufferLoad(rf_buf, w_rf_idx)), w_idx),
        init=BufferStore(buf, substitute(block.init.value, wvmap), w_idx),
    )
    wb_block = _with_regions(wb_block, ana)
    others = [f for f in r_loops if f is not loop]
    wb_pred = substitute(_at_min(r.predicate, others), wmap)
    wb_values = tuple(substitute(v, wmap) for _, v in spatial) + (wmap[loop.loop_var],)
    wb_nest = _rebuild_nest(wb_loops, BlockRealize(wb_values, ana.simplify(wb_pred), wb_block))

    func = replace_stmts(func, {id(r): rf_realize}, [r])
    func = _insert_next_to(func, top.loop_var, wb_nest, after=True)
    return add_root_alloc(func, rf_buf), rf_block.name_hint


def _only_block(loop: For, r: BlockRealize) -> bool:
    """True when `r` is the only block under `loop` (at any depth)."""
    found = [s for s, _ in walk(loop.body) if isinstance(s, BlockRealize)]
    return len(found) == 1 and found[0] is r


def _with_regions(block: Block, ana: Any) -> Block:
    reads, writes = infer_access_regions(block, ana.simplify)
    out_ids = {id(w.buffer) for w in writes}
    return block.replace(
        reads=tuple(rg for rg in reads if id(rg.buffer) not in out_ids), writes=writes
    )


def _is_unit(loop: For) -> bool:
    return getattr(loop.extent, "value", None) == 1
