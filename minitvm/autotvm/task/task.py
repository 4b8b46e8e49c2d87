"""Tunable tasks: the template registry, `template`, `get_config` and `create`."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ...error import TuningError
from ...target import Target
from .dispatcher import ApplyConfig, DispatchContext
from .space import ConfigSpace

TASK_TABLE: dict[str, Callable] = {}


def serialize_args(args: Any) -> tuple:
    """Template arguments as a hashable, JSON-friendly tuple (tensors become
    ("TENSOR", shape, dtype))."""
    return tuple(_encode(a) for a in args)


def _encode(x: Any) -> Any:
    from ...te import Tensor

    if isinstance(x, Tensor):
        return ("TENSOR", tuple(int(getattr(d, "value", d)) for d in x.shape), str(x.dtype))
    if isinstance(x, list | tuple):
        return tuple(_encode(a) for a in x)
    if x is None or isinstance(x, str | int | float):
        return x
    value = getattr(x, "value", None)  # IntImm, FloatImm, StringImm
    if isinstance(value, str | int | float):
        return value
    raise TuningError(
        f"template argument {x!r} of type {type(x).__name__} cannot be part of a workload; "
        "pass ints, floats, strings, tuples of them or te placeholders"
    )


def deserialize_args(args: tuple) -> list:
    """The template's arguments back (a ("TENSOR", shape, dtype) becomes a placeholder)."""
    from ...te import placeholder

    out = []
    for a in args:
        is_tensor = isinstance(a, tuple) and len(a) == 3 and a[0] == "TENSOR"
        out.append(placeholder(shape=a[1], dtype=a[2]) if is_tensor else a)
    return out


def args_to_workload(args: Any, task_name: str | None = None) -> tuple:
    head = (task_name,) if task_name is not None else ()
    return head + serialize_args(args)


class Task:
    """A template with its arguments: `.config_space`, `.flop`, `.target`, `.workload`."""

    def __init__(self, name: str, args: Any) -> None:
        self.name = name
        self.args = serialize_args(args)
        self.kwargs: dict = {}
        self.config_space: ConfigSpace | None = None
        self.flop: float | None = None
        self.target: Target | None = None
        self.target_host: Target | None = None

    @property
    def func(self) -> Callable:
        if self.name not in TASK_TABLE:
            raise TuningError(
                f"no autotvm template named '{self.name}' is registered in this process: "
                "import the module that defines it (@autotvm.template) first"
            )
        return TASK_TABLE[self.name]

    @property
    def workload(self) -> tuple:
        return (self.name, *self.args)

    def instantiate(self, config: Any) -> tuple:
        """The template's (schedule, tensors) for one config, under the task's target."""
        config.flop = 0
        with ApplyConfig(config), self.target:
            sch, arg_bufs = self.func(*deserialize_args(self.args))
        if not self.flop:
            self.flop = config.flop or _task_flop(sch, self.name)
        return sch, arg_bufs

    def __repr__(self) -> str:
        return (
            f"Task(func_name={self.name}, args={self.args}, kwargs={self.kwargs}, "
            f"workload={self.workload})"
        )


def compute_flop(sch: Any) -> int:
    """Operations of the compute ops feeding a TE schedule's outputs (TVM's count: one per
    arithmetic, comparison or logical operator, a reduction's combiner and source once per
    reduced point; casts, constants, loop variables and tensor reads are free). Each op is
    counted once, however many consumers read it. Raises a TuningError (a RuntimeError)
    naming what cannot be counted, or when nothing is.

    >>> compute_flop(te.create_schedule(C.op))  # C = A @ B of (n, l) x (l, m): 2 * n * l * m
    """
    from ...te.schedule import Schedule

    if not isinstance(sch, Schedule):
        raise TuningError(
            f"compute_flop needs a te.Schedule (te.create_schedule), got {type(sch).__name__}; "
            "call cfg.add_flop(n) in the template to set the count"
        )
    seen: set[int] = set()
    total = 0
    stack = list(sch.outputs)
    while stack:
        op = stack.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        total += _op_flop(op)
        stack.extend(t.op for t in op.input_tensors)
    if total == 0:
        raise TuningError(
            "compute_flop: found no operation to count in the schedule's compute ops (a copy or "
            "a layout change has none); call cfg.add_flop(n) in the template to set the count"
        )
    return total


def _task_flop(sch: Any, name: str) -> int:
    try:
        return compute_flop(sch)
    except TuningError as err:
        raise TuningError(f"task '{name}': {err}") from err


def _op_flop(op: Any) -> int:
    from ...te.operation import ComputeOp, PlaceholderOp

    if isinstance(op, PlaceholderOp):
        return 0
    if not isinstance(op, ComputeOp):
        raise TuningError(
            f"compute_flop: '{op.name}' is a {type(op).__name__}; only te.compute operations "
            "can be counted (not scan, extern or hybrid ones): call cfg.add_flop(n) in the "
            "template instead"
        )
    if len(op.body) != 1:
        raise TuningError(
            f"compute_flop: '{op.name}' has {len(op.body)} outputs; only single-output "
            "compute ops can be counted: call cfg.add_flop(n) in the template instead"
        )
    return _points(op.axis, op.name) * _expr_flop(op.body[0], op.name)


