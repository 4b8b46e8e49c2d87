"""The one wrapper through which Python calls compiled code: check every argument, then call.

For each FuncInfo (docs/contracts.md §3) we generate a small Python function specialised to
it (see `PackedFunc.checker_source`): it unwraps each argument, compares dtype and shape
with precomputed values, refuses read-only outputs and overlapping arguments, fills
preallocated ctypes argument arrays and calls the native entry (ABI of contracts.md §2). Any
failed check hands over to `_explain`, a plain, generic checker that raises the error naming
the function, the argument and the dimension. Bad arguments never reach native code.

Metadata is data: the generated source names everything positionally (a0, p1, v2) and holds
no string from the FuncInfo; ints enter it through repr() after validation, and shape
expressions are parsed into a small tree of int constants, + - * // % min max and positional
names, which is evaluated by `_eval` (never eval()) or printed by `_expr_code`.
"""

from __future__ import annotations

import ast
import ctypes
import threading
from dataclasses import dataclass

import numpy as np

from ..error import ArgumentError, DTypeError, InternalError, RuntimeError_, ShapeError
from ..ir.dtype import DataType
from .ndarray import NDArray

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
    return _Plan(name, tuple(params), syms, alias_ok, tuple(errors))


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


# --- the generated fast path -------------------------------------------------------------
def _generate(plan: _Plan, overlap: bool = True) -> str:
    """Python source of `fast(*args)` for this plan (readable on purpose: see checker_source).

    Every name in it is positional: a<k> argument k, d<s>/p<s>/s<s> data, pointer and shape
    of buffer slot s, v<i> symbolic dim i, n<s> byte size of slot s. The overlap test is a
    cheap filter (an empty array inside another one also trips it); `_explain` decides
    exactly and then calls the twin generated with `overlap=False`."""
    names = [f"a{p.position}" for p in plan.params]
    ptr_list = ", ".join(f"p{b.slot}" for b in plan.buffers)
    lines = [
        "def fast(*args):",
        f"    if len(args) != {len(plan.params)!r}:",
        "        return slow(args)",
    ]
    if plan.params:
        lines.append(f"    {', '.join(names)}{',' if len(names) == 1 else ''} = args")
    for b in plan.buffers:
        lines += _unwrap_lines(b)
    for i, s in enumerate(plan.syms):
        lines.append(f"    v{i} = s{plan.buffer_at(s.position).slot}[{s.dim!r}]")
        hi = _int_range(s.dtype)[1]
        if hi < _MAX_INT:  # the native code holds it in a narrower int
            lines += [f"    if v{i} > {hi!r}:", "        return slow(args)"]
    slot_values = [f"v{i}" for i in range(len(plan.syms))]
    float_slots = []
    for s in plan.scalars:
        a = f"a{s.position}"
        lines += [f"    if not ({_scalar_test(a, s.dtype)}):", "        return slow(args)"]
        if s.dtype.is_float:
            float_slots.append((s.slot, a))
            slot_values.append("0")
        else:
            slot_values.append(a)
    lines += _shape_lines(plan)
    lines += _overlap_lines(plan) if overlap else []
    lines += [
        "    if acquire(False):",
        "        try:",
        *[f"            ptrs[{b.slot}] = p{b.slot}" for b in plan.buffers],
        *[f"            ints[{j}] = {v}" for j, v in enumerate(slot_values) if v != "0"],
        *[f"            floats[{j}] = {a}" for j, a in float_slots],
        "            rc = native(ptrs_addr, ints_addr)",
        "        finally:",
        "            release()",
        "    else:  # another thread is inside this function: use fresh argument arrays",
        f"        fresh_ptrs = PtrArray({ptr_list})",
        f"        fresh_ints = IntArray({', '.join(slot_values)})",
        *[f"        FloatArray.from_buffer(fresh_ints)[{j}] = {a}" for j, a in float_slots],
        "        rc = native(addressof(fresh_ptrs), addressof(fresh_ints))",
        "    if rc:",
        "        failed(rc)",
    ]
    return "\n".join(lines) + "\n"


