"""`te.create_prim_func`: a TE graph becomes a PrimFunc of one block per compute, in loop nests."""

from __future__ import annotations

from typing import Any

from .. import tir
from ..error import TEError
from ..ir.dtype import DataType
from ..ir.node import FrozenDict
from ..ir.recursion import post_order
from ..tir.analysis.region import infer_access_regions
from ..tir.buffer import Buffer, decl_buffer
from ..tir.expr import binary
from ..tir.function import PrimFunc
from ..tir.functor import Mutator, Visitor, allows_deep_recursion, post_order_visit
from ..tir.names import ATTR_NOALIAS
from .operation import ComputeOp, Operation, PlaceholderOp
from .reduction import Reduce
from .tensor import ProducerLoad, Tensor


class _Names:
    """Hands out unique names: the first `C` stays `C`, the next one becomes `C_1`."""

    def __init__(self) -> None:
        self.used: dict[str, int] = {}

    def get(self, name: str) -> str:
        name = name or "v"
        if name not in self.used:
            self.used[name] = 0
            return name
        while True:
            self.used[name] += 1
            candidate = f"{name}_{self.used[name]}"
            if candidate not in self.used:
                self.used[candidate] = 0
                return candidate


def _topo_order(roots: list[Tensor]) -> tuple[list[Operation], dict[int, str]]:
    """Operations reachable from `roots`, producers first; and, for error messages, the reader
    of each op nearest the roots."""
    order = post_order([t.op for t in roots], lambda op: [t.op for t in op.input_tensors])
    reader: dict[int, str] = {}
    for op in reversed(order):
        for t in op.input_tensors:
            reader.setdefault(id(t.op), op.name)
    return order, reader


class _Retype(Mutator):
    """A Mutator that recomputes result dtypes when operands change (a var retyped to int64)."""

    def visit_BinaryOpExpr(self, n: tir.BinaryOpExpr) -> tir.PrimExpr:
        a, b = self.visit(n.a), self.visit(n.b)
        if a is n.a and b is n.b:
            return n
        return binary(type(n), a, b)

    def visit_Select(self, n: tir.Select) -> tir.PrimExpr:
        c, t, f = self.visit(n.condition), self.visit(n.true_value), self.visit(n.false_value)
        if c is n.condition and t is n.true_value and f is n.false_value:
            return n
        return tir.Select(c, t, f)


class _Twins(_Retype):
    def __init__(self, ctx: _Context):
        super().__init__()
        self.ctx = ctx

    def visit_Var(self, v: tir.Var) -> tir.PrimExpr:
        twin = self.ctx._twin(v)
        return v if twin is None else twin


class _ToBuffers(_Retype):
    """TE expression → TIR: ProducerLoad → BufferLoad, TE axis vars → block vars."""

    def __init__(self, ctx: _Context, vmap: dict[int, tir.PrimExpr], op_name: str):
        super().__init__()
        self.ctx, self.buffers, self.vmap, self.op_name = ctx, ctx.buffers, vmap, op_name

    def visit_Var(self, v: tir.Var) -> tir.PrimExpr:
        out = self.vmap.get(id(v))
        if out is None and self.ctx.index_dtype is not None:
            out = self.ctx._twin(v)  # a shape var, in the index dtype
        return v if out is None else out

    def visit_ProducerLoad(self, n: ProducerLoad) -> tir.PrimExpr:
        buf = self.ctx.read_buffers.get(n.producer) or self.buffers[n.producer]
        return tir.BufferLoad(buf, self.visit(n.indices))

    def visit_Reduce(self, n: Reduce) -> tir.PrimExpr:
        raise TEError(f"compute '{self.op_name}': a reduction can only be the whole body")


