"""The plan of a compiled function's argument checks: its FuncInfo (docs/contracts.md §3)
validated field by field and digested once into buffers, scalars and symbolic dims, and the
shape expressions of its metadata parsed into a small tree of int constants, + - * // % min max
and positional names (evaluated by `_eval`, never eval()). packed_func.py turns a plan into the
checked call.
"""

from __future__ import annotations

import ast
import ctypes
from dataclasses import dataclass

import numpy as np

from ..error import RuntimeError_
from ..ir.dtype import DataType

_NATIVE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)
_MAX_INT = 2**63 - 1
_MAX_EXPR_TEXT = 1000  # characters of one shape expression
_MAX_EXPR_DEPTH = 64  # nesting of one shape expression (the evaluator recurses)
_CPU_DEVICES = (1, 3)  # DLPack kCPU and kCUDAHost: memory numpy can address


def _floordiv(a: int, b: int) -> int:
    return a // b


def _floormod(a: int, b: int) -> int:
    return a % b


# shape expression operators: AST class -> (tree tag, Python operator text, function)
_BINARY = {
    ast.Add: ("+", "+", int.__add__),
    ast.Sub: ("-", "-", int.__sub__),
    ast.Mult: ("*", "*", int.__mul__),
    ast.FloorDiv: ("//", "//", _floordiv),
    ast.Mod: ("%", "%", _floormod),
}
_CALLS = {"min": min, "max": max}
_OPS = {tag: fn for tag, _, fn in _BINARY.values()} | _CALLS | {"neg": int.__neg__}
_OP_TEXT = {tag: text for tag, text, _ in _BINARY.values()}


# --- the plan: FuncInfo validated and digested once --------------------------------------
@dataclass(frozen=True)
class _Dim:
    """One expected dimension: an int, a symbolic dim (defined here or used), or an expression."""

    text: str  # as the user reads it: "784", "n", "n * 2" (messages only, never code)
    value: int | None = None  # static size
    sym: int | None = None  # index into sym_vars when the dim is exactly that var
    defines: bool = False  # this is the sym var's first occurrence
    expr: tuple | None = None  # expression tree over "v<i>" (sym vars) and "a<k>" (int scalars)


@dataclass(frozen=True)
class _Buffer:
    position: int
    name: str
    dtype: np.dtype
    dims: tuple[_Dim, ...]
    slot: int  # index in the pointer array
    written: bool  # the function writes it (FuncInfo "writes")

    @property
    def shape_text(self) -> str:
        inner = ", ".join(d.text for d in self.dims)
        return f"({inner},)" if len(self.dims) == 1 else f"({inner})"

    @property
    def static_nbytes(self) -> int | None:
        if any(d.value is None for d in self.dims):
            return None
        return int(np.prod([d.value for d in self.dims], dtype=object)) * self.dtype.itemsize


@dataclass(frozen=True)
class _Scalar:
    position: int
    name: str
    dtype: DataType
    slot: int  # index in the i64 scalar array


@dataclass(frozen=True)
class _Sym:
    label: str  # the user's name, for messages
    dtype: DataType
    position: int  # the buffer param and dim that define it
    dim: int


@dataclass(frozen=True)
class _Plan:
    name: str
    params: tuple  # _Buffer | _Scalar, in param order
    syms: tuple[_Sym, ...]
    alias_ok: frozenset  # (input position, output position)
    errors: tuple[str, ...]  # message of native return code k + 1
    ret: DataType | None = None  # what T.ret returns, in the int slot after the scalars

    @property
    def ret_slot(self) -> int:
        return len(self.syms) + len(self.scalars)

    @property
    def n_ints(self) -> int:
        """Length of the int argument array: syms, scalars, then the return slot if any."""
        return max(self.ret_slot + (self.ret is not None), 1)

    @property
    def buffers(self) -> tuple[_Buffer, ...]:
        return tuple(p for p in self.params if isinstance(p, _Buffer))

    @property
    def scalars(self) -> tuple[_Scalar, ...]:
        return tuple(p for p in self.params if isinstance(p, _Scalar))

    def buffer_at(self, position: int) -> _Buffer:
        return next(b for b in self.buffers if b.position == position)


def _bad(func: str, what: str) -> RuntimeError_:
    return RuntimeError_(f"function {func!r}: its metadata is invalid: {what}")


def _int(func: str, x, what: str, lo: int = 0, hi: int = _MAX_INT) -> int:
    if type(x) is not int or not lo <= x <= hi:
        raise _bad(func, f"{what} must be an int in [{lo}, {hi}], got {x!r:.60}")
    return x


def _str(func: str, x, what: str) -> str:
    if type(x) is not str:
        raise _bad(func, f"{what} must be a string, got {type(x).__name__}")
    return x