def _unwrap_lines(b: _Buffer) -> list[str]:
    """Data, pointer and shape of buffer slot b.slot; a written buffer must be writable."""
    a, k = f"a{b.position}", b.slot
    nd_check = [f"        if not d{k}.flags.writeable:", "            return slow(args)"]
    return [
        f"    # argument {b.position}: buffer slot {k}{', written' if b.written else ''}",
        f"    if type({a}) is NDArray:",
        f"        d{k} = {a}._data",
        f"        p{k} = {a}._ptr",
        *(nd_check if b.written else []),
        f"    elif type({a}) is ndarray and {a}.flags.c_contiguous:",
        f"        d{k} = {a}",
        "        try:  # 4x faster than .ctypes.data; needs a writable, non-empty buffer",
        f"            p{k} = addressof(char_from_buffer({a}))",
        "        except (TypeError, ValueError):",
        *(
            [f"            if not {a}.flags.writeable:", "                return slow(args)"]
            if b.written
            else []
        ),
        f"            p{k} = {a}.ctypes.data",
        "    else:",
        "        return slow(args)",
        f"    s{k} = d{k}.shape",
        f"    if d{k}.dtype is not dt{k} and d{k}.dtype != dt{k}{_rank_test(b)}:",
        "        return slow(args)",
    ]


def _rank_test(b: _Buffer) -> str:
    """The rank test, unless the whole shape is compared later and no dim is read before."""
    compared_later = b.dims and not any(d.defines for d in b.dims)
    return "" if compared_later else f" or len(s{b.slot}) != {len(b.dims)!r}"


def _shape_lines(plan: _Plan) -> list[str]:
    lines = []
    for b in plan.buffers:
        if not b.dims or all(d.defines for d in b.dims):
            continue
        expected = ", ".join(_dim_code(d) for d in b.dims)
        expected = f"({expected},)" if len(b.dims) == 1 else f"({expected})"
        if any(d.expr is not None and _divides(d.expr) for d in b.dims):
            lines += [
                "    try:",
                f"        if s{b.slot} != {expected}:",
                "            return slow(args)",
                "    except ZeroDivisionError:",
                "        return slow(args)",
            ]
        else:
            lines += [f"    if s{b.slot} != {expected}:", "        return slow(args)"]
    return lines


def _overlap_lines(plan: _Plan) -> list[str]:
    """Refuse memory overlap between a written buffer and any other buffer argument, except
    the exact same array for an (input, output) pair the function updates elementwise."""
    pairs = _overlap_pairs(plan)
    if not pairs:
        return []
    lines, sizes = [], {}  # byte-size code -> the n<s> variable holding it
    for b in {b.slot: b for pair in pairs for b in pair}.values():
        code = _nbytes_code(b)
        if code not in sizes and not code.isdigit():
            sizes[code] = f"n{b.slot}"
            lines.append(f"    n{b.slot} = {code}")
    for x, y in pairs:
        nx, ny = (sizes.get(_nbytes_code(b), _nbytes_code(b)) for b in (x, y))
        if "0" in (nx, ny):
            continue  # an empty buffer overlaps nothing
        # [px, px + nx) and [py, py + ny) intersect iff -nx < px - py < ny
        test = f"-{nx} < p{x.slot} - p{y.slot} < {ny}"
        if (x.position, y.position) in plan.alias_ok or (y.position, x.position) in plan.alias_ok:
            test += f" and (p{x.slot} != p{y.slot} or s{x.slot} != s{y.slot})"
        lines += [f"    if {test}:", "        return slow(args)"]
    return lines


def _overlap_pairs(plan: _Plan) -> list[tuple[_Buffer, _Buffer]]:
    buffers = plan.buffers
    return [
        (x, y) for i, x in enumerate(buffers) for y in buffers[i + 1 :] if x.written or y.written
    ]


def _nbytes_code(b: _Buffer) -> str:
    """The buffer's byte size as code over the checked dims (its shape equals them by now)."""
    n = b.static_nbytes
    if n is not None:
        return repr(n)
    return " * ".join([_dim_code(d) for d in b.dims] + [repr(b.dtype.itemsize)])


def _dim_code(d: _Dim) -> str:
    if d.value is not None:
        return repr(d.value)
    return f"v{d.sym!r}" if d.sym is not None else _expr_code(d.expr)


def _scalar_test(a: str, dtype: DataType) -> str:
    if dtype.is_float:
        return f"type({a}) is float or type({a}) is int"
    if dtype.is_bool:
        return f"type({a}) is bool"
    lo, hi = _int_range(dtype)
    return f"type({a}) is int and {lo!r} <= {a} <= {hi!r}"


def _int_range(dtype: DataType) -> tuple[int, int]:
    if dtype.is_uint:
        return 0, 2**dtype.bits - 1  # uint64 above 2**63 travels as its i64 bit pattern
    return -(2 ** (dtype.bits - 1)), 2 ** (dtype.bits - 1) - 1


