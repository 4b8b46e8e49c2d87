"""Prints graph-level IR as TVMScript (`@R.function`, `R.Tensor`, `R.call_tir`, ...).

The dialect is the one `minitvm.script` parses (`from minitvm.script import relax as R`), so
`from_source(mod.script())` is structurally equal to `mod`. Symbolic dims print as strings
(`R.Tensor(("n", 784), dtype="float32")`), op calls by their R name (`R.nn.conv2d`) with their
non-default attributes as keyword arguments, every binding with its struct info.

Constants: small ones print inline (`R.const([[1.0, 2.0]], "float32")`); larger ones, empty
ones and float arrays holding NaNs print as `metadata["relax.expr.Constant"][i]`, and the script
ends with a `metadata = <JSON string>` section carrying their bytes (base64, little-endian), which
the parser decodes without evaluating any code — so print → parse is bit-exact.
`script(show_meta=True)` inlines every constant that a literal can carry exactly.
"""

from __future__ import annotations

import base64
import contextvars
import functools
import inspect
import json
import keyword
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..ir.module import GlobalVar, IRModule
from ..ir.node import FrozenDict, register_printer
from ..tir.expr import FloatImm, IntImm, PrimExpr
from ..tir.printer import print_expr, register_function_printer
from ..tir.printer import print_ir_module as _print_tir_module
from . import expr as rx
from . import struct_info as si

INDENT = "    "
HEADER_R = "# from minitvm.script import relax as R"
HEADER_MODULE = "# from minitvm.script import ir as I, tir as T, relax as R"
INLINE_CONST_LIMIT = 64
_SHOW_META: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "minitvm_relax_show_meta", default=False
)
# the constants a module/function print moves to its metadata section (None: printing a lone
# expression, which keeps a readable placeholder since it has no section to point into)
_META: contextvars.ContextVar[list | None] = contextvars.ContextVar(
    "minitvm_relax_meta", default=None
)
META_KEY = "relax.expr.Constant"
_RESERVED = set(keyword.kwlist) | {
    "R",
    "T",
    "I",
    "cls",
    "Module",
    "range",
    "int",
    "float",
    "bool",
    "metadata",
}
_DPS_CALLS = (
    "relax.call_tir",
    "relax.call_tir_inplace",
    "relax.call_dps_packed",
    "relax.call_py_func",
    "relax.call_tir_with_grad",
)
_PACKED_CALLS = ("relax.call_pure_packed", "relax.call_inplace_packed")


class _Names:
    """Unique printed names per function (two vars called `x` print as `x` and `x_1`)."""

    def __init__(self) -> None:
        self._by_id: dict[int, str] = {}
        self._used: set[str] = set()
        self._keep: list[Any] = []

    def get(self, v: Any, hint: str) -> str:
        name = self._by_id.get(id(v))
        if name is None:
            hint = _sanitize(hint)
            name, n = hint, 0
            while name in self._used:
                n += 1
                name = f"{hint}_{n}"
            self._by_id[id(v)] = name
            self._used.add(name)
            self._keep.append(v)
        return name


def _sanitize(hint: str) -> str:
    text = "".join(c if c.isalnum() or c == "_" else "_" for c in hint) or "v"
    if text[0].isdigit() or text in _RESERVED:
        text = "v_" + text
    return text


