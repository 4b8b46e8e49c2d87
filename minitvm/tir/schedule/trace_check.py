"""What a trace read from JSON may hold: schedule steps as data, never code.

A trace file (a tuning record) is something users receive from others. Replaying it may only
call schedule primitives from the instruction table (`InstructionKind.loadable`), with plain
values: numbers, short strings, lists of those and the random variables of earlier steps.
Annotations reach lowering and codegen, and some carry code (`pragma_import_llvm` links LLVM
IR, `pragma_import_c` C source, an extern-source key a path), so an `Annotate` step may only
set a key of `LOADABLE_ANNOTATION_KEYS`: hints that steer loop kinds, unrolling and the
tuner's own bookkeeping. A program that needs another key registers it first with
`register_loadable_annotation_key` (its own code then decides what the key means).
"""

from __future__ import annotations

from typing import Any

from ...error import ScheduleError
from ..expr import Var

# The JSON of a trace is small: a few hundred instructions of short lists. These bounds keep a
# hostile file from making replay walk or allocate without limit.
MAX_DEPTH = 8  # nesting of lists inside one value
MAX_ITEMS = 4096  # elements of one list or dict
MAX_STRING = 16384  # characters of one string (a block name, a scope, an index-map lambda)
MAX_INT_BITS = 64  # TIR integers are at most 64-bit

# Annotation keys a loaded trace may set. Each only steers how existing code is scheduled or
# tuned; none names code, a symbol or a file.
LOADABLE_ANNOTATION_KEYS: set[str] = {
    # meta_schedule's rules and postprocessors (TVM's names)
    "meta_schedule.parallel",
    "meta_schedule.vectorize",
    "meta_schedule.unroll_explicit",
    "meta_schedule.unroll_implicit",
    "meta_schedule.tiling_structure",
    "meta_schedule.cooperative_fetch",
    "meta_schedule.thread_extent_low_inclusive",
    "meta_schedule.thread_extent_high_inclusive",
    "meta_schedule.random_compute_producer",
    "meta_schedule.auto_tensorize",
    "meta_schedule.auto_tensorize_init",
    "meta_schedule.layout_rewrite_preproc",
    "meta_schedule.inline_rule",
    "schedule_rule",
    # loop hints of TVM's lowering
    "pragma_auto_unroll_max_step",
    "pragma_unroll_explicit",
    "pragma_loop_partition_hint",
    "software_pipeline_stage",
    "software_pipeline_order",
    "software_pipeline_async_stages",
    # block bookkeeping that schedule primitives themselves write
    "buffer_dim_align",
    "explicit_read_region",
    "explicit_write_region",
}


def register_loadable_annotation_key(key: str) -> None:
    """Let traces read from files set annotation `key` (it must carry no code or path)."""
    if not isinstance(key, str) or not key:
        raise ScheduleError(f"register_loadable_annotation_key: key must be a str, got {key!r}")
    LOADABLE_ANNOTATION_KEYS.add(key)


def check_kind(kind: Any, where: str) -> None:
    """A loaded trace may use only the primitives of the instruction table (or registered)."""
    if not kind.loadable:
        raise ScheduleError(
            f"{where}: instruction kind {kind.name!r} is not a schedule primitive a trace file "
            "may replay (only kinds of the instruction table or added with register_kind); "
            "this record did not come from minitvm's tuner: regenerate it"
        )


def check_instruction(kind: Any, inputs: list, attrs: list, where: str) -> None:
    """Refuse a loaded instruction whose arguments reach past plain schedule data."""
    rule = _RULES.get(kind.name)
    if rule is not None:
        _, named = kind.bind(inputs, attrs)
        rule(dict(named), where)


def _check_annotate(args: dict, where: str) -> None:
    key, value = args.get("ann_key"), args.get("ann_val")
    if not isinstance(key, str) or key not in LOADABLE_ANNOTATION_KEYS:
        raise ScheduleError(
            f"{where}: annotation key {str(key)[:80]!r} is not one a trace file may set; keys "
            "such as pragma_import_llvm / pragma_import_c carry code that a build would link "
            f"and run. Allowed: {sorted(LOADABLE_ANNOTATION_KEYS)}. Only load tuning records "
            "you trust, or register a key that carries no code with "
            "tir.schedule.trace_check.register_loadable_annotation_key"
        )
    items = value if isinstance(value, list) else [value]
    if not all(_is_annotation_scalar(v) for v in items):
        raise ScheduleError(
            f"{where}: the value of annotation {key!r} must be a number, a string, a sampled "
            f"variable or a flat list of those, got {str(value)[:80]!r}"
        )


def _is_annotation_scalar(value: Any) -> bool:
    return value is None or isinstance(value, bool | int | float | str | Var)


_RULES = {"Annotate": _check_annotate}


def check_scalar(value: Any, where: str) -> None:
    """A JSON scalar of a trace within the size bounds (ints of at most 64 bits, short
    strings, finite or not floats are fine: probabilities and annotation values)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value.bit_length() > MAX_INT_BITS:
            raise ScheduleError(
                f"{where}: the integer {str(value)[:40]}... has more than {MAX_INT_BITS} bits; "
                "trace values are TIR integers (at most 64-bit)"
            )
    elif isinstance(value, str) and len(value) > MAX_STRING:
        raise ScheduleError(
            f"{where}: a string of {len(value)} characters is longer than the {MAX_STRING} a "
            "trace value may have"
        )


def check_container(value: list | dict, depth: int, where: str) -> None:
    """A list or dict of a trace: at most MAX_DEPTH deep and MAX_ITEMS long."""
    if depth >= MAX_DEPTH:
        raise ScheduleError(
            f"{where}: a value nests deeper than {MAX_DEPTH} levels; trace values are flat lists"
        )
    if len(value) > MAX_ITEMS:
        raise ScheduleError(
            f"{where}: a value of {len(value)} elements is longer than the {MAX_ITEMS} a trace "
            "value may have"
        )


__all__ = [
    "LOADABLE_ANNOTATION_KEYS",
    "check_instruction",
    "check_kind",
    "register_loadable_annotation_key",
]
