"""Helpers for testing schedules (`tvm.tir.schedule.testing`): replay a trace and compare.

`verify_trace_roundtrip` replays a schedule's trace on a fresh schedule through its JSON form
and through its printed Python form, and checks both give the same module and print the same
trace. The Python form is replayed by a small interpreter of the statements a trace prints
(`a, b = sch.method(name=value, ...)`), not by exec.
"""

from __future__ import annotations

import ast
from typing import Any

from ...error import ScheduleError
from ...ir.module import IRModule
from ...ir.node import FrozenDict
from ...ir.structural import assert_structural_equal
from ..function import PrimFunc
from .instruction import kind_by_method
from .trace_lambda import TraceLambda


def _without_global_symbol(x: Any) -> Any:
    if isinstance(x, PrimFunc) and "global_symbol" in x.attrs:
        kept = {k: v for k, v in x.attrs.items() if k != "global_symbol"}
        return x.replace(attrs=FrozenDict(kept))
    if isinstance(x, IRModule):
        return IRModule({gv.name_hint: _without_global_symbol(f) for gv, f in x.items()})
    return x


def assert_structural_equal_ignore_global_symbol(
    func1: Any, func2: Any, map_free_vars: bool = False
) -> None:
    """assert_structural_equal of two PrimFuncs (or modules) whatever their symbol names."""
    assert_structural_equal(
        _without_global_symbol(func1), _without_global_symbol(func2), map_free_vars
    )


# ------------------------------------------------------------------ replaying printed traces

_CONSTANTS = {"None": None, "True": True, "False": False}


class _PythonTraceReplayer:
    """Runs the lines of `Trace.as_python()` on a schedule: only `sch.<method>(...)` calls
    whose arguments are literals, lists/tuples/dicts of them, and names bound earlier."""

    def __init__(self, sch: Any, extra_names: dict[str, Any] | None = None) -> None:
        self.sch = sch
        self.names: dict[str, Any] = dict(extra_names or {})

    def run(self, source: str) -> None:
        try:
            tree = ast.parse(source)
        except SyntaxError as err:
            raise ScheduleError(f"printed trace does not parse: {err}") from err
        for stmt in tree.body:
            self._statement(stmt)

    def _fail(self, node: ast.AST, why: str) -> ScheduleError:
        return ScheduleError(f"printed trace line {ast.unparse(node)!r}: {why}")

    def _statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Expr):
            self._call(stmt.value)
            return
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            raise self._fail(stmt, "only `outputs = sch.method(...)` statements may appear")
        result = self._call(stmt.value)
        target = stmt.targets[0]
        if isinstance(target, ast.Name):
            self._bind(target, result)
            return
        if not isinstance(target, ast.Tuple):
            raise self._fail(stmt, "outputs must be names")
        results = list(result)
        if len(results) != len(target.elts):
            raise self._fail(stmt, f"expected {len(target.elts)} outputs, got {len(results)}")
        for name, value in zip(target.elts, results):
            self._bind(name, value)

    def _bind(self, target: ast.expr, value: Any) -> None:
        if not isinstance(target, ast.Name):
            raise self._fail(target, "outputs must be names")
        if target.id != "_":
            self.names[target.id] = value

    def _call(self, node: ast.expr) -> Any:
        ok = (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "sch"
            and not node.func.attr.startswith("_")
        )
        if not ok:
            raise self._fail(node, "only calls of schedule methods `sch.<name>(...)` may appear")
        method = getattr(self.sch, node.func.attr, None)
        if method is None:
            raise self._fail(node, f"the schedule has no method {node.func.attr!r}")
        args = [self._value(a) for a in node.args]
        kwargs = {k.arg: self._value(k.value) for k in node.keywords if k.arg is not None}
        kind = kind_by_method(node.func.attr)
        return kind.call(self.sch, args, kwargs) if kind is not None else method(*args, **kwargs)

    def _value(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in _CONSTANTS:
                return _CONSTANTS[node.id]
            if node.id not in self.names:
                raise self._fail(node, f"name {node.id!r} is not defined by an earlier line")
            return self.names[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self._value(node.operand)
        if isinstance(node, ast.List):
            return [self._value(e) for e in node.elts]
        if isinstance(node, ast.Tuple):
            return tuple(self._value(e) for e in node.elts)
        if isinstance(node, ast.Lambda):
            return TraceLambda(node, ast.unparse(node))
        if isinstance(node, ast.Dict):
            return {self._value(k): self._value(v) for k, v in zip(node.keys, node.values)}
        raise self._fail(node, f"{type(node).__name__} is not a trace value")


def apply_python_trace(source: str, sch: Any) -> None:
    """Replay the printed Python of a trace (`"\\n".join(trace.as_python())`) on `sch`."""
    _PythonTraceReplayer(sch).run(source)


def verify_trace_roundtrip(
    sch: Any,
    mod: Any,
    *,
    debug_mask: Any = "all",
    text_format: Any = ("python", "json"),
) -> Any:
    """Replay `sch.trace` on fresh schedules of `mod` through each text format; each must
    give `sch.mod` again and print the same trace. Returns the last fresh schedule."""
    from .schedule import Schedule
    from .trace import Trace

    formats = [text_format] if isinstance(text_format, str) else list(text_format)
    trace = sch.trace
    expected = "\n".join(trace.as_python())
    fresh = None
    for fmt in formats:
        fresh = Schedule(mod, debug_mask=debug_mask)
        if fmt == "json":
            Trace.apply_json_to_schedule(trace.as_json(), fresh, trusted=True)
        elif fmt == "python":
            apply_python_trace(expected, fresh)
        else:
            raise ScheduleError(f"verify_trace_roundtrip: unknown text format {fmt!r}")
        assert_structural_equal(fresh.mod, sch.mod)
        replayed = "\n".join(fresh.trace.as_python())
        if replayed != expected:
            raise AssertionError(
                f"the trace replayed through {fmt} prints differently:\n{replayed}\n"
                f"--- expected ---\n{expected}"
            )
    return fresh


__all__ = [
    "apply_python_trace",
    "assert_structural_equal_ignore_global_symbol",
    "verify_trace_roundtrip",
]
