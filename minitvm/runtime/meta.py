"""Metadata of exported modules is data, never code: the strict validator of meta.json and of
every FuncInfo (docs/contracts.md §3), run at load before anything else reads a string, and
the checksums that bind meta.json to the object code it describes.

Rules, in one place: every field has one type; names are printable; symbolic dims are
identifiers; a shape entry is an int in [0, 2**63), a symbolic dim's name, or integer arithmetic
(+ - * // %, unary -, min, max) over ints, symbolic dims and int scalar params; every
param/dim reference is in range. Anything else raises RuntimeError_ naming the field.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping

from ..error import MiniTVMError, RuntimeError_
from ..ir.dtype import DataType
from .packed_plan import parse_shape_expr

_MAX_INT = 2**63 - 1
_FUNC_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,199}")
_DIM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
_DTYPE = re.compile(r"[a-z]+[0-9]*(x[0-9]+)?")
_WORD = re.compile(r"[A-Za-z0-9_.+-]{1,128}")
_FEATURES = re.compile(r"([+-][A-Za-z0-9_.-]+(,[+-][A-Za-z0-9_.-]+)*)?")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_MAX_PARAMS, _MAX_NDIM, _MAX_FUNCS, _MAX_EXPR = 4096, 64, 100_000, 1000

_EXPR_CALLS = ("min", "max")  # names a symbolic dim may not take


def canonical_json(value) -> bytes:
    """The one byte encoding used for hashing JSON values (sorted keys, no spaces, ASCII)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def signature_bytes(func_infos) -> bytes:
    """What codegen embeds as the object's `minitvm.signature` data symbol (elf.py): the
    canonical JSON of the FuncInfo list, so the loader can tell metadata from another object."""
    return canonical_json(list(func_infos))


