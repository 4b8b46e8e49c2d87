"""Random variables (BlockRV, LoopRV) and the Trace: a replayable record of schedule calls."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from ..expr import PrimExpr

_ids = itertools.count()


class BlockRV:
    """A handle to a block of a Schedule (resolved by the schedule, valid across primitives)."""

    __slots__ = ("_id",)
    _prefix = "b"

    def __init__(self) -> None:
        self._id = next(_ids)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._id})"


class LoopRV(BlockRV):
    """A handle to a loop of a Schedule."""

    __slots__ = ()
    _prefix = "l"


@dataclass(frozen=True)
class Instruction:
    """One schedule call: `outputs = sch.<kind>(*args, **kwargs)`."""

    kind: str
    args: tuple = ()
    kwargs: tuple = ()  # (name, value) pairs, in call order
    outputs: tuple = ()
    unpack: bool = False  # outputs were returned as a list (get_loops, split)


def _map_value(value: Any, fn: Any) -> Any:
    if isinstance(value, BlockRV):
        return fn(value)
    if isinstance(value, list | tuple):
        return type(value)(_map_value(v, fn) for v in value)
    return value


@dataclass
class Trace:
    """The instructions applied to a Schedule, printable as Python and replayable."""

    insts: list = field(default_factory=list)

    def append(self, inst: Instruction) -> None:
        self.insts.append(inst)

    def copy(self) -> "Trace":
        return Trace(list(self.insts))

    def as_python(self) -> list[str]:
        """One line of Python per instruction, naming RVs b0, l1, ... in order of creation."""
        names: dict[int, str] = {}
        counter = itertools.count()

        def name(rv: BlockRV) -> str:
            if rv._id not in names:
                names[rv._id] = f"{rv._prefix}{next(counter)}"
            return names[rv._id]

        def code(rv: BlockRV) -> _Code:
            return _Code(name(rv))

        lines = []
        for inst in self.insts:
            args = [_render(_map_value(a, code)) for a in inst.args]
            args += [f"{k}={_render(_map_value(v, code))}" for k, v in inst.kwargs]
            call = f"sch.{inst.kind}({', '.join(args)})"
            if inst.outputs:
                outs = ", ".join(name(o) for o in inst.outputs)
                if inst.unpack and len(inst.outputs) == 1:
                    outs += ","
                call = f"{outs} = {call}"
            lines.append(call)
        return lines

    def show(self) -> None:
        print(str(self))  # noqa: T201 - explicit user request to print

    def __str__(self) -> str:
        return "\n".join(["# from minitvm import tir", *self.as_python()])

    __repr__ = __str__

    def apply_to_schedule(self, sch: Any, remove_postproc: bool = False) -> None:
        """Replay every instruction on `sch` (a fresh Schedule of an equivalent function)."""
        rvs: dict[int, Any] = {}

        def lookup(rv: BlockRV) -> Any:
            return rvs[rv._id]

        for inst in self.insts:
            args = [_map_value(a, lookup) for a in inst.args]
            kwargs = {k: _map_value(v, lookup) for k, v in inst.kwargs}
            out = getattr(sch, inst.kind)(*args, **kwargs)
            if not inst.outputs:
                continue
            results = list(out) if inst.unpack else [out]
            for old, new in zip(inst.outputs, results):
                rvs[old._id] = new


class _Code:
    """A value that renders as the given Python source."""

    def __init__(self, text: str) -> None:
        self.text = text


def _render(value: Any) -> str:
    if isinstance(value, _Code):
        return value.text
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_render(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(_render(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, PrimExpr):
        return str(value)
    return repr(value)
