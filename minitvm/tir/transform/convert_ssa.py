"""ConvertSSA (TVM's pass): every variable of a module is defined once.

A definition (function parameter, buffer_map entry, let, loop, allocation, declared or
matched buffer, block iterator) of a Var already defined anywhere earlier in the module gets
a fresh Var of the same name and dtype, used inside that definition's scope; buffers over a
renamed variable are rebuilt once per scope. Environment threads (`thread_extent` attrs) are
defined at function scope: repeated launches in one function keep sharing their Var.
"""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager
from typing import Any

from ...ir.module import IRModule
from ...ir.transform import Pass
from ..buffer import Buffer
from ..expr import IterVar, Let, PrimExpr, Var
from ..function import PrimFunc
from ..functor import Mutator, post_order_visit
from ..stmt import Allocate, AllocateConst, AttrStmt, Block, DeclBuffer, For, LetStmt, Stmt

THREAD_EXTENT = "thread_extent"


class _NoMemo(dict):
    """A memo that keeps nothing: a Var's image depends on the scope it is met in."""

    def __setitem__(self, key: Any, value: Any) -> None:
        pass


def _buffer_vars(buf: Buffer) -> list[Var]:
    """The variables a buffer's declaration mentions (data, symbolic shape/strides/offset)."""
    out: list[Var] = []
    for e in (buf.data, *buf.shape, *buf.strides, buf.elem_offset):
        post_order_visit(e, lambda n: out.append(n) if isinstance(n, Var) else None)
    return out


class _ConvertSSA(Mutator):
    def __init__(self) -> None:
        super().__init__()
        self._memo = _NoMemo()
        self.defined: set[int] = set()  # every Var defined so far in the module
        self.keep: list[Var] = []  # keeps the ids in `defined` from being reused
        self.vmap: dict[int, Var] = {}  # Var -> its image in the current scope
        self.buffers: dict[tuple, Buffer] = {}

    # ---- definitions
    def _define(self, v: Var) -> Var:
        if id(v) in self.defined:
            new = dataclasses.replace(v)  # a new Var: same name and dtype
        else:
            new = v
        self.defined.add(id(new))
        self.keep.append(new)
        self.vmap[id(v)] = new
        return new

    @contextmanager
    def _scope(self):
        saved = dict(self.vmap)
        try:
            yield
        finally:
            self.vmap = saved

    def _define_buffer(self, buf: Buffer) -> Buffer:
        """Define the variables a declared buffer introduces (those not already visible)."""
        for v in _buffer_vars(buf):
            if id(v) not in self.vmap:
                self._define(v)
        return self.visit_Buffer(buf)

    # ---- uses
    def visit_Var(self, v: Var) -> Var:
        return self.vmap.get(id(v), v)

    def visit_Buffer(self, buf: Buffer) -> Buffer:
        key = (id(buf), *(id(self.vmap.get(id(v), v)) for v in _buffer_vars(buf)))
        hit = self.buffers.get(key)
        if hit is None:
            hit = self.generic_visit(buf)
            self.buffers[key] = hit
            self.keep.append(buf)
        return hit

    # ---- scoped statements and expressions
    def visit_LetStmt(self, s: LetStmt) -> Stmt:
        value = self.visit(s.value)
        with self._scope():
            var = self._define(s.var)
            return s.replace(var=var, value=value, body=self.visit(s.body))

    def visit_Let(self, e: Let) -> PrimExpr:
        value = self.visit(e.value)
        with self._scope():
            var = self._define(e.var)
            return e.replace(var=var, value=value, body=self.visit(e.body))

    def visit_For(self, loop: For) -> Stmt:
        lo, ext = self.visit(loop.min), self.visit(loop.extent)
        with self._scope():
            var = self._define(loop.loop_var)
            binding = self.visit(loop.thread_binding) if loop.thread_binding is not None else None
            return loop.replace(
                loop_var=var,
                min=lo,
                extent=ext,
                thread_binding=binding,
                annotations=self.visit(loop.annotations),
                body=self.visit(loop.body),
            )

    def _allocation(self, s: Allocate | AllocateConst) -> Stmt:
        with self._scope():
            self._define(s.buffer_var)
            return self.generic_visit(s)

    visit_Allocate = visit_AllocateConst = _allocation

    def visit_DeclBuffer(self, s: DeclBuffer) -> Stmt:
        with self._scope():
            buf = self._define_buffer(s.buffer)
            return s.replace(buffer=buf, body=self.visit(s.body))

    def visit_Block(self, block: Block) -> Stmt:
        with self._scope():
            iters = tuple(self._block_iter(iv) for iv in block.iter_vars)
            allocs = tuple(self._define_buffer(b) for b in block.alloc_buffers)
            matches = tuple(
                m.replace(buffer=self._define_buffer(m.buffer), source=self.visit(m.source))
                for m in block.match_buffers
            )
            out = self.generic_visit(block)
            return out.replace(iter_vars=iters, alloc_buffers=allocs, match_buffers=matches)

    def _block_iter(self, iv: IterVar) -> IterVar:
        dom = self.visit(iv.dom) if iv.dom is not None else None
        return iv.replace(dom=dom, var=self._define(iv.var))

    def visit_AttrStmt(self, s: AttrStmt) -> Stmt:
        """A thread's Var was defined at function scope; all launches of it in the function
        share one IterVar, as TVM requires."""
        if s.attr_key != THREAD_EXTENT or not isinstance(s.node, IterVar):
            return self.generic_visit(s)
        node = self.thread_iters.get(id(s.node))
        if node is None:
            node = self.thread_iters[id(s.node)] = self.generic_visit(s.node)
        return s.replace(node=node, value=self.visit(s.value), body=self.visit(s.body))

    # ---- functions
    def function(self, func: PrimFunc) -> PrimFunc:
        self.vmap = {}
        self.thread_iters: dict[int, IterVar] = {}
        params = tuple(self._define(p) for p in func.params)
        bmap = {self.vmap[id(p)]: self._define_buffer(b) for p, b in func.buffer_map.items()}
        for v in _env_threads(func.body):
            if id(v) not in self.vmap:
                self._define(v)
        body = self.visit(func.body)
        same = body is func.body and all(a is b for a, b in zip(params, func.params))
        same = same and all(bmap.get(self.vmap[id(p)]) is b for p, b in func.buffer_map.items())
        if same:
            return func
        return func.replace(params=params, buffer_map=bmap, body=body)


def _env_threads(body: Stmt) -> list[Var]:
    found: list[Var] = []

    def visit(n: Any) -> None:
        if isinstance(n, AttrStmt) and n.attr_key == THREAD_EXTENT and isinstance(n.node, IterVar):
            found.append(n.node.var)

    post_order_visit(body, visit)
    return found


def convert_ssa(mod: IRModule | PrimFunc) -> IRModule | PrimFunc:
    """Rename re-defined variables so each Var of the module is defined exactly once;
    the module itself when it is already SSA."""
    if isinstance(mod, PrimFunc):
        return _ConvertSSA().function(mod)
    pass_ = _ConvertSSA()
    out = mod.copy()
    changed = False
    for gv, func in mod.functions_items():
        if isinstance(func, PrimFunc):
            new = pass_.function(func)
            if new is not func:
                out[gv] = new
                changed = True
    return out if changed else mod


def ConvertSSA() -> Pass:
    """`tvm.tir.transform.ConvertSSA()(mod)`: see `convert_ssa`."""
    return Pass(convert_ssa, "ConvertSSA")