def signature_llvm_ir(func_infos) -> str:
    """LLVM IR text of the `minitvm.signature` constant, for objects compiled from hand-written
    IR (tests, benchmarks); codegen emits the same constant through llvmlite's builder."""
    data = signature_bytes(func_infos)
    chars = "".join(f"\\{b:02X}" for b in data)
    return f'@"minitvm.signature" = constant [{len(data)} x i8] c"{chars}"\n'


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _Where:
    """The path of the field being checked, for messages: meta.json: func_infos[0].params[1]."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __truediv__(self, part) -> _Where:
        return _Where(f"{self.path}[{part}]" if isinstance(part, int) else f"{self.path}.{part}")

    def fail(self, what: str) -> RuntimeError_:
        return RuntimeError_(f"{self.path}: {what}; the file is damaged or was tampered with")


def _require(value, kind: type, where: _Where):
    if type(value) is not kind:  # exact: a bool is not an int, a subclass is not a str
        raise where.fail(f"expected {kind.__name__}, got {type(value).__name__}")
    return value


def _string(value, where: _Where, pattern: re.Pattern | None = None, limit: int = 256) -> str:
    _require(value, str, where)
    if len(value) > limit:
        raise where.fail(f"string of {len(value)} characters (at most {limit})")
    if pattern is not None and not pattern.fullmatch(value):
        raise where.fail(f"{value[:80]!r} is not of the form {pattern.pattern}")
    if not value.isprintable():
        raise where.fail(f"{value[:80]!r} contains control characters")
    return value


def _index(value, where: _Where, size: int) -> int:
    _require(value, int, where)
    if not 0 <= value < size:
        raise where.fail(f"{value} is out of range [0, {size})")
    return value


def _list(value, where: _Where, limit: int) -> list:
    _require(value, list, where)
    if len(value) > limit:
        raise where.fail(f"{len(value)} entries (at most {limit})")
    return value


def _keys(value, where: _Where, required: tuple, optional: tuple = ()) -> dict:
    _require(value, dict, where)
    missing = [k for k in required if k not in value]
    unknown = [k for k in value if k not in required and k not in optional]
    if missing or unknown:
        raise where.fail(f"missing keys {missing}, unknown keys {unknown[:5]}")
    return value


def _dtype(value, where: _Where) -> DataType:
    _string(value, where, _DTYPE, limit=32)
    try:
        dtype = DataType(value)
        dtype.numpy_dtype()  # handles and vector dtypes have none
    except (MiniTVMError, ValueError, TypeError, KeyError) as err:
        raise where.fail(f"dtype {value!r} is not a dtype minitvm knows") from err
    return dtype


# --- FuncInfo ------------------------------------------------------------------------------
def validate_func_info(info, where: str) -> dict:
    """Check one FuncInfo field by field; returns it unchanged or raises RuntimeError_."""
    here = _Where(where)
    optional = ("symbol", "sym_vars", "errors", "asserts", "writes", "alias_ok")
    _keys(info, here, ("name", "params"), optional)
    name = _string(info["name"], here / "name", _FUNC_NAME)
    # codegen always writes the symbol; hand-written test objects use the bare name (the loader
    # checks that the object defines whichever it is)
    symbol = info.get("symbol", name)
    if _string(symbol, here / "symbol", limit=300) not in (f"minitvm.{name}", name):
        raise (here / "symbol").fail(f"{info['symbol']!r} is not 'minitvm.{name}'")
    params = _list(info["params"], here / "params", _MAX_PARAMS)
    for k, p in enumerate(params):
        _param(p, here / "params" / k)
    sym_names = _sym_vars(info.get("sym_vars", []), here / "sym_vars", params)
    int_scalars = {  # what shape expressions call int scalar params ("ref" when renamed)
        p.get("ref", p["name"])
        for p in params
        if p["kind"] == "scalar" and DataType(p["dtype"]).is_integer
    }
    for k, p in enumerate(params):
        for d, entry in enumerate(p.get("shape", ())):
            if type(entry) is str:
                _shape_expr(entry, here / "params" / k / "shape" / d, sym_names, int_scalars)
    buffers = {k for k, p in enumerate(params) if p["kind"] == "buffer"}
    _positions(info.get("writes", []), here / "writes", buffers)
    pairs = _list(info.get("alias_ok", []), here / "alias_ok", _MAX_PARAMS)
    for k, pair in enumerate(pairs):
        _list(pair, here / "alias_ok" / k, 2)
        if len(pair) != 2:
            raise (here / "alias_ok" / k).fail("expected an [input, output] pair")
        _positions(pair, here / "alias_ok" / k, buffers)
    for key in ("errors", "asserts"):  # messages for native return codes (codegen's name varies)
        for k, message in enumerate(_list(info.get(key, []), here / key, 100_000)):
            _string(message, here / key / k, limit=4000)
    return info


def _param(p, where: _Where) -> None:
    kind = _require(_require(p, dict, where).get("kind"), str, where / "kind")
    if kind == "buffer":
        _keys(p, where, ("name", "kind", "dtype", "shape"))
    elif kind == "scalar":
        _keys(p, where, ("name", "kind", "dtype"), ("ref",))
        if "ref" in p:
            _string(p["ref"], where / "ref", _DIM_NAME)
    else:
        raise (where / "kind").fail(f"unknown param kind {kind[:40]!r}; expected buffer or scalar")
    _string(p["name"], where / "name")
    _dtype(p["dtype"], where / "dtype")
    for d, entry in enumerate(_list(p.get("shape", []), where / "shape", _MAX_NDIM)):
        if type(entry) is int:
            if not 0 <= entry <= _MAX_INT:
                raise (where / "shape" / d).fail(f"dimension {entry} is not in [0, 2**63)")
        elif type(entry) is not str:
            raise (where / "shape" / d).fail(f"expected an int or a string, got {type(entry)}")


def _sym_vars(sym_vars, where: _Where, params: list) -> set[str]:
    names: set[str] = set()
    for k, s in enumerate(_list(sym_vars, where, _MAX_PARAMS * _MAX_NDIM)):
        here = where / k
        _keys(s, here, ("name", "dtype", "param", "dim"), ("label",))
        name = _string(s["name"], here / "name", _DIM_NAME)
        _string(s.get("label", name), here / "label")
        if name.startswith("__") or name in _EXPR_CALLS or name in names:
            raise (here / "name").fail(f"symbolic dim name {name!r} is reserved or repeated")
        dtype = _dtype(s["dtype"], here / "dtype")
        if not (dtype.is_int or dtype.is_uint):
            raise (here / "dtype").fail(f"symbolic dim of non-integer dtype {s['dtype']!r}")
        param = params[_index(s["param"], here / "param", len(params))]
        if param["kind"] != "buffer":
            raise (here / "param").fail(f"param {s['param']} is a scalar, it has no dims")
        _index(s["dim"], here / "dim", len(param["shape"]))
        if param["shape"][s["dim"]] != name:
            raise here.fail(f"param {s['param']} dim {s['dim']} is not {name!r}")
        names.add(name)
    return names


def _shape_expr(text: str, where: _Where, sym_names: set, int_scalars: set) -> None:
    _string(text, where, limit=_MAX_EXPR)
    if text in sym_names:
        return
    names = {n: n for n in sym_names | int_scalars}
    try:
        parse_shape_expr("", text, names)  # the argument checker's grammar: one rule
    except RuntimeError_ as err:
        raise where.fail(
            f"shape entry {text[:80]!r} is not integer arithmetic (+ - * // % min max) "
            "over ints and symbolic dims"
        ) from err


def _positions(values, where: _Where, allowed: set[int]) -> None:
    seen = set()
    for k, v in enumerate(_list(values, where, _MAX_PARAMS)):
        _require(v, int, where / k)
        if v not in allowed or (where.path.endswith("writes") and v in seen):
            raise (where / k).fail(f"{v} is not a (distinct) buffer param position")
        seen.add(v)


# --- meta.json -----------------------------------------------------------------------------
# top-level key -> checker(value, where); keys a module-less file (kind != module) may omit
_TOP: dict[str, Callable] = {
    "format": lambda v, w: _string(v, w, _WORD),
    "format_version": lambda v, w: _require(v, int, w),
    "kind": lambda v, w: _string(v, w, _FUNC_NAME),
    "minitvm_version": lambda v, w: _string(v, w, _WORD),
    "host_cpu": lambda v, w: _string(v, w, _WORD),
    "host_features": lambda v, w: _string(v, w, _FEATURES, limit=16384),
    "required_features": lambda v, w: [
        _string(f, w / k, _WORD) for k, f in enumerate(_list(v, w, 1024))
    ],
    "checksums": lambda v, w: _checksums(v, w),
    "target": lambda v, w: _string(v, w, limit=1024),
    "entry_name": lambda v, w: _string(v, w, _FUNC_NAME),
    "func_infos": lambda v, w: [
        validate_func_info(f, (w / k).path) for k, f in enumerate(_list(v, w, _MAX_FUNCS))
    ],
}
_MODULE_KEYS = ("target", "entry_name", "func_infos")


def _checksums(value, where: _Where) -> None:
    _require(value, dict, where)
    if len(value) > _MAX_FUNCS:
        raise where.fail("too many entries")
    for member, digest in value.items():
        _string(member, where / "member", limit=256)
        _string(digest, where / member, _HEX64, limit=64)


def validate_meta(meta, where: str, has_object: bool) -> dict:
    """Check every field of a meta.json value (after the format version check)."""
    here = _Where(f"{where}: meta.json")
    required = tuple(k for k in _TOP if k not in _MODULE_KEYS)
    _keys(meta, here, required + (_MODULE_KEYS if has_object else ()), _MODULE_KEYS)
    for key, check in _TOP.items():
        if key in meta:
            check(meta[key], here / key)
    if has_object:
        names = [f["name"] for f in meta["func_infos"]]
        if not names or len(set(names)) != len(names):
            raise (here / "func_infos").fail(f"function names {names[:10]} are empty or repeated")
        if meta["entry_name"] not in names:
            raise (here / "entry_name").fail(f"{meta['entry_name']!r} is not one of {names[:10]}")
    return meta


def meta_digest(meta: Mapping) -> str:
    """sha256 of the canonical JSON of meta.json without its checksums field."""
    return sha256(canonical_json({k: v for k, v in meta.items() if k != "checksums"}))