# --- the slow path: convert foreign arguments or explain what is wrong -------------------
def _slow(plan: _Plan, fast, trusted, args: tuple):
    converted = tuple(_convert(plan, i, a) for i, a in enumerate(args))
    if any(c is not a for c, a in zip(converted, args)):
        return fast(*converted)
    _explain(plan, args)
    return trusted(*args)  # all is well: the fast filter was conservative (an empty array)


def _unexplained(plan: _Plan, args: tuple):
    _explain(plan, args)
    raise InternalError(f"calling '{plan.name}': the argument check failed without a reason")


def _convert(plan: _Plan, i: int, arg):
    """DLPack tensors and ndarray subclasses become plain numpy views (zero-copy); numpy
    scalars become Python scalars. Anything else is returned unchanged."""
    if i >= len(plan.params):
        return arg
    if isinstance(plan.params[i], _Scalar):
        return arg.item() if isinstance(arg, np.generic) else arg
    if type(arg) is np.ndarray or isinstance(arg, NDArray):  # a device array: _explain says why
        return arg
    if isinstance(arg, np.ndarray):
        return arg.view(np.ndarray)
    if hasattr(arg, "__dlpack__"):
        b = plan.params[i]
        return import_dlpack(arg, f"calling '{plan.name}': {_arg(b)}", str(b.dtype))
    return arg


def import_dlpack(arg, where: str, want: str = "float32") -> np.ndarray:
    """A DLPack tensor as a zero-copy numpy view, or an ArgumentError that says why not and
    what to do: move it to the CPU, or convert a dtype numpy lacks (bfloat16) to `want`."""
    try:
        return np.from_dlpack(arg)
    except (RuntimeError, TypeError, BufferError, ValueError) as err:
        raise _dlpack_error(where, arg, err, want) from err


def _dlpack_error(where: str, arg, err: Exception, want: str) -> ArgumentError:
    try:
        device = arg.__dlpack_device__()[0]
    except Exception:  # noqa: BLE001 - a producer without a device query: judge by the error
        device = None
    if device is not None and device not in _CPU_DEVICES:
        return ArgumentError(
            f"{where} is a {type(arg).__name__} on a non-CPU device ({err}); "
            "move it to the CPU first"
        )
    dtype = getattr(arg, "dtype", None)
    if "dtype" in str(err).lower() or "data type" in str(err).lower():
        return ArgumentError(
            f"{where} is a {type(arg).__name__} of dtype {dtype}, which cannot be read through "
            f"DLPack ({err}); convert it to {want} first (e.g. x.float() / x.astype('{want}'))"
        )
    return ArgumentError(
        f"{where} is a {type(arg).__name__} that cannot be read through DLPack ({err}); "
        "pass a C-contiguous CPU tensor (detach a torch tensor that requires grad)"
    )


def _explain(plan: _Plan, args: tuple, check_buffer=None, check_overlap=None) -> dict:
    """Raise the error for the first bad argument (the generic twin of the generated check);
    return the values of the symbolic dims ("v<i>") and scalars ("a<k>"). The buffer and
    overlap checks default to host memory's; device functions pass their own."""
    where = f"calling '{plan.name}'"
    if len(args) != len(plan.params):
        names = ", ".join(p.name for p in plan.params)
        raise ArgumentError(
            f"{where}: expected {len(plan.params)} arguments ({names}), got {len(args)}"
        )
    check_buffer = check_buffer or _check_buffer
    arrays = {b.position: check_buffer(where, b, args[b.position]) for b in plan.buffers}
    values, origin = {}, {}
    for i, s in enumerate(plan.syms):
        got = arrays[s.position].shape[s.dim]
        values[f"v{i}"] = got
        origin[i] = f"set by argument '{plan.params[s.position].name}' dim {s.dim}"
        if got > _int_range(s.dtype)[1]:
            label = s.label
            raise ArgumentError(
                f"{where}: dim {s.dim} of '{plan.params[s.position].name}' is {got}, which does "
                f"not fit symbolic dim '{label}' ({s.dtype}); declare it "
                f"te.var('{label}', 'int64')"
            )
    for s in plan.scalars:
        _check_scalar(where, s, args[s.position])
        values[f"a{s.position}"] = args[s.position]
    for b in plan.buffers:
        shape = arrays[b.position].shape
        for k, d in enumerate(b.dims):
            _check_dim(where, b, shape, k, d, values, origin)
    for b in plan.buffers:
        flags = getattr(arrays[b.position], "flags", None)  # device arrays are always writable
        if b.written and flags is not None and not flags.writeable:
            raise ArgumentError(
                f"{where}: {_arg(b)} is read-only; the function writes it; pass a writable "
                f"array (np.array(x) copies)"
            )
    (check_overlap or _check_overlap)(where, plan, arrays)
    return values


