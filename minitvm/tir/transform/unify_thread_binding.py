"""One loop per thread tag and kernel (TVM's UnifyThreadBinding), on TensorIR before lowering.

A kernel starts at its outermost thread-bound loop. Every loop bound to a tag inside it (two
sibling `threadIdx.x` loops, a `blockIdx.x` loop and a nested one) shares one variable per tag;
the bound loops disappear and, around the kernel's body, one bound loop per tag is emitted in
the order the tags were first met (`T.launch_thread` scopes become such loops too). The loops of one tag must have one extent (threads are
launched once), else it is an error. Annotations of a removed loop stay on a unit serial loop.
Functions made by the classic TE schedule path (attr `from_legacy_te_schedule`) are left alone.
"""

from __future__ import annotations

from ...arith import Analyzer
from ...error import ShapeError
from ..expr import Cast, IterType, IterVar, PrimExpr, Range, Var, as_expr
from ..function import PrimFunc
from ..functor import Mutator
from ..stmt import AttrStmt, For, ForKind, Stmt
from ._pass import prim_func_pass


class _Unifier(Mutator):
    """Rewrites bound loops to one shared variable per tag and kernel (module doc)."""

    def __init__(self, func_name: str) -> None:
        super().__init__()
        self.func_name = func_name
        self.ana = Analyzer()
        self.tags: dict[str, tuple[Var, Range]] = {}  # tag -> (variable, range), this kernel
        self.launch: list[str] = []  # tags in the order they were first met
        self.subst: dict[int, PrimExpr] = {}  # id(old loop var) -> the tag's variable
        self.block_depth = 0

    def visit_Var(self, v: Var) -> PrimExpr:
        return self.subst.get(id(v), v)

    def visit_For(self, loop: For) -> Stmt:
        tag = loop.thread_binding.thread_tag if loop.thread_binding is not None else ""
        if loop.kind != ForKind.THREAD_BINDING or not tag:
            return self.generic_visit(loop)
        body = self._unify(tag, loop.loop_var, Range.from_min_extent(loop.min, loop.extent), loop.body)
        if not loop.annotations:
            return body
        if isinstance(body, For):
            return body.replace(annotations=loop.annotations)
        dtype = loop.loop_var.dtype
        return For(Var("var", dtype), 0, 1, ForKind.SERIAL, body, None, loop.annotations)

    def visit_AttrStmt(self, attr: AttrStmt) -> Stmt:
        """`T.launch_thread` scopes are unified like bound loops (and become bound loops)."""
        iv = attr.node
        if attr.attr_key not in ("thread_extent", "virtual_thread") or not isinstance(iv, IterVar):
            return self.generic_visit(attr)
        dom = Range.from_min_extent(as_expr(0, like=attr.value.dtype), attr.value)
        return self._unify(iv.thread_tag, iv.var, dom, attr.body)

    def _unify(self, tag: str, old: Var, dom: Range, body: Stmt) -> Stmt:
        """`body` of one bound loop (or launch scope) over the tag's shared variable; the
        kernel's launch loops around it when this loop starts the kernel."""
        starts_kernel = self.block_depth == 0
        if starts_kernel:
            self.tags, self.launch = {}, []
        depth = self.block_depth
        if starts_kernel or tag.startswith("blockIdx."):
            self.block_depth += 1
        var = self._shared_var(tag, old, dom)
        self.subst[id(old)] = var if var.dtype == old.dtype else Cast(old.dtype, var)
        body = self.visit(body)
        self.block_depth = depth
        return self._emit_launch(body) if starts_kernel else body

    def _shared_var(self, tag: str, old: Var, dom: Range) -> Var:
        """The kernel's variable for `tag`; the first loop bound to it gives its range."""
        if tag not in self.tags:
            var = Var(tag, dom.extent.dtype)
            self.tags[tag] = (var, dom)
            self.launch.append(tag)
            return var
        var, first = self.tags[tag]
        if not (self.ana.can_prove_equal(first.min, dom.min)
                and self.ana.can_prove_equal(first.extent, dom.extent)):  # fmt: skip
            raise ShapeError(
                f"UnifyThreadBinding: in {self.func_name}, loops bound to '{tag}' have extents "
                f"{first.extent} and {dom.extent} ('{old.name}'); a thread axis is launched "
                "once per kernel, so split the loops to one extent before binding them"
            )
        return var

    def _emit_launch(self, body: Stmt) -> Stmt:
        for tag in reversed(self.launch):
            var, dom = self.tags[tag]
            iv = IterVar(None, Var("", var.dtype), IterType.ThreadIndex, tag)
            body = For(var, dom.min, dom.extent, ForKind.THREAD_BINDING, body, iv)
        self.launch = []
        return body


def unify_thread_binding(func: PrimFunc) -> PrimFunc:
    """Bound loops of each kernel of `func` share one loop per thread tag (module doc)."""
    if func.attrs.get("from_legacy_te_schedule"):
        return func
    name = f"function '{func.attrs.get('global_symbol', 'main')}'"
    return func.replace(body=_Unifier(name).visit(func.body))


UnifyThreadBinding = prim_func_pass(unify_thread_binding, "UnifyThreadBinding")
