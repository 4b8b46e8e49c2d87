"""The recursive-descent parser of Relay's text format (the grammar of TVM's relay parser).

    module  := [#[version]] ("def" @name fndef)* [#[metadata]]
    expr    := { "free_var" %x [: type] ";" | binding | binop } separated by ";"
    binding := (%n "=" binop ";" | "let" %x [: type] "=" binop ";")+ expr
    binop   := call (op call)*        precedence: * / > + - > < <= > >= > == !=
    call    := atom ("(" args [, attr=value]* ")" | "." int)*
    atom    := number | True | False | %x | %0 | @f | op.name | meta[key][i]
             | "fn" fndef | "if" "(" expr ")" "{" expr "}" "else" "{" expr "}"
             | "(" ")" | "(" expr ")" | "(" expr "," ... ")" | "{" expr "}"
    fndef   := "(" [%x [: type]]* [, attr=value]* ")" ["->" type] "{" expr "}"
    type    := "_" | dtype | Tensor[(dims), dtype] | "(" types ")" | "fn" "(" types ")" -> type

Chains of bindings and sequences are parsed in a loop; only true nesting recurses, and nesting
deeper than MAX_DEPTH is a ParseError (hostile text cannot exhaust the stack). The text is data:
names resolve only against the op registry and the variables the text itself binds.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

import numpy as np

from ...error import MiniTVMError
from ...ir.dtype import DataType
from ...ir.module import GlobalVar
from ..any_dim import Any as AnyDim
from ..expr import Call, Constant, Expr, Function, If, Let, Op, Tuple, TupleGetItem, Var
from ..ty import FuncType, TensorType, TupleType, Type
from ._calls import build_op_call
from ._tokens import Kind, Token, error

MAX_DEPTH = 200  # nesting levels of expressions/types; each costs a handful of Python frames

# token -> (op name, precedence); all left-associative, as in TVM's operator table
BINARY_OPS = {
    "*": ("multiply", 12),
    "/": ("divide", 12),
    "+": ("add", 10),
    "-": ("subtract", 10),
    "<": ("less", 8),
    "<=": ("less_equal", 8),
    ">": ("greater", 8),
    ">=": ("greater_equal", 8),
    "==": ("equal", 7),
    "!=": ("not_equal", 7),
}

UNSUPPORTED = {
    "type": "algebraic data types (`type`) are not supported by minitvm's Relay",
    "extern": "algebraic data types (`extern type`) are not supported by minitvm's Relay",
    "match": "`match` (algebraic data types) is not supported by minitvm's Relay",
    "match?": "`match?` (algebraic data types) is not supported by minitvm's Relay",
    "ref": "references (`ref`) are not supported by minitvm's Relay",
    "ref_read": "references (`ref_read`) are not supported by minitvm's Relay",
    "ref_write": "references (`ref_write`) are not supported by minitvm's Relay",
}


class Parser:
    """One parse over a token list; `globals_` maps @names to GlobalVars (shared with a module)."""

    def __init__(self, source: str, tokens: list[Token], meta: dict[str, list]):
        self.src = source
        self.toks = tokens
        self.pos = 0
        self.meta = meta
        self.scopes: list[dict[str, Var]] = [{}]
        self.free_vars: dict[str, Var] = {}
        self.graph: dict[int, Expr] = {}
        self.globals_: dict[str, GlobalVar] = {}
        self.global_uses: dict[str, Token] = {}
        self.depth = 0

    # --- token helpers --------------------------------------------------------------------
    def peek(self, ahead: int = 0) -> Token:
        return self.toks[min(self.pos + ahead, len(self.toks) - 1)]

    def at(self, text: str, ahead: int = 0) -> bool:
        tok = self.peek(ahead)
        return tok.kind in (Kind.PUNCT, Kind.KEYWORD) and tok.text == text

    def next(self) -> Token:
        tok = self.peek()
        self.pos = min(self.pos + 1, len(self.toks) - 1)
        return tok

    def fail(self, tok: Token, message: str) -> MiniTVMError:
        return error(self.src, tok.line, tok.col, message)

    def expect(self, text: str, what: str = "") -> Token:
        if not self.at(text):
            tok = self.peek()
            raise self.fail(tok, f"expected `{text}`{what}, found {tok.describe()}")
        return self.next()

    def expect_kind(self, kind: Kind, what: str) -> Token:
        tok = self.peek()
        if tok.kind != kind:
            raise self.fail(tok, f"expected {what}, found {tok.describe()}")
        return self.next()

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.next()
            return True
        return False

    @contextmanager
    def nested(self):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(
                self.peek(),
                f"the text nests deeper than {MAX_DEPTH} levels; bind inner expressions "
                "to variables (%0 = ...;) instead",
            )
        try:
            yield
        finally:
            self.depth -= 1

    # --- scopes ---------------------------------------------------------------------------
    def bind_var(self, tok: Token, ty: Type | None) -> Var:
        var = Var(tok.value, ty)
        self.scopes[-1][tok.value] = var
        return var

    def lookup_local(self, tok: Token) -> Var:
        for scope in reversed(self.scopes):
            if tok.value in scope:
                return scope[tok.value]
        if tok.value in self.free_vars:
            return self.free_vars[tok.value]
        raise self.fail(
            tok,
            f"undefined variable %{tok.value}; bind it with let, a parameter "
            "or `free_var %name: type;`",
        )

    def global_var(self, tok: Token) -> GlobalVar:
        gv = self.globals_.get(tok.value)
        if gv is None:
            gv = self.globals_[tok.value] = GlobalVar(tok.value)
        self.global_uses.setdefault(tok.value, tok)
        return gv

    @contextmanager
    def scope(self):
        self.scopes.append({})
        try:
            yield
        finally:
            self.scopes.pop()

    # --- expressions ----------------------------------------------------------------------
    def parse_expr(self) -> Expr:
        """A sequence `e1; e2; ...; en`: earlier values are bound to unused variables."""
        with self.nested():
            exprs: list[Expr] = []
            while True:
                tok = self.peek()
                if self.at("{"):
                    exprs.append(self.block())
                elif self.at("free_var"):
                    self.free_var()
                    self.expect(";", " after a free_var declaration")
                    continue
                elif self.at("let") or (tok.kind == Kind.GRAPH and self.at("=", 1)):
                    exprs.append(self.bindings())
                elif tok.kind == Kind.KEYWORD and tok.text in UNSUPPORTED:
                    raise self.fail(tok, UNSUPPORTED[tok.text])
                else:
                    exprs.append(self.binop())
                if not self.accept(";"):
                    break
            body = exprs.pop()
            for value in reversed(exprs):
                body = Let(Var(""), value, body)
            return body

    def block(self) -> Expr:
        self.expect("{")
        with self.scope():
            e = self.parse_expr()
        self.expect("}", " to close the block")
        return e

    def free_var(self) -> None:
        self.expect("free_var")
        tok = self.expect_kind(Kind.LOCAL, "a variable name (%x) after free_var")
        ty = self.parse_type() if self.accept(":") else None
        self.free_vars[tok.value] = Var(tok.value, ty)

    def bindings(self) -> Expr:
        """`%0 = e;` and `let %x = e;` chains, in a loop (long chains need no recursion)."""
        lets: list[tuple[Var, Expr]] = []
        pushed = 0
        try:
            while True:
                tok = self.peek()
                if tok.kind == Kind.GRAPH and self.at("=", 1):
                    self.pos += 2
                    self.graph[tok.value] = self.binop()
                    self.expect(";", f" after the binding of %{tok.value}")
                elif self.at("let"):
                    self.next()
                    name = self.peek()
                    if name.kind != Kind.LOCAL:
                        raise self.fail(
                            name, f"let binds a local variable (%name), found {name.describe()}"
                        )
                    self.next()
                    ty = self.parse_type() if self.accept(":") else None
                    self.expect("=", f" in the let binding of %{name.value}")
                    value = self.binop()
                    self.expect(";", f" after the let binding of %{name.value}")
                    self.scopes.append({})
                    pushed += 1
                    lets.append((self.bind_var(name, ty), value))
                else:
                    body = self.parse_expr()
                    break
        finally:
            del self.scopes[len(self.scopes) - pushed :]
        for var, value in reversed(lets):
            body = Let(var, value, body)
        return body

    def binop(self) -> Expr:
        """Operator precedence climbing over calls (every operator is left-associative)."""
        operands = [self.call()]
        ops: list[tuple[str, int]] = []
        while self.peek().kind == Kind.PUNCT and self.peek().text in BINARY_OPS:
            op_tok = self.next()
            name, prec = BINARY_OPS[op_tok.text]
            while ops and ops[-1][1] >= prec:
                self.reduce(operands, ops.pop()[0], op_tok)
            ops.append((name, prec))
            operands.append(self.call())
        while ops:
            self.reduce(operands, ops.pop()[0], self.peek())
        return operands[0]

    def reduce(self, operands: list, name: str, tok: Token) -> None:
        rhs = operands.pop()
        lhs = operands.pop()
        operands.append(self.op_call(Op.get(name), [lhs, rhs], {}, tok))

    def call(self) -> Expr:
        e = self.atom()
        while True:
            if self.at("("):
                tok = self.peek()
                args, attrs = self.call_args()
                if isinstance(e, Op):
                    e = self.op_call(e, args, attrs, tok)
                else:
                    attrs.pop("attrs_type_key", None)
                    e = self.checked(tok, Call, e, tuple(args), attrs or None)
            elif self.at(".") and self.peek(1).kind == Kind.INT:
                self.next()
                e = TupleGetItem(e, self.next().value[0])
            else:
                return e

    def op_call(self, op: Op, args: list, attrs: dict, tok: Token) -> Expr:
        return self.checked(tok, build_op_call, op, args, attrs)

    def checked(self, tok: Token, make: Callable[..., Any], *args: Any) -> Any:
        """`make(*args)`, with a minitvm error it raises reported at `tok`."""
        try:
            return make(*args)
        except MiniTVMError as err:
            raise self.fail(tok, str(err).split("\n")[0]) from err

    def call_args(self) -> tuple[list, dict]:
        self.expect("(")
        args: list[Expr] = []
        attrs: dict[str, Any] = {}
        while not self.at(")"):
            if self.peek().kind == Kind.IDENT and self.at("=", 1):
                key = self.next().text
                self.next()
                attrs[key] = self.attr_value()
            elif attrs:
                raise self.fail(self.peek(), "positional arguments must come before attributes")
            else:
                args.append(self.parse_expr())
            if not self.accept(","):
                break
        self.expect(")", " to close the argument list")
        return args, attrs

    def attr_value(self) -> Any:
        tok = self.peek()
        if tok.kind in (Kind.INT, Kind.FLOAT, Kind.BOOL):
            self.next()
            return tok.value[0]
        if tok.kind == Kind.STRING:
            self.next()
            return tok.value
        if tok.kind == Kind.IDENT and tok.text in ("None", "nullptr"):
            self.next()
            return None
        with self.nested():
            if self.accept("["):
                items = []
                while not self.at("]"):
                    items.append(self.attr_value())
                    if not self.accept(","):
                        break
                self.expect("]", " to close the attribute list")
                return items
            if self.accept("("):
                value = self.attr_value()
                self.expect(")")
                return value
            return self.atom()

    def atom(self) -> Expr:
        with self.nested():
            tok = self.next()
            kind = tok.kind
            if kind in (Kind.INT, Kind.FLOAT, Kind.BOOL):
                value, dtype = tok.value
                return Constant(np.array(value, dtype=dtype))
            if kind == Kind.LOCAL:
                return self.lookup_local(tok)
            if kind == Kind.GRAPH:
                if tok.value not in self.graph:
                    raise self.fail(
                        tok, f"%{tok.value} is used before it is bound (%{tok.value} = ...;)"
                    )
                return self.graph[tok.value]
            if kind == Kind.GLOBAL:
                return self.global_var(tok)
            if kind == Kind.IDENT:
                return self.meta_ref(tok) if tok.text == "meta" and self.at("[") else self.op(tok)
            if self.at_text(tok, "fn"):
                return self.function()
            if self.at_text(tok, "if"):
                return self.if_expr()
            if self.at_text(tok, "("):
                return self.paren()
            if self.at_text(tok, "{"):
                self.pos -= 1
                return self.block()
            if kind == Kind.KEYWORD and tok.text in UNSUPPORTED:
                raise self.fail(tok, UNSUPPORTED[tok.text])
            raise self.fail(tok, f"expected an expression, found {tok.describe()}")

    @staticmethod
    def at_text(tok: Token, text: str) -> bool:
        return tok.kind in (Kind.PUNCT, Kind.KEYWORD) and tok.text == text

    def op(self, tok: Token) -> Op:
        parts = [tok.text]
        while self.at(".") and self.peek(1).kind == Kind.IDENT:
            self.next()
            parts.append(self.next().text)
        name = ".".join(parts)
        if name not in Op._registry:
            raise self.fail(tok, f"unknown operator `{name}`: no Relay op has this name")
        return Op.get(name)

    def meta_ref(self, tok: Token) -> Expr:
        self.expect("[")
        key = [self.expect_kind(Kind.IDENT, "a metadata kind such as relay.Constant").text]
        while self.accept("."):
            key.append(self.expect_kind(Kind.IDENT, "a metadata kind").text)
        self.expect("]")
        self.expect("[")
        index = self.expect_kind(Kind.INT, "a metadata index").value[0]
        self.expect("]")
        name = ".".join(key)
        table = self.meta.get(name)
        if table is None:
            raise self.fail(
                tok,
                f"meta[{name}][{index}]: the text has no metadata for {name}; "
                "print with show_meta_data=True or pass init_meta_table",
            )
        if not 0 <= index < len(table):
            raise self.fail(tok, f"meta[{name}][{index}]: the metadata holds {len(table)} entries")
        return table[index]

    def paren(self) -> Expr:
        if self.accept(")"):
            return Tuple(())
        first = self.parse_expr()
        if self.accept(")"):
            return first
        fields = [first]
        self.expect(",", " or `)` in a tuple")
        while not self.at(")"):
            fields.append(self.parse_expr())
            if not self.accept(","):
                break
        self.expect(")", " to close the tuple")
        return Tuple(tuple(fields))

    def if_expr(self) -> Expr:
        self.expect("(", " after if")
        cond = self.parse_expr()
        self.expect(")", " after the condition")
        then = self.block()
        self.expect("else", " after the true branch of if")
        other = self.block()
        return If(cond, then, other)

    def function(self) -> Function:
        """Parameters, optional attributes and return type, and body (after `fn` or `def @f`)."""
        if self.at("["):
            raise self.fail(
                self.peek(), "type parameters (fn [A](...)) are not supported by minitvm's Relay"
            )
        with self.scope():
            self.expect("(", " to open the parameter list")
            params: list[Var] = []
            attrs: dict[str, Any] = {}
            while not self.at(")"):
                if self.peek().kind == Kind.IDENT and self.at("=", 1):
                    key = self.next().text
                    self.next()
                    attrs[key] = self.attr_value()
                else:
                    name = self.expect_kind(Kind.LOCAL, "a parameter (%name)")
                    if self.at("{"):
                        raise self.fail(
                            self.peek(),
                            "parameter attributes (%x {virtual_device="
                            "...}) are not supported by minitvm's Relay",
                        )
                    ty = self.parse_type() if self.accept(":") else None
                    params.append(self.bind_var(name, ty))
                if not self.accept(","):
                    break
            self.expect(")", " to close the parameter list")
            ret = self.parse_type() if self.accept("->") else None
            body = self.block()
        return Function(params, body, ret, (), attrs or None)

    # --- types ----------------------------------------------------------------------------
    def parse_type(self) -> Type | None:
        with self.nested():
            tok = self.next()
            if self.at_text(tok, "("):
                fields = []
                while not self.at(")"):
                    fields.append(self.parse_type())
                    if not self.accept(","):
                        break
                self.expect(")", " to close the tuple type")
                return TupleType(tuple(fields))
            if self.at_text(tok, "fn"):
                self.expect("(")
                args = []
                while not self.at(")"):
                    args.append(self.parse_type())
                    if not self.accept(","):
                        break
                self.expect(")")
                self.expect("->", " in a function type")
                return FuncType(tuple(args), self.parse_type())
            if tok.kind != Kind.IDENT:
                raise self.fail(tok, f"expected a type, found {tok.describe()}")
            if tok.text == "_":
                return None
            if tok.text == "Tensor":
                return self.tensor_type()
            return TensorType((), self.dtype(tok))

    def dtype(self, tok: Token) -> str:
        try:
            return str(DataType(tok.text))
        except (MiniTVMError, ValueError, TypeError) as err:
            raise self.fail(
                tok,
                f"unknown type `{tok.text}`: not a dtype, and named types "
                "(ADTs, type variables) are not supported by minitvm's Relay",
            ) from err

    def tensor_type(self) -> TensorType:
        self.expect("[", " after Tensor")
        self.expect("(", " to open the shape")
        dims: list[Any] = []
        while not self.at(")"):
            tok = self.next()
            if self.at_text(tok, "?"):
                dims.append(AnyDim())
            elif tok.kind == Kind.INT and tok.value[0] >= 0:
                dims.append(tok.value[0])
            else:
                raise self.fail(tok, f"expected a dim (a size or ?), found {tok.describe()}")
            if not self.accept(","):
                break
        self.expect(")", " to close the shape")
        self.expect(",", " between the shape and the dtype")
        dtype = self.dtype(self.expect_kind(Kind.IDENT, "a dtype"))
        self.expect("]", " to close Tensor[...]")
        return TensorType(tuple(dims), dtype)
