"""`te.decl_tensor_intrin` and `Stage.tensorize`: replace a loop nest by a hand-written kernel.

A TensorIntrin describes what a kernel computes (a TE compute over small placeholders) and how
to call it (`fcompute(ins, outs)` building a statement over buffers). `s[C].tensorize(yi, intrin)`
replaces the loops from `yi` inward by that statement, after checking that they compute the
same thing: the stage's body, with the loops under `yi` renamed to the intrinsic's axes
(spatial ones in order, then reduction ones), must equal the intrinsic's body once every tensor
is replaced by the intrinsic's placeholder it is paired with, and every access must be the
intrinsic's access shifted by one fixed offset (the region the kernel works on). The kernel
gets buffers viewing those regions: same memory, the tensor's strides, the offset as element
offset. A reduction split around the intrinsic runs its `reset` at the first outer reduction
step and its `update` at every step; with the whole reduction inside, its `body` runs alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import tir
from ..arith import Analyzer
from ..error import ScheduleError
from ..ir.structural import structural_equal
from ..tir.buffer import Buffer, decl_buffer
from ..tir.functor import Mutator, post_order_visit, substitute
from ..tir.op import all as all_of
from .operation import ComputeOp
from .tensor import Tensor


class TensorIntrin:
    """A kernel for `op`'s computation; `fcompute(ins, outs)` emits the call (or a 3-tuple
    (body, reset, update) for reductions). Made by `te.decl_tensor_intrin`."""

    def __init__(self, op: ComputeOp, fcompute: Callable, name: str, buffers: list,
                 scalar_params: list) -> None:  # fmt: skip
        self.op, self.fcompute, self.name = op, fcompute, name
        self.buffers, self.scalar_params = buffers, scalar_params

    @property
    def inputs(self) -> list[Tensor]:
        return self.op.input_tensors

    def _parts(self) -> list:
        """(body, reset, update) of the kernel over the intrinsic's own buffers."""
        n = len(self.op.input_tensors)
        made = self.fcompute(self.buffers[:n], self.buffers[n:])
        parts = list(made) if isinstance(made, tuple | list) else [made, None, None]
        return [tir.Evaluate(p) if isinstance(p, tir.PrimExpr) else p for p in parts]

    @property
    def body(self) -> Any:
        """The kernel's statement over the intrinsic's declared buffers."""
        return self._parts()[0]

    @property
    def reduce_init(self) -> Any:
        """The kernel's reset statement of a reduction (None when it gives none)."""
        return self._parts()[1]

    @property
    def reduce_update(self) -> Any:
        """The kernel's update statement of a reduction (None when it gives none)."""
        return self._parts()[2]

    def __call__(self, *regions: Any, reduce_axis: Any = None, scalar_inputs: Any = None) -> Any:
        """`intrin(A[i, 0:16], ...)` in a te.compute lambda: the intrinsic over those regions."""
        from .tensor_compute import intrin_call

        if scalar_inputs:
            raise ScheduleError(
                f"tensor intrinsic '{self.name}': scalar_inputs are not supported (nor are "
                "scalar_params in decl_tensor_intrin)"
            )
        return intrin_call(self, regions, reduce_axis)

    def __repr__(self) -> str:
        return f"TensorIntrin({self.name})"


def decl_tensor_intrin(
    op: Any,
    fcompute: Callable,
    name: str = "tensor_intrin",
    binds: dict | None = None,
    scalar_params: list | None = None,
    default_buffer_params: dict | None = None,
) -> TensorIntrin:
    """Declare a tensor intrinsic: what `op` computes, done by the statement `fcompute` builds.

    `binds` maps the op's tensors to `tvm.tir.decl_buffer`s describing the layouts the kernel
    accepts (strides as te.var's mean "any"); others get compact buffers.
    """
    op = op.op if isinstance(op, Tensor) else op
    if not isinstance(op, ComputeOp):
        raise ScheduleError(
            f"decl_tensor_intrin '{name}': expected a te.compute's op, got {type(op).__name__}"
        )
    if scalar_params:
        raise ScheduleError(
            f"decl_tensor_intrin '{name}': scalar_params are not supported; pass scalars "
            "through the kernel's statement instead"
        )
    binds = dict(binds or {})
    params = dict(default_buffer_params or {})
    buffers = []
    for t in [*op.input_tensors, *op.outputs]:
        buf = binds.get(t)
        if buf is None:
            buf = decl_buffer(t.shape, t.dtype, t.op.name, **params)
        buffers.append(buf)
    return TensorIntrin(op, fcompute, name, buffers, [])


# ----------------------------------------------------------------------------- tensorize


def _fail(stage: str, intrin: TensorIntrin, why: str) -> ScheduleError:
    return ScheduleError(f"tensorize of stage '{stage}' with intrinsic '{intrin.name}': {why}")