class RelaxPrinter:
    def __init__(self) -> None:
        self.names = _Names()
        self.lines: list[str] = []

    # ------------------------------------------------------------------ struct info
    def dim(self, d: PrimExpr) -> str:
        """A dim: an int, or a quoted expression over symbolic dims ("n", "n * 2")."""
        if isinstance(d, IntImm):
            return str(d.value)
        return f'"{print_expr(d)}"'

    def dims(self, values: Any, brackets: str = "()") -> str:
        inner = ", ".join(self.dim(d) for d in values)
        if brackets == "()" and len(values) == 1:
            inner += ","
        return brackets[0] + inner + brackets[1]

    def sinfo(self, s: si.StructInfo) -> str:
        if isinstance(s, si.TensorStructInfo):
            parts = []
            if s.shape is not None:
                parts.append(self.dims(s.shape))
            elif s.ndim != -1:
                parts.append(f"ndim={s.ndim}")
            if s.dtype is not None:
                parts.append(f'dtype="{s.dtype}"')
            if s.vdevice is not None:  # TVM's spelling: its place in the module's list
                from ..ir.vdevice import vdevice_text

                parts.append(f'vdevice="{vdevice_text(s.vdevice)}"')
            return f"R.Tensor({', '.join(parts)})"
        if isinstance(s, si.TupleStructInfo):
            return "R.Tuple(" + ", ".join(self.sinfo(f) for f in s.fields) + ")"
        if isinstance(s, si.ShapeStructInfo):
            if s.values is None:
                return f"R.Shape(ndim={s.ndim})"
            return f"R.Shape({self.dims(s.values, '[]')})"
        if isinstance(s, si.PrimStructInfo):
            value = "" if s.value is None else f", value={self.dim(s.value)}"
            return f'R.Prim("{s.dtype}"{value})'
        if isinstance(s, si.FuncStructInfo):
            params = (
                "None"
                if s.params is None
                else "[" + ", ".join(self.sinfo(p) for p in s.params) + "]"
            )
            purity = "" if s.purity else ", purity=False"
            return f"R.Callable({params}, {self.sinfo(s.ret)}{purity})"
        if isinstance(s, si.ObjectStructInfo):
            return "R.Object"
        return f"<{type(s).__name__}>"

    # ------------------------------------------------------------------ expressions
    def expr(self, e: Any) -> str:
        if isinstance(e, rx.Var):
            return self.names.get(e, e.name_hint)
        if isinstance(e, GlobalVar):
            return f"cls.{e.name_hint}"
        if isinstance(e, rx.Constant):
            return _const_text(e)
        if isinstance(e, rx.PrimValue):
            v = e.value
            if isinstance(v, IntImm) and str(v.dtype) != "bool":  # as TVM: R.prim_value(T.int64(0))
                return f"R.prim_value(T.{v.dtype}({v.value}))"
            if isinstance(v, FloatImm):  # as TVM prints it; repr keeps every bit of the value
                return f"R.prim_value(T.{v.dtype}({_float_text(v.value)}))"
            return f"R.prim_value({self.dim(v)})"
        if isinstance(e, rx.StringImm):
            return f"R.str({_str(e.value)})"
        if isinstance(e, rx.DataTypeImm):
            return f"R.dtype({_str(str(e.value))})"
        if isinstance(e, rx.ShapeExpr):
            return f"R.shape({self.dims(e.values, '[]')})"
        if isinstance(e, rx.Tuple):
            inner = ", ".join(self.expr(f) for f in e.fields)
            return f"({inner},)" if len(e.fields) == 1 else f"({inner})"
        if isinstance(e, rx.TupleGetItem):
            return f"{self.expr(e.tuple_value)}[{e.index}]"
        if isinstance(e, rx.ExternFunc):
            return f"R.ExternFunc({_str(e.global_symbol)})"
        if isinstance(e, rx.Call):
            return self.call(e)
        return f"<{type(e).__name__}>"

    def call(self, c: rx.Call) -> str:
        if isinstance(c.op, rx.Op) and c.op.name in _DPS_CALLS:
            return self.dps_call(c)
        if isinstance(c.op, rx.ExternFunc) or (
            isinstance(c.op, rx.Op) and c.op.name in _PACKED_CALLS
        ):
            return self.packed_call(c)
        if not isinstance(c.op, rx.Op):
            return f"{self.expr(c.op)}({', '.join(self.expr(a) for a in c.args)})"
        args = [self.expr(a) for a in c.args]
        defaults = _op_defaults(c.op.name)
        for key, value in c.attrs.items():
            if defaults is None or (key in defaults and not _same_attr(defaults[key], value)):
                args.append(f"{key}={_attr_text(value)}")
        return f"R.{c.op.name.split('.', 1)[1]}({', '.join(args)})"

    def packed_call(self, c: rx.Call) -> str:
        """As TVM prints them: `R.call_packed("name", x, sinfo_args=(R.Tensor(...),))` for a
        call of an ExternFunc, `R.call_pure_packed("name", ...)` / `R.call_inplace_packed(...)`
        for the ops that vouch for its purity."""
        if isinstance(c.op, rx.ExternFunc):
            head, args = "call_packed", [_str(c.op.global_symbol)]
            args += [self.expr(a) for a in c.args]
        else:
            head, callee = c.op.name.split(".", 1)[1], c.args[0]
            args = [
                _str(callee.global_symbol)
                if isinstance(callee, rx.ExternFunc)
                else self.expr(callee)
            ]
            args += [self.expr(a) for a in c.args[1:]]
        for key, value in sorted(c.attrs.items()):  # a list prints as TVM prints it: [0]
            if isinstance(value, tuple) and all(isinstance(v, int) for v in value):
                args.append(f"{key}=[{', '.join(str(v) for v in value)}]")
            else:
                args.append(f"{key}={_attr_text(value)}")
        if c.sinfo_args:
            inner = ", ".join(self.sinfo(s) for s in c.sinfo_args)
            args.append(
                f"sinfo_args=({inner},)" if len(c.sinfo_args) == 1 else f"sinfo_args=({inner})"
            )
        return f"R.{head}({', '.join(args)})"

    def dps_call(self, c: rx.Call) -> str:
        callee, inputs = c.args[0], c.args[1]
        if isinstance(callee, rx.ExternFunc):
            target = _str(callee.global_symbol)
        elif isinstance(callee, rx.StringImm):  # call_py_func names the method
            target = _str(callee.value)
        else:
            target = self.expr(callee)
        out = c.sinfo_args[0]
        if isinstance(out, si.TupleStructInfo):
            out_text = "[" + ", ".join(self.sinfo(f) for f in out.fields) + "]"
        else:
            out_text = self.sinfo(out)
        args = [target, self.expr(inputs), f"out_sinfo={out_text}"]
        if "inplace_indices" in c.attrs:  # call_tir_inplace, printed as TVM prints it
            args.append(f"inplace_indices=[{', '.join(map(str, c.attrs['inplace_indices']))}]")
        if len(c.args) > 2:
            args.append(f"tir_vars={self.expr(c.args[2])}")
        if "te_grad_name" in c.attrs:  # call_tir_with_grad
            args.append(f"te_grad_name={_str(c.attrs['te_grad_name'])}")
            if c.attrs["te_grad_kwargs"]:
                args.append(f"te_grad_kwargs={_attr_text(c.attrs['te_grad_kwargs'])}")
        return f"R.{c.op.name.split('.', 1)[1]}({', '.join(args)})"

    # ------------------------------------------------------------------ functions
    def function(self, f: rx.Function, name: str) -> list[str]:
        symbol = f.attrs.get("global_symbol")
        flags = [] if symbol is not None else ["private=True"]
        if not f.is_pure:
            flags.append("pure=False")
        params = ", ".join(f"{self.expr(p)}: {self.sinfo(p.struct_info)}" for p in f.params)
        self.lines = [
            "@R.function" + (f"({', '.join(flags)})" if flags else ""),
            f"def {name}({params}) -> {self.sinfo(f.ret_struct_info)}:",
        ]
        # the params' symbolic dims, declared as in the MLC course (`n = T.int64()`); a dim whose
        # name is also a param's name stays a string only (declaring it would shadow the param)
        param_names = {self.expr(p) for p in f.params}
        declared: set[str] = set()
        for p in f.params:
            for v in si.shape_vars(p.struct_info):
                if v.name.isidentifier() and v.name not in param_names | declared | _RESERVED:
                    declared.add(v.name)
                    self.lines.append(INDENT + f"{v.name} = T.{v.dtype}()")
        attrs = {k: v for k, v in f.attrs.items() if not (k == "global_symbol" and v == name)}
        if attrs:
            self.lines.append(INDENT + f"R.func_attr({_attr_text(attrs)})")
        self.tail(f.body, 1)
        return self.lines

    def tail(self, body: rx.Expr, depth: int) -> None:
        """A function body (or both-branches-return `if`): blocks, then `return`."""
        pad = INDENT * depth
        if isinstance(body, rx.SeqExpr):
            for block in body.blocks:
                self.block(block, depth)
            body = body.body
        if isinstance(body, rx.If):
            self.lines.append(pad + f"if {self.expr(body.cond)}:")
            self.tail(body.true_branch, depth + 1)
            self.lines.append(pad + "else:")
            self.tail(body.false_branch, depth + 1)
            return
        self.lines.append(pad + f"return {self.expr(body)}")

    def block(self, block: rx.BindingBlock, depth: int) -> None:
        pad = INDENT * depth
        if not isinstance(block, rx.DataflowBlock):
            for b in block.bindings:
                self.binding(b, depth)
            return
        self.lines.append(pad + "with R.dataflow():")
        outputs = []
        for b in block.bindings:
            self.binding(b, depth + 1)
            if not isinstance(b.var, rx.DataflowVar):
                outputs.append(self.expr(b.var))
        self.lines.append(pad + INDENT + f"R.output({', '.join(outputs)})")

    def binding(self, b: Any, depth: int) -> None:
        pad = INDENT * depth
        if isinstance(b, rx.MatchCast):
            value = f"R.match_cast({self.expr(b.value)}, {self.sinfo(b.struct_info)})"
            self.lines.append(pad + f"{self.expr(b.var)} = {value}")
            return
        if isinstance(b.value, rx.If):
            v = b.value
            self.lines.append(pad + f"if {self.expr(v.cond)}:")
            self.branch(v.true_branch, b.var, depth + 1)
            self.lines.append(pad + "else:")
            self.branch(v.false_branch, b.var, depth + 1)
            return
        value = self.expr(b.value)
        self.lines.append(pad + f"{self.expr(b.var)}: {self.sinfo(b.var.struct_info)} = {value}")

    def branch(self, e: rx.Expr, var: rx.Var, depth: int) -> None:
        if isinstance(e, rx.SeqExpr):
            for block in e.blocks:
                self.block(block, depth)
            e = e.body
        self.lines.append(INDENT * depth + f"{self.expr(var)} = {self.expr(e)}")


