"""Structural equality and hashing of IR, with bound variables compared up to renaming."""

from __future__ import annotations

import enum
import math
from typing import Any

from ..error import TVMError
from .dtype import DataType
from .module import IRModule
from .node import FrozenDict, Node, field_names
from .object_path import ObjectPath, ObjectPathPair
from .recursion import allows_deep_recursion


class StructuralMismatch(TVMError, ValueError, AssertionError):
    """Raised by assert_structural_equal; says where the two IRs first differ (a ValueError, as
    in TVM, and an AssertionError, as a test assertion)."""


def _is_var(x: Any) -> bool:
    return getattr(type(x), "_is_var", False)


def _compare_order(cls: type) -> tuple[str, ...]:
    """Fields in comparison order: definitions first (`_structural_order`, e.g. PrimFunc's
    buffer_map defines the symbolic shape vars its body uses)."""
    return getattr(cls, "_structural_order", None) or field_names(cls)


def _python_and_imm(a: Any, b: Any) -> bool:
    """A Python bool/int equal to a constant of matching kind (TVM stores attribute values as
    IntImm: `{"tir.noalias": True}` is `T.bool(True)` once converted)."""
    if type(a) not in (bool, int) or type(b).__name__ != "IntImm":
        return False
    is_bool = str(b.dtype) == "bool"
    return (type(a) is bool) == is_bool and a == b.value


def _both_sequences(a: Any, b: Any) -> bool:
    return type(a) in (list, tuple) and type(b) in (list, tuple)


def _is_buffer(x: Any) -> bool:
    return getattr(type(x), "_is_buffer", False)


def _defs_of(x: Any, defining: bool) -> Any:
    """The fields of `x` that define the vars they name: its own definition fields, or all of
    them when `x` is an expression in a defining position (TVM's DefEqual maps the subtree)."""
    cls = type(x)
    if defining and getattr(cls, "_defines_through", False):
        return _ALL
    return cls._def_fields


_SAME = object()  # fail(): the rhs path is the lhs path


class _All:
    """Contains every field name."""

    def __contains__(self, name: str) -> bool:
        return True


_ALL = _All()


# A path under comparison is a linked tuple (parent, step, key) or None for the root: cheap to
# build on every descent; it becomes an ObjectPath only when a mismatch is reported.
_ATTR, _INDEX, _KEY = ObjectPath.attr, ObjectPath.array_index, ObjectPath.map_value


def _missing_index(path: ObjectPath, index: int) -> ObjectPath:
    return path.missing_array_element(index)


def _missing_key(path: ObjectPath, _key: Any) -> ObjectPath:
    return path.missing_map_entry()


def _object_path(path: Any, root: ObjectPath) -> ObjectPath:
    steps = []
    while path is not None:
        path, step, key = path
        steps.append((step, key))
    for step, key in reversed(steps):
        root = step(root, key)
    return root


