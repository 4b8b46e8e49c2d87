"""Relay's text form: `def @main(%x: Tensor[(1, 3), float32]) { %0 = add(%x, 1f); ... }`.

Every call, tuple, projection and nested function gets a numbered temporary (`%0 = ...;`),
except the value of a scope, which is written last without one. Tensor constants print as
`meta[relay.Constant][i]` (one index per constant object); scalars inline (`2f`). Once type
inference ran, each temporary and constant argument carries `/* ty=... */`. Operator
attributes equal to the op's default are left out, as TVM does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..ir.module import GlobalVar, IRModule
from ..ir.node import _printer_for, register_printer
from ..ir.recursion import deep_recursion
from ..relax import printer as _relax_printer  # noqa: F401 - registers the module printer we extend
from .expr import Call, Constant, Expr, Function, If, Let, Op, Tuple, TupleGetItem, Var
from .ty import FuncType, TensorType, TupleType, Type

INDENT = "  "

_POOL2D_DEFAULTS = {
    "strides": (1, 1),
    "padding": (0, 0),
    "dilation": (1, 1),
    "layout": "NCHW",
    "ceil_mode": False,
}

# Attribute values each op prints only when they differ from these (TVM's attrs defaults).
_ATTR_DEFAULTS: dict[str, dict[str, Any]] = {
    "nn.conv2d": {
        "strides": (1, 1),
        "padding": (0, 0),
        "dilation": (1, 1),
        "groups": 1,
        "data_layout": "NCHW",
        "kernel_layout": "OIHW",
    },
    "nn.max_pool2d": _POOL2D_DEFAULTS,
    "nn.avg_pool2d": {**_POOL2D_DEFAULTS, "count_include_pad": False},
    "nn.global_avg_pool2d": {"layout": "NCHW"},
    "nn.global_max_pool2d": {"layout": "NCHW"},
    "nn.adaptive_avg_pool2d": {"layout": "NCHW"},
    "nn.batch_norm": {"axis": 1, "epsilon": 1e-5, "center": True, "scale": True},
    "nn.bias_add": {"axis": 1},
    "nn.softmax": {"axis": -1},
    "nn.log_softmax": {"axis": -1},
    "nn.dropout": {"rate": 0.5},
    "nn.leaky_relu": {"alpha": 0.25},
    "nn.layer_norm": {"axis": -1, "epsilon": 1e-5, "center": True, "scale": True},
    "nn.pad": {"pad_mode": "constant"},
    "strided_slice": {"slice_mode": "end"},
    "take": {"mode": "clip"},
    "split": {"axis": 0},
    "stack": {"axis": 0},
    "concatenate": {"axis": 0},
    "squeeze": {},
    "expand_dims": {"num_newaxis": 1},
}
_GENERIC_DEFAULTS = {"keepdims": False, "exclude": False}


# ----------------------------------------------------------------------------- atoms


def print_type(t: Any) -> str:
    """A type as Relay writes it: `Tensor[(1, 3), float32]`, a scalar as `float32`."""
    if isinstance(t, TensorType):
        if not t.shape:
            return t.dtype
        dims = ", ".join(_dim(d) for d in t.shape)
        return f"Tensor[({dims}{',' if len(t.shape) == 1 else ''}), {t.dtype}]"
    if isinstance(t, TupleType):
        inner = ", ".join(print_type(f) for f in t.fields)
        return f"({inner}{',' if len(t.fields) == 1 else ''})"
    if isinstance(t, FuncType):
        args = ", ".join(print_type(a) for a in t.arg_types)
        return f"fn ({args}) -> {print_type(t.ret_type)}"
    return str(t)


_SCALAR_SUFFIX = {"float32": "f", "float64": "f64", "float16": "f16", "int64": "i64", "int8": "i8"}
_SCALAR_SUFFIX["int16"] = "i16"


def _dim(d: Any) -> str:
    """A shape entry: `relay.Any()` dims (size vars named any_dimN) print as TVM's `?`."""
    name = getattr(d, "name", None)
    return "?" if isinstance(name, str) and name.startswith("any_dim") else str(d)


def _float_text(v: float, dtype: str) -> str:
    """The shortest spelling that reads back as the same `dtype` value (`:g` keeps 6 digits,
    which loses precision: 0.1234567f would come back as 0.123457f)."""
    text = f"{v:g}"
    kind = np.dtype(dtype).type
    if np.isfinite(v) and kind(float(text)) != kind(v):
        text = str(kind(v)) if dtype != "float64" else repr(float(v))
    return text