# ----------------------------------------------------------------------------- attributes and constants


def _op_function(qualified: str) -> Any:
    """The Python op function behind a table op ("relax.nn.conv2d" -> relax.op.nn.conv2d)."""
    from . import op as op_module

    obj: Any = op_module
    for part in qualified.split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj if callable(obj) else None


def _op_defaults(qualified: str) -> dict[str, Any] | None:
    """{keyword parameter: default} of an op's Python function (None: not introspectable)."""
    fn = _op_function(qualified)
    return None if fn is None else _signature_defaults(fn)


@functools.lru_cache(maxsize=1024)
def _signature_defaults(fn: Callable) -> dict[str, Any] | None:
    """`_op_defaults` of one function object (inspect.signature dominated printing a model);
    callers only read the dict."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    # parameters without a default map to Parameter.empty, which never equals an attribute
    return {p.name: p.default for p in params}


def _norm(v: Any) -> Any:
    return tuple(_norm(x) for x in v) if isinstance(v, list | tuple) else v


def _same_attr(default: Any, value: Any) -> bool:
    """Whether an attribute equals its op function's default (then it is not printed)."""
    if default is inspect.Parameter.empty:
        return False
    a, b = _norm(default), _norm(value)
    try:
        return type(a) is type(b) and bool(a == b)
    except (TypeError, ValueError):
        return False