def _nest(
    loop: tir.For, stage: str, intrin: TensorIntrin
) -> tuple[list[tir.For], tir.BlockRealize]:
    """The loops from `loop` inward and the one block they hold."""
    loops, s = [], loop
    while isinstance(s, tir.For):
        loops.append(s)
        s = s.body
    if not isinstance(s, tir.BlockRealize):
        raise _fail(stage, intrin, "the loops under the tensorize point hold more than the stage")
    if not (isinstance(s.predicate, tir.IntImm) and s.predicate.value == 1):
        raise _fail(
            stage,
            intrin,
            f"the loops under the tensorize point are guarded by `{s.predicate}` (a split that "
            "does not divide the extent), so the kernel would run past the tensor's end; split "
            "by a factor that divides the extent",
        )
    return loops, s


def _intrin_block(intrin: TensorIntrin) -> tuple[tir.Block, tir.BlockRealize, list[Buffer]]:
    from .to_tir import create_prim_func

    func = create_prim_func([*intrin.op.input_tensors, *intrin.op.outputs])
    found: list = []
    post_order_visit(
        func.body,
        lambda n: (
            found.append(n)
            if isinstance(n, tir.BlockRealize) and n.block.name_hint != "root"
            else None
        ),
    )
    return found[0].block, found[0], [func.buffer_map[p] for p in func.params]


def _kinds(realize: tir.BlockRealize) -> dict[int, tir.IterType]:
    """Loop var id -> the kind of block var (spatial/reduce) its binding feeds."""
    out: dict[int, tir.IterType] = {}
    for iv, value in zip(realize.block.iter_vars, realize.iter_values):

        def note(n: Any, kind: tir.IterType = iv.iter_type) -> None:
            if isinstance(n, tir.Var):
                out[id(n)] = (
                    tir.IterType.CommReduce
                    if kind == tir.IterType.CommReduce
                    else out.get(id(n), tir.IterType.DataPar)
                )

        post_order_visit(value, note)
    return out


def _loads(e: Any) -> list[tir.BufferLoad]:
    found: list[tir.BufferLoad] = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, tir.BufferLoad) else None)
    return found


class _Holes(Mutator):
    """Each BufferLoad -> the k-th placeholder var (in visiting order), to compare shapes."""

    def __init__(self, holes: list[tir.Var]) -> None:
        super().__init__()
        self.holes, self.k = holes, 0

    def visit_BufferLoad(self, n: tir.BufferLoad) -> tir.PrimExpr:
        hole = self.holes[self.k]
        self.k += 1
        return hole

    def visit(self, n: Any) -> Any:  # no memo: equal loads must get their own holes
        self._memo.clear()
        return super().visit(n)


def _same_shape(a: tir.PrimExpr, b: tir.PrimExpr, count: int) -> bool:
    holes = [tir.Var(f"hole{k}", "int32") for k in range(count)]
    return structural_equal(_Holes(holes).visit(a), _Holes(holes).visit(b))


