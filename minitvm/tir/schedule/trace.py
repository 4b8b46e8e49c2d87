"""The Trace: the instructions applied to a Schedule and the decisions of its sampling steps.

It prints as Python (`as_python`), serialises to JSON data (`as_json`) and replays on a
fresh schedule (`apply_to_schedule`, `apply_json_to_schedule`). JSON is read as data: a kind
is looked up in the instruction table, a name in the replay's own variables; nothing is
evaluated.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...error import MiniTVMError, ScheduleError
from ..expr import FloatImm, IntImm, PrimExpr, StringImm
from . import trace_check
from .instruction import (
    BlockRV,
    Code,
    Instruction,
    InstructionKind,
    LoopRV,
    is_rv,
    map_rvs,
    rv_prefix,
)
from .trace_lambda import TraceLambda, is_index_function, lambda_source


class _Namer:
    """Names RVs in order of first definition, as TVM does: b0, l1, l2, v3, ..."""

    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.count = 0
        self._none_named = False

    def define(self, rv: Any) -> str:
        if rv is None:
            if not self._none_named:  # TVM counts the undefined output once
                self._none_named = True
                self.count += 1
            return "_"
        if id(rv) in self.names:
            raise ScheduleError(f"trace: random variable {rv!r} is produced twice")
        name = f"{rv_prefix(rv)}{self.count}"
        self.count += 1
        self.names[id(rv)] = name
        return name

    def use(self, rv: Any) -> str:
        name = self.names.get(id(rv))
        if name is None:
            raise ScheduleError(
                f"trace: random variable {rv!r} is used before an instruction defines it"
            )
        return name


class Trace:
    """Instructions in order plus the decisions of the sampling ones (keyed by instruction)."""

    def __init__(self, insts: list | None = None, decisions: dict | None = None) -> None:
        self.insts: list[Instruction] = list(insts or [])
        self.decisions: dict[Instruction, Any] = dict(decisions or {})

    # ---------------------------------------------------------------- editing
    def get_decision(self, inst: Instruction) -> Any:
        return self.decisions.get(inst)

    def append(self, inst: Instruction, decision: Any = None) -> None:
        self.insts.append(inst)
        if decision is not None:
            self.decisions[inst] = decision

    def pop(self) -> Instruction | None:
        if not self.insts:
            return None
        inst = self.insts.pop()
        self.decisions.pop(inst, None)
        return inst

    def copy(self) -> Trace:
        return Trace(list(self.insts), dict(self.decisions))

    def _valid(self, remove_postproc: bool) -> list[Instruction]:
        if not remove_postproc:
            return list(self.insts)
        out = []
        for inst in self.insts:
            if inst.kind._is_postproc:
                break
            out.append(inst)
        return out

    def with_decision(self, inst: Instruction, decision: Any, remove_postproc: bool) -> Trace:
        """A new trace whose `inst` takes `decision`."""
        insts = self._valid(remove_postproc)
        decisions = {i: d for i, d in self.decisions.items() if i in set(insts)}
        decisions[inst] = decision
        return Trace(insts, decisions)

    def simplified(self, remove_postproc: bool) -> Trace:
        """Drop pure instructions whose outputs nothing uses (and the postproc part if asked)."""
        used: set[int] = set()
        kept: list[Instruction] = []
        for inst in reversed(self._valid(remove_postproc)):
            needed = not inst.kind.is_pure or any(
                id(o) in used for o in inst.outputs if o is not None
            )
            if not needed:
                continue
            kept.append(inst)
            map_rvs(inst.inputs, lambda rv: used.add(id(rv)))
        kept.reverse()
        return Trace(kept, {i: d for i, d in self.decisions.items() if i in set(kept)})

    # ---------------------------------------------------------------- printing
    def as_python(self, remove_postproc: bool = False) -> list[str]:
        """One line of Python per instruction, naming RVs b0, l1, v2, ... in order of creation."""
        namer = _Namer()
        lines = []
        for inst in self._valid(remove_postproc):
            inputs = map_rvs(inst.inputs, lambda rv: Code(namer.use(rv)))
            outputs = [namer.define(o) for o in inst.outputs]
            lines.append(inst.kind.as_python(inputs, inst.attrs, self.get_decision(inst), outputs))
        return lines

    def __str__(self) -> str:
        body = ["  " + line for line in self.as_python()] or ["  pass"]
        return "\n".join(
            ["# from tvm import tir", "def apply_trace(sch: tir.Schedule) -> None:"] + body
        )

    __repr__ = __str__

    def show(self, style: Any = None, black_format: Any = None) -> None:
        print(str(self))

    # ---------------------------------------------------------------- replay
    def apply_to_schedule(
        self,
        sch: Any,
        remove_postproc: bool = False,
        decision_provider: Callable | None = None,
    ) -> None:
        """Replay every instruction on `sch` (a fresh Schedule of an equivalent module)."""
        rvs: dict[int, Any] = {}

        def lookup(rv: Any) -> Any:
            if id(rv) not in rvs:
                raise ScheduleError(
                    f"trace: random variable {rv!r} is used before an instruction defines it"
                )
            return rvs[id(rv)]

        for inst in self._valid(remove_postproc):
            inputs = map_rvs(inst.inputs, lookup)
            decision = self.get_decision(inst)
            if decision_provider is not None:
                decision = decision_provider(inst, inputs, inst.attrs, decision)
            outputs = inst.kind.apply(sch, inputs, inst.attrs, decision)
            _bind_outputs(inst, inst.outputs, outputs, rvs.__setitem__, key=id)

    # ---------------------------------------------------------------- JSON
    def as_json(self, remove_postproc: bool = False) -> list:
        """[[[kind, inputs, attrs, outputs], ...], [[index, decision], ...]] as plain data."""
        namer = _Namer()
        insts, decisions = [], []
        for i, inst in enumerate(self._valid(remove_postproc)):
            inputs = [_input_to_json(v, namer, inst) for v in inst.inputs]
            attrs = [_value_to_json(v, inst) for v in inst.attrs]
            outputs = [namer.define(o) for o in inst.outputs]
            insts.append([inst.kind.name, inputs, attrs, outputs])
            decision = self.get_decision(inst)
            if decision is not None:
                decisions.append([i, _value_to_json(decision, inst)])
        return [insts, decisions]

    @staticmethod
    def apply_json_to_schedule(json_obj: Any, sch: Any, *, trusted: bool = False) -> None:
        """Replay a trace given as `as_json` data on `sch`, checking every part of it.

        The JSON is treated as a file from someone else (trace_check.py): only primitives of
        the instruction table, plain bounded values, annotation keys that carry no code.
        `trusted=True` (JSON this process just made from its own trace) lifts the rules on
        kinds and annotation keys, not the bounds."""
        insts, decisions = _check_json_shape(json_obj)
        by_index = {}
        for item in decisions:
            if not (isinstance(item, list) and len(item) == 2 and type(item[0]) is int):
                raise ScheduleError(
                    f"trace JSON: a decision must be [index, value], got {item!r:.80}"
                )
            if not 0 <= item[0] < len(insts):
                raise ScheduleError(f"trace JSON: decision index {item[0]} has no instruction")
            by_index[item[0]] = _value_from_json(item[1], f"trace JSON decision {item[0]}")
        named: dict[str, Any] = {}
        for i, item in enumerate(insts):
            kind_name, inputs, attrs, outputs = _check_inst_shape(item, i)
            kind = InstructionKind.get(kind_name)
            where = f"trace JSON instruction {i} ({kind_name})"
            if not trusted:
                trace_check.check_kind(kind, where)
            values = [_input_from_json(v, named, where) for v in inputs]
            attrs = [_value_from_json(v, where) for v in attrs]
            if not trusted:
                trace_check.check_instruction(kind, values, attrs, where)
            results = _replay(kind, sch, values, attrs, by_index.get(i), where)
            _bind_outputs(kind_name, outputs, results, named.__setitem__, key=str)


def _replay(kind: InstructionKind, sch: Any, values: list, attrs: list, decision: Any, where: str):
    """Apply one loaded instruction; arguments of the wrong kind (the JSON is someone else's)
    surface as a ScheduleError naming the instruction, not as a Python error of the primitive."""
    try:
        return kind.apply(sch, values, attrs, decision)
    except MiniTVMError:
        raise
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, ArithmeticError) as err:
        raise ScheduleError(
            f"{where}: its arguments do not fit {kind.method}() ({type(err).__name__}: {err}); "
            "the trace was edited or written for another version"
        ) from err


def _bind_outputs(inst: Any, olds: list, news: list, bind: Callable, key: Callable) -> None:
    if len(olds) != len(news):
        raise ScheduleError(
            f"trace: instruction {inst} recorded {len(olds)} outputs but its replay gave "
            f"{len(news)}; the trace does not fit this module"
        )
    for old, new in zip(olds, news):
        if old is not None and old != "_":
            bind(key(old), new)


def _check_json_shape(obj: Any) -> tuple[list, list]:
    if not (isinstance(obj, list | tuple) and len(obj) == 2):
        raise ScheduleError("trace JSON must be [instructions, decisions] (from Trace.as_json)")
    insts, decisions = obj
    if not isinstance(insts, list | tuple) or not isinstance(decisions, list | tuple):
        raise ScheduleError("trace JSON: instructions and decisions must be lists")
    return list(insts), list(decisions)


def _check_inst_shape(item: Any, i: int) -> tuple:
    ok = isinstance(item, list | tuple) and len(item) == 4 and isinstance(item[0], str)
    ok = ok and all(isinstance(part, list | tuple) for part in item[1:])
    if not ok or not all(isinstance(o, str) for o in item[3]):
        raise ScheduleError(
            f"trace JSON instruction {i} must be [kind, inputs, attrs, output names], got "
            f"{item!r:.120}"
        )
    return item[0], list(item[1]), list(item[2]), list(item[3])


# ------------------------------------------------------------------ JSON values

_CODECS: dict[str, tuple[type, Callable, Callable]] = {}


def register_json_codec(cls: type, tag: str, encode: Callable, decode: Callable) -> None:
    """Let traces serialise values of `cls` (e.g. an IndexMap) as {"__codec__": tag, "data": ..}.

    `encode(value) -> JSON data` and `decode(data) -> value`; decode must parse data, never
    evaluate it.
    """
    _CODECS[tag] = (cls, encode, decode)


def _value_to_json(value: Any, inst: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, IntImm):
        return bool(value.value) if value.dtype == "bool" else int(value.value)
    if isinstance(value, FloatImm):
        return float(value.value)
    if isinstance(value, StringImm):
        return value.value
    if isinstance(value, list | tuple):
        return [_value_to_json(v, inst) for v in value]
    if isinstance(value, dict):
        return {str(k): _value_to_json(v, inst) for k, v in value.items()}
    for tag, (cls, encode, _) in _CODECS.items():
        if isinstance(value, cls):
            return {"__codec__": tag, "data": encode(value)}
    if is_index_function(value):
        return {"__codec__": "lambda", "data": lambda_source(value)}
    raise ScheduleError(
        f"trace.as_json: instruction {inst} holds a {type(value).__name__} ({value!r}) that has "
        "no JSON form; register one with tir.schedule.trace.register_json_codec"
    )


def _input_to_json(value: Any, namer: _Namer, inst: Any) -> Any:
    if is_rv(value):
        return namer.use(value)
    if value is None:
        return "None"
    if isinstance(value, str | StringImm):
        return '"' + (value if isinstance(value, str) else value.value) + '"'
    if isinstance(value, list | tuple):
        return [_input_to_json(v, namer, inst) for v in value]
    if isinstance(value, PrimExpr) and not isinstance(value, IntImm | FloatImm):
        raise ScheduleError(
            f"trace.as_json: instruction {inst} has an expression input {value} that is not a "
            "sampled variable; pass an integer or the variable itself"
        )
    return _value_to_json(value, inst)


def _value_from_json(value: Any, where: str, depth: int = 0) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        trace_check.check_scalar(value, where)
        return value
    if isinstance(value, list | tuple):
        trace_check.check_container(value, depth, where)
        return [_value_from_json(v, where, depth + 1) for v in value]
    if isinstance(value, dict):
        trace_check.check_container(value, depth, where)
        if value.get("__codec__") == "lambda" and isinstance(value.get("data"), str):
            trace_check.check_scalar(value["data"], where)
            return TraceLambda.parse(value["data"])
        if "__codec__" in value:
            codec = _CODECS.get(value["__codec__"]) if isinstance(value["__codec__"], str) else None
            if codec is None:
                raise ScheduleError(
                    f"{where}: unknown value codec {str(value['__codec__'])[:80]!r}"
                )
            return _decode(codec[2], _value_from_json(value.get("data"), where, depth + 1), where)
        return {k: _value_from_json(v, where, depth + 1) for k, v in value.items()}
    raise ScheduleError(f"{where}: {type(value).__name__} is not a JSON value")


def _decode(decode: Callable, data: Any, where: str) -> Any:
    """A registered codec's value; its parser's own errors on malformed text (a NUL byte,
    nesting past Python's parser) become a ScheduleError naming the instruction."""
    try:
        return decode(data)
    except MiniTVMError:
        raise
    except (TypeError, ValueError, RecursionError, MemoryError) as err:
        raise ScheduleError(
            f"{where}: a value does not decode ({type(err).__name__}: {str(err)[:200]})"
        ) from err


def _input_from_json(value: Any, named: dict[str, Any], where: str, depth: int = 0) -> Any:
    if isinstance(value, str):
        trace_check.check_scalar(value, where)
        if len(value) >= 2 and value[0] == '"' and value[-1] == '"':
            return value[1:-1]
        if value == "None":
            return None
        if value not in named:
            raise ScheduleError(
                f"{where}: input {value[:80]!r} names no random variable defined before it"
            )
        return named[value]
    if isinstance(value, list | tuple):
        trace_check.check_container(value, depth, where)
        return [_input_from_json(v, named, where, depth + 1) for v in value]
    return _value_from_json(value, where, depth)


__all__ = [
    "BlockRV",
    "Instruction",
    "InstructionKind",
    "LoopRV",
    "Trace",
    "register_json_codec",
]
