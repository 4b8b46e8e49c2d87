"""Thread-bound loops → `thread_extent` scopes (TVM's ConvertForThreadBinding / launch-parameter
extraction), and vthread loops → serial loops (InjectVirtualThread).

A kernel is the nest under an outermost loop bound to blockIdx.*/threadIdx.*. Every thread tag
used in it becomes one `AttrStmt(IterVar(.., tag), "thread_extent", extent)` at the top of the
kernel (blockIdx.x, y, z, then threadIdx.x, y, z: the launch parameters), and every loop bound
to that tag is replaced by its body with the loop variable set to the thread index. A bound
loop shorter than the launch extent runs under `if threadIdx.x < extent` (cooperative fetches
with fewer items than threads). A virtual thread (vthread, vthread.x, cthread) is a loop every
thread runs for each virtual index in turn; its loop becomes a serial loop in place, which
computes the same values (barriers under it are reached by every thread alike).
"""

from __future__ import annotations

from typing import Any

from ...error import BuildError
from ..expr import LT, IntImm, IterType, IterVar, PrimExpr, Range, Var
from ..function import PrimFunc
from ..functor import Mutator, Visitor, map_outermost, post_order_visit, substitute
from ..stmt import AttrStmt, For, ForKind, IfThenElse, Stmt
from ._pass import prim_func_pass

LAUNCH_ORDER = tuple(f"{s}.{a}" for s in ("blockIdx", "threadIdx") for a in "xyz")


def thread_tag(loop: For) -> str | None:
    """The thread tag `loop` is bound to, or None."""
    if loop.kind != ForKind.THREAD_BINDING or loop.thread_binding is None:
        return None
    return loop.thread_binding.thread_tag or None


def is_virtual(tag: str) -> bool:
    return tag.startswith(("vthread", "cthread"))


def _const(e: PrimExpr) -> int | None:
    return e.value if isinstance(e, IntImm) else None


class _Extents(Visitor):
    """The launch extent of every (real) thread tag of one kernel: the largest bound loop."""

    def __init__(self, func_name: str) -> None:
        self.func_name = func_name
        self.extent: dict[str, PrimExpr] = {}
        self.enclosing: dict[str, For] = {}  # real tag -> the bound loop we are inside

    def visit_For(self, loop: For) -> None:
        tag = thread_tag(loop)
        if tag is None or is_virtual(tag):
            self.generic_visit(loop)
            return
        outer = self.enclosing.get(tag)
        if outer is not None and not _same(outer.extent, loop.extent):
            # Nested loops of one tag are one thread index (TVM's meaning: a cooperative fetch
            # under the thread loop); of unequal extents, the inner would cover only part of
            # the outer's range while the outer ran at most once per thread
            raise BuildError(
                f"{self.func_name}: loop '{loop.loop_var.name}' (extent {loop.extent}) is bound "
                f"to '{tag}' inside loop '{outer.loop_var.name}' (extent {outer.extent}), which "
                f"is bound to '{tag}' too; nested loops of one thread axis are the same thread "
                "index and need equal extents: bind the inner loop to another axis (e.g. "
                f"'{_other_axis(tag)}'), or fuse the two loops and bind the fused loop"
            )
        if outer is not None and _uses(loop.body, outer.loop_var):
            # both indices in one statement: as one thread index, only their diagonal runs
            raise BuildError(
                f"{self.func_name}: loop '{loop.loop_var.name}' is bound to '{tag}' inside "
                f"loop '{outer.loop_var.name}', which is bound to '{tag}' too, and its body "
                f"uses both; nested loops of one thread axis are the same thread index, so "
                f"only the pairs with {loop.loop_var.name} == {outer.loop_var.name} would run. "
                f"Bind the inner loop to another axis (e.g. '{_other_axis(tag)}'), or fuse the "
                "two loops and bind the fused loop"
            )
        if outer is None:
            self.enclosing[tag] = loop
        try:
            self._extent_of(tag, loop)
            self.generic_visit(loop)
        finally:
            if outer is None:
                del self.enclosing[tag]

    def _extent_of(self, tag: str, loop: For) -> None:
        """Widen the launch extent of `tag` to cover `loop`."""
        old = self.extent.get(tag)
        if old is None:
            self.extent[tag] = loop.extent
        elif _const(old) is not None and _const(loop.extent) is not None:
            self.extent[tag] = loop.extent if loop.extent.value > old.value else old
        elif not _same(old, loop.extent):
            raise BuildError(
                f"{self.func_name}: loops bound to '{tag}' have extents {old} and "
                f"{loop.extent} ('{loop.loop_var.name}'); a thread axis is launched once, so "
                "bind loops of one constant extent (or one symbolic extent) to it"
            )


def _uses(stmt: Stmt, var: Var) -> bool:
    found = []
    post_order_visit(stmt, lambda n: found.append(n) if n is var else None)
    return bool(found)


def _other_axis(tag: str) -> str:
    scope, axis = tag.split(".")
    return f"{scope}.{'y' if axis == 'x' else 'x'}"