class _Tensorize:
    """Matches one stage's block against an intrinsic and builds the replacing statement."""

    def __init__(
        self, stage: str, intrin: TensorIntrin, outer: list[tir.For], loop: tir.For
    ) -> None:
        self.stage, self.intrin, self.outer = stage, intrin, outer
        self.loops, self.realize = _nest(loop, stage, intrin)
        self.block = self.realize.block
        self.ana = Analyzer()
        for lp in [*outer, *self.loops]:
            self.ana.bind(lp.loop_var, tir.Range.from_min_extent(lp.min, lp.extent))
        self.pairs: dict[
            int, tuple[Buffer, Buffer, list]
        ] = {}  # id(intrin buf) -> (real, ., start)

    def fail(self, why: str) -> ScheduleError:
        return _fail(self.stage, self.intrin, why)

    def run(self) -> tir.Stmt:
        iblock, irealize, ibuffers = _intrin_block(self.intrin)
        self.ibuffers = ibuffers  # in the order of the declared buffers
        ivars = self._map_loops(iblock, irealize)
        bind = {iv.var: v for iv, v in zip(self.block.iter_vars, self.realize.iter_values)}
        mine = substitute(self.block.body, {**bind})
        mine = substitute(mine, ivars)
        theirs = iblock.body
        if not (isinstance(mine, tir.BufferStore) and isinstance(theirs, tir.BufferStore)):
            raise self.fail("the stage's body is not a single store")
        self._match(mine, theirs)
        ins = [self._view(b) for b in ibuffers[: len(self.intrin.op.input_tensors)]]
        outs = [self._view(b) for b in ibuffers[len(self.intrin.op.input_tensors) :]]
        return self._compose(self.intrin.fcompute(ins, outs), bind, ins + outs)

    def _map_loops(self, iblock: tir.Block, irealize: tir.BlockRealize) -> dict:
        """Inner loop var -> the intrinsic's block var of the same kind and position."""
        kinds = _kinds(self.realize)
        mine = {k: [lp for lp in self.loops if kinds.get(id(lp.loop_var), tir.IterType.DataPar) == k]
                for k in (tir.IterType.DataPar, tir.IterType.CommReduce)}  # fmt: skip
        theirs = {k: [iv for iv in iblock.iter_vars if (iv.iter_type == tir.IterType.CommReduce)
                      == (k == tir.IterType.CommReduce)] for k in mine}  # fmt: skip
        out = {}
        for k, loops in mine.items():
            if len(loops) != len(theirs[k]):
                what = "reduction" if k == tir.IterType.CommReduce else "spatial"
                raise self.fail(
                    f"the loops under the tensorize point have {len(loops)} {what} loop(s) "
                    f"({[lp.loop_var.name for lp in loops]}) but the intrinsic has "
                    f"{len(theirs[k])}; tensorize at the loop whose nest matches the intrinsic"
                )
            for lp, iv in zip(loops, theirs[k]):
                if not self.ana.can_prove_equal(lp.extent, iv.dom.extent) or not (
                    isinstance(lp.min, tir.IntImm) and lp.min.value == 0
                ):
                    raise self.fail(
                        f"loop '{lp.loop_var.name}' runs {lp.extent} iterations but the "
                        f"intrinsic's axis '{iv.var.name}' has extent {iv.dom.extent}; split "
                        "the loop by the intrinsic's size first"
                    )
                out[lp.loop_var] = iv.var
                self.ana.bind(iv.var, tir.Range.from_min_extent(0, iv.dom.extent))
        self.ivars = out
        return out

    def _match(self, mine: tir.BufferStore, theirs: tir.BufferStore) -> None:
        a, b = _loads(mine.value), _loads(theirs.value)
        if len(a) != len(b) or not _same_shape(mine.value, theirs.value, len(a)):
            raise self.fail(
                f"the stage computes `{mine.value}`, which is not the intrinsic's `{theirs.value}`"
            )
        self._pair(mine.buffer, mine.indices, theirs.buffer, theirs.indices)
        for x, y in zip(a, b):
            self._pair(x.buffer, x.indices, y.buffer, y.indices)

    def _pair(self, real: Buffer, idx: tuple, fake: Buffer, fidx: tuple) -> None:
        zero = {v: tir.as_expr(0, like=v.dtype) for v in self.ivars.values()}
        start = [self.ana.simplify(substitute(i, zero)) for i in idx]
        extra = len(idx) - len(fidx)
        if extra < 0:
            raise self.fail(f"'{real.name}' has fewer dimensions than '{fake.name}'")
        for d, i in enumerate(idx):
            rel = self.ana.simplify(i - start[d])
            want = fidx[d - extra] if d >= extra else 0
            if not self.ana.can_prove_equal(rel, want):
                raise self.fail(
                    f"'{real.name}' is accessed at [{', '.join(map(str, idx))}], which is not "
                    f"the intrinsic's {fake.name}[{', '.join(map(str, fidx))}] at one offset"
                )
        seen = self.pairs.get(id(fake))
        if seen is not None and (
            seen[0] is not real
            or not all(self.ana.can_prove_equal(x, y) for x, y in zip(seen[2], start))
        ):
            raise self.fail(f"'{fake.name}' is paired with two different regions")
        self.pairs[id(fake)] = (real, fake, start)

    def _view(self, fake: Buffer) -> Buffer:
        """A buffer over the paired region: the real memory, its strides, the start offset."""
        real, _, start = self.pairs[id(fake)]
        strides, acc = [], tir.as_expr(1, like=real.shape[-1].dtype) if real.shape else None
        for extent in reversed(real.shape):
            strides.insert(0, acc)
            acc = acc * extent
        offset = real.elem_offset
        for s, st in zip(start, strides):
            offset = offset + s * st
        kept = strides[len(real.shape) - len(fake.shape) :]
        kept = [self.ana.simplify(s) for s in kept]
        declared = self.intrin.buffers[self._position(fake)]
        for d, want in enumerate(declared.strides or _compact_strides(fake.shape)):
            if not isinstance(want, tir.Var) and not self.ana.can_prove_equal(want, kept[d]):
                raise self.fail(
                    f"buffer '{declared.name}' is declared with stride {want} in dimension "
                    f"{d}, but '{real.name}' has stride {kept[d]} there; bind the intrinsic's "
                    "tensor to a tvm.tir.decl_buffer with strides=[te.var(...), ..., 1]"
                )
        offset = self.ana.simplify(offset)
        factor = declared.offset_factor
        if factor > 1 and not self.ana.can_prove_equal(offset % factor, 0):
            raise self.fail(
                f"buffer '{declared.name}' requires an element offset that is a multiple of "
                f"{factor} (offset_factor), but the region of '{real.name}' starts at {offset}"
            )
        return Buffer(real.data, real.dtype, fake.shape, tuple(kept), offset, declared.name,
                      real.storage_scope, declared.data_alignment, factor)  # fmt: skip

    def _position(self, fake: Buffer) -> int:
        return next(k for k, b in enumerate(self.ibuffers) if b is fake)

    def _compose(self, made: Any, bind: dict, views: list) -> tir.Stmt:
        parts = list(made) if isinstance(made, tuple | list) else [made, None, None]
        if len(parts) != 3:
            raise self.fail("fcompute must return a statement or (body, reset, update)")
        body, reset, update = (tir.Evaluate(p) if isinstance(p, tir.PrimExpr) else p for p in parts)
        kinds = _kinds(self.realize)
        outer_reduce = [
            lp for lp in self.outer if kinds.get(id(lp.loop_var)) == tir.IterType.CommReduce
        ]
        if self.block.init is None or not outer_reduce:
            if body is None:
                raise self.fail("the intrinsic's fcompute returned no body")
            stmt = body
        else:
            if update is None:
                raise self.fail(
                    f"the reduction continues outside the tensorized loops (loops "
                    f"{[lp.loop_var.name for lp in outer_reduce]}), so the intrinsic must "
                    "return (body, reset, update)"
                )
            if reset is None:
                reset = self._init_nest(bind)
            first = all_of(*[lp.loop_var == lp.min for lp in outer_reduce])
            stmt = tir.seq(tir.IfThenElse(first, reset), update)
        stmt = _declare_used_views(stmt, views)
        reads = tuple(self._region(p) for p in self.pairs.values())
        writes = (self._region(self.pairs[id(self._out_fake())]),)
        block = tir.Block((), reads, writes, self.block.name_hint, stmt)
        return tir.BlockRealize((), True, block)

    def _out(self) -> Buffer:
        return self.block.body.buffer

    def _out_fake(self) -> Buffer:
        return next(fake for real, fake, _ in self.pairs.values() if real is self._out())

    def _region(self, pair: tuple) -> tir.BufferRegion:
        real, fake, start = pair
        extra = len(real.shape) - len(fake.shape)
        dims = [tir.Range.from_min_extent(s, 1) for s in start[:extra]]
        dims += [tir.Range.from_min_extent(s, e) for s, e in zip(start[extra:], fake.shape)]
        return tir.BufferRegion(real, tuple(dims))

    def _init_nest(self, bind: dict) -> tir.Stmt:
        """The stage's own init over the tensorized spatial loops (the intrinsic has no reset)."""
        init = substitute(self.block.init, bind)
        kinds = _kinds(self.realize)
        for lp in reversed(self.loops):
            if kinds.get(id(lp.loop_var), tir.IterType.DataPar) != tir.IterType.CommReduce:
                init = tir.For(lp.loop_var, lp.min, lp.extent, tir.ForKind.SERIAL, init)
        return init


