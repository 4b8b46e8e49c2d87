"""The IR node base: frozen slotted dataclasses made by one decorator, changed only by `replace`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from ..error import ArgumentError, MiniTVMError

T = TypeVar("T")


class Node:
    """Base of every IR node. Nodes are immutable; `==` on expressions builds IR (see PrimExpr).

    Subclasses list the fields that *define* variables (loop vars, let vars, params) in
    `_def_fields`; structural equality maps those bijectively instead of by identity.
    """

    __slots__ = ()
    _def_fields: tuple[str, ...] = ()

    def replace(self: T, **changes: Any) -> T:
        """A copy with `changes` applied; returns `self` itself when every value is unchanged."""
        for name, value in changes.items():
            if getattr(self, name) is not value:
                return dataclasses.replace(self, **changes)  # type: ignore[type-var]
        return self

    def same_as(self, other: Any) -> bool:
        """Identity: the very same node object (TVM's reference equality; `==` builds IR)."""
        return self is other

    def script(self, **kwargs: Any) -> str:
        """The node as TVMScript-style text."""
        return _printer_for(type(self))(self, **kwargs)

    def show(self, **kwargs: Any) -> None:
        """Print `script()` (convenience used throughout the MLC course)."""
        print(self.script(**kwargs))  # noqa: T201 - explicit user request to print

    def __str__(self) -> str:
        return self.script()

    def __repr__(self) -> str:
        return self.script()

    def __reduce__(self):
        raise TypeError(f"{type(self).__name__} is not picklable by design; use .script()")


def node(cls: type[T]) -> type[T]:
    """Class decorator turning a Node subclass into a frozen, slotted dataclass."""
    out = dataclasses.dataclass(frozen=True, slots=True, eq=False, repr=False)(cls)
    out._field_names = tuple(f.name for f in dataclasses.fields(out))  # type: ignore[attr-defined]
    return out


def field_names(cls: type) -> tuple[str, ...]:
    """Dataclass field names of a node class, in declaration order."""
    return cls._field_names  # type: ignore[attr-defined]


def setfield(obj: Node, name: str, value: Any) -> None:
    """Set a field during `__post_init__` normalisation (the only place nodes are written)."""
    object.__setattr__(obj, name, value)


def set_tuple_field(obj: Node, name: str, kind: type, what: str) -> None:
    """Normalise field `name` to a tuple whose items are all `kind`s; `what` names them in
    the error otherwise (`Tuple fields must be relax expressions, got 1`)."""
    value = getattr(obj, name)
    if not isinstance(value, tuple | list) and not hasattr(value, "__iter__"):
        raise ArgumentError(f"{type(obj).__name__} {name} must be a list of {what}, got {value!r}")
    items = tuple(value)
    for item in items:
        if not isinstance(item, kind):
            raise MiniTVMError(f"{type(obj).__name__} {name} must be {what}, got {item!r}")
    setfield(obj, name, items)


class FrozenDict(Mapping):
    """An immutable, ordered mapping used for IR attributes and buffer maps."""

    __slots__ = ("_d", "_hash")

    def __init__(self, items: Mapping | Any = ()):
        object.__setattr__(self, "_d", dict(items))
        object.__setattr__(self, "_hash", None)

    def __getitem__(self, key: Any) -> Any:
        return self._d[key]

    def __iter__(self) -> Iterator:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("FrozenDict is immutable; build a new one with .set(key, value)")

    def set(self, key: Any, value: Any) -> "FrozenDict":
        d = dict(self._d)
        d[key] = value
        return FrozenDict(d)

    def __repr__(self) -> str:
        return f"FrozenDict({self._d!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenDict):
            return self._d == other._d
        if isinstance(other, Mapping):
            return self._d == dict(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self._d.items()))


# --- printer registry: lower layers print through a hook set by the level that knows the syntax.
_PRINTERS: dict[type, Callable[..., str]] = {}


def register_printer(base: type, fn: Callable[..., str]) -> None:
    """Make `fn(node, **kw) -> str` print every node whose class derives from `base`."""
    _PRINTERS[base] = fn


def by_class(table: Mapping[type, Any], cls: type) -> Any:
    """`table`'s entry for `cls` or, failing that, for its nearest base class listed; None
    when no class of its MRO is listed (the rule tables of printers and code generators)."""
    rule = table.get(cls)
    if rule is None:
        rule = next((table[k] for k in cls.__mro__ if k in table), None)
    return rule


def _printer_for(cls: type) -> Callable[..., str]:
    return by_class(_PRINTERS, cls) or _fallback_print


def _fallback_print(n: Node, **_: Any) -> str:
    parts = ", ".join(f"{f}={getattr(n, f)!r}" for f in field_names(type(n)))
    return f"{type(n).__name__}({parts})"
