"""Printing a Doc tree as Python (`tvm.script.printer.doc_printer.to_python_script`), with
the fewest parentheses that keep each expression's structure (Python's precedence table)."""

from __future__ import annotations

from collections.abc import Callable

from ...ir.object_path import ObjectPath
from . import doc as d
from .doc import OperationKind as K
from .underline import END, START, docs_to_underline, render

# Python's operator precedence, lowest first (the reference's "Operator precedence" table)
_LAMBDA, _IF, _OR, _AND, _NOT, _CMP, _BOR, _BXOR, _BAND, _SHIFT, _ADD, _MUL, _UNARY, _POW = range(
    14
)
_POSTFIX, _ATOM = 14, 15  # x.a x[i] x(...), then names and literals

_BINARY: dict[K, tuple[str, int]] = {
    K.Add: ("+", _ADD),
    K.Sub: ("-", _ADD),
    K.Mult: ("*", _MUL),
    K.Div: ("/", _MUL),
    K.FloorDiv: ("//", _MUL),
    K.Mod: ("%", _MUL),
    K.Pow: ("**", _POW),
    K.LShift: ("<<", _SHIFT),
    K.RShift: (">>", _SHIFT),
    K.BitAnd: ("&", _BAND),
    K.BitOr: ("|", _BOR),
    K.BitXor: ("^", _BXOR),
    K.Lt: ("<", _CMP),
    K.LtE: ("<=", _CMP),
    K.Eq: ("==", _CMP),
    K.NotEq: ("!=", _CMP),
    K.Gt: (">", _CMP),
    K.GtE: (">=", _CMP),
    K.And: ("and", _AND),
    K.Or: ("or", _OR),
}
_UNARY_OPS: dict[K, tuple[str, int]] = {
    K.USub: ("-", _UNARY),
    K.Invert: ("~", _UNARY),
    K.Not: ("not ", _NOT),
}


def _precedence(doc: d.ExprDoc) -> int:
    if isinstance(doc, d.OperationDoc):
        if doc.kind is K.IfThenElse:
            return _IF
        return (_BINARY.get(doc.kind) or _UNARY_OPS[doc.kind])[1]
    if isinstance(doc, d.LambdaDoc):
        return _LAMBDA
    if isinstance(doc, d.AttrAccessDoc | d.IndexDoc | d.CallDoc):
        return _POSTFIX
    return _ATOM


def _quote(text: str) -> str:
    escapes = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
    return '"' + "".join(escapes.get(c, c) for c in text) + '"'