class _Equal:
    def __init__(self, map_free_vars: bool, map_free_buffers: bool = False):
        self.map_free_vars = map_free_vars
        self.map_free_buffers = map_free_buffers
        self.fwd: dict[int, Any] = {}
        self.bwd: dict[int, Any] = {}
        self.keep: list[Any] = []
        # (lhs path, rhs path, lhs value, rhs value) of the first mismatch
        self.mismatch: tuple[Any, Any, Any, Any] | None = None

    def fail(self, path: Any, a: Any, b: Any, rhs_path: Any = _SAME) -> bool:
        if self.mismatch is None:
            self.mismatch = (path, path if rhs_path is _SAME else rhs_path, a, b)
        return False

    def bind(self, a: Any, b: Any) -> None:
        self.fwd[id(a)] = b
        self.bwd[id(b)] = a
        self.keep += (a, b)

    def var(self, a: Any, b: Any, path: Any, defining: bool) -> bool:
        if id(a) in self.fwd:
            return self.fwd[id(a)] is b or self.fail(path, a, b)
        if id(b) in self.bwd:
            return self.fail(path, a, b)
        if a is b and not defining:
            return True
        if (defining or self.map_free_vars) and type(a) is type(b) and a.dtype == b.dtype:
            self.bind(a, b)
            # graph-level vars carry their type (struct info) as fields: compare it at the definition
            fields = getattr(type(a), "_var_fields", ())
            return all(self.eq(getattr(a, f), getattr(b, f), (path, _ATTR, f)) for f in fields)
        return self.fail(path, a, b)

    def buffer(self, a: Any, b: Any, path: Any, defining: bool) -> bool:
        if id(a) in self.fwd:
            return self.fwd[id(a)] is b or self.fail(path, a, b)
        if id(b) in self.bwd:
            return self.fail(path, a, b)
        if not (defining or self.map_free_vars or self.map_free_buffers or a is b):
            # first seen where it is used, not declared: the same buffer only if its memory is
            # (A[i] and B[i] of two different free buffers are not equal, whatever their layout)
            if not self.var(a.data, b.data, (path, _ATTR, "data"), defining=False):
                return False
        self.bind(a, b)  # bind first: a buffer's fields may refer back to it
        return self.fields(a, b, path, defs=type(a)._def_fields)

    def module(self, a: IRModule, b: IRModule, path: Any) -> bool:
        """Modules match when they have the same function names (GlobalVars paired by name),
        equal attrs, and structurally equal functions; each function is compared on its own
        (a symbolic var shared by two functions of one module is bound per function)."""
        names_a, names_b = sorted(a), sorted(b)
        functions = (path, _ATTR, "functions")
        if names_a != names_b:
            return self.fail(functions, names_a, names_b)
        if not self.eq(a.attrs, b.attrs, (path, _ATTR, "attrs")):
            return False
        if not self.eq(a.global_infos, b.global_infos, (path, _ATTR, "global_infos")):
            return False
        pairs = [(a.get_global_var(n), b.get_global_var(n)) for n in names_a]
        for name in names_a:
            sub = _Equal(self.map_free_vars, self.map_free_buffers)
            for ga, gb in pairs:
                sub.bind(ga, gb)
            if not sub.eq(a[name], b[name], (functions, _KEY, name)):
                self.mismatch = self.mismatch or sub.mismatch
                return False
        return True

    def fields(self, a: Node, b: Node, path: Any, defs: Any) -> bool:
        for name in _compare_order(type(a)):
            if not self.eq(getattr(a, name), getattr(b, name), (path, _ATTR, name), name in defs):
                return False
        return True

    def sequence(self, a: Any, b: Any, path: Any, defining: bool) -> bool:
        """Element by element; when one side runs out first, its path is a missing element."""
        for i, (x, y) in enumerate(zip(a, b)):
            if not self.eq(x, y, (path, _INDEX, i), defining):
                return False
        n = min(len(a), len(b))
        if len(a) == len(b):
            return True
        here, missing = (path, _INDEX, n), (path, _missing_index, n)
        if len(a) < len(b):
            return self.fail(missing, None, b[n], rhs_path=here)
        return self.fail(here, a[n], None, rhs_path=missing)

    def mapping(self, a: Any, b: Any, path: Any, defining: bool) -> bool:
        if any(isinstance(k, Node) for k in a):  # node-keyed maps (buffer_map): in order
            if len(a) != len(b):
                return self.fail(path, len(a), len(b))
            return all(
                self.eq(ka, kb, path, defining) and self.eq(va, vb, (path, _INDEX, i), defining)
                for i, ((ka, va), (kb, vb)) in enumerate(zip(a.items(), b.items()))
            )
        for k in a:  # as TVM: the left map's keys in order, then keys only the right one has
            if k not in b:
                return self.fail((path, _KEY, k), a[k], None, rhs_path=(path, _missing_key, k))
            if not self.eq(a[k], b[k], (path, _KEY, k)):
                return False
        for k in b:
            if k not in a:
                return self.fail((path, _missing_key, k), None, b[k], rhs_path=(path, _KEY, k))
        return True

    def eq(self, a: Any, b: Any, path: Any = None, defining: bool = False) -> bool:
        if type(a) is not type(b) and not _both_sequences(a, b):  # a list and a tuple: TVM Arrays
            if _python_and_imm(a, b) or _python_and_imm(b, a):  # True vs T.bool(True) in attrs
                return True
            return self.fail(path, a, b)
        if isinstance(a, IRModule):
            return self.module(a, b, path)
        if isinstance(a, Node):
            if _is_var(a):
                return self.var(a, b, path, defining)
            if _is_buffer(a):
                return self.buffer(a, b, path, defining)
            return self.fields(a, b, path, _defs_of(a, defining))
        if isinstance(a, tuple | list):
            return self.sequence(a, b, path, defining)
        if isinstance(a, FrozenDict | dict):
            return self.mapping(a, b, path, defining)
        if isinstance(a, float):
            return a == b or (math.isnan(a) and math.isnan(b)) or self.fail(path, a, b)
        if isinstance(a, DataType | str | int | bool | enum.Enum) or a is None:
            return a == b or self.fail(path, a, b)
        return a == b or self.fail(path, a, b)