def _arg(b) -> str:
    return f"argument '{b.name}' (position {b.position})"


def _check_buffer(where: str, b: _Buffer, x) -> np.ndarray:
    if isinstance(x, NDArray) and x.device.is_gpu:
        raise ArgumentError(
            f"{where}: {_arg(b)} is on {x.device}, but '{where[9:-1]}' runs on the CPU; "
            f"copy it to the host first (x.numpy() or x.copyto(tvm.cpu(0)))"
        )
    if isinstance(x, NDArray):
        data = x._data
    elif isinstance(x, np.ndarray):
        data = x
        if not x.flags.c_contiguous:
            raise ArgumentError(
                f"{where}: {_arg(b)} is not C-contiguous (strides {x.strides}); "
                f"pass np.ascontiguousarray({b.name}) or a tvm.nd.array"
            )
    else:
        raise ArgumentError(
            f"{where}: {_arg(b)} must be a tvm.nd.NDArray or numpy.ndarray, got {type(x).__name__}"
        )
    if data.dtype != b.dtype:
        raise DTypeError(
            f"{where}: {_arg(b)} has dtype {data.dtype}, expected {b.dtype}; "
            f"convert with .astype('{b.dtype}')"
        )
    if data.ndim != len(b.dims):
        raise ShapeError(
            f"{where}: {_arg(b)} has shape {data.shape}, expected {b.shape_text}: "
            f"expected {len(b.dims)} dimensions, got {data.ndim}."
        )
    return data


def _check_dim(where, b: _Buffer, shape, k, d: _Dim, values, origin) -> None:
    got = shape[k]
    if d.value is not None:
        if got == d.value:
            return
        rule = f"dim {k} must be {d.value}"
    elif d.sym is not None:
        want = values[f"v{d.sym}"]
        if got == want:
            return
        rule = f"dim {k} must equal {d.text} = {want} ({origin[d.sym]})"
    else:
        try:
            want = _eval(d.expr, values)
        except ZeroDivisionError:
            raise ShapeError(
                f"{where}: {_arg(b)} has shape {shape}, expected {b.shape_text}: dim {k} is "
                f"{d.text}, which divides by zero for these arguments."
            ) from None
        if got == want:
            return
        rule = f"dim {k} must equal {d.text} = {want}"
    raise ShapeError(f"{where}: {_arg(b)} has shape {shape}, expected {b.shape_text}: {rule}.")


def _check_overlap(where: str, plan: _Plan, arrays: dict) -> None:
    for x, y in _overlap_pairs(plan):
        dx, dy = arrays[x.position], arrays[y.position]
        px, py = dx.ctypes.data, dy.ctypes.data
        if not (dx.nbytes and dy.nbytes and px < py + dy.nbytes and py < px + dx.nbytes):
            continue
        same = px == py and dx.shape == dy.shape
        if same and (
            (x.position, y.position) in plan.alias_ok or (y.position, x.position) in plan.alias_ok
        ):
            continue
        if x.written and y.written:
            why = "the function writes both, so the result would be wrong; pass separate arrays"
        else:
            read, written = (x, y) if y.written else (y, x)
            why = (
                f"the function reads {read.name} at other positions than it writes "
                f"{written.name}, so the result would be wrong; pass a copy"
            )
        raise ArgumentError(
            f"{where}: arguments '{x.name}' (position {x.position}) and '{y.name}' (position "
            f"{y.position}) overlap in memory; {why}"
        )


def _check_scalar(where: str, s: _Scalar, x) -> None:
    if s.dtype.is_float:
        if type(x) not in (float, int):
            raise ArgumentError(
                f"{where}: {_arg(s)} must be a number ({s.dtype}), got {type(x).__name__}"
            )
    elif s.dtype.is_bool:
        if type(x) is not bool:
            raise ArgumentError(f"{where}: {_arg(s)} must be a bool, got {type(x).__name__}")
    else:
        if type(x) is not int:
            raise ArgumentError(
                f"{where}: {_arg(s)} must be an int ({s.dtype}), got {type(x).__name__}"
            )
        lo, hi = _int_range(s.dtype)
        if not lo <= x <= hi:
            raise ArgumentError(f"{where}: {_arg(s)} = {x} does not fit in {s.dtype} [{lo}, {hi}]")


