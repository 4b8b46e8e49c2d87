"""Op: a graph-level operator looked up by name (`tvm.ir.Op.get("relax.add")`)."""

from __future__ import annotations

from ..error import MiniTVMError


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

    @classmethod
    def list_op_names(cls) -> list[str]:
        return sorted(cls._registry)

    def __repr__(self) -> str:
        return f'Op("{self.name}")'

    def __reduce__(self):
        raise TypeError("Op is not picklable")
