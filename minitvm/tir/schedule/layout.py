"""transform_layout, transform_block_layout, set_axis_separator: change how a buffer or a
block's iteration space is laid out, through an IndexMap whose inverse we can prove."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...error import ScheduleError
from ...ir.dtype import DataType
from ..buffer import Buffer
from ..expr import (
    BufferLoad,
    FloatImm,
    IntImm,
    IterType,
    IterVar,
    PrimExpr,
    Range,
    Var,
    as_expr,
    const_value,
)
from ..function import PrimFunc
from ..functor import Mutator, substitute
from ..index_map import IndexMap, analyse
from ..stmt import (
    Block,
    BlockRealize,
    BufferRegion,
    BufferStore,
    For,
    ForKind,
    MatchBufferRegion,
    Stmt,
)
from .common import ReplaceBuffers, SimplifyIndices, analyzer, schedule_error
from .instruction import register_python_renderer, render
from .trace import register_json_codec
from .tree import Path, replace_stmt, walk


# ---------------------------------------------------------------------- buffer arguments
class BufferArgumentError(ScheduleError, AssertionError):
    """A buffer argument that names none of the block's buffers. TVM checks these with
    Python asserts, so it is also an AssertionError (its tests expect that class)."""


def _buffer_arg_error(func: PrimFunc, message: str, culprit: Any) -> BufferArgumentError:
    return BufferArgumentError(schedule_error(func, message, culprit).args[0])


def resolve_buffer(
    func: PrimFunc, r: BlockRealize, spec: Any, what: str
) -> tuple[str, int, Buffer]:
    """("read"|"write", index, buffer) named by `spec`: a (kind, index) pair, a buffer name,
    or a Buffer, among the buffers that block `r` reads or writes."""
    block = r.block
    entries = [("read", i, rg.buffer) for i, rg in enumerate(block.reads)]
    entries += [("write", i, rg.buffer) for i, rg in enumerate(block.writes)]
    shown = ", ".join(f"{k}[{i}] {b.name}" for k, i, b in entries)
    if isinstance(spec, tuple | list) and len(spec) == 2 and spec[0] in ("read", "write"):
        regions = block.reads if spec[0] == "read" else block.writes
        index = spec[1]
        if isinstance(index, int) and 0 <= index < len(regions):
            return spec[0], index, regions[index].buffer
        raise _buffer_arg_error(
            func,
            f"{what}: block '{block.name_hint}' has {len(regions)} {spec[0]} buffers, so "
            f"{spec!r} names none; the block accesses {shown}",
            r,
        )
    if isinstance(spec, str):
        found = {id(b): (k, i, b) for k, i, b in entries if b.name == spec}
        if len(found) == 1:
            return next(iter(found.values()))
        problem = "no buffer" if not found else "several buffers"
        raise _buffer_arg_error(
            func,
            f"{what}: block '{block.name_hint}' accesses {problem} named {spec!r}; it "
            f"accesses {shown}",
            r,
        )
    if isinstance(spec, Buffer):
        for k, i, b in entries:
            if b is spec:
                return k, i, b
        raise _buffer_arg_error(
            func,
            f"{what}: block '{block.name_hint}' does not access buffer '{spec.name}'; it "
            f"accesses {shown}",
            r,
        )
    raise _buffer_arg_error(
        func,
        f"{what}: buffer must be ('read', i), ('write', i), a buffer name or a Buffer, got "
        f"{spec!r}",
        r,
    )


def block_index_dtype(block: Block) -> str:
    """The dtype of the block's iterators (int32 unless they are int64), for index maps."""
    for iv in block.iter_vars:
        return str(iv.var.dtype)
    return "int32"


def as_index_map(index_map: Any, ndim: int, dtype: str, what: str) -> tuple[IndexMap, list[int]]:
    """(IndexMap, axis separators) of a callable, an IndexMap or the lambda text traces print."""
    if isinstance(index_map, IndexMap):
        return index_map, []
    if isinstance(index_map, str):
        return IndexMap.from_text(index_map, dtype), []
    if callable(index_map):
        return IndexMap.from_func_with_separators(index_map, ndim=ndim, index_dtype=dtype)
    raise ScheduleError(f"{what}: index_map must be an IndexMap or a function, got {index_map!r}")


