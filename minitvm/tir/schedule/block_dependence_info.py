"""BlockDependenceInfo (TVM's): the block scopes of a module without a Schedule. Its srefs
cover blocks only, so a block sref's parent is the sref of its scope block."""

from __future__ import annotations

from typing import Any

from ...error import ScheduleError
from ...ir.module import IRModule
from ..function import PrimFunc
from ..stmt import Block
from .block_scope import BlockScope
from .state import StmtSRef
from .tree import walk


class BlockDependenceInfo:
    """`BlockDependenceInfo(mod).get_block_scope(info.get_sref(block).parent)` gives the
    dependencies between `block` and its sibling blocks."""

    def __init__(self, mod: IRModule | PrimFunc) -> None:
        if isinstance(mod, PrimFunc):
            mod = IRModule({"main": mod})
        if not isinstance(mod, IRModule):
            raise ScheduleError(
                f"BlockDependenceInfo takes an IRModule or a PrimFunc, got {type(mod).__name__}"
            )
        self.mod = mod
        self._srefs: dict[int, StmtSRef] = {}
        children: dict[int, list[StmtSRef]] = {}
        for _, func in mod.functions_items():
            if not isinstance(func, PrimFunc):
                continue
            for s, path in walk(func.body):
                if not isinstance(s, Block):
                    continue
                scope = next((p for p in reversed(path) if isinstance(p, Block)), None)
                parent = self._srefs[id(scope)] if scope is not None else None
                sref = StmtSRef(s, parent)
                self._srefs[id(s)] = sref
                if parent is not None:
                    children.setdefault(id(parent), []).append(sref)
        self._scopes = {
            id(sref): BlockScope(children.get(id(sref), [])) for sref in self._srefs.values()
        }

    def get_sref(self, block: Any) -> StmtSRef | None:
        """The sref of a Block of the module (None when it is not in it)."""
        return self._srefs.get(id(block))

    def get_block_scope(self, scope_root: StmtSRef) -> BlockScope:
        """The dependencies among the child blocks of the block `scope_root`."""
        scope = self._scopes.get(id(scope_root))
        if scope is None:
            raise ScheduleError(
                f"get_block_scope: {scope_root!r} is not the sref of a block of this module; "
                "pass info.get_sref(block) (or its .parent, the scope block)"
            )
        return scope