class _Printer:
    def __init__(self, indent_spaces: int, marked: set[int]) -> None:
        self.step = " " * indent_spaces
        self.lines: list[str] = []
        self.depth = 0
        self.marked = marked  # ids of the docs to underline

    # -- expressions
    def expr(self, doc: d.ExprDoc) -> str:
        rule = _EXPR_RULES.get(type(doc))
        if rule is None:
            raise d.DocError(f"to_python_script: cannot print a {type(doc).__name__} as Python")
        text = rule(self, doc)
        return START + text + END if id(doc) in self.marked else text

    def child(self, doc: d.ExprDoc, parent: int, strict: bool = False) -> str:
        """`doc` inside an operator of precedence `parent`, parenthesised when it binds looser
        (or as loose, with `strict`: the side where equal precedence would regroup)."""
        text = self.expr(doc)
        prec = _precedence(doc)
        return f"({text})" if prec < parent or (strict and prec == parent) else text

    def literal(self, doc: d.LiteralDoc) -> str:
        value = doc.value
        if isinstance(value, str):
            return _quote(value)
        if isinstance(value, float):
            return repr(value)
        return str(value)

    def operation(self, doc: d.OperationDoc) -> str:
        ops = doc.operands
        if doc.kind is K.IfThenElse:
            cond, then, other = ops
            return (
                f"{self.child(then, _IF)} if {self.child(cond, _IF, strict=True)} "
                f"else {self.child(other, _IF, strict=True)}"
            )
        if doc.kind in _UNARY_OPS:
            token, prec = _UNARY_OPS[doc.kind]
            return token + self.child(ops[0], prec)
        token, prec = _BINARY[doc.kind]
        if doc.kind is K.Pow:  # right-associative; a unary operand binds tighter on its right
            return f"{self.child(ops[0], prec, strict=True)} ** {self.child(ops[1], _UNARY)}"
        return f"{self.child(ops[0], prec)} {token} {self.child(ops[1], prec, strict=True)}"

    def call(self, doc: d.CallDoc) -> str:
        args = [self.expr(a) for a in doc.args]
        args += [f"{k}={self.expr(v)}" for k, v in zip(doc.kwargs_keys, doc.kwargs_values)]
        return f"{self.child(doc.callee, _POSTFIX)}({', '.join(args)})"

    def index(self, doc: d.IndexDoc) -> str:
        inner = ", ".join(self.expr(i) for i in doc.indices) if doc.indices else "()"
        return f"{self.child(doc.value, _POSTFIX)}[{inner}]"

    def slice_(self, doc: d.SliceDoc) -> str:
        start = "" if doc.start is None else self.expr(doc.start)
        stop = "" if doc.stop is None else self.expr(doc.stop)
        text = f"{start}:{stop}"
        return text if doc.step is None else f"{text}:{self.expr(doc.step)}"

    def tuple_(self, doc: d.TupleDoc) -> str:
        return f"({self.elements(doc)})"

    def elements(self, doc: d.TupleDoc) -> str:
        """A tuple's items without the parentheses (`x, y = ...`; one item keeps its comma)."""
        items = [self.expr(e) for e in doc.elements]
        return items[0] + "," if len(items) == 1 else ", ".join(items)

    def target(self, doc: d.ExprDoc) -> str:
        return (
            self.elements(doc) if isinstance(doc, d.TupleDoc) and doc.elements else self.expr(doc)
        )

    # -- statements
    def emit(self, text: str) -> None:
        self.lines.append(self.step * self.depth + text if text else "")

    def stmt(self, doc: d.Doc) -> None:
        rule = _STMT_RULES.get(type(doc))
        if rule is None:
            raise d.DocError(f"to_python_script: cannot print a {type(doc).__name__} as Python")
        first = len(self.lines)
        rule(self, doc)
        if id(doc) in self.marked and len(self.lines) > first:  # mark the lines it printed
            line = self.lines[first]
            indent = len(line) - len(line.lstrip(" "))
            self.lines[first] = line[:indent] + START + line[indent:]
            self.lines[-1] += END

    def block(self, stmts: tuple) -> None:
        self.depth += 1
        if not stmts:
            self.emit("pass")
        self.stmts(stmts)
        self.depth -= 1

    def stmts(self, stmts: tuple) -> None:
        """Statements in order; a definition after another statement gets a blank line first."""
        for i, s in enumerate(stmts):
            if i and isinstance(s, d.FunctionDoc | d.ClassDoc):
                self.emit("")
            self.stmt(s)

    def one_line(self, doc: d.StmtDoc, text: str) -> None:
        """A simple statement, with its comment after it on the same line."""
        comment = doc.comment
        if comment and "\n" in comment:
            raise d.DocError(
                f"{type(doc).__name__}: the comment of a one-line statement cannot have newline"
                f" characters, got {comment!r}"
            )
        self.emit(f"{text}  # {comment}" if comment else text)

    def leading_comment(self, doc: d.StmtDoc) -> None:
        for line in (doc.comment or "").splitlines():
            self.emit(f"# {line}" if line else "#")

    def docstring(self, text: str) -> None:
        self.emit('"""')
        for line in text.splitlines():
            self.emit(line)
        self.emit('"""')

    def assign(self, doc: d.AssignDoc) -> None:
        text = self.target(doc.lhs)
        if doc.annotation is not None:
            text += f": {self.expr(doc.annotation)}"
        if doc.rhs is not None:
            text += f" = {self.expr(doc.rhs)}"
        self.one_line(doc, text)

    def if_(self, doc: d.IfDoc) -> None:
        self.leading_comment(doc)
        self.emit(f"if {self.expr(doc.predicate)}:")
        self.block(doc.then_branch)
        if doc.else_branch:
            self.emit("else:")
            self.block(doc.else_branch)

    def while_(self, doc: d.WhileDoc) -> None:
        self.leading_comment(doc)
        self.emit(f"while {self.expr(doc.predicate)}:")
        self.block(doc.body)

    def for_(self, doc: d.ForDoc) -> None:
        self.leading_comment(doc)
        self.emit(f"for {self.target(doc.lhs)} in {self.expr(doc.rhs)}:")
        self.block(doc.body)

    def scope(self, doc: d.ScopeDoc) -> None:
        self.leading_comment(doc)
        head = self.expr(doc.rhs)
        if doc.lhs is not None:
            head += f" as {self.target(doc.lhs)}"
        self.emit(f"with {head}:")
        self.block(doc.body)

    def function(self, doc: d.FunctionDoc) -> None:
        for deco in doc.decorators:
            self.emit(f"@{self.expr(deco)}")
        args = []
        for a in doc.args:
            text = self.target(a.lhs)
            if a.annotation is not None:
                text += f": {self.expr(a.annotation)}"
            if a.rhs is not None:
                text += f" = {self.expr(a.rhs)}"
            args.append(text)
        ret = "" if doc.return_type is None else f" -> {self.expr(doc.return_type)}"
        self.emit(f"def {self.expr(doc.name)}({', '.join(args)}){ret}:")
        self.body_with_docstring(doc)

    def class_(self, doc: d.ClassDoc) -> None:
        for deco in doc.decorators:
            self.emit(f"@{self.expr(deco)}")
        self.emit(f"class {self.expr(doc.name)}:")
        self.body_with_docstring(doc)

    def body_with_docstring(self, doc: d.FunctionDoc | d.ClassDoc) -> None:
        if doc.comment:
            self.depth += 1
            self.docstring(doc.comment)
            self.depth -= 1
        self.block(doc.body)

    def comment(self, doc: d.CommentDoc) -> None:
        for line in (doc.comment or "").splitlines():
            self.emit(f"# {line}")

    def doc_string(self, doc: d.DocStringDoc) -> None:
        if doc.comment:
            self.docstring(doc.comment)

    def stmt_block(self, doc: d.StmtBlockDoc) -> None:
        self.stmts(doc.stmts)


