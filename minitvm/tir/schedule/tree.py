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
from ..stmt import Block, BlockRealize, For, IfThenElse, SeqStmt, Stmt, seq

Path = tuple  # ancestors of a statement, outermost first (func.body first)


def _children(s: Stmt) -> tuple:
    """Direct child statements of `s` (a Block's init comes before its body)."""
    if isinstance(s, SeqStmt):
        return s.seq
    return tuple(getattr(s, f) for f in _child_fields(s))


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


def _child_fields(s: Stmt) -> tuple[str, ...]:
    """The fields of `s` that hold its child statements, in order (not for SeqStmt)."""
    if isinstance(s, Block):
        return ("init", "body") if s.init is not None else ("body",)
    if isinstance(s, IfThenElse):
        return ("then_case", "else_case") if s.else_case is not None else ("then_case",)
    if isinstance(s, BlockRealize):
        return ("block",)
    # a loop, let, attribute, allocation or assert wraps one body; a store or call is a leaf
    return ("body",) if hasattr(s, "body") else ()


def _with_children(s: Stmt, kids: list) -> Stmt | None:
    """`s` with its `_children` replaced by `kids` (None removes a statement)."""
    if all(a is b for a, b in zip(kids, _children(s))):
        return s
    if isinstance(s, SeqStmt):
        kept = [x for x in kids if x is not None]
        return seq(*kept) if kept else None
    if isinstance(s, For) and kids[0] is None:
        return None  # a loop whose whole body was removed goes away with it
    return s.replace(**dict(zip(_child_fields(s), kids)))


def replace_stmts(func: PrimFunc, table: dict[int, Any], keep: list) -> PrimFunc:
    """`func` with each statement whose id is in `table` replaced (None removes it).

    Only the statements on the paths from the body to the replaced ones are rebuilt (a schedule
    primitive changes one subtree; rebuilding the whole function was 13% of DefaultSchedule).
    A statement inside a replaced one is not looked at. `keep` holds the replaced nodes alive so
    that their ids stay unique while we rebuild.
    """
    assert keep is not None
    new: dict[int, Any] = {}
    ancestors: dict[int, tuple[int, Stmt]] = {}
    stack: list[tuple[Stmt, Path]] = [(func.body, ())]
    while stack:
        s, p = stack.pop()
        if id(s) in table:
            new[id(s)] = table[id(s)]
            for depth, anc in enumerate(p):
                # a shared subtree is rebuilt after everything below any of its occurrences
                ancestors[id(anc)] = (max(depth, ancestors.get(id(anc), (0,))[0]), anc)
            continue
        sub = p + (s,)
        stack.extend((c, sub) for c in _children(s))
    for _, anc in sorted(ancestors.values(), key=lambda x: -x[0]):
        new[id(anc)] = _with_children(anc, [new.get(id(c), c) for c in _children(anc)])
    body = new.get(id(func.body), func.body)
    return func.replace(body=seq() if body is None else body)


def replace_stmt(func: PrimFunc, old: Stmt, new: Stmt | None) -> PrimFunc:
    return replace_stmts(func, {id(old): new}, [old])


def insert_next_to(body: Stmt, r: BlockRealize, new: Stmt, before: bool) -> Stmt:
    """`body` with `new` placed just before (after) its statement that holds block `r`."""
    items = list(body.seq) if isinstance(body, SeqStmt) else [body]
    k = next(i for i, s in enumerate(items) if any(x is r for x, _ in walk(s)))
    items.insert(k if before else k + 1, new)
    return seq(*items)


class _MapRealizes(Mutator):
    def __init__(self, fn: Callable[[BlockRealize], Stmt]) -> None:
        super().__init__()
        self.fn = fn

    def visit_BlockRealize(self, r: BlockRealize) -> Stmt:
        return self.fn(r)

    def visit_PrimExpr(self, e: Any) -> Any:
        return e


def map_realizes(stmt: Stmt, fn: Callable[[BlockRealize], Stmt]) -> Stmt:
    """Rebuild `stmt` with every BlockRealize (not nested in another block) replaced by fn(it)."""
    return _MapRealizes(fn).visit(stmt)


class _CollectVars(Visitor):
    def __init__(self) -> None:
        self.out: dict[int, Var] = {}

    def visit_Var(self, v: Var) -> None:
        self.out.setdefault(id(v), v)


def uses_var(node: Any, var_ids: set[int]) -> bool:
    """True when any Var with an id in `var_ids` occurs in `node`."""
    return any(i in var_ids for i in _vars_by_id(node))


def _vars_by_id(node: Any) -> dict[int, Var]:
    """The Vars in `node` by id."""
    c = _CollectVars()
    c.visit(node)
    return c.out


def vars_in(node: Any) -> list[Var]:
    return list(_vars_by_id(node).values())


def zero() -> IntImm:
    return IntImm("int32", 0)