def buffer_index_map(func: PrimFunc, r: BlockRealize, spec: Any, index_map: Any) -> tuple:
    """(IndexMap, axis separators) for transforming the buffer `spec` of block `r` (a
    function's parameters get the buffer's index dtype)."""
    what = f"transform_layout(block '{r.block.name_hint}', buffer {spec!r})"
    _, _, buf = resolve_buffer(func, r, spec, what)
    dtype = str(buf.shape[0].dtype) if buf.shape else block_index_dtype(r.block)
    return as_index_map(index_map, len(buf.shape), dtype, what)


def block_index_map(r: BlockRealize, index_map: Any) -> IndexMap:
    """The IndexMap for transforming block `r`'s iteration space."""
    what = f"transform_block_layout(block '{r.block.name_hint}')"
    block = r.block
    return as_index_map(index_map, len(block.iter_vars), block_index_dtype(block), what)[0]


def with_values(imap: IndexMap, sampled: dict) -> IndexMap:
    """`imap` with the schedule's sampled variables ({id: (var, value)}) replaced by their
    values, so the map (and the trace) holds plain numbers."""
    if not sampled:
        return imap
    known = {v: IntImm(v.dtype, n) for v, n in sampled.values()}
    finals = [analyzer().simplify(substitute(e, known)) for e in imap.final_indices]
    return IndexMap(imap.initial_indices, finals)


def pad_value_map(pad_value: Any, imap: IndexMap, buf_dtype: Any) -> Any:
    """The pad value as an IndexMap over the transformed indices, as TVM traces it (a Python
    int/float takes the buffer's dtype when its kind matches; None stays None)."""
    if pad_value is None or isinstance(pad_value, IndexMap):
        return pad_value
    dtype = str(imap.initial_indices[0].dtype) if imap.ndim else "int32"
    if isinstance(pad_value, str):  # the lambda text a printed trace passes back
        return IndexMap.from_text(pad_value, dtype)
    if not callable(pad_value):
        value = pad_value
        if isinstance(value, int) and not isinstance(value, bool) and buf_dtype.is_integer:
            value = IntImm(buf_dtype, value)
        elif isinstance(value, float) and buf_dtype.is_float:
            value = FloatImm(buf_dtype, value)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            value = as_expr(value)  # a Python int is int32, a float float32, as in TVM
        if not isinstance(value, PrimExpr):
            return pad_value  # transform_layout says why it is not a value

        pad_value = _constant(value)

    return IndexMap.from_func(pad_value, ndim=len(imap.final_indices), index_dtype=dtype)


def _constant(value: PrimExpr) -> Callable:
    return lambda *_: value


# IndexMaps in traces: printed as the lambda text (a string the Python replay passes back to
# the primitive) and stored in JSON as that text; both are read by IndexMap.from_text.
register_python_renderer(IndexMap, lambda m: render(m.as_lambda_text()))
register_json_codec(IndexMap, "IndexMap", IndexMap.as_lambda_text, IndexMap.from_text)


