"""Prints graph-level IR as TVMScript-style text (`@R.function`, `R.Tensor`, `R.call_tir`, ...).

Readable output for `mod.script()` and error messages. Parsing it back is the TVMScript
parser's job (`minitvm/script`), which may register a fuller printer over this one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.module import GlobalVar
from ..ir.node import register_printer
from ..tir.expr import IntImm, PrimExpr
from ..tir.expr import Var as TirVar
from ..tir.printer import print_expr, register_function_printer
from .expr import (
    BindingBlock,
    Call,
    Constant,
    DataflowBlock,
    Expr,
    ExternFunc,
    Function,
    If,
    MatchCast,
    Op,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from .struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
    shape_vars,
)

INDENT = "    "


class _Names:
    """Unique printed names per function (two vars called `x` print as `x` and `x_1`)."""

    def __init__(self) -> None:
        self._by_id: dict[int, str] = {}
        self._used: set[str] = set()
        self._keep: list[Any] = []

    def get(self, v: Any, hint: str) -> str:
        name = self._by_id.get(id(v))
        if name is None:
            name, n = hint, 0
            while name in self._used:
                n += 1
                name = f"{hint}_{n}"
            self._by_id[id(v)] = name
            self._used.add(name)
            self._keep.append(v)
        return name


class RelaxPrinter:
    def __init__(self) -> None:
        self.names = _Names()
        self.lines: list[str] = []

    # ------------------------------------------------------------------ struct info
    def dim(self, d: PrimExpr, quote: bool) -> str:
        if isinstance(d, IntImm):
            return str(d.value)
        if isinstance(d, TirVar):
            name = self.names.get(d, d.name)
            return f'"{name}"' if quote else name
        text = print_expr(d)
        return f'"{text}"' if quote else text

    def sinfo(self, s: StructInfo, quote: bool = False) -> str:
        if isinstance(s, TensorStructInfo):
            dtype = f'dtype="{s.dtype}"' if s.dtype is not None else 'dtype="void"'
            if s.shape is None:
                return f"R.Tensor(ndim={s.ndim}, {dtype})" if s.ndim != -1 else f"R.Tensor({dtype})"
            dims = ", ".join(self.dim(d, quote) for d in s.shape)
            return f"R.Tensor(({dims}{',' if len(s.shape) == 1 else ''}), {dtype})"
        if isinstance(s, TupleStructInfo):
            return "R.Tuple(" + ", ".join(self.sinfo(f, quote) for f in s.fields) + ")"
        if isinstance(s, ShapeStructInfo):
            if s.values is None:
                return f"R.Shape(ndim={s.ndim})"
            return "R.Shape([" + ", ".join(self.dim(d, quote) for d in s.values) + "])"
        if isinstance(s, PrimStructInfo):
            return f'R.Prim("{s.dtype}")'
        if isinstance(s, FuncStructInfo):
            params = (
                "None"
                if s.params is None
                else "[" + ", ".join(self.sinfo(p) for p in s.params) + "]"
            )
            return f"R.Callable({params}, {self.sinfo(s.ret)})"
        if isinstance(s, ObjectStructInfo):
            return "R.Object"
        return type(s).__name__

    # ------------------------------------------------------------------ expressions
    def expr(self, e: Any) -> str:
        if isinstance(e, Var):
            return self.names.get(e, e.name_hint)
        if isinstance(e, GlobalVar):
            return f"cls.{e.name_hint}"
        if isinstance(e, Constant):
            return _const_text(e)
        if isinstance(e, PrimValue):
            return f"R.prim_value({print_expr(e.value)})"
        if isinstance(e, StringImm):
            return f"R.str({e.value!r})"
        if isinstance(e, ShapeExpr):
            return "R.shape([" + ", ".join(self.dim(d, False) for d in e.values) + "])"
        if isinstance(e, Tuple):
            inner = ", ".join(self.expr(f) for f in e.fields)
            return f"({inner},)" if len(e.fields) == 1 else f"({inner})"
        if isinstance(e, TupleGetItem):
            return f"{self.expr(e.tuple_value)}[{e.index}]"
        if isinstance(e, ExternFunc):
            return f'R.ExternFunc("{e.global_symbol}")'
        if isinstance(e, Call):
            return self.call(e)
        return f"<{type(e).__name__}>"

    def call(self, c: Call) -> str:
        if isinstance(c.op, Op) and c.op.name in ("relax.call_tir", "relax.call_dps_packed"):
            callee = c.args[0]
            target = (
                f'"{callee.global_symbol}"' if isinstance(callee, ExternFunc) else self.expr(callee)
            )
            args = [target, self.expr(c.args[1]), f"out_sinfo={self.sinfo(c.sinfo_args[0])}"]
            if len(c.args) > 2:
                args.append(f"tir_vars={self.expr(c.args[2])}")
            return f"R.{c.op.name.split('.', 1)[1]}({', '.join(args)})"
        head = f"R.{c.op.name.split('.', 1)[1]}" if isinstance(c.op, Op) else self.expr(c.op)
        args = [self.expr(a) for a in c.args]
        args += [f"{k}={_attr_text(v)}" for k, v in c.attrs.items()]
        if c.sinfo_args and not isinstance(c.op, Op):
            args.append(f"sinfo_args={self.sinfo(c.sinfo_args[0])}")
        return f"{head}({', '.join(args)})"

    # ------------------------------------------------------------------ functions
    def function(self, f: Function, name: str) -> list[str]:
        params = ", ".join(
            f"{self.expr(p)}: {self.sinfo(p.struct_info, quote=True)}" for p in f.params
        )
        ret = self.sinfo(f.ret_struct_info, quote=True)
        self.lines = [
            "@R.function" + ("" if f.is_pure else "(pure=False)"),
            f"def {name}({params}) -> {ret}:",
        ]
        defined: list[TirVar] = []
        for p in f.params:
            for v in shape_vars(p.struct_info):
                if all(v is not d for d in defined):
                    defined.append(v)
                    self.lines.append(INDENT + f"{self.names.get(v, v.name)} = T.int64()")
        if f.attrs:
            self.lines.append(INDENT + f"R.func_attr({_attr_text(dict(f.attrs))})")
        self.body(f.body, 1)
        return self.lines

    def body(self, body: Expr, depth: int) -> None:
        pad = INDENT * depth
        if not isinstance(body, SeqExpr):
            self.lines.append(pad + f"return {self.expr(body)}")
            return
        for block in body.blocks:
            self.block(block, depth)
        self.lines.append(pad + f"return {self.expr(body.body)}")

    def block(self, block: BindingBlock, depth: int) -> None:
        pad = INDENT * depth
        inner = depth + 1 if isinstance(block, DataflowBlock) else depth
        if isinstance(block, DataflowBlock):
            self.lines.append(pad + "with R.dataflow():")
        outputs = []
        for b in block.bindings:
            self.binding(b, inner)
            if isinstance(block, DataflowBlock) and type(b.var) is Var:
                outputs.append(self.expr(b.var))
        if isinstance(block, DataflowBlock):
            self.lines.append(INDENT * inner + f"R.output({', '.join(outputs)})")

    def binding(self, b: Any, depth: int) -> None:
        pad = INDENT * depth
        if isinstance(b, MatchCast):
            value = f"R.match_cast({self.expr(b.value)}, {self.sinfo(b.struct_info)})"
            self.lines.append(pad + f"{self.expr(b.var)} = {value}")
            return
        if isinstance(b.value, If):
            v = b.value
            self.lines.append(pad + f"if {self.expr(v.cond)}:")
            self._branch(v.true_branch, b.var, depth + 1)
            self.lines.append(pad + "else:")
            self._branch(v.false_branch, b.var, depth + 1)
            return
        if isinstance(b.value, Function):
            sub = RelaxPrinter()
            sub.names = self.names
            for line in sub.function(b.value, self.expr(b.var)):
                self.lines.append(pad + line)
            return
        value = self.expr(b.value)
        self.lines.append(pad + f"{self.expr(b.var)}: {self.sinfo(b.var.struct_info)} = {value}")

    def _branch(self, e: Expr, var: Var, depth: int) -> None:
        if isinstance(e, SeqExpr):
            for block in e.blocks:
                self.block(block, depth)
            e = e.body
        self.lines.append(INDENT * depth + f"{self.expr(var)} = {self.expr(e)}")


def _attr_text(v: Any) -> str:
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, dict):
        return "{" + ", ".join(f'"{k}": {_attr_text(x)}' for k, x in v.items()) + "}"
    if isinstance(v, tuple):
        inner = ", ".join(_attr_text(x) for x in v)
        return f"[{inner}]"
    return repr(v)


def _const_text(c: Constant) -> str:
    a = c.data.numpy()
    if a.ndim == 0:
        return f'R.const({a.item()!r}, "{a.dtype}")'
    if a.size <= 8:
        text = np.array2string(a, separator=", ", max_line_width=10**6).replace("\n", "")
        return f'R.const(np.array({text}), "{a.dtype}")'
    return f"R.const(<array {a.shape} {a.dtype}>)"


def _function_lines(f: Function, name: str, highlight: Any) -> list[str]:
    return RelaxPrinter().function(f, name)


def print_function(f: Function, **kwargs: Any) -> str:
    name = kwargs.get("name") or f.attrs.get("global_symbol") or "main"
    return "\n".join(
        ["# from minitvm.script import relax as R", ""] + _function_lines(f, name, None)
    )


def print_relax_expr(e: Any, **kwargs: Any) -> str:
    p = RelaxPrinter()
    if isinstance(e, SeqExpr):
        p.body(e, 0)
        return "\n".join(p.lines)
    return p.expr(e)


def print_struct_info(s: StructInfo, **kwargs: Any) -> str:
    return RelaxPrinter().sinfo(s)


def print_binding(b: Any, **kwargs: Any) -> str:
    p = RelaxPrinter()
    if isinstance(b, BindingBlock):
        p.block(b, 0)
    else:
        p.binding(b, 0)
    return "\n".join(p.lines)


register_printer(Expr, print_relax_expr)
register_printer(Function, print_function)
register_printer(StructInfo, print_struct_info)
register_printer(VarBinding, print_binding)
register_printer(MatchCast, print_binding)
register_printer(BindingBlock, print_binding)
register_function_printer(Function, _function_lines)