# --- the callable ------------------------------------------------------------------------
class PackedFunc:
    """A compiled function: `f(*args)` checks the arguments, then runs native code.

    `f.checker_source` shows the generated check; `f.info` is its FuncInfo.
    """

    __slots__ = ("_fast", "_keepalive", "_plan", "address", "checker_source", "info", "name")

    def __init__(self, info: dict, address: int, keepalive=None) -> None:
        self._plan = _plan(info)
        self.name = info["name"]
        self.info = info
        self.address = address
        self._keepalive = keepalive  # the engine that owns the code
        self.checker_source = _generate(self._plan)
        self._fast = _build_fast(self._plan, self.checker_source, _NATIVE(address), self._failed)

    def _failed(self, rc: int) -> None:
        errors = self._plan.errors
        if 1 <= rc <= len(errors):
            from .packed_callback import take_error  # a packed function's own exception, if any

            raise RuntimeError_(f"calling '{self.name}': {errors[rc - 1]}") from take_error()
        raise RuntimeError_(
            f"calling '{self.name}': an assertion in the compiled code failed (return code {rc})"
        )

    def __call__(self, *args) -> None:
        self._fast(*args)

    def prepare(self, *args):
        """Check `args` through the checked path (raising what a call would raise) and return
        `(native, ptrs, ints)`: the raw entry `native(addressof(ptrs), addressof(ints)) -> rc`
        and its argument arrays filled for `args` (ptrs[k] is the k-th buffer param's data).

        The unchecked fast entry for callers that proved later arguments have the same dtypes
        and shapes (the relax VM: same input-shape signature) and only swap pointers in `ptrs`.
        Never hand it user arguments unchecked; a non-zero rc must go to `self.fail(rc)`."""
        n_ptrs = max(len(self._plan.buffers), 1)
        n_ints = max(len(self._plan.syms) + len(self._plan.scalars), 1)
        ptrs, ints = _capture(self, args, n_ptrs, n_ints)
        return _NATIVE(self.address), ptrs, ints

    def fail(self, rc: int) -> None:
        """Raise the error for a non-zero return code of the native entry."""
        self._failed(rc)

    def bind(self, *args):
        """Check `args` once and return a zero-argument callable that runs the native code on
        them with no further checks (used by time_evaluator); the arrays must stay alive."""
        native, ptrs, ints = self.prepare(*args)
        pa, ia = ctypes.addressof(ptrs), ctypes.addressof(ints)

        def run() -> None:
            rc = native(pa, ia)
            if rc:
                self._failed(rc)

        run.keepalive = (args, ptrs, ints)
        return run

    def __repr__(self) -> str:
        return f"<PackedFunc {self.name}>"


def _build_fast(plan: _Plan, source: str, native, failed):
    """Execute the generated source with its own preallocated argument arrays and lock; the
    result's slow path explains bad arguments and runs good ones through the trusted twin."""
    fast = _exec_checker(plan, source, native, failed)
    trusted = _exec_checker(plan, _generate(plan, overlap=False), native, failed)
    trusted.__globals__["slow"] = lambda args: _unexplained(plan, args)
    fast.__globals__["slow"] = lambda args: _slow(plan, fast, trusted, args)
    return fast


def _exec_checker(plan: _Plan, source: str, native, failed):
    n_ptrs = max(len(plan.buffers), 1)
    n_ints = max(len(plan.syms) + len(plan.scalars), 1)
    ptrs, ints = (ctypes.c_void_p * n_ptrs)(), (ctypes.c_int64 * n_ints)()
    lock = threading.Lock()
    namespace = {
        "NDArray": NDArray,
        "ndarray": np.ndarray,
        "addressof": ctypes.addressof,
        "char_from_buffer": ctypes.c_char.from_buffer,
        "PtrArray": ctypes.c_void_p * n_ptrs,
        "IntArray": ctypes.c_int64 * n_ints,
        "FloatArray": ctypes.c_double * n_ints,
        "ptrs": ptrs,
        "ints": ints,
        "floats": (ctypes.c_double * n_ints).from_buffer(ints),
        "ptrs_addr": ctypes.addressof(ptrs),
        "ints_addr": ctypes.addressof(ints),
        "acquire": lock.acquire,
        "release": lock.release,
        "native": native,
        "failed": failed,
        **{f"dt{b.slot}": b.dtype for b in plan.buffers},
    }
    # the source names everything positionally and holds no string from the FuncInfo
    exec(compile(source, "<minitvm argument check>", "exec"), namespace)  # noqa: S102
    return namespace["fast"]