_EXPR_RULES: dict[type, Callable[[_Printer, d.ExprDoc], str]] = {
    d.LiteralDoc: _Printer.literal,
    d.IdDoc: lambda p, doc: doc.name,
    d.AttrAccessDoc: lambda p, doc: f"{p.child(doc.value, _POSTFIX)}.{doc.name}",
    d.IndexDoc: _Printer.index,
    d.CallDoc: _Printer.call,
    d.OperationDoc: _Printer.operation,
    d.LambdaDoc: lambda p, doc: (
        f"lambda {', '.join(p.expr(a) for a in doc.args)}: {p.expr(doc.body)}"
    ),
    d.TupleDoc: _Printer.tuple_,
    d.ListDoc: lambda p, doc: f"[{', '.join(p.expr(e) for e in doc.elements)}]",
    d.DictDoc: lambda p, doc: (
        "{" + ", ".join(f"{p.expr(k)}: {p.expr(v)}" for k, v in zip(doc.keys, doc.values)) + "}"
    ),
    d.SliceDoc: _Printer.slice_,
}

_STMT_RULES: dict[type, Callable[[_Printer, d.Doc], None]] = {
    d.StmtBlockDoc: _Printer.stmt_block,
    d.AssignDoc: _Printer.assign,
    d.IfDoc: _Printer.if_,
    d.WhileDoc: _Printer.while_,
    d.ForDoc: _Printer.for_,
    d.ScopeDoc: _Printer.scope,
    d.ExprStmtDoc: lambda p, doc: p.one_line(doc, p.expr(doc.expr)),
    d.AssertDoc: lambda p, doc: p.one_line(
        doc, f"assert {p.expr(doc.test)}" + ("" if doc.msg is None else f", {p.expr(doc.msg)}")
    ),
    d.ReturnDoc: lambda p, doc: p.one_line(doc, f"return {p.expr(doc.value)}"),
    d.FunctionDoc: _Printer.function,
    d.ClassDoc: _Printer.class_,
    d.CommentDoc: _Printer.comment,
    d.DocStringDoc: _Printer.doc_string,
}


def to_python_script(
    doc: d.Doc,
    indent_spaces: int = 4,
    print_line_numbers: bool = False,
    num_context_lines: int | None = None,
    path_to_underline: list[ObjectPath] | None = None,
) -> str:
    """The Python text of `doc` (an expression or statements), without a trailing newline;
    docs printed from `path_to_underline` get `^^^` under them, and with `num_context_lines`
    only the lines that near those are kept.

    >>> to_python_script(IdDoc("x").call(LiteralDoc(1)))
    'x(1)'
    """
    printer = _Printer(indent_spaces, docs_to_underline(doc, path_to_underline or ()))
    if isinstance(doc, d.ExprDoc):
        printer.lines.append(printer.expr(doc))
    else:
        printer.stmt(doc)
    return render(printer.lines, print_line_numbers, num_context_lines)