def _declare_used_views(stmt: tir.Stmt, views: list) -> tir.Stmt:
    """A kernel that loads or stores through a region's view (not only its access_ptr)
    declares that view around itself, so the function stays well-formed TVMScript."""
    used: set[int] = set()

    def visit(n: Any) -> None:
        if isinstance(n, tir.BufferLoad | tir.BufferStore):
            used.add(id(n.buffer))

    post_order_visit(stmt, visit)
    for view in reversed(views):
        if id(view) in used:
            stmt = tir.DeclBuffer(view, stmt)
    return stmt


def _compact_strides(shape: tuple) -> list:
    """Row-major strides of `shape` (what a buffer declared without strides assumes)."""
    strides, acc = [], tir.as_expr(1)
    for extent in reversed(shape):
        strides.insert(0, acc)
        acc = acc * extent
    return strides


class _Replace(Mutator):
    def __init__(self, table: dict[int, tir.Stmt]) -> None:
        super().__init__()
        self.table = table

    def visit_For(self, s: tir.For) -> tir.Stmt:
        new = self.table.get(id(s))
        return new if new is not None else self.generic_visit(s)


def apply_tensorize(sch: Any, items: list) -> Any:
    """The schedule's function with each (stage name, block rv, loop rv, intrin) tensorized."""
    table: dict[int, tir.Stmt] = {}
    for stage, block_rv, loop_rv, intrin in items:
        loop = sch.get(loop_rv)
        loops = [sch.get(lp) for lp in sch.get_loops(block_rv)]
        k = next(i for i, lp in enumerate(loops) if lp is loop)
        table[id(loop)] = _Tensorize(stage, intrin, loops[:k], loop).run()
    func = sch.mod["main"]
    return func.replace(body=_Replace(table).visit(func.body))
