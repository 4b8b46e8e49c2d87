"""The Doc tree of TVM's script printer (`tvm.script.printer.doc`): Python syntax as objects —
expressions (IdDoc, CallDoc, OperationDoc ...) and statements (AssignDoc, ForDoc ...) that
`doc_printer.to_python_script` prints. Each doc may carry a comment and the ObjectPaths of the
IR it was printed from."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any

from ...error import TVMError
from ...ir.container import Array


class DocError(TVMError, ValueError):
    """A doc built with fields that print as no valid Python (an IfDoc with two empty branches)."""


class Doc:
    """Base of every doc: `comment` (a statement's comment or docstring) and `source_paths`."""

    def __init__(self) -> None:
        self._comment: str | None = None
        self._source_paths: Array = Array(())

    @property
    def source_paths(self) -> Array:
        return self._source_paths

    @source_paths.setter
    def source_paths(self, paths: Sequence) -> None:
        self._source_paths = Array(tuple(paths))


class ExprDoc(Doc):
    """An expression; `.attr(name)`, `[indices]` and `.call(*args, **kwargs)` build bigger ones."""

    def attr(self, name: str) -> AttrAccessDoc:
        return AttrAccessDoc(self, name)

    def call(self, *args: ExprDoc, **kwargs: ExprDoc) -> CallDoc:
        return CallDoc(self, *args, **kwargs)

    def __getitem__(self, indices: Any) -> IndexDoc:
        if not isinstance(indices, tuple):
            indices = (indices,)
        return IndexDoc(self, indices)

    def __iter__(self):
        raise TypeError(f"{type(self).__name__} is not iterable")


class StmtDoc(Doc):
    """A statement; its `comment` prints after it (one line) or above it (compound statements)."""

    @property
    def comment(self) -> str | None:
        return self._comment

    @comment.setter
    def comment(self, text: str | None) -> None:
        self._comment = text


class LiteralDoc(ExprDoc):
    """None, a bool, an int, a float or a str."""

    def __init__(self, value: Any, path: Any = None) -> None:
        super().__init__()
        self.value = value
        if path is not None:
            self.source_paths = [path]


class IdDoc(ExprDoc):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


class AttrAccessDoc(ExprDoc):
    def __init__(self, value: ExprDoc, name: str) -> None:
        super().__init__()
        self.value, self.name = value, name


class IndexDoc(ExprDoc):
    def __init__(self, value: ExprDoc, indices: Sequence[ExprDoc]) -> None:
        super().__init__()
        self.value, self.indices = value, tuple(indices)


class CallDoc(ExprDoc):
    def __init__(self, callee: ExprDoc, *args: ExprDoc, **kwargs: ExprDoc) -> None:
        super().__init__()
        self.callee, self.args = callee, tuple(args)
        self.kwargs_keys, self.kwargs_values = tuple(kwargs), tuple(kwargs.values())


class OperationKind(enum.IntEnum):
    """Operators; the `_..Start`/`_..End` markers bracket the unary and the binary ones."""

    _UnaryStart = 0
    USub = 1
    Invert = 2
    Not = 3
    _UnaryEnd = 4
    _BinaryStart = 5
    Add = 6
    Sub = 7
    Mult = 8
    Div = 9
    FloorDiv = 10
    Mod = 11
    Pow = 12
    LShift = 13
    RShift = 14
    BitAnd = 15
    BitOr = 16
    BitXor = 17
    Lt = 18
    LtE = 19
    Eq = 20
    NotEq = 21
    Gt = 22
    GtE = 23
    And = 24
    Or = 25
    _BinaryEnd = 26
    _SpecialStart = 27
    IfThenElse = 28
    _SpecialEnd = 29


class OperationDoc(ExprDoc):
    """`kind` applied to `operands` (IfThenElse's are condition, then, else)."""

    def __init__(self, kind: OperationKind, operands: Sequence[ExprDoc]) -> None:
        super().__init__()
        self.kind, self.operands = OperationKind(kind), tuple(operands)


class LambdaDoc(ExprDoc):
    def __init__(self, args: Sequence[IdDoc], body: ExprDoc) -> None:
        super().__init__()
        self.args, self.body = tuple(args), body


class TupleDoc(ExprDoc):
    def __init__(self, elements: Sequence[ExprDoc]) -> None:
        super().__init__()
        self.elements = tuple(elements)


class ListDoc(ExprDoc):
    def __init__(self, elements: Sequence[ExprDoc]) -> None:
        super().__init__()
        self.elements = tuple(elements)


class DictDoc(ExprDoc):
    def __init__(self, content: Mapping[ExprDoc, ExprDoc]) -> None:
        super().__init__()
        self.keys, self.values = tuple(content), tuple(content.values())


class SliceDoc(ExprDoc):
    """`start:stop:step` inside an IndexDoc; each part may be None."""

    def __init__(
        self, start: ExprDoc | None = None, stop: ExprDoc | None = None, step: ExprDoc | None = None
    ) -> None:
        super().__init__()
        self.start, self.stop, self.step = start, stop, step


class StmtBlockDoc(Doc):
    def __init__(self, stmts: Sequence[StmtDoc]) -> None:
        super().__init__()
        self.stmts = tuple(stmts)


class AssignDoc(StmtDoc):
    """`lhs = rhs`, `lhs: annotation = rhs` or `lhs: annotation`."""

    def __init__(self, lhs: ExprDoc, rhs: ExprDoc | None, annotation: ExprDoc | None = None):
        super().__init__()
        if rhs is None and annotation is None:
            raise DocError("AssignDoc needs a right-hand side, an annotation or both")
        if isinstance(lhs, TupleDoc) and annotation is not None:
            raise DocError("AssignDoc: a tuple on the left-hand side cannot take an annotation")
        self.lhs, self.rhs, self.annotation = lhs, rhs, annotation


class IfDoc(StmtDoc):
    def __init__(
        self, predicate: ExprDoc, then_branch: Sequence[StmtDoc], else_branch: Sequence[StmtDoc]
    ) -> None:
        super().__init__()
        if not then_branch and not else_branch:
            raise DocError("IfDoc needs a then branch or an else branch; both are empty")
        self.predicate = predicate
        self.then_branch, self.else_branch = tuple(then_branch), tuple(else_branch)


class WhileDoc(StmtDoc):
    def __init__(self, predicate: ExprDoc, body: Sequence[StmtDoc]) -> None:
        super().__init__()
        self.predicate, self.body = predicate, tuple(body)


class ForDoc(StmtDoc):
    def __init__(self, lhs: ExprDoc, rhs: ExprDoc, body: Sequence[StmtDoc]) -> None:
        super().__init__()
        self.lhs, self.rhs, self.body = lhs, rhs, tuple(body)


class ScopeDoc(StmtDoc):
    """`with rhs as lhs:` (`with rhs:` when lhs is None)."""

    def __init__(self, lhs: ExprDoc | None, rhs: ExprDoc, body: Sequence[StmtDoc]) -> None:
        super().__init__()
        self.lhs, self.rhs, self.body = lhs, rhs, tuple(body)


class ExprStmtDoc(StmtDoc):
    def __init__(self, expr: ExprDoc) -> None:
        super().__init__()
        self.expr = expr


class AssertDoc(StmtDoc):
    def __init__(self, test: ExprDoc, msg: ExprDoc | None = None) -> None:
        super().__init__()
        self.test, self.msg = test, msg


class ReturnDoc(StmtDoc):
    def __init__(self, value: ExprDoc) -> None:
        super().__init__()
        self.value = value


class FunctionDoc(StmtDoc):
    """`def name(args) -> return_type:`; each arg is an AssignDoc (`x: int = 1`)."""

    def __init__(
        self,
        name: IdDoc,
        args: Sequence[AssignDoc],
        decorators: Sequence[ExprDoc],
        return_type: ExprDoc | None,
        body: Sequence[StmtDoc],
    ) -> None:
        super().__init__()
        self.name, self.args, self.decorators = name, tuple(args), tuple(decorators)
        self.return_type, self.body = return_type, tuple(body)


class ClassDoc(StmtDoc):
    def __init__(self, name: IdDoc, decorators: Sequence[ExprDoc], body: Sequence[StmtDoc]) -> None:
        super().__init__()
        self.name, self.decorators, self.body = name, tuple(decorators), tuple(body)


class CommentDoc(StmtDoc):
    """A comment on lines of its own (`# ...` per line)."""

    def __init__(self, comment: str) -> None:
        super().__init__()
        self.comment = comment


class DocStringDoc(StmtDoc):
    """A triple-quoted docstring."""

    def __init__(self, docs: str) -> None:
        super().__init__()
        self.comment = docs
