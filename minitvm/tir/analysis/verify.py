"""Well-formedness of TIR: variables defined before use and once, buffers declared, shapes of
accesses consistent, no blocks after block lowering. Violations are IllFormedTIR errors (an
InternalError, and a ValueError as TVM raises)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ...error import InternalError
from ..buffer import Buffer
from ..expr import BufferLoad, Var
from ..function import PrimFunc
from ..functor import Visitor
from ..stmt import Allocate, Block, BlockRealize, BufferStore, DeclBuffer, For, LetStmt


def _show(n: Any) -> str:
    try:
        text = n.script() if hasattr(n, "script") else repr(n)
    except Exception as err:  # noqa: BLE001 - a printer bug must not hide the report
        text = f"<{type(n).__name__}, unprintable: {err}>"
    return text if len(text) < 2000 else text[:2000] + "\n..."


_THREAD_SCOPES = frozenset({"thread_extent", "virtual_thread"})


class IllFormedTIR(InternalError, ValueError):
    """verify_well_formed found a violation (TVM raises ValueError for these)."""


class _Verifier(Visitor):
    def __init__(
        self, allow_blocks: bool, flat: bool | None, where: str, ever: set[int] | None = None
    ) -> None:
        self.allow_blocks, self.flat, self.where = allow_blocks, flat, where
        self.scope: dict[int, Var] = {}
        self.declared: dict[int, Buffer] = {}  # buffers of buffer_map, alloc_buffers, DeclBuffer
        self.ever: set[int] = set() if ever is None else ever  # shared by a module's functions
        self.keep: list[Var] = []

    def fail(self, what: str, at: Any) -> None:
        raise IllFormedTIR(f"{self.where}produced ill-formed TIR: {what}\nat:\n{_show(at)}")

    @contextmanager
    def define(self, at: Any, *vars_: Var) -> Iterator[None]:
        for v in vars_:
            if id(v) in self.ever:
                how = (
                    "multiple nested definitions" if id(v) in self.scope else "multiple definitions"
                )
                self.fail(
                    f"variable '{v.name}' is defined twice (TIR is ill-formed, due to {how} of "
                    f"variable {v.name}); give each definition its own Var "
                    "(tir.transform.ConvertSSA does)",
                    at,
                )
            self.ever.add(id(v))
            self.keep.append(v)
            self.scope[id(v)] = v
        yield
        for v in vars_:
            del self.scope[id(v)]

    # ---- uses
    def visit_Var(self, v: Var) -> None:
        if id(v) not in self.scope:
            ended = (
                f" (Invalid use of undefined variable {v.name} at this point: its definition "
                "is no longer in-scope.)"
                if id(v) in self.ever
                else ""
            )
            self.fail(f"variable '{v.name}' is used outside the scope that defines it{ended}", v)

    def visit_Buffer(self, buf: Buffer) -> None:
        if id(buf.data) not in self.scope:
            self.fail(
                f"buffer '{buf.name}' is accessed but not declared (its data var "
                f"'{buf.data.name}' is neither a param buffer, an alloc_buffer nor an Allocate)",
                buf,
            )
        if self.flat is False and id(buf) not in self.declared:
            self.fail(
                f"buffer '{buf.name}' is not the declared buffer of its memory (a view used "
                "before flattening?)",
                buf,
            )
        self.visit((buf.shape, buf.strides, buf.elem_offset))

    @contextmanager
    def declare(self, *bufs: Buffer) -> Iterator[None]:
        fresh = [b for b in bufs if id(b) not in self.declared]
        self.declared.update((id(b), b) for b in fresh)
        yield
        for b in fresh:
            del self.declared[id(b)]

    def visit_DeclBuffer(self, decl: DeclBuffer) -> None:
        with self.declare(decl.buffer):
            self.visit(decl.body)

    def _check_indices(self, node: Any) -> None:
        n, ndim = len(node.indices), len(node.buffer.shape)
        expected = 1 if self.flat else ndim
        if self.flat is not None and n != expected:
            self.fail(
                f"access to buffer '{node.buffer.name}' has {n} indices, expected {expected}"
                + (" (after flattening)" if self.flat else ""),
                node,
            )

    def visit_BufferLoad(self, load: BufferLoad) -> None:
        self._check_indices(load)
        self.generic_visit(load)

    def visit_BufferStore(self, store: BufferStore) -> None:
        self._check_indices(store)
        self.generic_visit(store)

    # ---- definitions
    def visit_For(self, loop: For) -> None:
        self.visit((loop.min, loop.extent))
        with self.define(loop, loop.loop_var):
            self.visit(loop.body)

    def visit_AttrStmt(self, attr: Any) -> None:
        # a GPU thread scope defines its thread's variable; one thread may open several scopes
        var = getattr(attr.node, "var", None) if attr.attr_key in _THREAD_SCOPES else None
        if var is None or id(var) in self.scope:
            self.generic_visit(attr)
            return
        self.visit(attr.value)
        self.scope[id(var)] = var
        self.keep.append(var)
        self.visit(attr.body)
        del self.scope[id(var)]

    def visit_LetStmt(self, let: LetStmt) -> None:
        self.visit(let.value)
        with self.define(let, let.var):
            self.visit(let.body)

    visit_Let = visit_LetStmt  # the expression form binds its variable the same way

    def visit_Allocate(self, alloc: Allocate) -> None:
        self.visit((alloc.extents, alloc.condition))
        with self.define(alloc, alloc.buffer_var):
            self.visit(alloc.body)

    def visit_AllocateConst(self, alloc: Any) -> None:
        self.visit(alloc.extents)
        with self.define(alloc, alloc.buffer_var):
            self.visit(alloc.body)

    def visit_BlockRealize(self, realize: BlockRealize) -> None:
        if not self.allow_blocks:
            self.fail(f"block '{realize.block.name_hint}' remains after block lowering", realize)
        self.visit((realize.iter_values, realize.predicate))
        self.visit(realize.block)

    def visit_Block(self, block: Block) -> None:
        if not self.allow_blocks:
            self.fail(f"block '{block.name_hint}' remains after block lowering", block)
        for iv in block.iter_vars:
            self.visit(iv.dom)
        for buf in block.alloc_buffers:
            self.visit((buf.shape, buf.strides, buf.elem_offset))
        defined = [iv.var for iv in block.iter_vars]
        defined += [b.data for b in block.alloc_buffers]
        for m in block.match_buffers:  # a view's pointer, offset and stride vars are its own
            own = (m.buffer.data, m.buffer.elem_offset, *m.buffer.strides)
            defined += [v for v in own if isinstance(v, Var)]
        declared = [*block.alloc_buffers, *(m.buffer for m in block.match_buffers)]
        with self.define(block, *defined), self.declare(*declared):
            self.visit((block.match_buffers, block.reads, block.writes, block.init, block.body))


def _shape_vars(func: PrimFunc) -> list[Var]:
    """Symbolic dims: Vars in buffer_map shapes/strides/offsets that are not params."""
    params = {id(p) for p in func.params}
    found: dict[int, Var] = {}

    def collect(n: Any) -> None:
        if isinstance(n, Var) and id(n) not in params:
            found.setdefault(id(n), n)

    from ..functor import post_order_visit

    for buf in func.buffer_map.values():
        post_order_visit((buf.shape, buf.strides, buf.elem_offset), collect)
    return list(found.values())


def verify_well_formed(
    func: Any,
    assert_mode: bool = True,
    *,
    allow_blocks: bool = True,
    flat: bool | None = None,
    pass_name: str = "",
) -> bool:
    """True when `func` (a PrimFunc, or every PrimFunc of an IRModule) is well formed; when it
    is not, raise IllFormedTIR (an InternalError and a ValueError), or with `assert_mode=False`
    (TVM's flag) return False. In a module a Var may be defined in one function only.

    `allow_blocks=False` once blocks are lowered; `flat=True` requires 1-D accesses,
    `flat=False` requires one index per buffer dimension, None checks neither.
    """
    funcs = (
        [func]
        if isinstance(func, PrimFunc)
        else [f for _, f in func.functions_items() if isinstance(f, PrimFunc)]
    )
    ever: set[int] = set()  # a Var may be defined once in the whole module, as in TVM
    try:
        for f in funcs:
            _verify_one(f, allow_blocks, flat, pass_name, ever)
    except InternalError:
        if assert_mode:
            raise
        return False
    return True


def _verify_one(
    func: PrimFunc, allow_blocks: bool, flat: bool | None, pass_name: str, ever: set[int]
) -> None:
    where = f"pass '{pass_name}' " if pass_name else ""
    checker = _Verifier(allow_blocks, flat, where, ever)
    top = [*func.params, *(buf.data for buf in func.buffer_map.values()), *_shape_vars(func)]
    unique = list({id(v): v for v in top}.values())
    with checker.define(func, *unique), checker.declare(*func.buffer_map.values()):
        checker.visit(func.body)