def _capture(func: PackedFunc, args: tuple, n_ptrs: int, n_ints: int):
    """Run the checked call path once against a recording stub instead of native code; return
    copies of the argument arrays it filled (so raw calls see what a checked call would)."""
    seen = {}

    def record(ptrs_addr: int, ints_addr: int) -> int:
        seen["ptrs"] = (ctypes.c_void_p * n_ptrs).from_buffer_copy(
            (ctypes.c_void_p * n_ptrs).from_address(ptrs_addr)
        )
        seen["ints"] = (ctypes.c_int64 * n_ints).from_buffer_copy(
            (ctypes.c_int64 * n_ints).from_address(ints_addr)
        )
        return 0

    _build_fast(func._plan, func.checker_source, record, func._failed)(*args)
    return seen["ptrs"], seen["ints"]


# --- device functions: the same plan and checks, arguments in device memory ----------------
def _check_device_buffer(kind: str, where: str, b: _Buffer, x):
    """A buffer argument of a function running on `kind` ("opencl", "cuda") devices."""
    device = getattr(x, "device", None)
    if isinstance(x, NDArray) and device.name == kind:
        if x._npdtype != b.dtype:
            raise DTypeError(
                f"{where}: {_arg(b)} has dtype {x.dtype}, expected {DataType(b.dtype)}; "
                f"convert it on the host and copy it again"
            )
        if x.ndim != len(b.dims):
            raise ShapeError(
                f"{where}: {_arg(b)} has shape {x.shape}, expected {b.shape_text}: "
                f"expected {len(b.dims)} dimensions, got {x.ndim}."
            )
        return x
    if isinstance(x, NDArray | np.ndarray) or hasattr(x, "__dlpack__"):
        seen = device if isinstance(x, NDArray) else "host memory"
        raise ArgumentError(
            f"{where}: {_arg(b)} is on {seen}, but '{where[9:-1]}' runs on {kind} devices; "
            f"copy it there first: tvm.nd.array(x, tvm.{kind}(0))"
        )
    raise ArgumentError(
        f"{where}: {_arg(b)} must be a tvm.nd.NDArray on a {kind} device, got {type(x).__name__}"
    )


def _check_device_overlap(where: str, plan: _Plan, arrays: dict) -> None:
    """Device arrays are whole allocations: two arguments overlap only when they are one array."""
    for x, y in _overlap_pairs(plan):
        ax, ay = arrays[x.position], arrays[y.position]
        if ax is not ay or not ax.nbytes:
            continue
        if (x.position, y.position) in plan.alias_ok or (y.position, x.position) in plan.alias_ok:
            continue
        raise ArgumentError(
            f"{where}: arguments '{x.name}' (position {x.position}) and '{y.name}' (position "
            f"{y.position}) are the same array, and the function writes one of them while "
            "reading the other elsewhere; pass separate arrays"
        )


class DevicePackedFunc:
    """A function whose kernels run on a GPU: `f(*args)` checks the arguments with the same
    plan as PackedFunc (FuncInfo: count, dtype, rank, every dim, symbolic dims, overlap), all
    buffers on one device of kind `kind`, then calls `launch(device, args, values)` with the
    symbolic dims ("v<i>") and int scalars ("a<k>") the check found."""

    __slots__ = ("_buffers", "_check", "_launch", "_plan", "info", "kind", "name")

    def __init__(self, info: dict, kind: str, launch) -> None:
        self._plan = _plan(info)
        self._buffers = self._plan.buffers
        self.info, self.kind, self.name = info, kind, info["name"]
        self._launch = launch
        self._check = lambda where, b, x: _check_device_buffer(kind, where, b, x)

    def __call__(self, *args) -> None:
        values = _explain(self._plan, args, self._check, _check_device_overlap)
        devices = {args[b.position].device for b in self._buffers}
        if len(devices) > 1:
            listed = ", ".join(
                f"'{b.name}' on {args[b.position].device}" for b in self._buffers
            )
            raise ArgumentError(
                f"calling '{self.name}': the arguments are on different devices ({listed}); "
                "copy them to one device"
            )
        device = devices.pop() if devices else None
        self._launch(device, args, values)

    def bind(self, *args):
        """A zero-argument callable running `self(*args)` (for time_evaluator)."""
        return lambda: self(*args)

    def __repr__(self) -> str:
        return f"<DevicePackedFunc {self.name} on {self.kind}>"