class _Context:
    """State shared while lowering the computes of one function."""

    def __init__(self, index_dtype: DataType | None):
        self.index_dtype = index_dtype
        self.buffers: dict[Tensor, Buffer] = {}
        self.shape_vars: dict[int, tir.Var] = {}  # int32 shape var → its index_dtype twin
        self.block_names = _Names()
        self.buffer_names = _Names()
        self.defined: set[int] = set()  # ids of vars bound by params and their shapes
        self.reduce_vars: set[int] = set()  # ids of every reduce axis var in the graph
        self.block_of: dict[int, str] = {}  # id(compute op) → its block's name
        self.split_blocks: dict[tuple, str] = {}  # (op, n) → block of its n-th split output
        # An inlined argument's consumers read an internal copy of it (see inline_copies).
        self.read_buffers: dict[Tensor, Buffer] = {}

    def index(self, e: tir.PrimExpr) -> tir.PrimExpr:
        """An index or extent in the function's index dtype."""
        if self.index_dtype is None:
            return e
        e = _Twins(self).visit(e)
        return tir.cast(self.index_dtype, e) if e.dtype != self.index_dtype else e

    def _twin(self, v: tir.Var) -> tir.Var | None:
        if v.dtype == self.index_dtype or not v.dtype.is_integer:
            return None
        if id(v) not in self.shape_vars:
            kind = tir.SizeVar if isinstance(v, tir.SizeVar) else tir.Var
            self.shape_vars[id(v)] = kind(v.name, self.index_dtype)
        return self.shape_vars[id(v)]

    def loop_dtype(self, extent: tir.PrimExpr) -> DataType:
        return self.index_dtype or extent.dtype

    def declare(self, tensor: Tensor, register: bool = True) -> Buffer:
        name = self.buffer_names.get(
            tensor.op.name
            if tensor.op.num_outputs == 1
            else f"{tensor.op.name}_v{tensor.value_index}"
        )
        shape = tuple(self.index(s) for s in tensor.shape)
        buf = decl_buffer(shape, tensor.dtype, name)
        if register:
            self.buffers[tensor] = buf
        return buf


def _axis_loops(ctx: _Context, axes: tuple, iter_type: tir.IterType, names: _Names, vmap: dict):
    """(loop var, min, extent), block IterVar and binding for each TE axis."""
    out = []
    for iv in axes:
        lo, extent = ctx.index(iv.dom.min), ctx.index(iv.dom.extent)
        name = names.get(iv.var.name)
        dtype = ctx.loop_dtype(extent)
        loop_var, block_var = tir.Var(name, dtype), tir.Var(f"v_{name}", dtype)
        vmap[id(iv.var)] = block_var
        out.append(
            (
                (loop_var, lo, extent),
                tir.IterVar(tir.Range.from_min_extent(lo, extent), block_var, iter_type),
                loop_var,
            )
        )
    return out


def _reduce_update(red: Reduce, outs: list[Buffer], idx: tuple, conv: _ToBuffers):
    """(init, update) statements of a reduction into `outs` at `idx`."""
    source = tuple(conv.visit(s) for s in red.source)
    current = tuple(tir.BufferLoad(b, idx) for b in outs)
    # a reducer may use the compute's indices (its combiner or identity mentions them)
    combined = tuple(conv.visit(c) for c in red.combiner.combine(current, source))
    if len(outs) == 1:
        update = tir.BufferStore(outs[0], combined[0], idx)
    else:  # all new values are computed from the old ones before any store
        temps = [tir.Var(f"{b.name}_next", b.dtype) for b in outs]
        update = tir.seq(*(tir.BufferStore(b, t, idx) for b, t in zip(outs, temps)))
        for t, value in reversed(list(zip(temps, combined))):
            update = tir.LetStmt(t, value, update)
    cond = conv.visit(red.condition)
    if not (isinstance(cond, tir.IntImm) and cond.value == 1):
        update = tir.IfThenElse(cond, update)  # where=: skip the element, keep the init
    start = tuple(conv.visit(v) for v in (red.init or red.combiner.identity_element))
    init = tir.seq(*(tir.BufferStore(b, v, idx) for b, v in zip(outs, start)))
    return init, update