def _str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _attr_text(v: Any) -> str:
    if isinstance(v, str):
        return _str(v)
    if isinstance(v, dict) or hasattr(v, "items"):
        return "{" + ", ".join(f"{_str(str(k))}: {_attr_text(x)}" for k, x in v.items()) + "}"
    if isinstance(v, tuple | list):
        inner = ", ".join(_attr_text(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    if isinstance(v, float):
        return _float_text(v)
    if isinstance(v, PrimExpr):
        return print_expr(v)
    return repr(v)


def _float_text(x: float) -> str:
    if math.isnan(x):
        return 'float("nan")'
    if math.isinf(x):
        return 'float("inf")' if x > 0 else 'float("-inf")'
    return repr(x)


def _literal(x: Any) -> str:
    if isinstance(x, list):
        return "[" + ", ".join(_literal(v) for v in x) + "]"
    if isinstance(x, float):
        return _float_text(x)
    return repr(x)


def _const_text(c: rx.Constant) -> str:
    table = _META.get()
    if math.prod(c.data.shape) <= INLINE_CONST_LIMIT or _SHOW_META.get() or table is None:
        a = c.data.numpy()  # a large constant is neither copied nor scanned to be referenced
        if _inlinable(a):
            return f'R.const({_literal(a.tolist())}, "{a.dtype}")'
        if table is None:
            return f"R.const(<array of shape {a.shape} {a.dtype}>)"
    index = next((i for i, known in enumerate(table) if known is c), None)
    if index is None:
        index = len(table)
        table.append(c)
    return f'metadata["{META_KEY}"][{index}]'


def _inlinable(a: Any) -> bool:
    """A literal carries `a` exactly: not empty, no NaN payloads, small unless show_meta asks."""
    if a.size == 0 or (a.dtype.kind == "f" and bool(np.isnan(a).any())):
        return False
    return a.size <= INLINE_CONST_LIMIT or _SHOW_META.get()


def encode_metadata(constants: list[rx.Constant]) -> str:
    """The `metadata = \"\"\"...\"\"\"` section: one JSON object per constant, bytes in base64."""
    rows = []
    for c in constants:
        a = c.data.numpy()
        raw = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes()
        row = {
            "dtype": str(a.dtype),
            "shape": list(a.shape),
            "data": base64.b64encode(raw).decode(),
        }
        rows.append("  " + json.dumps(row))
    return f'metadata = """\n{{"{META_KEY}": [\n' + ",\n".join(rows) + '\n]}\n"""'


def _with_metadata(print_body: Callable[[], str]) -> str:
    """`print_body()`, followed by the metadata section of the constants it moved there."""
    token = _META.set([])
    try:
        text = print_body()
        table = _META.get()
    finally:
        _META.reset(token)
    return text if not table else f"{text}\n\n{encode_metadata(table)}\n"


# ----------------------------------------------------------------------------- entry points

# attributes of the ExternFunc standing for an `@I.pyfunc` method in a module (script/pyfunc.py)
PYFUNC_ATTR = "is_pyfunc"
SOURCE_ATTR = "python_source"


def is_pyfunc(func: Any) -> bool:
    """Whether a module member is the ExternFunc of an `@I.pyfunc` method."""
    return isinstance(func, rx.ExternFunc) and bool(func.attrs.get(PYFUNC_ATTR, False))


def pyfunc_extern(name: str, source_text: str) -> rx.ExternFunc:
    """The ExternFunc standing for the Python method `name` in an IRModule (its source text is
    what `mod.script()` prints; an empty text prints as `name = R.ExternFunc(...)`)."""
    attrs = {PYFUNC_ATTR: True, "function_type": "python", "python_function_name": name}
    return rx.ExternFunc(name, FrozenDict({**attrs, SOURCE_ATTR: source_text}))


def _extern_lines(func: rx.ExternFunc, name: str, highlight: Any) -> list[str]:
    """A module member that is an ExternFunc: an `@I.pyfunc` method prints as its source text,
    any other as `name = R.ExternFunc("symbol")`."""
    text = func.attrs.get(SOURCE_ATTR) if is_pyfunc(func) else None
    if text:
        return ["@I.pyfunc", *text.split("\n")]
    return [f"{name} = R.ExternFunc({_str(func.global_symbol)})"]


def _function_lines(f: rx.Function, name: str, highlight: Any) -> list[str]:
    return RelaxPrinter().function(f, name)


def print_function(f: rx.Function, **kwargs: Any) -> str:
    name = kwargs.get("name") or f.attrs.get("global_symbol") or "main"
    token = _SHOW_META.set(bool(kwargs.get("show_meta", False)))
    try:
        return _with_metadata(lambda: "\n".join([HEADER_R, ""] + _function_lines(f, name, None)))
    finally:
        _SHOW_META.reset(token)


def print_relax_expr(e: Any, **kwargs: Any) -> str:
    p = RelaxPrinter()
    if isinstance(e, rx.SeqExpr):
        p.tail(e, 0)
        return "\n".join(p.lines)
    return p.expr(e)


def print_struct_info(s: si.StructInfo, **kwargs: Any) -> str:
    return RelaxPrinter().sinfo(s)


def print_binding(b: Any, **kwargs: Any) -> str:
    p = RelaxPrinter()
    if isinstance(b, rx.BindingBlock):
        p.block(b, 0)
    else:
        p.binding(b, 0)
    return "\n".join(p.lines)


def print_ir_module(mod: IRModule, **kwargs: Any) -> str:
    """The TIR module printer, with the relax header when the module has relax functions and
    the module's global infos (tensors name their vdevice by its place in that list)."""
    from ..ir.vdevice import global_infos_script, printing_vdevices

    token = _SHOW_META.set(bool(kwargs.pop("show_meta", False)))
    vdevices = printing_vdevices.set(tuple(mod.global_infos.get("vdevice", ())))
    try:
        text = _with_metadata(lambda: _print_tir_module(mod, **kwargs))
    finally:
        _SHOW_META.reset(token)
        printing_vdevices.reset(vdevices)
    infos = global_infos_script(mod.global_infos)
    if infos is not None:  # as TVM: after the class line and I.module_attrs
        lines = text.split("\n")
        at = next(i for i, line in enumerate(lines) if line.startswith("class ")) + 1
        at += lines[at].lstrip().startswith("I.module_attrs(")
        text = "\n".join([*lines[:at], "    " + infos, *lines[at:]])
    if not any(isinstance(f, rx.Function) for f in mod.functions.values()):
        return text
    lines = text.split("\n")
    assert lines[0].startswith("# from") and lines[1].startswith("# from")
    return "\n".join([HEADER_MODULE] + lines[2:])


def script_and_constants(mod: IRModule) -> tuple[str, list[rx.Constant]]:
    """`mod.script()` without its metadata section, and the constants that section would hold
    (in the order of their `metadata[...][i]` references): a module's text whose large constants
    a caller describes its own way (the compile cache hashes them)."""
    token, show = _META.set([]), _SHOW_META.set(False)
    try:
        text = _print_tir_module(mod)
        return text, list(_META.get())
    finally:
        _META.reset(token)
        _SHOW_META.reset(show)


register_printer(rx.Expr, print_relax_expr)
register_printer(rx.Function, print_function)
register_printer(si.StructInfo, print_struct_info)
register_printer(rx.VarBinding, print_binding)
register_printer(rx.MatchCast, print_binding)
register_printer(rx.BindingBlock, print_binding)
register_printer(IRModule, print_ir_module)
register_function_printer(rx.Function, _function_lines)
register_function_printer(rx.ExternFunc, _extern_lines)
