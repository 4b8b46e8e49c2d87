"""Relay's text format read back: `relay.parse`, `relay.fromtext`, `relay.parse_expr`.

    mod = relay.parse('#[version = "0.0.5"]\\ndef @main(%x: Tensor[(2), float32]) { add(%x, 1f) }')

The text is data: no eval, no imports; operator names resolve only against the op registry.
Errors are `tvm.error.ParseError` (a DiagnosticError) naming line:column.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...error import ArgumentError
from ...ir.module import IRModule
from ...ir.recursion import deep_recursion
from ..expr import Expr, Function
from ._metadata import read_metadata
from ._parser import Parser
from ._tokens import Kind, Token, error, tokenize

VERSION = '"0.0.5"'


def _prepare(source: str, init_meta_table: Mapping | None) -> Parser:
    """Tokens (the metadata section split off and read) and a parser over them."""
    if not isinstance(source, str):
        raise ArgumentError(
            f"relay.parse takes the program text as a str, got {type(source).__name__}"
        )
    tokens = tokenize(source)
    meta: dict[str, list] = {}
    if len(tokens) > 1 and tokens[-2].kind == Kind.METADATA:
        meta_tok = tokens.pop(-2)
        meta = read_metadata(meta_tok.value, _type_reader(source), _meta_fail(source, meta_tok))
    for key, items in (init_meta_table or {}).items():
        for i, item in enumerate(items):
            if not isinstance(item, Expr):
                raise ArgumentError(
                    f"relay.parse: init_meta_table[{key!r}][{i}] must be a relay expression "
                    f"such as relay.const(array), got {type(item).__name__}"
                )
        meta[str(key)] = [*meta.get(str(key), []), *items]
    parser = Parser(source, tokens, meta)
    if parser.peek().kind == Kind.VERSION:
        tok = parser.next()
        if tok.value != VERSION:
            raise error(
                source,
                tok.line,
                tok.col,
                f"invalid text format version {tok.value}; minitvm reads version {VERSION}",
            )
    return parser


def _type_reader(source: str):
    def read(text: str) -> Any:
        parser = Parser(text, tokenize(text), {})
        ty = parser.parse_type()
        parser.expect_kind(Kind.EOF, "the end of the type")
        return ty

    return read


def _meta_fail(source: str, tok: Token):
    def fail(offset: int, message: str):
        return error(source, tok.line + offset, 1, f"#[metadata]: {message}")

    return fail


def _parse_module(parser: Parser, init_module: IRModule | None) -> IRModule:
    funcs: dict[str, tuple[Token, Function]] = {}
    if init_module is not None:
        for gv, _ in init_module.functions_items():
            parser.globals_[gv.name_hint] = gv
    while parser.peek().kind != Kind.EOF:
        tok = parser.peek()
        if not parser.at("def"):
            if tok.kind == Kind.KEYWORD and tok.text in ("type", "extern"):
                raise parser.fail(
                    tok, "algebraic data types (`type`) are not supported by minitvm's Relay"
                )
            raise parser.fail(
                tok, f"expected a definition `def @name(...) {{ ... }}`, found {tok.describe()}"
            )
        parser.next()
        name = parser.expect_kind(Kind.GLOBAL, "a global name (@name) after def")
        if name.value in funcs or (init_module is not None and name.value in init_module):
            raise parser.fail(name, f"@{name.value} is defined twice")
        gv = parser.global_var(name)
        parser.graph = {}  # %0, %1, ... restart in each definition
        funcs[name.value] = (gv, parser.function())
    for name, tok in parser.global_uses.items():
        if name not in funcs and (init_module is None or name not in init_module):
            raise parser.fail(tok, f"@{name} is called but never defined")
    mod = IRModule()
    if init_module is not None:
        for gv, func in init_module.functions_items():
            mod[gv] = func
    for gv, func in funcs.values():
        mod[gv] = func
    from ..transform import InferType

    return InferType()(mod)


def parse(
    source: str,
    source_name: str = "from_string",
    init_module: IRModule | None = None,
    init_meta_table: Mapping | None = None,
) -> IRModule:
    """A module from Relay text (`def @main(...) { ... }`), type-checked as TVM does."""
    with deep_recursion():
        parser = _prepare(source, init_meta_table)
        return _parse_module(parser, init_module)


def parse_expr(source: str) -> Expr:
    """One Relay expression from text (`let %x = 1; %x + 2`); not type-checked."""
    with deep_recursion():
        parser = _prepare(source, None)
        expr = parser.parse_expr()
        parser.expect_kind(Kind.EOF, "the end of the expression")
        return expr


def fromtext(source: str, source_name: str = "from_string") -> IRModule:
    """`relay.parse` under its older name."""
    return parse(source, source_name)


__all__ = ["fromtext", "parse", "parse_expr"]