def _bounded_reduce(op: ComputeOp, red: Reduce) -> Reduce:
    """A reduction whose range depends on the compute's own index (`sum over k < i`) runs over
    the constant hull of that range, keeping the real range as its condition (a block's
    iterator domains cannot depend on each other)."""
    from ..arith import Analyzer
    from ..tir.expr import logical_and

    mine = {id(iv.var) for iv in op.axis}

    def depends(e: tir.PrimExpr) -> bool:
        found: list = []
        post_order_visit(e, lambda n: found.append(n) if id(n) in mine else None)
        return bool(found)

    if not any(depends(iv.dom.min) or depends(iv.dom.extent) for iv in red.axis):
        return red
    ana = Analyzer()
    for iv in op.axis:
        ana.bind(iv.var, iv.dom)
    axes, cond = [], red.condition
    for iv in red.axis:
        lo, end = iv.dom.min, iv.dom.min + iv.dom.extent
        if not (depends(lo) or depends(end)):
            axes.append(iv)
            continue
        low, high = ana.const_int_bound(lo).min_value, ana.const_int_bound(end).max_value
        if abs(low) >= 2**30 or abs(high) >= 2**30:  # near the dtype limit: no real bound
            raise TEError(
                f"compute '{op.name}': reduce axis '{iv.var.name}' ranges over [{lo}, {end}), "
                "which depends on the compute's indices and has no constant bound; give the "
                "compute's axes constant extents or the reduction a constant range with where="
            )
        rng = tir.Range.from_min_extent(
            tir.IntImm(lo.dtype, low), tir.IntImm(lo.dtype, max(high - low, 0))
        )
        axes.append(tir.IterVar(rng, iv.var, tir.IterType.CommReduce))
        cond = logical_and(cond, logical_and(iv.var >= lo, iv.var < end))
    return red.replace(axis=tuple(axes), condition=cond)


def _is_tensor_value(value: Any) -> bool:
    if isinstance(value, list | tuple):
        return bool(value) and all(isinstance(v, Tensor) for v in value)
    return isinstance(value, Tensor)


def _block_annotations(op: ComputeOp) -> Any:
    """The compute's attrs as block annotations, less those naming tensors: a block
    annotation is data that prints and parses, and a te.Tensor is neither (TVM drops them
    too). `layout_free_placeholders` becomes the function's `layout_free_buffers`."""
    attrs = op.attrs or {}
    if not any(_is_tensor_value(v) for v in attrs.values()):
        return op.attrs
    return FrozenDict({k: v for k, v in attrs.items() if not _is_tensor_value(v)})


def _layout_free_buffers(order: list, args: list) -> list[int]:
    """Indices into the arguments of the placeholders some compute marks layout-free."""
    marked: list[int] = []
    for op in order:
        value = (getattr(op, "attrs", None) or {}).get("layout_free_placeholders")
        if value is None:
            continue
        for t in value if isinstance(value, list | tuple) else [value]:
            if not isinstance(t, Tensor):
                raise TEError(
                    f"compute '{op.name}': attrs['layout_free_placeholders'] holds {t!r}; "
                    "give the placeholder tensors themselves"
                )
            pos = next((k for k, a in enumerate(args) if isinstance(a, Tensor) and a == t), None)
            if pos is None:
                raise TEError(
                    f"compute '{op.name}': layout-free placeholder '{t.op.name}' is not an "
                    "argument of the function; add it to the argument list"
                )
            if pos not in marked:
                marked.append(pos)
    return marked


def _lower_compute(ctx: _Context, op: ComputeOp, outs: list[Buffer] | None = None) -> Any:
    outs = outs or [ctx.buffers[op.output(n)] for n in range(op.num_outputs)]
    names, vmap = _Names(), {}
    red = op.body[0] if isinstance(op.body[0], Reduce) else None
    if red is not None:
        red = _bounded_reduce(op, red)
    axes = _axis_loops(ctx, op.axis, tir.IterType.DataPar, names, vmap)
    if red is not None:
        axes += _axis_loops(ctx, red.axis, tir.IterType.CommReduce, names, vmap)
    conv = _ToBuffers(ctx, vmap, op.name)
    idx = tuple(vmap[id(iv.var)] for iv in op.axis)
    if red is None:
        init = None
        body = tir.seq(*(tir.BufferStore(b, conv.visit(e), idx) for b, e in zip(outs, op.body)))
    else:
        init, body = _reduce_update(red, outs, idx, conv)
    ctx.block_of[id(op)] = ctx.block_names.get(op.name)
    block = tir.Block(
        tuple(a[1] for a in axes),
        (),
        (),
        ctx.block_of[id(op)],
        body,
        init,
        annotations=_block_annotations(op),
    )
    reads, writes = infer_access_regions(block)
    reads = tuple(_widen_data_dependent(r) for r in reads if not any(r.buffer is b for b in outs))
    block = block.replace(reads=reads, writes=writes)
    _check_defined(ctx, op, block, {id(a[1].var) for a in axes})
    stmt: Any = tir.BlockRealize(tuple(a[2] for a in axes), True, block)
    for (loop_var, lo, extent), _, _ in reversed(axes):
        stmt = tir.For(loop_var, lo, extent, tir.ForKind.SERIAL, stmt)
    return stmt


