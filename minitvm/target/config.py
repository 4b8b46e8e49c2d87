"""A Target from TVM's dict form: `Target({"kind": "llvm", "mcpu": "skylake", "host": {...}})`.

The dict is turned into the target string once, so both spellings share one parser and print
the same; every key is checked against this table first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..error import TargetError
from .kinds import kind_spec


def _text(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value or any(c.isspace() or c == "=" for c in value):
        raise TargetError(
            f"Target dict: '{key}' must be a non-empty string without spaces, got {value!r}"
        )
    return value


def _int(key: str, value: Any) -> str:
    if type(value) is not int or value < 0:
        raise TargetError(f"Target dict: '{key}' must be a non-negative int, got {value!r}")
    return str(value)


def _names(key: str, value: Any) -> str:
    """A list of names (keys, libs, mattr) written comma-separated; a plain string is one list."""
    if isinstance(value, str):
        value = [v for v in value.split(",") if v]
    if not isinstance(value, list | tuple) or not value:
        raise TargetError(
            f"Target dict: '{key}' must be a non-empty list of strings, got {value!r}"
        )
    return ",".join(_text(key, v) for v in value)


# dict key -> (option name in the target string, value check); TVM spells them this way
_COMMON: dict[str, tuple[str, Callable[[str, Any], str]]] = {
    "mcpu": ("mcpu", _text),
    "mtriple": ("mtriple", _text),
    "mattr": ("mattr", _names),
    "num-cores": ("num-cores", _int),
    "opt-level": ("opt-level", _int),
    "keys": ("keys", _names),
    "libs": ("libs", _names),
    "model": ("model", _text),
    "tag": ("tag", _text),
}
# keys only a GPU kind has (its device attributes)
_GPU: dict[str, tuple[str, Callable[[str, Any], str]]] = {
    "arch": ("arch", _text),
    "max_num_threads": ("max_num_threads", _int),
    "max_threads_per_block": ("max_threads_per_block", _int),
    "max_shared_memory_per_block": ("max_shared_memory_per_block", _int),
    "thread_warp_size": ("thread_warp_size", _int),
    "registers_per_block": ("registers_per_block", _int),
}


def config_to_string(config: Mapping) -> tuple[str, Any]:
    """(target string, host config or None) of a TVM target dict; TargetError naming a bad key."""
    if not all(isinstance(k, str) for k in config):
        raise TargetError(f"Target dict: keys must be strings, got {list(config)!r}")
    if "kind" not in config:
        raise TargetError(
            f"Target dict: missing 'kind' (e.g. {{'kind': 'llvm', 'mcpu': 'skylake'}}); "
            f"got keys {sorted(config)}"
        )
    kind = _text("kind", config["kind"])
    spec = kind_spec(kind)
    table = {**_COMMON, **(_GPU if spec.gpu else {})}
    words = [kind]
    for key, value in config.items():
        if key in ("kind", "host"):
            continue
        if key not in table:
            raise TargetError(
                f"Target dict: unknown key '{key}' for target kind '{kind}'; known keys: "
                f"kind, host, {', '.join(table)}"
            )
        option, check = table[key]
        words.append(f"-{option}={check(key, value)}")
    return " ".join(words), config.get("host")  # Target(host) checks it
