"""PrimFunc: a function over buffers whose body is TIR."""

from __future__ import annotations

from typing import Any

from ..error import MiniTVMError
from ..ir.dtype import DataType
from ..ir.module import BaseFunc
from ..ir.node import FrozenDict, node, setfield
from .buffer import Buffer
from .expr import Var
from .stmt import Stmt


@node
class PrimFunc(BaseFunc):
    """`params` are Vars; those that are handles map to Buffers in `buffer_map`.

    As in TVM, a Buffer given as a parameter stands for a new handle Var bound to it:
    `PrimFunc([A, n], body)` is `PrimFunc([a, n], body, buffer_map={a: A})`.
    """

    params: tuple
    body: Stmt
    ret_type: Any = None
    buffer_map: FrozenDict = FrozenDict()
    attrs: FrozenDict = FrozenDict()
    _def_fields = ("params", "buffer_map")  # buffer_map declares the parameter buffers
    # buffer_map before body: its buffers' shapes define the symbolic dims the body uses
    _structural_order = ("params", "buffer_map", "body", "ret_type", "attrs")

    def __post_init__(self):
        params, buffer_map = _split_buffer_params(self.params, self.buffer_map)
        setfield(self, "params", params)
        setfield(self, "buffer_map", buffer_map)
        setfield(self, "attrs", FrozenDict(self.attrs or {}))
        for p in self.params:
            if not isinstance(p, Var):
                raise MiniTVMError(
                    f"PrimFunc params must be tir.Var or tir.Buffer, got {type(p).__name__} "
                    f"{p!r}"
                )
        for p, buf in self.buffer_map.items():
            if not isinstance(buf, Buffer):
                raise MiniTVMError(f"buffer_map of param '{p.name}' must map to a Buffer")

    @property
    def name(self) -> str | None:
        return self.attrs.get("global_symbol")

    @property
    def __name__(self) -> str:
        """The exported name, as TVMScript's `@T.prim_func` sets it (a private one has none)."""
        if "global_symbol" not in self.attrs:
            raise AttributeError("this PrimFunc is private: it has no global_symbol to name it")
        return str(self.attrs["global_symbol"])

    def specialize(self, param_map: Any) -> PrimFunc:
        """Fix parameters to buffers or values (see `tir/specialize.py`)."""
        from .specialize import specialize

        return specialize(self, param_map)

    def buffer_params(self) -> list[Buffer]:
        """The buffers bound to the params, in param order (destination-passing order)."""
        return [self.buffer_map[p] for p in self.params if p in self.buffer_map]


def _split_buffer_params(params: Any, buffer_map: Any) -> tuple[tuple, FrozenDict]:
    """Replace each Buffer in `params` by a fresh handle Var that `buffer_map` binds to it."""
    params = tuple(params)
    if not any(isinstance(p, Buffer) for p in params):
        return params, FrozenDict(buffer_map or {})
    bound = dict(buffer_map or {})
    out = []
    for p in params:
        if isinstance(p, Buffer):
            handle = Var(p.name, DataType("handle"))
            bound[handle] = p
            p = handle
        out.append(p)
    return tuple(out), FrozenDict(bound)