def _loads_data(e: tir.PrimExpr) -> bool:
    found = []
    post_order_visit(
        e, lambda n: found.append(n) if isinstance(n, tir.BufferLoad | tir.Call) else None
    )
    return bool(found)


def _widen_data_dependent(region: tir.BufferRegion) -> tir.BufferRegion:
    """An index that depends on loaded data (`A[idx[i]]`) reads the whole dimension."""
    dims = tuple(
        tir.Range.from_min_extent(0, extent) if _loads_data(r.min) or _loads_data(r.extent) else r
        for r, extent in zip(region.region, region.buffer.shape)
    )
    if all(a is b for a, b in zip(dims, region.region)):
        return region
    return tir.BufferRegion(region.buffer, dims)


class _FreeVars(Visitor):
    """Variables an expression or statement uses (buffers' own fields are not uses)."""

    def __init__(self) -> None:
        self.found: list[tir.Var] = []

    def visit_Var(self, v: tir.Var) -> None:
        self.found.append(v)

    def visit_Buffer(self, b: Buffer) -> None:
        pass

    def visit_LetStmt(self, s: tir.LetStmt) -> None:
        self.visit(s.value)
        before = len(self.found)
        self.visit(s.body)
        self.found[before:] = [v for v in self.found[before:] if v is not s.var]


def _check_defined(ctx: _Context, op: ComputeOp, block: tir.Block, block_vars: set[int]) -> None:
    finder = _FreeVars()
    finder.visit((block.body, block.init))
    for buf in (ctx.buffers[op.output(n)] for n in range(op.num_outputs)):
        finder.visit(buf.shape)
    for v in finder.found:
        if id(v) in block_vars or id(v) in ctx.defined:
            continue
        if id(v) in ctx.reduce_vars:
            raise TEError(
                f"create_prim_func: compute '{op.name}' uses reduce axis '{v.name}' outside its "
                f"reduction; a reduce axis may appear only inside te.sum/max/min(..., "
                f"axis={v.name}) of the compute that reduces over it"
            )
        raise TEError(
            f"create_prim_func: compute '{op.name}' uses the variable '{v.name}', which is "
            "defined nowhere: it is not an axis of the compute, not a dimension of an argument's "
            f"shape and not a scalar argument. If '{v.name}' is a te.reduce_axis, use it inside "
            f"te.sum(..., axis={v.name}); if it is a te.var, add it to the argument list."
        )


def _collect_defined(ctx: _Context, params: list[tir.Var], buffer_map: dict) -> None:
    finder = _FreeVars()
    for buf in buffer_map.values():
        finder.visit(buf.shape)
    ctx.defined = {id(v) for v in finder.found} | {id(p) for p in params}


@allows_deep_recursion
def create_prim_func(
    ops: list[Tensor | tir.Var], index_dtype_override: str | DataType | None = None
) -> PrimFunc:
    """A PrimFunc computing the TE graph behind `ops` (its params, in order).

    Example: `func = te.create_prim_func([A, B, C])`. Every compute becomes a loop nest around
    a block named after it; computes not in `ops` become buffers allocated in the root block.
    """
    return create_prim_func_with_blocks(ops, index_dtype_override)[0]


