"""The tokenizer of Relay's text format: source text -> a list of `Token`s ending in EOF.

Comments (`// ...`, nested `/* ... */`) and whitespace are dropped. Numbers carry their value
and dtype (`2i64`, `1e-5f`, `3f16`); a literal that does not fit its width is an error here,
as in TVM. `#[version = "0.0.5"]` and `#[metadata]` (which runs to the end of the text) are one
token each.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...error import ParseError


class Kind(enum.Enum):
    IDENT = "identifier"
    LOCAL = "local variable (%name)"
    GRAPH = "graph binding (%0)"
    GLOBAL = "global (@name)"
    INT = "integer"
    FLOAT = "float"
    BOOL = "boolean"
    STRING = "string"
    VERSION = "#[version = ...]"
    METADATA = "#[metadata]"
    KEYWORD = "keyword"
    PUNCT = "punctuation"
    EOF = "end of input"


KEYWORDS = frozenset(
    ("let", "fn", "def", "if", "else", "type", "match", "extern", "free_var", "ref")
    + ("ref_read", "ref_write")
)
# longest first, so `->` wins over `-` and `==` over `=`
PUNCTUATION = ("->", "==", "!=", "<=", ">=", "match?") + tuple("()[]{},.=;:+*/-<>!?")

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAME = re.compile(r"[A-Za-z_/][A-Za-z0-9_/]*")  # %name and @name may hold `/`, as in TVM
_NUMBER = re.compile(r"(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)(?:([fi])(\d*))?")
_DIGITS = re.compile(r"\d+")

_INT_WIDTHS = {8, 16, 32, 64}
_FLOAT_WIDTHS = {16, 32, 64}


@dataclass(frozen=True)
class Token:
    kind: Kind
    text: str  # the source spelling (identifier, punctuation, keyword)
    line: int
    col: int
    value: Any = None  # numbers: (python value, dtype); strings, versions, metadata: the text

    def describe(self) -> str:
        if self.kind in (Kind.PUNCT, Kind.KEYWORD):
            return f"`{self.text}`"
        if self.kind == Kind.EOF:
            return "the end of the input"
        return f"{self.kind.value} `{self.text}`"


def error(source: str, line: int, col: int, message: str) -> ParseError:
    """A ParseError at `line:col` (1-based) with the source line and a caret under the column."""
    lines = source.splitlines() or [""]
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    shown = text if len(text) <= 200 else text[max(0, col - 100) : col + 100]
    caret_col = col if len(text) <= 200 else min(col, 101)
    full = f"relay text {line}:{col}: {message}\n  {shown}\n  {' ' * (caret_col - 1)}^"
    return ParseError(full, ("<relay text>", line, col, text))


class _Scanner:
    def __init__(self, source: str):
        self.src = source
        self.pos = 0
        self.line = 1
        self.line_start = 0
        self.tokens: list[Token] = []

    @property
    def col(self) -> int:
        return self.pos - self.line_start + 1

    def fail(self, message: str) -> ParseError:
        return error(self.src, self.line, self.col, message)

    def advance(self, n: int) -> None:
        chunk = self.src[self.pos : self.pos + n]
        newlines = chunk.count("\n")
        if newlines:
            self.line += newlines
            self.line_start = self.pos + chunk.rindex("\n") + 1
        self.pos += n

    def emit(self, kind: Kind, text: str, value: Any = None, line=None, col=None) -> None:
        self.tokens.append(Token(kind, text, line or self.line, col or self.col, value))

    def run(self) -> list[Token]:
        src = self.src
        while self.pos < len(src):
            c = src[self.pos]
            if c in " \t\r\n":
                self.advance(1)
            elif src.startswith("//", self.pos):
                end = src.find("\n", self.pos)
                self.advance((len(src) if end < 0 else end) - self.pos)
            elif src.startswith("/*", self.pos):
                self.block_comment()
            elif c == "#":
                if self.attribute():
                    break  # the metadata section runs to the end of the text
            elif c == '"':
                self.string()
            elif c in "%@":
                self.name(c)
            elif c == "-" or c.isdigit() or src.startswith("inff", self.pos):
                self.number_or_minus()
            elif _IDENT.match(src, self.pos):
                self.word()
            else:
                self.punct()
        self.emit(Kind.EOF, "")
        return self.tokens

    def block_comment(self) -> None:
        depth, i = 0, self.pos
        while i < len(self.src):
            if self.src.startswith("/*", i):
                depth, i = depth + 1, i + 2
            elif self.src.startswith("*/", i):
                depth, i = depth - 1, i + 2
                if depth == 0:
                    self.advance(i - self.pos)
                    return
            else:
                i += 1
        raise self.fail("this /* comment is never closed with */")

    def attribute(self) -> bool:
        """`#[version = "0.0.5"]` or `#[metadata]`; True for the metadata section."""
        line, col = self.line, self.col
        close = self.src.find("]", self.pos)
        if not self.src.startswith("#[", self.pos) or close < 0:
            raise self.fail('`#` starts an attribute: write #[version = "0.0.5"] or #[metadata]')
        body = self.src[self.pos + 2 : close].strip()
        self.advance(close + 1 - self.pos)
        if body == "metadata":
            self.emit(Kind.METADATA, "#[metadata]", self.src[self.pos :], line, col)
            self.advance(len(self.src) - self.pos)
            return True
        key, eq, version = body.partition("=")
        if key.strip() != "version" or not eq:
            raise error(self.src, line, col, f"unsupported attribute #[{body}]")
        self.emit(Kind.VERSION, body, version.strip(), line, col)
        return False

    def string(self) -> None:
        end = self.src.find('"', self.pos + 1)
        if end < 0:
            raise self.fail('this string is never closed with "')
        text = self.src[self.pos + 1 : end]
        self.emit(Kind.STRING, text, text)
        self.advance(end + 1 - self.pos)

    def name(self, sigil: str) -> None:
        m = _DIGITS.match(self.src, self.pos + 1) if sigil == "%" else None
        if m:
            self.emit(Kind.GRAPH, m.group(), int(m.group()))
        else:
            m = _NAME.match(self.src, self.pos + 1)
            if m is None:
                raise self.fail(f"`{sigil}` must be followed by a name")
            self.emit(Kind.LOCAL if sigil == "%" else Kind.GLOBAL, m.group(), m.group())
        self.advance(1 + len(m.group()))

    def number_or_minus(self) -> None:
        line, col, start = self.line, self.col, self.pos
        negs = 0
        while self.src.startswith("-", self.pos + negs):
            negs += 1
        rest = self.pos + negs
        if rest < len(self.src) and (self.src[rest].isdigit() or self.src.startswith("inff", rest)):
            self.advance(negs)
            self.number(negs % 2 == 1, line, col, start)
        elif self.src.startswith("->", self.pos):
            self.emit(Kind.PUNCT, "->")
            self.advance(2)
        else:
            self.emit(Kind.PUNCT, "-")
            self.advance(1)

    def number(self, negative: bool, line: int, col: int, start: int) -> None:
        if self.tokens and self.tokens[-1].text == "." and self.tokens[-1].kind == Kind.PUNCT:
            m = _DIGITS.match(self.src, self.pos)  # a tuple index: `%t.0.1` is two projections
            self.advance(len(m.group()))
            self.emit(Kind.INT, m.group(), (int(m.group()), "int32"), line, col)
            return
        if self.src.startswith("inff", self.pos):
            literal, kind, width = "inf", "f", ""
            self.advance(4)
        else:
            m = _NUMBER.match(self.src, self.pos)
            literal, kind, width = m.group(1), m.group(2), m.group(3)
            self.advance(len(m.group()))
        if self.pos < len(self.src) and (self.src[self.pos].isalnum() or self.src[self.pos] == "_"):
            spelled = self.src[start : self.pos + 1][-40:]
            raise error(self.src, line, col, f"invalid numeric suffix in `{spelled}`")
        spelled = self.src[start : self.pos]
        value = _number_value(literal, kind, width, negative)
        if isinstance(value, str):
            shown = spelled if len(spelled) <= 40 else spelled[:37] + "..."
            raise error(self.src, line, col, f"`{shown}`: {value}")
        self.emit(Kind.FLOAT if kind == "f" else Kind.INT, spelled, value, line, col)

    def word(self) -> None:
        m = _IDENT.match(self.src, self.pos)
        text = m.group()
        if text == "match" and self.src.startswith("?", m.end()):
            self.emit(Kind.KEYWORD, "match?")
            self.advance(6)
            return
        if text in ("True", "False"):
            self.emit(Kind.BOOL, text, (text == "True", "bool"))
        else:
            self.emit(Kind.KEYWORD if text in KEYWORDS else Kind.IDENT, text)
        self.advance(len(text))

    def punct(self) -> None:
        for p in PUNCTUATION:
            if self.src.startswith(p, self.pos):
                self.emit(Kind.PUNCT, p)
                self.advance(len(p))
                return
        raise self.fail(f"unexpected character {self.src[self.pos]!r}")


def _number_value(literal: str, kind: str | None, width: str, negative: bool) -> Any:
    """(value, dtype) of a literal, or a string saying why it is invalid."""
    bits = int(width) if width else 32
    if kind == "f":
        if bits not in _FLOAT_WIDTHS:
            return f"float width must be one of {sorted(_FLOAT_WIDTHS)}"
        value = -float(literal) if negative else float(literal)
        dtype = f"float{bits}"
        overflow = not np.isfinite(value) if literal != "inf" else False
        if overflow or (np.isfinite(value) and abs(value) > float(np.finfo(dtype).max)):
            return f"unrepresentable in {dtype}"
        return value, dtype
    if "." in literal or "e" in literal.lower():
        return "a number with a point or exponent needs a float suffix (write it as 1.5f)"
    if bits not in _INT_WIDTHS:
        return f"integer width must be one of {sorted(_INT_WIDTHS)}"
    if len(literal.lstrip("0")) > 20:  # past int64 (and Python's int-parsing limit)
        return "unrepresentable in int64"
    value = -int(literal) if negative else int(literal)
    if not width and kind is None and not -(2**31) <= value < 2**31:
        bits = 64  # an unsuffixed literal too big for int32 is int64, as in TVM
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        return f"unrepresentable in int{bits}"
    return value, f"int{bits}"


def tokenize(source: str) -> list[Token]:
    """The tokens of `source`, ending in an EOF token; raises ParseError with line:col."""
    return _Scanner(source).run()