def _points(axes: Any, name: str) -> int:
    """The product of the axes' extents (they must be constants)."""
    from ...tir.expr import IntImm

    count = 1
    for iv in axes:
        extent = iv.dom.extent
        if not isinstance(extent, IntImm):
            raise TuningError(
                f"compute_flop: '{name}' has axis {iv.var} of extent {extent}, not a constant; "
                "call cfg.add_flop(n) in the template instead"
            )
        count *= int(extent.value)
    return count


def _expr_flop(e: Any, name: str) -> int:
    """Operations of one evaluation of `e`."""
    from ...te.reduction import Reduce
    from ...te.tensor import ProducerLoad
    from ...tir import expr as E

    if isinstance(e, E.IntImm | E.FloatImm | E.Var | ProducerLoad):
        return 0  # constants, loop variables and reads (their index arithmetic is not counted)
    if isinstance(e, E.Cast):
        return _expr_flop(e.value, name)
    if isinstance(e, E.BinaryOpExpr):  # arithmetic, min/max, comparisons, and/or
        return 1 + _expr_flop(e.a, name) + _expr_flop(e.b, name)
    if isinstance(e, E.Not):
        return 1 + _expr_flop(e.a, name)
    if isinstance(e, E.Select):  # one side runs
        sides = max(_expr_flop(e.true_value, name), _expr_flop(e.false_value, name))
        return _expr_flop(e.condition, name) + sides
    if isinstance(e, E.Call):  # an intrinsic call itself is free; its arguments are not
        return sum(_expr_flop(a, name) for a in e.args)
    if isinstance(e, Reduce):
        if len(e.combiner.result) != 1 or len(e.source) != 1:
            raise TuningError(
                f"compute_flop: '{name}' reduces {len(e.source)} values at once; only "
                "single-value reductions can be counted: call cfg.add_flop(n) instead"
            )
        per_point = _expr_flop(e.combiner.result[0], name) + _expr_flop(e.source[0], name)
        return _points(e.axis, name) * per_point
    raise TuningError(
        f"compute_flop: '{name}' contains a {type(e).__name__} expression ({e}), which "
        "cannot be counted; call cfg.add_flop(n) in the template instead"
    )


def template(task_name: str, func: Callable | None = None) -> Callable:
    """Register a schedule template; calling it returns the schedule of the config the
    current dispatch context gives (the tuner's point, the history best, or the fallback).

    >>> @autotvm.template("matmul")
    ... def matmul(N, L, M, dtype): ...
    """

    def decorate(f: Callable) -> Callable:
        old = TASK_TABLE.get(task_name)
        if old is not None and (old.__module__, old.__qualname__) != (
            f.__module__,
            f.__qualname__,
        ):
            raise TuningError(
                f"autotvm template '{task_name}' is already registered by "
                f"{old.__module__}.{old.__qualname__}; give this template another name"
            )
        TASK_TABLE[task_name] = f  # the same function defined again (a re-run) replaces it

        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if kwargs:
                raise TuningError(
                    f"template '{task_name}' takes positional arguments only (they form the "
                    f"workload key), got keywords {sorted(kwargs)}"
                )
            workload = args_to_workload(args, task_name)
            cfg = DispatchContext.current.query(Target.current(), workload)
            with ApplyConfig(cfg):
                return f(*args)

        return wrapper

    return decorate(func) if func is not None else decorate


def get_config() -> Any:
    """The config of the template being run (call it inside a template)."""
    return DispatchContext.current.query(Target.current(), None)


def create(task_name: str, args: Any, target: Any, target_host: Any = None) -> Task:
    """A tuning task: run the template once with a ConfigSpace to collect its knobs.

    >>> task = autotvm.task.create("matmul", args=(512, 512, 512, "float32"), target="llvm")
    """
    from ...meta_schedule.utils import parse_target

    task = Task(task_name, args)
    task.target = parse_target(target)
    task.target_host = parse_target(target_host) if target_host is not None else None
    task.config_space = ConfigSpace()
    with ApplyConfig(task.config_space), task.target:
        sch, _ = task.func(*deserialize_args(task.args))
    task.config_space.code_hash = getattr(sch, "code_hash", None)
    task.flop = task.config_space.flop or _task_flop(sch, task_name)
    return task


def _unsupported(what: str) -> Callable:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise TuningError(
            f"autotvm.{what} (TOPI operator templates) is not supported by minitvm; write the "
            "template with @autotvm.template, or tune TOPI kernels with meta_schedule"
        )

    return refuse


register_topi_compute = _unsupported("register_topi_compute")
register_topi_schedule = _unsupported("register_topi_schedule")
