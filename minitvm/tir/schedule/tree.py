"""Finding, replacing and removing statements in a PrimFunc body (the scheduler's tree helpers).

Schedule primitives are pure functions PrimFunc -> PrimFunc. They locate blocks by their unique
name and loops by the identity of their loop variable, then rebuild the changed subtree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..expr import IntImm, Var
from ..function import PrimFunc
from ..functor import Mutator, Visitor
from ..stmt import (
    Allocate,
    AllocateConst,
    AssertStmt,
    AttrStmt,
    Block,
    BlockRealize,
    DeclBuffer,
    For,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    While,
    seq,
)

Path = tuple  # ancestors of a statement, outermost first (func.body first)


def _children(s: Stmt) -> tuple:
    """Direct child statements of `s` (a Block's init comes before its body)."""
    if isinstance(s, SeqStmt):
        return s.seq
    if isinstance(s, BlockRealize):
        return (s.block,)
    if isinstance(s, Block):
        return (s.init, s.body) if s.init is not None else (s.body,)
    if isinstance(s, IfThenElse):
        return (s.then_case, s.else_case) if s.else_case is not None else (s.then_case,)
    if isinstance(
        s, For | While | LetStmt | AttrStmt | Allocate | AllocateConst | DeclBuffer | AssertStmt
    ):
        return (s.body,)
    return ()


def walk(root: Stmt, path: Path = ()) -> Iterator[tuple[Stmt, Path]]:
    """Every statement under `root` (pre-order) with its ancestor path; iterative, not recursive."""
    stack: list[tuple[Stmt, Path]] = [(root, path)]
    while stack:
        s, p = stack.pop()
        yield s, p
        sub = p + (s,)
        stack.extend((c, sub) for c in reversed(_children(s)))


def block_realizes(root: Stmt) -> list[tuple[BlockRealize, Path]]:
    """All BlockRealizes under `root` in program order, with their paths."""
    return [(s, p) for s, p in walk(root) if isinstance(s, BlockRealize)]


def root_realize(func: PrimFunc) -> BlockRealize | None:
    body = func.body
    return body if isinstance(body, BlockRealize) else None


def scope_body(func: PrimFunc) -> Stmt:
    """The statement list of the root scope: the root block's body, else the function body."""
    root = root_realize(func)
    return root.block.body if root is not None else func.body


def find_loop(func: PrimFunc, loop_var: Var) -> tuple[For, Path] | None:
    for s, p in walk(func.body):
        if isinstance(s, For) and s.loop_var is loop_var:
            return s, p
    return None


def find_block(func: PrimFunc, name: str) -> tuple[BlockRealize, Path] | None:
    for s, p in walk(func.body):
        if isinstance(s, BlockRealize) and s.block.name_hint == name:
            return s, p
    return None


def block_names(func: PrimFunc) -> list[str]:
    root = root_realize(func)
    return [r.block.name_hint for r, _ in block_realizes(func.body) if r is not root]


def loops_above(path: Path) -> list[For]:
    """The For loops on `path` below the innermost enclosing block (outermost first)."""
    loops: list[For] = []
    for s in path:
        if isinstance(s, Block):
            loops = []
        elif isinstance(s, For):
            loops.append(s)
    return loops


def enclosing_block(path: Path) -> Block | None:
    for s in reversed(path):
        if isinstance(s, Block):
            return s
    return None


class _Replace(Mutator):
    """Replace statements by identity; a replacement of None removes the statement."""

    def __init__(self, table: dict[int, Any]) -> None:
        super().__init__()
        self.table = table

    def visit(self, n: Any) -> Any:
        if id(n) in self.table:
            return self.table[id(n)]
        return super().visit(n)

    def visit_SeqStmt(self, s: SeqStmt) -> Any:
        items = [self.visit(x) for x in s.seq]
        if all(a is b for a, b in zip(items, s.seq)):
            return s
        kept = [x for x in items if x is not None]
        if not kept:
            return None
        return seq(*kept)

    def visit_For(self, s: For) -> Any:
        body = self.visit(s.body)
        if body is None:
            return None  # a loop whose whole body was removed goes away with it
        return s.replace(body=body)

    def visit_PrimExpr(self, e: Any) -> Any:
        return e  # statements only: expressions never contain replaced statements


def replace_stmts(func: PrimFunc, table: dict[int, Any], keep: list) -> PrimFunc:
    """`func` with each statement whose id is in `table` replaced (None removes it).

    `keep` holds the replaced nodes alive so that their ids stay unique while we rebuild.
    """
    assert keep is not None
    body = _Replace(table).visit(func.body)
    if body is None:
        body = seq()
    return func.replace(body=body)


def replace_stmt(func: PrimFunc, old: Stmt, new: Stmt | None) -> PrimFunc:
    return replace_stmts(func, {id(old): new}, [old])


def map_realizes(stmt: Stmt, fn: Callable[[BlockRealize], Stmt]) -> Stmt:
    """Rebuild `stmt` with every BlockRealize (not nested in another block) replaced by fn(it)."""

    class _Map(Mutator):
        def visit_BlockRealize(self, r: BlockRealize) -> Stmt:
            return fn(r)

        def visit_PrimExpr(self, e: Any) -> Any:
            return e

    return _Map().visit(stmt)


def uses_var(node: Any, var_ids: set[int]) -> bool:
    """True when any Var with an id in `var_ids` occurs in `node`."""
    found = False

    class _Find(Visitor):
        def visit_Var(self, v: Var) -> None:
            nonlocal found
            if id(v) in var_ids:
                found = True

    _Find().visit(node)
    return found


def vars_in(node: Any) -> list[Var]:
    out: dict[int, Var] = {}

    class _Collect(Visitor):
        def visit_Var(self, v: Var) -> None:
            out.setdefault(id(v), v)

    _Collect().visit(node)
    return list(out.values())


def zero() -> IntImm:
    return IntImm("int32", 0)
