"""The registry of fusion patterns that external backends offload (TVM's
`relax.backend.pattern_registry`).

A backend registers `FusionPattern`s (or the tuples FusionPattern takes) named
"<backend>.<what>"; `get_patterns_with_prefix("<backend>")` hands them to FuseOpsByPattern, most
recently registered first, because FuseOpsByPattern lets earlier patterns win and a backend
registers its general patterns before the fused ones that should take precedence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..transform.fuse_ops_by_pattern import FusionPattern, _as_fusion_pattern

_REGISTRY: dict[str, FusionPattern] = {}  # name -> pattern, in registration order


def register_patterns(patterns: Sequence[Any]) -> None:
    """Register FusionPatterns (or `(name, pattern, annotations, check)` tuples); registering a
    name again replaces the old pattern and makes it the most recent."""
    for item in patterns:
        fp = _as_fusion_pattern(item)
        _REGISTRY.pop(fp.name, None)
        _REGISTRY[fp.name] = fp


def get_patterns_with_prefix(prefix: str) -> list[FusionPattern]:
    """The patterns whose name starts with `prefix`, highest priority (latest registered) first."""
    return [fp for name, fp in reversed(_REGISTRY.items()) if name.startswith(prefix)]


def get_pattern(name: str) -> FusionPattern | None:
    """The pattern registered as `name`, or None."""
    return _REGISTRY.get(name)


__all__ = ["get_pattern", "get_patterns_with_prefix", "register_patterns"]