# ---------------------------------------------------------------------- rewriting accesses
class _Remap(Mutator):
    """Replace buffer `old` by `new`, mapping every index tuple through `fn`."""

    def __init__(self, old: Buffer, new: Buffer, fn: Callable[[tuple], list]) -> None:
        super().__init__()
        self.old, self.new = old, new
        self.units: list[dict] = [{}]  # unit-extent iterators of the enclosing blocks
        self.ranges: list[list] = [[]]  # the other iterators of the enclosing blocks
        self.fn = lambda ix: self._tidy(fn(ix))

    def _tidy(self, indices: list) -> list:
        """A composite index is simplified under the enclosing blocks' iterator ranges (a
        unit-extent iterator is 0), as TVM's iterator simplification does; a bare iterator
        stays."""
        zeros, ranges = self.units[-1], self.ranges[-1]
        if not zeros and not ranges:
            return indices
        ana = analyzer()
        for iv in ranges:
            ana.bind(iv.var, iv.dom)
        return [
            e if isinstance(e, Var) else ana.simplify(substitute(e, lambda v: zeros.get(id(v))))
            for e in indices
        ]

    def visit_Block(self, b: Block) -> Any:
        units = {
            id(iv.var): IntImm(iv.var.dtype, 0)
            for iv in b.iter_vars
            if const_value(iv.dom.extent) == 1
        }
        others = [iv for iv in b.iter_vars if const_value(iv.dom.extent) != 1]
        self.units.append({**self.units[-1], **units})
        self.ranges.append(self.ranges[-1] + others)
        try:
            return self.generic_visit(b)
        finally:
            self.units.pop()
            self.ranges.pop()

    def visit_Buffer(self, b: Buffer) -> Buffer:
        return self.new if b is self.old else b

    def visit_BufferLoad(self, e: BufferLoad) -> Any:
        e2 = e.replace(indices=self.visit(e.indices))
        if e.buffer is not self.old:
            return e2
        return e2.replace(buffer=self.new, indices=tuple(self.fn(e2.indices)))

    def visit_BufferStore(self, s: BufferStore) -> Any:
        s2 = s.replace(value=self.visit(s.value), indices=self.visit(s.indices))
        if s.buffer is not self.old:
            return s2
        return s2.replace(buffer=self.new, indices=tuple(self.fn(s2.indices)))

    def visit_BufferRegion(self, rg: BufferRegion) -> Any:
        if rg.buffer is not self.old:
            return self.generic_visit(rg)
        return BufferRegion(self.new, map_region(rg.region, self.fn))

    def visit_PrimFunc(self, f: PrimFunc) -> Any:
        return self.generic_visit(f)


def map_region(region: tuple, fn: Callable[[tuple], list]) -> tuple:
    """The bounding box of the image of `region` under the index function `fn`."""
    if all(const_value(rg.extent) == 1 for rg in region):
        return tuple(Range.from_min_extent(e, 1) for e in fn(tuple(rg.min for rg in region)))
    ana = analyzer()
    offsets = []
    for d, rg in enumerate(region):
        if const_value(rg.extent) == 1:
            offsets.append(rg.min)
            continue
        v = Var(f"r{d}", rg.extent.dtype)
        ana.bind(v, Range.from_min_extent(0, rg.extent))
        offsets.append(rg.min + v)
    out = []
    for e in fn(tuple(offsets)):
        bound = ana.int_set(e)
        lo = ana.simplify(bound.min_value)
        out.append(Range.from_min_extent(lo, ana.simplify(bound.max_value - lo + 1)))
    return tuple(out)


def _rewrite_buffer(func: PrimFunc, old: Buffer, new: Buffer, fn: Callable) -> PrimFunc:
    """`func` with every use of `old` (accesses, regions, allocation, parameter) on `new`."""
    body = _Remap(old, new, fn).visit(func.body)
    buffer_map = {p: (new if b is old else b) for p, b in func.buffer_map.items()}
    return func.replace(body=body, buffer_map=type(func.buffer_map)(buffer_map))


def _writers(func: PrimFunc, buf: Buffer) -> list[tuple[BlockRealize, Path]]:
    return [
        (s, p)
        for s, p in walk(func.body)
        if isinstance(s, BlockRealize) and any(w.buffer is buf for w in s.block.writes)
    ]