def _plan(info: dict) -> _Plan:
    """Validate `info` (every value the generated code depends on) and digest it."""
    name = _str("?", info.get("name"), "'name'") if isinstance(info, dict) else None
    if name is None:
        raise _bad("?", f"a FuncInfo must be a dict, got {type(info).__name__}")
    raw_params, raw_syms = info.get("params"), info.get("sym_vars", [])
    if type(raw_params) is not list or type(raw_syms) is not list:
        raise _bad(name, "'params' and 'sym_vars' must be lists")
    kinds = {}
    for k, p in enumerate(raw_params):
        if type(p) is not dict or p.get("kind") not in ("buffer", "scalar"):
            raise _bad(name, f"param {k} must be a dict with kind 'buffer' or 'scalar'")
        kinds[k] = p["kind"]
    buffers = [k for k, kind in kinds.items() if kind == "buffer"]
    writes = _positions(name, info.get("writes", buffers), "'writes'", buffers)
    syms, local_names = _syms(name, raw_syms, raw_params, kinds), {}
    for k, p in enumerate(raw_params):  # int scalar params may appear in shape expressions
        if p["kind"] == "scalar" and DataType(_str(name, p.get("dtype"), "dtype")).is_int:
            local_names[_str(name, p.get("ref", p.get("name")), f"param {k} name")] = f"a{k}"
    for i, s in enumerate(raw_syms):
        local_names[s["name"]] = f"v{i}"
    sym_at = {(s.position, s.dim): i for i, s in enumerate(syms)}
    params, n_buffers, n_scalars = [], 0, 0
    for position, p in enumerate(raw_params):
        pname = _str(name, p.get("name"), f"param {position} name")
        dtype = DataType(_str(name, p.get("dtype"), f"param {position} dtype"))
        if p["kind"] == "scalar":
            params.append(_Scalar(position, pname, dtype, len(syms) + n_scalars))
            n_scalars += 1
            continue
        shape = p.get("shape")
        if type(shape) is not list or len(shape) > 64:
            raise _bad(name, f"param '{pname}' shape must be a list of at most 64 entries")
        dims = tuple(
            _dim(name, d, local_names, syms, sym_at.get((position, k))) for k, d in enumerate(shape)
        )
        written = position in writes
        params.append(_Buffer(position, pname, dtype.numpy_dtype(), dims, n_buffers, written))
        n_buffers += 1
    for s in syms:
        if s.dim >= len(params[s.position].dims):
            raise _bad(name, f"symbolic dim '{s.label}' refers to a dim its param does not have")
    alias_ok = frozenset(_alias_pairs(name, info.get("alias_ok", []), params, writes))
    errors = info.get("errors", info.get("asserts", []))
    if type(errors) is not list or not all(type(e) is str for e in errors):
        raise _bad(name, "'errors' must be a list of strings")
    ret = info.get("ret")
    if ret is not None:
        ret = DataType(_str(name, ret, "'ret'"))
        if ret.lanes != 1 or not (ret.is_int or ret.is_uint or ret.is_float or ret.is_bool):
            raise _bad(name, f"'ret' must be a scalar int, uint, float or bool dtype, got {ret}")
    return _Plan(name, tuple(params), syms, alias_ok, tuple(errors), ret)


def _positions(func: str, values, what: str, allowed: list[int]) -> frozenset[int]:
    if type(values) is not list:
        raise _bad(func, f"{what} must be a list")
    for v in values:
        if type(v) is not int or v not in allowed:
            raise _bad(func, f"{what} holds {v!r:.60}, which is not a buffer param position")
    return frozenset(values)


def _syms(func: str, raw: list, params: list, kinds: dict) -> tuple[_Sym, ...]:
    syms, seen = [], set()
    for i, s in enumerate(raw):
        if type(s) is not dict:
            raise _bad(func, f"sym_vars[{i}] must be a dict")
        key = _str(func, s.get("name"), f"sym_vars[{i}] name")
        if key in seen:
            raise _bad(func, f"two symbolic dims are named {key!r}")
        seen.add(key)
        dtype = DataType(_str(func, s.get("dtype"), f"sym_vars[{i}] dtype"))
        if not dtype.is_int and not dtype.is_uint:
            raise _bad(func, f"symbolic dim {key!r} has non-integer dtype {dtype}")
        position = _int(func, s.get("param"), f"sym_vars[{i}] param", 0, len(params) - 1)
        if kinds[position] != "buffer":
            raise _bad(func, f"symbolic dim {key!r} is defined by a scalar param")
        dim = _int(func, s.get("dim"), f"sym_vars[{i}] dim", 0, 63)
        label = _str(func, s.get("label", key), f"sym_vars[{i}] label")
        syms.append(_Sym(label, dtype, position, dim))
    return tuple(syms)


def _alias_pairs(func: str, pairs, params: list, writes: frozenset) -> list[tuple[int, int]]:
    if type(pairs) is not list:
        raise _bad(func, "'alias_ok' must be a list")
    out = []
    for pair in pairs:
        if type(pair) is not list or len(pair) != 2:
            raise _bad(func, f"'alias_ok' holds {pair!r:.60}, not an [input, output] pair")
        i, o = (_int(func, x, "an 'alias_ok' position", 0, len(params) - 1) for x in pair)
        a, c = params[i], params[o]
        if not (isinstance(a, _Buffer) and isinstance(c, _Buffer) and o in writes):
            raise _bad(func, f"'alias_ok' pair {pair} is not (buffer, written buffer)")
        if a.dtype.itemsize != c.dtype.itemsize or i in writes:
            raise _bad(func, f"'alias_ok' pair {pair} pairs buffers that cannot alias elementwise")
        out.append((i, o))
    return out


