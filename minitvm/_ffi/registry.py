"""`tvm._ffi.registry`: global functions (the runtime registry) and object type keys."""

from __future__ import annotations

from collections.abc import Callable

from ..error import ArgumentError
from ..runtime.registry import (
    get_global_func,
    list_global_func_names,
    register_func,
    remove_global_func,
)

_OBJECT_TYPES: dict[str, type] = {}


def register_object(type_key: str | type | None = None) -> Callable[[type], type] | type:
    """Record a Python class under a type key (`@register_object("my.Node")`, or bare, which
    uses the class name). minitvm objects are plain Python classes, so the class is returned
    unchanged; `get_object_type(key)` finds it again."""

    def register(cls: type, key: str | None = None) -> type:
        if not isinstance(cls, type):
            raise ArgumentError(f"register_object: expected a class, got {type(cls).__name__}")
        name = key or cls.__name__
        other = _OBJECT_TYPES.get(name)
        if other is not None and other is not cls:
            raise ArgumentError(
                f"register_object: type key {name!r} is already registered for "
                f"{other.__module__}.{other.__qualname__}; choose another key"
            )
        _OBJECT_TYPES[name] = cls
        return cls

    if isinstance(type_key, type):
        return register(type_key)
    if type_key is not None and not isinstance(type_key, str):
        raise ArgumentError(f"register_object: the type key must be a str, got {type_key!r}")
    return lambda cls: register(cls, type_key)


def get_object_type(type_key: str) -> type | None:
    """The class registered under `type_key`, or None."""
    return _OBJECT_TYPES.get(type_key)


__all__ = [
    "get_global_func",
    "get_object_type",
    "list_global_func_names",
    "register_func",
    "register_object",
    "remove_global_func",
]