def create_prim_func_with_blocks(
    ops: list[Tensor | tir.Var],
    index_dtype_override: str | DataType | None = None,
    also_compute: tuple[Tensor, ...] = (),
    inline_copies: tuple[Tensor, ...] = (),
    split_outputs: dict | None = None,
) -> tuple[PrimFunc, dict[Any, str]]:
    """`create_prim_func`, plus the name of the block made for each compute operation.

    Block names are the computes' names made unique, so two computes named "C" give "C" and
    "C_1"; the classic schedule adapter uses this map to find `s[T]`'s block. Tensors in
    `also_compute` (a schedule's outputs left out of `tvm.lower`'s arguments) are computed
    into internal buffers, as TVM does. An argument in `inline_copies` (computed, and inlined
    by the schedule) is written by its own block, and also computed by a second block into an
    internal copy that its consumers read: the map names that copy's block, which the
    schedule inlines, so the argument still holds its values.
    """
    args = list(ops) if isinstance(ops, list | tuple) else [ops]
    ctx = _Context(DataType(index_dtype_override) if index_dtype_override else None)
    tensors = _check_args(args)
    order, reader = _topo_order(tensors + [t for t in also_compute if t not in tensors])
    params: list[tir.Var] = []
    buffer_map: dict[tir.Var, Buffer] = {}
    for a in args:
        if isinstance(a, Tensor):
            buf = ctx.declare(a)
            param = tir.Var(buf.name, DataType("handle"))
            params.append(param)
            buffer_map[param] = buf
        else:
            params.append(_Twins(ctx).visit(a) if ctx.index_dtype else a)
    _collect_defined(ctx, params, buffer_map)
    ctx.reduce_vars = {id(iv.var) for op in order for iv in op.reduce_axis}
    allocs = []
    claimed: set[int] = set()  # ops that a scan lowers inside its loop (te/scan.py)
    for op in order:
        if hasattr(op, "prepare_lowering"):
            claimed |= op.prepare_lowering(ctx, allocs)
    for op in order:
        if isinstance(op, PlaceholderOp):
            if op.output(0) not in ctx.buffers:
                raise TEError(
                    f"create_prim_func: placeholder '{op.name}' is read by compute "
                    f"'{reader.get(id(op), '?')}' but is not in the argument list; add "
                    f"{op.name} to the list of arguments (e.g. [{op.name}, ..., output])"
                )
            continue
        for t in op.outputs:
            if t not in ctx.buffers:
                allocs.append(ctx.declare(t))
    copies = {}
    for t in inline_copies:
        copies[t.op] = ctx.declare(t, register=False)
        ctx.read_buffers[t] = copies[t.op]
        allocs.append(copies[t.op])
    stmts = []
    for op in order:
        if id(op) in claimed or isinstance(op, PlaceholderOp):
            continue
        if not isinstance(op, ComputeOp):  # extern and scan operations lower themselves
            stmts.append(op.lower_into(ctx, order))
        elif op in copies:  # the argument's own block, then the copy the schedule inlines
            stmts.append(_lower_compute(ctx, op))
            stmts.append(_lower_compute(ctx, op, [copies[op]]))
        elif split_outputs and id(op) in split_outputs:
            stmts += _lower_split(ctx, op, split_outputs[id(op)])
        else:
            stmts.append(_lower_compute(ctx, op))
    root = tir.Block((), (), (), "root", tir.seq(*stmts), None, tuple(allocs))
    attrs = {"global_symbol": "main", ATTR_NOALIAS: True}
    free = _layout_free_buffers(order, args)
    if free:
        attrs["layout_free_buffers"] = free
    attrs = FrozenDict(attrs)
    func = PrimFunc(tuple(params), tir.BlockRealize((), True, root), None, buffer_map, attrs)
    names: dict[Any, str] = {op: ctx.block_of[id(op)] for op in order if id(op) in ctx.block_of}
    for key, name in ctx.split_blocks.items():  # (op, k): the block of its k-th live output
        names[key] = name
    return func, names


def _lower_split(ctx: _Context, op: ComputeOp, live: tuple) -> list:
    """A multi-output elementwise compute as one block per live output (the schedule moves
    each under a consumer's loop; a block writing several buffers cannot be)."""
    stmts = []
    for n, k in enumerate(live):
        part = ComputeOp(op.name, op.tag, op.attrs, op.axis, (op.body[k],))
        ctx.buffers[part.output(0)] = ctx.buffers[op.output(k)]
        stmts.append(_lower_compute(ctx, part))
        name = ctx.block_of[id(part)]
        if n == 0:
            ctx.block_of[id(op)] = name
        else:
            ctx.split_blocks[(op, n)] = name
    return stmts


def _check_args(args: list) -> list[Tensor]:
    position: dict[Tensor, int] = {}
    for n, a in enumerate(args):
        if isinstance(a, Tensor):
            if a in position:
                raise TEError(
                    f"create_prim_func: tensor '{a.name}' appears twice in the argument list "
                    f"(positions {position[a]} and {n}); pass each tensor once"
                )
            position[a] = n
        elif not isinstance(a, tir.Var):
            raise TEError(
                f"create_prim_func: argument {n} is {a!r}; arguments must be te tensors "
                "(placeholders and computes) or scalar te.var's"
            )
    if not position:
        raise TEError("create_prim_func: the argument list has no tensors")
    return list(position)