def _scalar(value: np.ndarray) -> str:
    """A 0-d constant inline: `2f`, `1e-05f`, `3`, `7i64`, `True`."""
    v = value.item()
    dtype = str(value.dtype)
    if dtype == "bool":
        return "True" if v else "False"
    if value.dtype.kind == "f":
        return f"{_float_text(v, dtype)}{_SCALAR_SUFFIX.get(dtype, 'f' + dtype[5:])}"
    return f"{v}{_SCALAR_SUFFIX.get(dtype, '' if dtype == 'int32' else dtype)}"


def _attr_value(v: Any) -> str:
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        return f"{_float_text(v, 'float64')}f"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, tuple | list):
        return "[" + ", ".join(_attr_value(x) for x in v) + "]"
    return str(v)


def _shown_attrs(op_name: str, attrs: Mapping | None) -> list[str]:
    """`key=value` for each attribute not at its default (None and "" are never shown)."""
    if not attrs:
        return []
    defaults = {**_GENERIC_DEFAULTS, **_ATTR_DEFAULTS.get(op_name, {})}
    out = []
    for key, value in attrs.items():
        if value is None or value == "" or (key in defaults and _same_value(defaults[key], value)):
            continue
        out.append(f"{key}={_attr_value(value)}")
    return out


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, tuple | list) or isinstance(b, tuple | list):
        return isinstance(a, tuple | list) and isinstance(b, tuple | list) and tuple(a) == tuple(b)
    return type(a) is type(b) and a == b


def _checked(e: Any) -> Any:
    return getattr(e, "_checked_type_", None)


def _type_note(e: Any) -> str:
    """` /* ty=... */` after a call, tuple or projection whose type is inferred."""
    ty = _checked(e)
    if ty is None or not isinstance(e, Call | Tuple | TupleGetItem):
        return ""
    return f" /* ty={print_type(ty)} */"


def _func_attrs(attrs: Mapping) -> list[str]:
    return [f"{k}={_attr_value(v)}" for k, v in attrs.items()]


# ----------------------------------------------------------------------------- the printer


