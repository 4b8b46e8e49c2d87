"""TVM's `tvm.target.tag`: named targets ("nvidia/tesla-p100") that `Target(name)` expands.

The table is `target._TAGS` (the NVIDIA devices of tags.py, then whatever `register_tag`
adds); a tag is plain data, a target string, so a registered one goes through the same
parsing and checks as any other target."""

from __future__ import annotations

from typing import Any

from ..error import TargetError
from . import kinds as _kinds
from . import target as _target


def list_tags() -> dict[str, _target.Target]:
    """Every known tag -> its Target."""
    return {name: _target.Target(name) for name in _target._TAGS}


def register_tag(name: str, config: str | dict[str, Any], override: bool = False):
    """Register `name` for `config` (a target string, or TVM's dict form: "kind" plus
    options, e.g. {"kind": "cuda", "arch": "sm_80"}); returns its Target."""
    if not isinstance(name, str) or not name or any(c.isspace() for c in name):
        raise TargetError(f"register_tag: a tag is one word such as 'vendor/device', got {name!r}")
    if name in _kinds._KINDS:
        raise TargetError(f"register_tag: '{name}' is a target kind; choose another tag name")
    if name in _target._TAGS and not override:
        raise TargetError(
            f"register_tag: tag '{name}' is already defined as '{_target._TAGS[name]}'; "
            "pass override=True to redefine it"
        )
    text = config if isinstance(config, str) else _config_string(name, config)
    parsed = _target.Target(text)  # refuse a bad config here, not at its first use
    _target._TAGS[name] = str(parsed)
    return parsed


def _config_string(name: str, config: Any) -> str:
    """The target string of TVM's dict form of a tag's config."""
    if not isinstance(config, dict) or not isinstance(config.get("kind"), str):
        raise TargetError(
            f"register_tag('{name}'): config must be a target string or a dict with a 'kind' "
            f"string, got {config!r}"
        )
    words = [config["kind"]]
    for key, value in config.items():
        if key == "kind":
            continue
        if isinstance(value, dict):
            raise TargetError(
                f"register_tag('{name}'): option '{key}' is a dict (a host target?); "
                "register the device target alone and pass host= to Target"
            )
        if isinstance(value, list | tuple):
            value = ",".join(str(v) for v in value)
        option = key if key.startswith("-") else f"-{key}"
        words.append(f"{option}={value}")
    return " ".join(words)
