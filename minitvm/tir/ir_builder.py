"""`tvm.tir.ir_builder`: build a TIR statement imperatively (extern bodies, tensor intrinsics).

>>> ib = tvm.tir.ir_builder.create()
>>> with ib.for_range(0, n, name="i") as i:
...     out = ib.buffer_ptr(outs[0]); a = ib.buffer_ptr(ins[0])
...     out[i] = a[i] + 1.0
>>> stmt = ib.get()
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

from ..error import MiniTVMError
from ..ir.dtype import DataType
from .buffer import Buffer
from .expr import IntImm, PrimExpr, StringImm, Var, as_expr
from .op import likely as _likely
from .op import max as _max
from .stmt import (
    Allocate,
    AttrStmt,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    Stmt,
    While,
    seq,
)

_KINDS = {
    "serial": ForKind.SERIAL,
    "parallel": ForKind.PARALLEL,
    "vectorize": ForKind.VECTORIZED,
    "unroll": ForKind.UNROLLED,
}


class BufferVar:
    """`ib.buffer_ptr(buf)`: `p[i]` loads an element, `p[i] = v` emits a store."""

    def __init__(self, builder: IRBuilder, buffer: Buffer) -> None:
        self._builder, self._buffer = builder, buffer

    @property
    def dtype(self) -> str:
        return str(self._buffer.dtype)

    def asobject(self) -> Buffer:
        """The underlying tir.Buffer."""
        return self._buffer

    def _index(self, index: Any) -> tuple:
        index = index if isinstance(index, tuple) else (index,)
        if len(index) == 1 and self._buffer.ndim != 1:
            # a flat index into a multi-dimensional buffer, as TVM's buffer_ptr allows
            flat = Buffer(self._buffer.data, self._buffer.dtype, (_size(self._buffer),),
                          name=self._buffer.name)  # fmt: skip
            return flat, index
        return self._buffer, index

    def __getitem__(self, index: Any) -> PrimExpr:
        buf, index = self._index(index)
        return buf[index]

    def __setitem__(self, index: Any, value: Any) -> None:
        buf, index = self._index(index)
        value = as_expr(value, like=buf.dtype)
        self._builder.emit(BufferStore(buf, value, tuple(as_expr(i) for i in index)))


def _is_zero(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 0


def _size(buf: Buffer) -> PrimExpr:
    total: Any = 1
    for d in buf.shape:
        total = total * d
    return as_expr(total)


class IRBuilder:
    """Collects statements; `with` scopes (for_range, if_scope, else_scope) nest them."""

    def __init__(self) -> None:
        self._stack: list[list] = [[]]

    def emit(self, stmt: Any) -> None:
        """Append a statement (an expression is evaluated for its effect, e.g. a call)."""
        if isinstance(stmt, PrimExpr):
            stmt = Evaluate(stmt)
        if not isinstance(stmt, Stmt):
            raise MiniTVMError(
                f"ir_builder.emit: expected a statement or an expression, got {stmt!r}"
            )
        self._stack[-1].append(stmt)

    def _pop(self) -> Stmt:
        return _close_lets(self._stack.pop())

    @contextmanager
    def for_range(self, begin: Any, end: Any, name: str = "i", dtype: str = "int32",
                  kind: str = "serial"):  # fmt: skip
        """`with ib.for_range(0, n, name="i") as i:` emits a loop around the block's statements."""
        if kind not in _KINDS:
            raise MiniTVMError(
                f"ir_builder.for_range: kind {kind!r} is not one of {sorted(_KINDS)}"
            )
        var = Var(name, DataType(dtype))
        self._stack.append([])
        yield var
        body = self._pop()
        lo = as_expr(begin, like=var.dtype)
        end = as_expr(end, like=var.dtype)
        extent = end if _is_zero(lo) else end - lo
        self.emit(For(var, lo, extent, _KINDS[kind], body))

    @contextmanager
    def if_scope(self, cond: Any):
        """`with ib.if_scope(cond):` the statements run when `cond` holds."""
        self._stack.append([])
        yield
        self.emit(IfThenElse(as_expr(cond), self._pop()))

    @contextmanager
    def else_scope(self):
        """`with ib.else_scope():` right after an if_scope: the statements of its else branch."""
        last = self._stack[-1][-1] if self._stack[-1] else None
        if not isinstance(last, IfThenElse) or last.else_case is not None:
            raise MiniTVMError("ir_builder.else_scope must follow an if_scope without an else")
        self._stack.append([])
        yield
        else_case = self._pop()
        self._stack[-1][-1] = last.replace(else_case=else_case)

    @contextmanager
    def while_loop(self, condition: Any):
        """`with ib.while_loop(cond):` the statements repeat while `cond` holds."""
        self._stack.append([])
        yield
        self.emit(While(as_expr(condition), self._pop()))

    @contextmanager
    def new_scope(self):
        self._stack.append([])
        yield
        self.emit(self._pop())

    def let(self, name: str, value: Any) -> Var:
        """Bind `value` to a new variable for the statements emitted after this call."""
        value = as_expr(value)
        var = Var(name, value.dtype)
        self._stack[-1].append(_Pending(lambda body: LetStmt(var, value, body)))
        return var

    def scope_attr(self, node: Any, attr_key: str, value: Any) -> None:
        """An AttrStmt around the statements emitted after this call in the current scope.

        A "thread_extent" value is clamped to at least 1, as in TVM."""
        node = StringImm(node) if isinstance(node, str) else node
        value = StringImm(value) if isinstance(value, str) else as_expr(value)
        if attr_key == "thread_extent":
            value = _max(as_expr(1, like=value.dtype), value)
        self._stack[-1].append(_Pending(lambda body: AttrStmt(node, attr_key, value, body)))

    def allocate(self, dtype: str, shape: Any, name: str = "buf", axis_separators: Any = None,
                 scope: str = "") -> BufferVar:  # fmt: skip
        """Allocate a buffer for the statements emitted after this call; returns its pointer."""
        from .buffer import decl_buffer

        shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
        buf = decl_buffer(shape, dtype, name=name, scope=scope or "global",
                          axis_separators=tuple(axis_separators or ()))  # fmt: skip
        self._stack[-1].append(
            _Pending(lambda body: Allocate(buf.data, dtype, shape, as_expr(True), body))
        )
        return BufferVar(self, buf)

    def likely(self, expr: Any) -> PrimExpr:
        """`expr` tagged as usually true (`T.likely`)."""
        return _likely(expr)

    def buffer_ptr(self, buf: Buffer) -> BufferVar:
        if not isinstance(buf, Buffer):
            raise MiniTVMError(f"ir_builder.buffer_ptr: expected a tir.Buffer, got {buf!r}")
        return BufferVar(self, buf)

    def pointer(self, content_type: str, name: str = "ptr", scope: str = "") -> BufferVar:
        """A new pointer variable (`p.data`) indexed as a flat array of `content_type`
        elements: `p[i]` loads, `p[i] = v` stores (TVM's `ib.pointer`)."""
        from .buffer import decl_buffer

        buf = decl_buffer((1,), content_type, name=name, scope=scope or "global")
        return BufferVar(self, buf)

    def get(self) -> Stmt:
        """The statement built so far."""
        if len(self._stack) != 1:
            raise MiniTVMError("ir_builder.get: a with-scope is still open")
        return _close_lets(self._stack[0])


class _Pending:
    """A let, attr or allocate whose body is the rest of its scope: `wrap(body)` builds it."""

    def __init__(self, wrap: Callable[[Stmt], Stmt]) -> None:
        self.wrap = wrap


def _close_lets(items: list) -> Stmt:
    """Statements after a `let` (or scope_attr, allocate) become its body."""
    for k, item in enumerate(items):
        if isinstance(item, _Pending):
            return seq(*items[:k], item.wrap(_close_lets(items[k + 1 :])))
    return seq(*items)


def create() -> IRBuilder:
    """A new IRBuilder."""
    return IRBuilder()