# ---------------------------------------------------------------------- transform_layout
def transform_layout(
    func: PrimFunc,
    r: BlockRealize,
    spec: Any,
    index_map: Any,
    pad_value: Any = None,
    assume_injective: bool = False,
) -> PrimFunc:
    """`func` with one buffer re-laid out by `index_map` (every access, region and the
    allocation or parameter follow)."""
    # the padding helpers import this module's block utilities
    from .layout_padding import (
        _pad_in_loops,
        _pad_in_producer,
        _pad_value,
        _row_major_loops,
        _row_major_producer,
        _simplify_block,
        _simplify_loops,
        _write_padding,
    )

    what = f"transform_layout(block '{r.block.name_hint}', buffer {spec!r})"
    _, _, buf = resolve_buffer(func, r, spec, what)
    what = f"transform_layout(block '{r.block.name_hint}', buffer '{buf.name}')"
    dtype = str(buf.shape[0].dtype) if buf.shape else block_index_dtype(r.block)
    imap, separators = as_index_map(index_map, len(buf.shape), dtype, what)
    if imap.ndim != len(buf.shape):
        raise schedule_error(
            func,
            f"{what}: the index map takes {imap.ndim} indices but '{buf.name}' has "
            f"{len(buf.shape)} dimensions (shape {[str(s) for s in buf.shape]})",
            r,
        )
    layout = analyse(imap, list(buf.shape))
    if layout.outputs is None and not assume_injective:
        raise schedule_error(
            func,
            f"{what}: cannot prove that {imap} maps the elements of '{buf.name}' one to one "
            "(it may not be injective); use splits, fusions and reorders of the indices, or "
            "pass assume_injective_transform=True if you know it is",
            r,
        )
    # with assume_injective_transform the padding may stay unwritten: the original accesses
    # never reach it (TVM's rule)
    if layout.padded and pad_value is None and not assume_injective:
        raise schedule_error(
            func,
            f"{what}: {imap} maps shape {[str(s) for s in buf.shape]} into "
            f"{[str(e) for e in layout.extents]}, which adds padding; pass pad_value= to say "
            "what the padding holds",
            r,
        )
    new_shape = tuple(
        as_expr(e, like=buf.shape[0].dtype if buf.shape else None) for e in layout.extents
    )
    new = buf.replace(shape=new_shape, strides=(), axis_separators=tuple(separators))
    padded = layout.padded and pad_value is not None
    pad = _pad_value(func, r, buf, imap, pad_value, what) if padded else None

    def fn(indices: tuple) -> list:
        return imap.map_indices(list(indices))

    if pad is None:  # no padding, or assumed never read (assume_injective_transform)
        return _rewrite_buffer(func, buf, new, fn)
    inverse, pred = imap.non_surjective_inverse(list(buf.shape))
    producer = _row_major_producer(func, buf)
    if producer is not None:
        func, block_name = _pad_in_producer(func, producer, layout, inverse, pred, pad)
        func = _rewrite_buffer(func, buf, new, fn)
        return _simplify_block(func, block_name)
    nest = _row_major_loops(func, buf)
    if nest is not None:
        func, outer = _pad_in_loops(func, nest, layout, inverse, pred, pad)
        func = _rewrite_buffer(func, buf, new, fn)
        return _simplify_loops(func, outer)
    func = _rewrite_buffer(func, buf, new, fn)
    if _writers(func, new):
        func = _write_padding(func, new, inverse, pred, pad)
    return func


# ---------------------------------------------------------------------- set_axis_separator
def set_axis_separator(func: PrimFunc, r: BlockRealize, spec: Any, separators: Any) -> PrimFunc:
    """`func` with the buffer's axis separators set (the physical axes after flattening)."""
    what = f"set_axis_separator(block '{r.block.name_hint}', buffer {spec!r})"
    _, _, buf = resolve_buffer(func, r, spec, what)
    seps = tuple(int(s) for s in separators)
    if any(not 0 < s < len(buf.shape) for s in seps) or list(seps) != sorted(set(seps)):
        raise schedule_error(
            func,
            f"{what}: axis separators {list(seps)} must be increasing positions strictly "
            f"between 0 and {len(buf.shape)} (the buffer's number of dimensions)",
            r,
        )
    new = buf.replace(axis_separators=seps)

    def matched(m: Buffer) -> Buffer:
        # a view of fewer dimensions keeps the separators of its trailing axes (TVM's rule)
        drop = len(buf.shape) - len(m.shape)
        return m.replace(axis_separators=tuple(max(0, x - drop) for x in seps))

    return _with_buffer(func, buf, new, matched)


