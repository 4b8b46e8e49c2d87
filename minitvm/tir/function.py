"""PrimFunc: a function over buffers whose body is TIR."""

from __future__ import annotations

from typing import Any

from ..error import MiniTVMError
from ..ir.module import BaseFunc
from ..ir.node import FrozenDict, node, setfield
from .buffer import Buffer
from .expr import Var
from .stmt import Stmt


@node
class PrimFunc(BaseFunc):
    """`params` are Vars; those that are handles map to Buffers in `buffer_map`."""

    params: tuple
    body: Stmt
    ret_type: Any = None
    buffer_map: FrozenDict = FrozenDict()
    attrs: FrozenDict = FrozenDict()
    _def_fields = ("params", "buffer_map")  # buffer_map declares the parameter buffers
    # buffer_map before body: its buffers' shapes define the symbolic dims the body uses
    _structural_order = ("params", "buffer_map", "body", "ret_type", "attrs")

    def __post_init__(self):
        setfield(self, "params", tuple(self.params))
        setfield(self, "buffer_map", FrozenDict(self.buffer_map or {}))
        setfield(self, "attrs", FrozenDict(self.attrs or {}))
        for p in self.params:
            if not isinstance(p, Var):
                raise MiniTVMError(f"PrimFunc params must be Vars, got {p!r}")
        for p, buf in self.buffer_map.items():
            if not isinstance(buf, Buffer):
                raise MiniTVMError(f"buffer_map of param '{p.name}' must map to a Buffer")

    @property
    def name(self) -> str | None:
        return self.attrs.get("global_symbol")

    def buffer_params(self) -> list[Buffer]:
        """The buffers bound to the params, in param order (destination-passing order)."""
        return [self.buffer_map[p] for p in self.params if p in self.buffer_map]
