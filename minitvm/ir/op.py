"""Op: a graph-level operator looked up by name (`tvm.ir.Op.get("relax.add")`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..error import MiniTVMError

# attribute key -> (op -> value or None); filled by the layers above (ir/ imports none of them)
_ATTR_PROVIDERS: dict[str, Callable[[Op], Any]] = {}


def register_op_attr_provider(attr_name: str, provider: Callable[[Op], Any]) -> None:
    """Let `Op.get_attr(attr_name)` answer through `provider(op)`."""
    _ATTR_PROVIDERS[attr_name] = provider


class Op:
    """A graph-level operator (`relax.add`), looked up by name; compared by identity.

    The op table (`relax/op/_table.py`) attaches each op's `OpDef` as `op.op_def`.
    """

    __slots__ = ("name", "op_def")
    _registry: dict[str, Op] = {}

    def __init__(self, name: str):
        self.name, self.op_def = name, None

    @classmethod
    def get(cls, name: str) -> Op:
        try:
            return cls._registry[name]
        except KeyError:
            raise MiniTVMError(
                f"unknown relax op {name!r}; known ops: {sorted(cls._registry)}"
            ) from None

    @classmethod
    def register(cls, name: str) -> Op:
        op = cls._registry.get(name) or cls(name)
        cls._registry[name] = op
        return op

    def get_attr(self, attr_name: str) -> Any:
        """An attribute of the op by TVM's key (`"FPrimalGradient"`, `"FInferStructInfo"`,
        `"TOpPattern"`), or None when the op has none. The providers are registered by the
        layer that defines the attribute (relax/op/grad_api.py for gradients)."""
        provider = _ATTR_PROVIDERS.get(attr_name)
        return None if provider is None else provider(self)

    @classmethod
    def list_op_names(cls) -> list[str]:
        return sorted(cls._registry)

    def __repr__(self) -> str:
        return f'Op("{self.name}")'

    def __reduce__(self):
        raise TypeError("Op is not picklable")