def _with_buffer(func: PrimFunc, old: Buffer, new: Buffer, derive: Callable) -> PrimFunc:
    """`func` with buffer `old` replaced by `new` everywhere (views derived by `derive`)."""
    mut = ReplaceBuffers({id(old): new}, derive)
    body = mut.visit(func.body)
    buffer_map = {p: (new if b is old else b) for p, b in func.buffer_map.items()}
    return func.replace(body=body, buffer_map=type(func.buffer_map)(buffer_map))


# ---------------------------------------------------------------------- set_scope
def set_scope(func: PrimFunc, r: BlockRealize, spec: Any, scope: str) -> PrimFunc:
    """`func` with the buffer block `r` writes (an index into its writes, a name or a Buffer)
    moved to storage `scope` and renamed `<name>_<scope>`, as TVM does; views follow."""
    from .cache import _SCOPES

    what = f"set_scope(block '{r.block.name_hint}', buffer_index={spec!r}, storage_scope={scope!r})"
    if isinstance(spec, int) and not isinstance(spec, bool):
        n = len(r.block.writes)
        if not 0 <= spec < n:
            raise schedule_error(
                func, f"{what}: the block writes {n} buffers; use an index in 0..{n - 1}", r
            )
        spec = ("write", spec)
    kind, _, buf = resolve_buffer(func, r, spec, what)
    if kind != "write":
        raise schedule_error(func, f"{what}: '{buf.name}' is not written by the block", r)
    if not isinstance(scope, str) or scope.split(".")[0] not in _SCOPES:
        raise schedule_error(
            func, f"{what}: {scope!r} is not a storage scope; use one of {list(_SCOPES)}", r
        )
    if any(b is buf for b in func.buffer_map.values()):
        raise schedule_error(
            func,
            f"{what}: {buf.name} is a parameter of the function; its memory belongs to the "
            "caller. Use cache_write to stage it in another scope",
            r,
        )
    if buf.storage_scope == scope:
        return func

    def moved(b: Buffer) -> Buffer:
        name = f"{b.name}_{scope.replace('.', '_')}"
        return b.replace(storage_scope=scope, name=name, data=Var(name, b.data.dtype))

    return _with_buffer(func, buf, moved(buf), moved)


# ---------------------------------------------------------------------- transform_block_layout
def transform_block_layout(func: PrimFunc, r: BlockRealize, path: Path, index_map: Any) -> PrimFunc:
    """`func` with block `r`'s iteration space re-laid out by `index_map`: new loops `ax*`
    over the image, new iterators `v*`, and the body reading the old iterators through the
    map's inverse."""
    block = r.block
    what = f"transform_block_layout(block '{block.name_hint}')"
    loops = _perfect_loops(func, r, path, what)
    dtype = block_index_dtype(block)
    imap, _ = as_index_map(index_map, len(block.iter_vars), dtype, what)
    if imap.ndim != len(block.iter_vars):
        raise schedule_error(
            func,
            f"{what}: the index map takes {imap.ndim} indices but the block has "
            f"{len(block.iter_vars)} iterators",
            r,
        )
    extents = [iv.dom.extent for iv in block.iter_vars]
    layout = analyse(imap, extents)
    if layout.outputs is None or layout.padded:
        raise schedule_error(
            func,
            f"{what}: {imap} is not a bijection of the block's iteration space "
            f"{[str(e) for e in extents]} that we can prove (use splits, fusions and "
            "reorders of the iterators)",
            r,
        )
    kinds = []
    for j, digits in enumerate(layout.outputs):
        types = {block.iter_vars[t.k].iter_type for t in digits}
        if len(types) > 1:
            raise schedule_error(
                func,
                f"{what}: result {j} of {imap} mixes spatial and reduction iterators; "
                "each new iterator must combine iterators of one kind",
                r,
            )
        kinds.append(types.pop() if types else IterType.DataPar)
    inverse = layout.inverse_map()
    idt = DataType(dtype)
    new_loops = [Var(f"ax{j}", idt) for j in range(len(layout.extents))]
    new_ivs = [
        IterVar(Range.from_min_extent(0, as_expr(ext, like=idt)), Var(f"v{j}", idt), kind)
        for j, (ext, kind) in enumerate(zip(layout.extents, kinds))
    ]
    ana = analyzer()
    for iv in new_ivs:
        if const_value(iv.dom.extent) != 1:  # a unit iterator stays a variable, as in TVM
            ana.bind(iv.var, iv.dom)
    olds = inverse.map_indices([iv.var for iv in new_ivs])
    vmap = {iv.var: ana.simplify(e) for iv, e in zip(block.iter_vars, olds)}
    simp = SimplifyIndices(ana)
    new_block = block.replace(
        iter_vars=tuple(new_ivs),
        body=simp.visit(substitute(block.body, vmap)),
        init=simp.visit(substitute(block.init, vmap)) if block.init is not None else None,
        reads=simp.visit(substitute(block.reads, vmap)),
        writes=simp.visit(substitute(block.writes, vmap)),
    )
    stmt: Stmt = BlockRealize(tuple(new_loops), IntImm("bool", 1), new_block)
    for v, iv in reversed(list(zip(new_loops, new_ivs))):
        stmt = For(v, IntImm(idt, 0), iv.dom.extent, ForKind.SERIAL, stmt)
    return replace_stmt(func, loops[0] if loops else r, stmt)