def _same(a: PrimExpr, b: PrimExpr) -> bool:
    from ...ir.structural import structural_equal

    return a is b or structural_equal(a, b)


class _Replace(Mutator):
    """Bound loops → their bodies over the tag's thread variable; vthread loops → serial."""

    def __init__(self, threads: dict[str, tuple[Var, PrimExpr]]) -> None:
        super().__init__()
        self.threads = threads

    def visit_For(self, loop: For) -> Stmt:
        loop = self.generic_visit(loop)
        tag = thread_tag(loop)
        if tag is None:
            return loop
        if is_virtual(tag):
            return For(loop.loop_var, loop.min, loop.extent, ForKind.SERIAL, loop.body, None,
                       loop.annotations)  # fmt: skip
        var, launched = self.threads[tag]
        value = var if _const(loop.min) == 0 else var + loop.min
        body = substitute(loop.body, {loop.loop_var: value})
        if not _same(loop.extent, launched):  # fewer items than launched threads
            body = IfThenElse(LT(var, loop.extent), body)
        return body


def _check_launch_known(stmt: Stmt, extents: dict[str, PrimExpr], func_name: str) -> None:
    """A launch extent is evaluated before the kernel runs: no variable of the kernel in it."""
    inner: dict[int, Var] = {}
    post_order_visit(stmt, lambda n: inner.update({id(n.loop_var): n.loop_var})
                     if isinstance(n, For) else None)  # fmt: skip
    for tag, extent in extents.items():
        used = [v for v in _vars_of(extent) if id(v) in inner]
        if used:
            raise BuildError(
                f"{func_name}: the extent {extent} of the loop bound to '{tag}' uses "
                f"'{used[0].name}', which is not known when the kernel is launched (only the "
                "function's arguments and their shapes are); bind a loop whose extent depends "
                "only on the input shapes, e.g. split by a constant factor"
            )


def _vars_of(e: PrimExpr) -> list[Var]:
    found: list[Var] = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, Var) else None)
    return found


def _kernel(stmt: Stmt, func_name: str) -> Stmt:
    """One kernel's nest with its thread loops turned into thread_extent scopes."""
    ext = _Extents(func_name)
    ext.visit(stmt)
    _check_launch_known(stmt, ext.extent, func_name)
    threads = {}
    for tag in LAUNCH_ORDER:
        if tag in ext.extent:
            threads[tag] = (Var(tag, ext.extent[tag].dtype), ext.extent[tag])
    unknown = sorted(set(ext.extent) - set(LAUNCH_ORDER))
    if unknown:
        raise BuildError(
            f"{func_name}: unknown thread tag '{unknown[0]}'; bind loops to blockIdx.x/y/z, "
            "threadIdx.x/y/z or vthread"
        )
    body = _Replace(threads).visit(stmt)
    for tag in reversed(list(threads)):
        var, extent = threads[tag]
        iv = IterVar(Range.from_min_extent(0, extent), var, IterType.ThreadIndex, tag)
        body = AttrStmt(iv, "thread_extent", extent, body)
    return body


def _is_kernel(s: Any) -> bool:
    """The outermost thread-bound loop of a kernel, or a kernel lowered already."""
    if isinstance(s, AttrStmt):
        return s.attr_key == "thread_extent"
    tag = thread_tag(s) if isinstance(s, For) else None
    # a vthread loop above the real thread loops is a loop of every thread of the kernel
    return tag is not None and (not is_virtual(tag) or _binds_real_threads(s.body))


def _binds_real_threads(stmt: Stmt) -> bool:
    found = []
    post_order_visit(stmt, lambda n: found.append(n) if isinstance(n, For)
                     and thread_tag(n) is not None and not is_virtual(thread_tag(n)) else None)  # fmt: skip
    return bool(found)


def has_thread_bindings(func: PrimFunc) -> bool:
    """Whether `func` binds any loop to a GPU thread axis (or already has thread scopes)."""
    found = []

    class _Find(Visitor):
        def visit_For(self, loop: For) -> None:
            if thread_tag(loop) is not None:
                found.append(loop)
            else:
                self.generic_visit(loop)

        def visit_AttrStmt(self, attr: AttrStmt) -> None:
            if attr.attr_key == "thread_extent":
                found.append(attr)
            else:
                self.generic_visit(attr)

    _Find().visit(func.body)
    return bool(found)


def lower_thread_binding(func: PrimFunc) -> PrimFunc:
    """Each kernel's bound loops → thread_extent scopes; vthread loops → serial (module doc)."""
    name = f"function '{func.attrs.get('global_symbol', 'main')}'"

    def lower(s: Stmt) -> Stmt:
        return s if isinstance(s, AttrStmt) else _kernel(s, name)

    return func.replace(body=map_outermost(func.body, _is_kernel, lower))


LowerThreadBinding = prim_func_pass(lower_thread_binding, "LowerThreadBinding")
ConvertForThreadBinding = LowerThreadBinding  # TVM's name for the same step