@allows_deep_recursion
def structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> bool:
    """True when two IR values have the same structure (bound variables up to renaming)."""
    return _Equal(map_free_vars).eq(lhs, rhs)


@allows_deep_recursion
def assert_structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> None:
    """Raise StructuralMismatch showing the first place where `lhs` and `rhs` differ."""
    # as TVM's: a buffer defines its memory where first seen, so two standalone statements over
    # copies of the same buffers compare equal (structural_equal, used by the simplifier and the
    # analyses, keeps free buffers apart: A[i] is not B[i])
    checker = _Equal(map_free_vars, map_free_buffers=True)
    if checker.eq(lhs, rhs):
        return
    lhs_path, rhs_path, a, b = checker.mismatch or (None, None, lhs, rhs)
    where = str(_object_path(lhs_path, ObjectPath.root("root")))
    if rhs_path != lhs_path:
        where += f" (rhs: {_object_path(rhs_path, ObjectPath.root('root'))})"
    raise StructuralMismatch(
        f"structural mismatch at {where}:\n  lhs: {_short(a)}\n  rhs: {_short(b)}\n"
        f"--- lhs ---\n{_text(lhs)}\n--- rhs ---\n{_text(rhs)}"
    )


@allows_deep_recursion
def get_first_structural_mismatch(
    lhs: Any, rhs: Any, map_free_vars: bool = False
) -> ObjectPathPair | None:
    """None when `lhs` and `rhs` are structurally equal, else the pair of ObjectPaths (one into
    each side) of the first difference; unpacks as `(lhs_path, rhs_path)`."""
    checker = _Equal(map_free_vars, map_free_buffers=True)
    if checker.eq(_as_ir(lhs), _as_ir(rhs)):
        return None
    lhs_path, rhs_path = checker.mismatch[:2] if checker.mismatch else (None, None)
    return ObjectPathPair(
        _object_path(lhs_path, ObjectPath.root()), _object_path(rhs_path, ObjectPath.root())
    )


def _as_ir(x: Any) -> Any:
    """Containers as TVM converts them: Array and Map compare as tuples and dicts."""
    if isinstance(x, tuple | list):
        return tuple(_as_ir(v) for v in x)
    if isinstance(x, dict):
        return {k: _as_ir(v) for k, v in x.items()}
    return x


def _short(x: Any) -> str:
    text = _text(x)
    return text if len(text) < 300 else text[:300] + " ..."


def _text(x: Any) -> str:
    try:
        return str(x)
    except Exception as err:  # printing must never hide the mismatch itself
        return f"<unprintable {type(x).__name__}: {err}>"


class _Hasher:
    def __init__(self, map_free_vars: bool):
        self.map_free_vars = map_free_vars
        self.defs: dict[int, int] = {}
        self.keep: list[Any] = []

    def define(self, x: Any) -> int:
        self.defs[id(x)] = len(self.defs)
        self.keep.append(x)
        return hash(("def", len(self.defs) - 1))

    def h(self, x: Any, defining: bool = False) -> int:
        if isinstance(x, Node):
            if _is_var(x):
                if id(x) in self.defs:
                    return hash(("var", self.defs[id(x)]))
                if defining or self.map_free_vars:
                    h = self.define(x) ^ hash(str(x.dtype))
                    fields = getattr(type(x), "_var_fields", ())
                    return hash((h, tuple(self.h(getattr(x, f)) for f in fields))) if fields else h
                return hash(("free", id(x)))
            if _is_buffer(x):
                if id(x) in self.defs:
                    return hash(("buf", self.defs[id(x)]))
                self.define(x)
            cls, defs = type(x), _defs_of(x, defining)
            items = tuple(self.h(getattr(x, f), f in defs) for f in _compare_order(cls))
            return hash((cls.__name__, items))
        if isinstance(x, tuple | list):
            return hash(tuple(self.h(v, defining) for v in x))
        if isinstance(x, FrozenDict | dict):
            if any(isinstance(k, Node) for k in x):  # node-keyed maps compare in order
                return hash(tuple((self.h(k), self.h(v)) for k, v in x.items()))
            # other maps (attrs) compare as sets of keys, so they hash in key order
            return hash(tuple((self.h(k), self.h(x[k])) for k in sorted(x, key=str)))
        if isinstance(x, float) and math.isnan(x):
            return hash("nan")
        return hash(x)


@allows_deep_recursion
def structural_hash(node: Any, map_free_vars: bool = False) -> int:
    """A hash consistent with structural_equal."""
    return _Hasher(map_free_vars).h(node)