def _perfect_loops(func: PrimFunc, r: BlockRealize, path: Path, what: str) -> list[For]:
    """The loops that wrap only `r` and whose variables are exactly its bindings."""
    from .tree import loops_above

    loops = loops_above(path)
    chain: list[For] = []
    for f in reversed(loops):
        inner = chain[-1] if chain else r
        if f.body is not inner:
            break
        chain.append(f)
    chain.reverse()
    by_var = {id(f.loop_var): f for f in chain}
    used = set()
    for iv, value in zip(r.block.iter_vars, r.iter_values):
        f = by_var.get(id(value))
        if f is None or id(value) in used or const_value(f.min) != 0:
            ok = const_value(iv.dom.extent) == 1 and const_value(value) == 0
        else:
            ok = _same_extent(f.extent, iv.dom.extent)
            used.add(id(value))
        if not ok:
            raise schedule_error(
                func,
                f"{what}: iterator '{iv.var.name}' is bound to {value}; the block must be "
                "bound one-to-one to the loops that wrap only it (undo splits/fusions first)",
                r,
            )
    if const_value(r.predicate) not in (1, True):
        raise schedule_error(func, f"{what}: the block has a predicate; it must have none", r)
    if len(used) != len(chain):
        chain = [f for f in chain if id(f.loop_var) in used]
        if chain and chain[0].body is not (chain[1] if len(chain) > 1 else r):
            raise schedule_error(
                func, f"{what}: a loop around the block is not one of its iterators", r
            )
    return chain


def _same_extent(a: Any, b: Any) -> bool:
    from ...ir.structural import structural_equal

    va, vb = const_value(a), const_value(b)
    if va is not None and vb is not None:
        return va == vb
    return structural_equal(a, b)


__all__ = [
    "MatchBufferRegion",
    "resolve_buffer",
    "set_axis_separator",
    "transform_block_layout",
    "transform_layout",
]


# ---------------------------------------------------------------------- storage_align
_ALIGN_KEY = "buffer_dim_align"


def storage_align(
    func: PrimFunc, r: BlockRealize, index: int, axis: int, factor: int, offset: int
) -> PrimFunc:
    """`func` with block `r` annotated so that its `index`-th written buffer is allocated with
    stride[axis] % factor == offset (lowering pads the row pitch)."""
    block = r.block
    what = (
        f"storage_align(block '{block.name_hint}', buffer_index={index}, axis={axis}, "
        f"factor={factor}, offset={offset})"
    )
    buf = _written(func, r, index, what)
    if not isinstance(axis, int) or not -len(buf.shape) <= axis < len(buf.shape):
        raise schedule_error(
            func, f"{what}: '{buf.name}' has {len(buf.shape)} dimensions; axis is out of range", r
        )
    if not isinstance(factor, int) or factor <= 0 or not isinstance(offset, int):
        raise schedule_error(func, f"{what}: factor must be a positive int and offset an int", r)
    entries = _align_entries(func, r, what)
    axis %= len(buf.shape)
    entries = [e for e in entries if (e[0], e[1]) != (index, axis)]
    entries.append((index, axis, factor, offset % factor))
    value = [list(e) for e in entries]
    from .loop_transform import annotate

    return annotate(func, block, _ALIGN_KEY, value)