def _dim(func: str, d, local_names: dict, syms: tuple, defines: int | None) -> _Dim:
    """An expected dim: an int, a symbolic dim's name, or an expression over symbolic dims
    and int scalar params using + - * // % min max (parsed into a tree, names made local)."""
    if defines is not None:  # this is where sym var `defines` is read from the arguments
        if local_names.get(d) != f"v{defines}":
            raise _bad(
                func,
                f"shape entry {d!r:.80} is where symbolic dim "
                f"'{syms[defines].label}' is defined, so it must be its name",
            )
        return _Dim(syms[defines].label, sym=defines, defines=True)
    if type(d) is int:
        return _Dim(str(_int(func, d, "a static dim")), value=d)
    text = _str(func, d, "a shape entry")
    local = local_names.get(text)
    if local is not None and local[0] == "v":
        i = int(local[1:])
        return _Dim(syms[i].label, sym=i)
    labels = {v: syms[int(v[1:])].label for v in local_names.values() if v[0] == "v"}
    expr = parse_shape_expr(func, text, local_names)
    return _Dim(_expr_text(expr, labels, local_names), expr=expr)


def parse_shape_expr(func: str, text: str, names: dict) -> tuple:
    """The one grammar of shape expressions (docs/contracts.md §3), also used by the loader's
    metadata validator: the validated tree, names mapped through `names`; RuntimeError_
    for anything else."""
    if len(text) > _MAX_EXPR_TEXT:
        raise _bad(func, f"shape entry of {len(text)} characters is too long")
    try:
        tree = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
        raise _bad(func, f"shape entry {text!r:.80} is not an expression") from err
    return _expr_tree(func, text, tree, names)


def _expr_tree(func: str, text: str, node: ast.AST, names: dict, depth: int = 0) -> tuple:
    """The validated tree of a shape expression: ("int", c) | ("var", "v0"|"a2") | (op, ...)."""

    def refuse() -> RuntimeError_:
        return _bad(func, f"shape entry {text!r:.80} uses {type(node).__name__}")

    def sub(child: ast.AST) -> tuple:
        if depth >= _MAX_EXPR_DEPTH:
            raise _bad(func, f"shape entry {text!r:.80} nests deeper than {_MAX_EXPR_DEPTH}")
        return _expr_tree(func, text, child, names, depth + 1)

    if isinstance(node, ast.Constant):
        if type(node.value) is not int or abs(node.value) > _MAX_INT:
            raise refuse()
        return ("int", node.value)
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise _bad(func, f"shape entry {text!r:.80} uses unknown name {node.id!r:.40}")
        return ("var", names[node.id])
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return ("neg", sub(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        tag = _BINARY[type(node.op)][0]
        return (tag, sub(node.left), sub(node.right))
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _CALLS
        and len(node.args) == 2
        and not node.keywords
    ):
        return (node.func.id, sub(node.args[0]), sub(node.args[1]))
    raise refuse()


def _eval(tree: tuple, values: dict) -> int:
    """Evaluate an expression tree; `values` maps "v0"/"a2" to ints."""
    tag = tree[0]
    if tag == "int":
        return tree[1]
    if tag == "var":
        return values[tree[1]]
    return _OPS[tag](*[_eval(t, values) for t in tree[1:]])


def _expr_code(tree: tuple) -> str:
    """Python source of a validated tree: only positional names, int reprs and fixed operators."""
    tag = tree[0]
    if tag == "int":
        return repr(int(tree[1]))
    if tag == "var":
        kind, index = tree[1][0], int(tree[1][1:])
        return f"{'v' if kind == 'v' else 'a'}{index!r}"
    if tag == "neg":
        return f"(-{_expr_code(tree[1])})"
    if tag in _CALLS:
        return f"{tag}({_expr_code(tree[1])}, {_expr_code(tree[2])})"
    return f"({_expr_code(tree[1])} {_OP_TEXT[tag]} {_expr_code(tree[2])})"


def _expr_text(tree: tuple, labels: dict, names: dict) -> str:
    """The expression as the user reads it (messages only)."""
    back = {local: user for user, local in names.items()} | labels
    tag = tree[0]
    if tag == "int":
        return str(tree[1])
    if tag == "var":
        return back[tree[1]]
    if tag == "neg":
        return f"-{_expr_text(tree[1], labels, names)}"
    if tag in _CALLS:
        return f"{tag}({_expr_text(tree[1], labels, names)}, {_expr_text(tree[2], labels, names)})"
    left, right = (_expr_text(t, labels, names) for t in tree[1:])
    left = f"({left})" if tree[1][0] in _OP_TEXT else left
    right = f"({right})" if tree[2][0] in _OP_TEXT else right
    return f"{left} {_OP_TEXT[tag]} {right}"


def _divides(tree: tuple) -> bool:
    return tree[0] in ("//", "%") or any(isinstance(t, tuple) and _divides(t) for t in tree[1:])