class RelayPrinter:
    """Prints Relay functions and expressions; one instance per module (shared meta table)."""

    def __init__(self) -> None:
        self.meta: dict[int, int] = {}  # id(Constant) -> index in meta[relay.Constant]
        self.constants: list[Constant] = []
        self.names: dict[Var, str] = {}
        self.used_names: set[str] = set()
        self.temp = 0
        self.scopes: list[dict[Any, str]] = []  # memo of printed sub-expressions, per scope
        self.lines: list[list[str]] = []  # the binding lines of each open scope

    # --- names ----------------------------------------------------------------------------
    def var_name(self, v: Var) -> str:
        name = self.names.get(v)
        if name is None:
            base = v.name_hint or "v"
            base = f"v{base}" if base.isdigit() else base  # %0, %1 are temporaries
            name, n = base, 0
            while name in self.used_names:
                n += 1
                name = f"{base}{n}"
            self.used_names.add(name)
            self.names[v] = name
        return "%" + name

    def constant(self, c: Constant) -> str:
        array = c.data.numpy()
        if array.ndim == 0:
            return _scalar(array)
        index = self.meta.get(id(c))
        if index is None:
            index = self.meta[id(c)] = len(self.constants)
            self.constants.append(c)
        return f"meta[relay.Constant][{index}]"

    # --- scopes ---------------------------------------------------------------------------
    def lookup(self, e: Any) -> str | None:
        for scope in reversed(self.scopes):
            if e in scope:
                return scope[e]
        return None

    def bind(self, e: Any, text: str) -> str:
        """Emit `%n = text;` in the current scope and return `%n`."""
        name = f"%{self.temp}"
        self.temp += 1
        self.lines[-1].append(f"{name} = {text}{_type_note(e)};")
        self.scopes[-1][e] = name
        return name

    def scope_body(self, body: Expr) -> list[str]:
        """The lines of a new scope whose value is `body` (the last line, unbound)."""
        self.scopes.append({})
        self.lines.append([])
        try:
            value = self.value(body) + _type_note(body)
            return [*self.lines[-1], value]
        finally:
            self.scopes.pop()
            self.lines.pop()

    # --- expressions ----------------------------------------------------------------------
    def atom(self, e: Any) -> str | None:
        """The inline text of a leaf, or None for an expression that needs a temporary."""
        if isinstance(e, Var):
            return self.var_name(e)
        if isinstance(e, GlobalVar):
            return "@" + e.name_hint
        if isinstance(e, Op):
            return e.name
        if isinstance(e, Constant):
            return self.constant(e)
        return None

    def arg(self, e: Any) -> str:
        """An operand: a leaf inline (constants with their type), anything else a temporary."""
        text = self.atom(e)
        if text is None:
            return self.lookup(e) or self.bind(e, self.value(e))
        ty = _checked(e)
        if isinstance(e, Constant) and ty is not None:
            text += f" /* ty={print_type(ty)} */"
        return text

    def value(self, e: Any) -> str:
        """The text of `e` itself (its operands bound to temporaries first)."""
        text = self.atom(e)
        if text is not None:
            return text
        return getattr(self, "value_" + type(e).__name__.lower())(e)

    def value_call(self, call: Call) -> str:
        args = [self.arg(a) for a in call.args]  # before the callee: a fused fn is
        callee = call.op.name if isinstance(call.op, Op) else self.arg(call.op)  # next to its call
        if isinstance(call.op, Op):
            args += _shown_attrs(call.op.name, call.attrs)
        return f"{callee}({', '.join(args)})"

    def value_tuple(self, tup: Tuple) -> str:
        fields = [self.arg(f) for f in tup.fields]
        return "(" + ", ".join(fields) + ("," if len(fields) == 1 else "") + ")"

    def value_tuplegetitem(self, item: TupleGetItem) -> str:
        return f"{self.arg(item.tuple_value)}.{item.index}"

    def value_function(self, func: Function) -> str:
        return "\n".join(self.function_lines(func, "fn "))

    def value_let(self, let: Let) -> str:
        lines = []
        while isinstance(let, Let):  # a chain of lets is one block, not a nest
            var_type = let.var.type_annotation or _checked(let.var)
            annot = f": {print_type(var_type)}" if var_type is not None else ""
            self.scopes.append({})
            self.lines.append([])
            value = self.value(let.value) + _type_note(let.value)
            lines += self.lines.pop()
            self.scopes.pop()
            lines.append(f"let {self.var_name(let.var)}{annot} = {value};")
            let = let.body
        body = self.scope_body(let)
        return "\n".join(lines + body)

    def value_if(self, node: If) -> str:
        cond = self.arg(node.cond)
        then = _indent(self.scope_body(node.true_branch))
        other = _indent(self.scope_body(node.false_branch))
        return "\n".join([f"if ({cond}) {{", *then, "} else {", *other, "}"])

    # --- functions ------------------------------------------------------------------------
    def function_lines(self, func: Function, head: str) -> list[str]:
        """`head(params, attrs) -> ret {`, the indented body, `}`."""
        params = []
        for p in func.params:
            annot = p.type_annotation or _checked(p)
            params.append(
                self.var_name(p) + (f": {print_type(annot)}" if annot is not None else "")
            )
        params += _func_attrs(func.attrs or {})
        ret = func.ret_type
        if ret is None and isinstance(_checked(func), FuncType):
            ret = _checked(func).ret_type
        arrow = f" -> {print_type(ret)}" if ret is not None else ""
        body = self.scope_body(func.body)
        return [f"{head}({', '.join(params)}){arrow} {{", *_indent(body), "}"]

    def metadata(self) -> list[str]:
        """The constants behind `meta[relay.Constant][i]` (shown by astext(show_meta_data=True))."""
        if not self.constants:
            return []
        out = ["#[metadata]"]
        for i, c in enumerate(self.constants):
            array = c.data.numpy()
            text = np.array2string(array, threshold=16, separator=", ").replace("\n", " ")
            out.append(
                f"# relay.Constant[{i}]: {print_type(TensorType(array.shape, str(array.dtype)))} = {text}"
            )
        return out


def _indent(lines: list[str]) -> list[str]:
    return [INDENT + line if line else line for text in lines for line in text.split("\n")]


# ----------------------------------------------------------------------------- entry points


def astext(obj: Any, show_meta_data: bool = False) -> str:
    """The Relay text of a module, function or expression."""
    p = RelayPrinter()
    with deep_recursion():
        if isinstance(obj, IRModule):
            parts = []
            for gv, func in obj.functions_items():
                if isinstance(func, Function):
                    parts.append("\n".join(p.function_lines(func, f"def @{gv.name_hint}")))
                else:
                    parts.append(func.script())
            text = "\n\n".join(parts)
        elif isinstance(obj, Function):
            text = "\n".join(p.function_lines(obj, "fn "))
        else:
            text = "\n".join(p.scope_body(obj))
    if show_meta_data:
        meta = p.metadata()
        if meta:
            text += "\n\n" + "\n".join(meta)
    return text


def _print_expr(e: Expr, **kwargs: Any) -> str:
    return astext(e, bool(kwargs.get("show_meta_data", False)))


_base_module_printer = _printer_for(IRModule)


def _print_module(mod: IRModule, **kwargs: Any) -> str:
    """Relay text for modules holding Relay functions; the usual script for the others."""
    if any(isinstance(f, Function) for f in mod.functions.values()):
        return astext(mod, bool(kwargs.get("show_meta_data", False)))
    return _base_module_printer(mod, **kwargs)


register_printer(Expr, _print_expr)
register_printer(Type, lambda t, **_: print_type(t))
register_printer(IRModule, _print_module)

__all__ = ["RelayPrinter", "astext", "print_type"]