def _align_entries(func: PrimFunc, r: BlockRealize, what: str) -> list[tuple]:
    """The block's existing buffer_dim_align entries as int 4-tuples (checked)."""
    raw = r.block.annotations.get(_ALIGN_KEY)
    if raw is None:
        return []
    out = []
    for e in raw if isinstance(raw, list | tuple) else [raw]:
        vals = (
            [const_value(x) if isinstance(x, PrimExpr) else x for x in e]
            if isinstance(e, list | tuple)
            else None
        )
        if vals is None or len(vals) != 4 or not all(isinstance(v, int) for v in vals):
            raise schedule_error(
                func,
                f"{what}: the block's '{_ALIGN_KEY}' annotation {raw!r} is malformed; each entry "
                "must be [buffer_index, axis, factor, offset]",
                r,
            )
        out.append(tuple(vals))
    return out


def _written(func: PrimFunc, r: BlockRealize, index: Any, what: str) -> Buffer:
    """The `index`-th buffer block `r` writes, which must be allocated inside the function."""
    writes = r.block.writes
    if not isinstance(index, int) or not 0 <= index < len(writes):
        raise schedule_error(
            func,
            f"{what}: block '{r.block.name_hint}' writes {len(writes)} buffers; use a "
            f"buffer_index in 0..{len(writes) - 1}",
            r,
        )
    buf = writes[index].buffer
    if any(b is buf for b in func.buffer_map.values()):
        raise schedule_error(
            func,
            f"{what}: '{buf.name}' is a parameter of the function; its memory belongs to the "
            "caller, so only buffers the function allocates can be changed",
            r,
        )
    return buf


# ---------------------------------------------------------------------- unsafe_set_dtype
class _Retyped(ReplaceBuffers):
    """Buffers in `table` (old -> new) get their new dtype (views too); stores cast to it,
    loads cast back."""

    def visit_BufferLoad(self, e: BufferLoad) -> Any:
        new = self.table.get(id(e.buffer))
        e2 = e.replace(indices=self.visit(e.indices))
        if new is None:
            return e2
        from ..expr import Cast

        return Cast(e.buffer.dtype, BufferLoad(new, e2.indices))

    def visit_BufferStore(self, s: BufferStore) -> Any:
        new = self.table.get(id(s.buffer))
        s2 = s.replace(value=self.visit(s.value), indices=self.visit(s.indices))
        if new is None:
            return s2
        from ..expr import Cast

        return s2.replace(buffer=new, value=Cast(new.dtype, s2.value))


def unsafe_set_dtype(func: PrimFunc, r: BlockRealize, index: int, dtype: str) -> PrimFunc:
    """`func` with the `index`-th buffer block `r` writes stored as `dtype` (values are cast on
    every store and cast back on every load, so precision may be lost)."""
    what = f"unsafe_set_dtype(block '{r.block.name_hint}', buffer_index={index}, dtype={dtype!r})"
    buf = _written(func, r, index, what)
    try:
        new_dtype = DataType(dtype)
    except Exception as err:  # DataType raises DTypeError on a bad name
        raise schedule_error(func, f"{what}: {dtype!r} is not a data type", r) from err
    if new_dtype == buf.dtype:
        return func
    new = buf.replace(dtype=new_dtype)
    keep = [buf]
    retyped = _Retyped({id(buf): new}, lambda view: view.replace(dtype=new_dtype))
    out = func.replace(body=retyped.visit(func.body))
    del keep
    return out
