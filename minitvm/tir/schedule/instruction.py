"""Schedule instructions: InstructionKind (one row per primitive) and Instruction.

A kind's layout lists the Python parameters of its Schedule method in call order. Plain names
are inputs (random variables or values computed at schedule time), `@name` are attributes
(constants), `*name` takes the remaining inputs as one list argument (split's factors) and
`*` passes the remaining inputs positionally (fuse, reorder). The same layout prints the
instruction as Python, splits a recorded call into inputs/attrs and calls the method on replay.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from ...error import ScheduleError
from ..expr import FloatImm, IntImm, PrimExpr, StringImm, Var
from .trace_lambda import is_index_function, lambda_source

_ids = itertools.count()


class BlockRV:
    """A handle to a block of a Schedule (resolved by the schedule, valid across primitives)."""

    __slots__ = ("__weakref__", "_id")
    _prefix = "b"

    def __init__(self) -> None:
        self._id = next(_ids)

    def same_as(self, other: Any) -> bool:
        return self is other

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._id})"


class LoopRV(BlockRV):
    """A handle to a loop of a Schedule."""

    __slots__ = ()
    _prefix = "l"


def is_rv(value: Any) -> bool:
    """BlockRV, LoopRV or an ExprRV (a tir.Var a sampling instruction produced)."""
    return isinstance(value, BlockRV | Var)


def rv_prefix(value: Any) -> str:
    return value._prefix if isinstance(value, BlockRV) else "v"


@dataclass(frozen=True)
class _Param:
    name: str
    role: str  # "input", "attr", "rest_list" (inputs as one list), "rest_pos" (positional)
    default: Any = None


_ROLES = {"@": "attr", "*": "rest_list"}


def _param(spec: str | tuple) -> _Param:
    text, default = (spec, None) if isinstance(spec, str) else spec
    if text == "*":
        return _Param("", "rest_pos", default)
    role = _ROLES.get(text[0], "input")
    return _Param(text.lstrip("@*"), role, default)


class InstructionKind:
    """A kind of schedule instruction (`InstructionKind.get("Split")`), one per primitive."""

    _registry: ClassVar[dict[str, InstructionKind]] = {}
    _by_method: ClassVar[dict[str, InstructionKind]] = {}

    def __init__(
        self,
        name: str,
        method: str,
        is_pure: bool,
        params: tuple,
        outputs: str = "none",
        has_decision: bool = False,
        loadable: bool = True,
    ) -> None:
        self.name = name
        self.method = method
        self.is_pure = is_pure
        self.params = tuple(_param(p) for p in params)
        self.outputs = outputs  # "none", "single" or "list"
        self.has_decision = has_decision
        # a trace file may replay it: a row of the table or a kind someone registered, not
        # one made up for a Schedule method without a row (trace_check.py)
        self.loadable = loadable

    @staticmethod
    def get(name: str) -> InstructionKind:
        """The registered kind named `name` (TVM's spelling, e.g. "GetBlock")."""
        kind = InstructionKind._registry.get(name)
        if kind is None:
            raise ScheduleError(
                f"unknown instruction kind {name!r}; known kinds are "
                f"{sorted(InstructionKind._registry)}"
            )
        return kind

    @property
    def _is_postproc(self) -> bool:
        return self.name == "EnterPostproc"

    def same_as(self, other: Any) -> bool:
        return self is other

    def __repr__(self) -> str:
        return f"InstructionKind({self.name!r})"

    # ---------------------------------------------------------------- call <-> inputs/attrs
    def split_call(self, args: tuple, kwargs: dict) -> tuple[list, list]:
        """Inputs and attrs of a recorded call `sch.<method>(*args, **kwargs)`."""
        unknown = set(kwargs) - {p.name for p in self.params}
        if unknown:
            raise ScheduleError(
                f"trace: {self.method} was recorded with parameter(s) {sorted(unknown)} that "
                f"instruction kind {self.name} does not know"
            )
        inputs: list = []
        attrs: list = []
        for p in self.params:
            if p.role == "rest_pos":
                inputs.extend(args)
            elif p.role == "rest_list":
                inputs.extend(kwargs.get(p.name) or ())
            else:
                value = kwargs.get(p.name, p.default)
                (attrs if p.role == "attr" else inputs).append(value)
        return inputs, attrs

    def bind(self, inputs: list, attrs: list) -> tuple[list, list]:
        """(positional args, [(name, value)...]) of the method call for these inputs/attrs."""
        n_fixed = sum(p.role == "input" for p in self.params)
        n_rest = len(inputs) - n_fixed
        ins, ats = iter(inputs), iter(attrs)
        pos: list = []
        named: list = []
        for p in self.params:
            if p.role == "rest_pos":
                pos = [next(ins) for _ in range(n_rest)]
            elif p.role == "rest_list":
                named.append((p.name, [next(ins) for _ in range(n_rest)]))
            else:
                source = ats if p.role == "attr" else ins
                value = next(source, _MISSING)
                if value is _MISSING:
                    raise ScheduleError(
                        f"instruction {self.name}: too few {p.role}s for parameter {p.name!r}"
                    )
                named.append((p.name, value))
        return pos, named

    def apply(self, sch: Any, inputs: list, attrs: list, decision: Any) -> list:
        """Call the schedule method; return the outputs as a list."""
        pos, named = self.bind(inputs, attrs)
        kwargs = dict(named)
        if self.has_decision:
            kwargs["decision"] = decision
        out = self.call(sch, pos, kwargs)
        if self.outputs == "list":
            return list(out)
        return [out] if self.outputs == "single" else []

    def call(self, sch: Any, pos: list, kwargs: dict) -> Any:
        """sch.<method>(*pos, **kwargs); a parameter at its default that this method does not
        take (an option TVM added later) is left out."""
        method = getattr(sch, self.method, None)
        if method is None:
            raise ScheduleError(f"instruction {self.name}: the schedule has no {self.method}()")
        accepted = _parameters(method)
        if accepted is not None:
            defaults = {p.name: p.default for p in self.params}
            kwargs = {
                k: v
                for k, v in kwargs.items()
                if k in accepted or k not in defaults or v != defaults[k]
            }
        return method(*pos, **kwargs)

    def as_python(self, inputs: list, attrs: list, decision: Any, outputs: list[str]) -> str:
        """One Python line; `inputs` hold RV names already (as _Code)."""
        pos, named = self.bind(inputs, attrs)
        parts = [render(v) for v in pos] + [f"{k}={render(v)}" for k, v in named]
        if self.has_decision and decision is not None:
            parts.append(f"decision={render(decision)}")
        call = f"sch.{self.method}({', '.join(parts)})"
        if not outputs:
            return call
        lhs = ", ".join(outputs) + ("," if self.outputs == "list" and len(outputs) == 1 else "")
        return f"{lhs} = {call}"


_MISSING = object()


def _parameters(method: Any) -> set[str] | None:
    """Keyword names `method` accepts; None when it takes **kwargs or has no signature."""
    try:
        sig = inspect.signature(method)
    except (TypeError, ValueError):
        return None
    if any(p.kind == inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        return None
    return set(sig.parameters)


_B = ("block",)
_KIND_TABLE: tuple = (
    # name, method, is_pure, params, outputs, has_decision
    ("GetBlock", "get_block", True, ("@name", "@func_name"), "single"),
    ("GetLoops", "get_loops", True, _B, "list"),
    ("GetChildBlocks", "get_child_blocks", True, ("block_or_loop",), "list"),
    ("GetProducers", "get_producers", True, _B, "list"),
    ("GetConsumers", "get_consumers", True, _B, "list"),
    ("GetOutputBlocks", "get_output_blocks", True, ("scope_block",), "list"),
    (
        "Split",
        "split",
        False,
        ("loop", "*factors", ("@preserve_unit_iters", True), ("@disable_predication", False)),
        "list",
    ),
    (
        "LoopPartition",
        "loop_partition",
        False,
        ("loop", "*factors", ("@preserve_unit_iters", True)),
        "list",
    ),
    ("Merge", "merge", False, ("*",), "single"),
    ("Fuse", "fuse", False, ("*", ("@preserve_unit_iters", True)), "single"),
    ("Reorder", "reorder", False, ("*",), "none"),
    ("ReorderBlockIterVar", "reorder_block_iter_var", False, ("block", "new_order"), "none"),
    ("AddUnitLoop", "add_unit_loop", False, ("block_or_loop",), "single"),
    ("Parallel", "parallel", False, ("loop",), "none"),
    ("Vectorize", "vectorize", False, ("loop",), "none"),
    ("Unroll", "unroll", False, ("loop",), "none"),
    ("Bind", "bind", False, ("loop", "@thread_axis"), "none"),
    (
        "CacheRead",
        "cache_read",
        False,
        ("block", "@read_buffer_index", "@storage_scope", ("consumer_blocks", None)),
        "single",
    ),
    (
        "CacheWrite",
        "cache_write",
        False,
        ("block", "@write_buffer_index", "@storage_scope", ("consumer_blocks", None)),
        "single",
    ),
    (
        "ReindexCacheRead",
        "reindex_cache_read",
        False,
        ("block", "@read_buffer_index", "@storage_scope", "index_map"),
        "single",
    ),
    (
        "ReindexCacheWrite",
        "reindex_cache_write",
        False,
        ("block", "@write_buffer_index", "@storage_scope", "index_map"),
        "single",
    ),
    (
        "CacheInplace",
        "cache_inplace",
        False,
        ("block", "@read_buffer_index", "@storage_scope"),
        "list",
    ),
    ("CacheIndex", "cache_index", False, ("block", "@storage_scope", ("@cse_thresh", 0)), "list"),
    ("ReIndex", "reindex", False, ("block", "@buffer"), "single"),
    (
        "ReadAt",
        "read_at",
        False,
        ("loop", "block", "@read_buffer_index", "@storage_scope"),
        "single",
    ),
    (
        "WriteAt",
        "write_at",
        False,
        ("loop", "block", "@write_buffer_index", "@storage_scope"),
        "single",
    ),
    (
        "ComputeAt",
        "compute_at",
        False,
        ("block", "loop", ("@preserve_unit_loops", False), ("@index", -1)),
        "none",
    ),
    (
        "ReverseComputeAt",
        "reverse_compute_at",
        False,
        ("block", "loop", ("@preserve_unit_loops", False), ("@index", -1)),
        "none",
    ),
    ("ComputeInline", "compute_inline", False, _B, "none"),
    ("ReverseComputeInline", "reverse_compute_inline", False, _B, "none"),
    ("DecomposeReduction", "decompose_reduction", False, ("block", "loop"), "single"),
    ("DecomposePadding", "decompose_padding", False, ("block", "loop"), "single"),
    ("RFactor", "rfactor", False, ("loop", "@factor_axis"), "single"),
    (
        "StorageAlign",
        "storage_align",
        False,
        ("block", "@buffer_index", "@axis", "@factor", "@offset"),
        "none",
    ),
    ("SetScope", "set_scope", False, ("block", "@buffer_index", "@storage_scope"), "none"),
    ("UnsafeSetDType", "unsafe_set_dtype", False, ("block", "@buffer_index", "@dtype"), "none"),
    ("Blockize", "blockize", False, ("target", ("@preserve_unit_iters", True)), "single"),
    (
        "Tensorize",
        "tensorize",
        False,
        ("block_or_loop", "@tensor_intrin", ("@preserve_unit_iters", True)),
        "none",
    ),
    ("Annotate", "annotate", False, ("block_or_loop", "@ann_key", "ann_val"), "none"),
    ("Unannotate", "unannotate", False, ("block_or_loop", "@ann_key"), "none"),
    (
        "TransformLayout",
        "transform_layout",
        False,
        (
            "block",
            "@buffer",
            "index_map",
            ("@pad_value", None),
            ("@assume_injective_transform", False),
        ),
        "none",
    ),
    ("TransformBlockLayout", "transform_block_layout", False, ("block", "@index_map"), "none"),
    (
        "SetAxisSeparator",
        "set_axis_separator",
        False,
        ("block", "@buffer", "@axis_separators"),
        "none",
    ),
    ("PadEinsum", "pad_einsum", False, ("block", "@padding"), "none"),
    ("RollingBuffer", "rolling_buffer", False, ("block", "@write_buffer_index"), "none"),
    (
        "UnsafeHideBufferAccess",
        "unsafe_hide_buffer_access",
        False,
        ("block", "@buf_type", "@buf_index_array"),
        "none",
    ),
    (
        "AnnotateBufferAccess",
        "annotate_buffer_access",
        False,
        ("block", "@buffer_index", "@buf_type", "gen_new_ranges"),
        "none",
    ),
    ("SampleCategorical", "sample_categorical", True, ("@candidates", "@probs"), "single", True),
    (
        "SamplePerfectTile",
        "sample_perfect_tile",
        True,
        ("loop", "@n", ("@max_innermost_factor", 16)),
        "list",
        True,
    ),
    (
        "SamplePartitionedTile",
        "sample_partitioned_tile",
        True,
        ("loop", "@n", ("@partition_pos", 0), ("@innerpart_factor", 1)),
        "list",
        True,
    ),
    ("SampleComputeLocation", "sample_compute_location", True, _B, "single", True),
    ("EnterPostproc", "enter_postproc", False, (), "none"),
)


def register_kind(kind: InstructionKind) -> InstructionKind:
    """Add a kind (a new primitive) so traces can print, serialise and replay it."""
    InstructionKind._registry[kind.name] = kind
    InstructionKind._by_method[kind.method] = kind
    return kind


for _row in _KIND_TABLE:
    register_kind(InstructionKind(*_row))


def kind_by_method(method: str) -> InstructionKind | None:
    return InstructionKind._by_method.get(method)


def kind_of_method(method: str, kwargs: dict, n_outputs: int, unpack: bool) -> InstructionKind:
    """The kind a Schedule method records; a method with no row gets one (all inputs)."""
    kind = InstructionKind._by_method.get(method)
    if kind is None:
        name = "".join(part.title() for part in method.split("_"))
        outputs = "list" if unpack else ("single" if n_outputs else "none")
        kind = InstructionKind(name, method, False, tuple(kwargs), outputs, loadable=False)
        kind = register_kind(kind)
    return kind


class Instruction:
    """One schedule call: kind, inputs (RVs and values), attrs (constants), outputs (RVs)."""

    __slots__ = ("attrs", "inputs", "kind", "outputs")

    def __init__(self, kind: InstructionKind, inputs: list, attrs: list, outputs: list) -> None:
        if not isinstance(kind, InstructionKind):
            raise ScheduleError(f"Instruction: kind must be an InstructionKind, got {kind!r}")
        self.kind = kind
        self.inputs = list(inputs)
        self.attrs = list(attrs)
        self.outputs = list(outputs)

    def same_as(self, other: Any) -> bool:
        return self is other

    def __str__(self) -> str:
        inputs = map_rvs(self.inputs, lambda rv: Code("_"))
        outs = ["_" for _ in self.outputs]
        return self.kind.as_python(inputs, self.attrs, None, outs)

    __repr__ = __str__


# ------------------------------------------------------------------ values


class Code:
    """A value that renders as the given Python source (an RV's name)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def map_rvs(value: Any, fn: Callable[[Any], Any]) -> Any:
    """`value` with every random variable replaced by fn(rv), through lists/tuples/dicts."""
    if is_rv(value):
        return fn(value)
    if isinstance(value, list | tuple):
        return type(value)(map_rvs(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: map_rvs(v, fn) for k, v in value.items()}
    return value


def _render_float(x: float) -> str:
    short = f"{x:g}"  # TVM prints floats the way C++ streams do: 1.0 -> 1, 0.25 -> 0.25
    return short if float(short) == x else repr(x)


_RENDERERS: list[tuple[type, Callable[[Any], str]]] = []


def register_python_renderer(cls: type, fn: Callable[[Any], str]) -> None:
    """Print values of `cls` (e.g. an IndexMap) in traces as the Python `fn(value)` returns."""
    _RENDERERS.append((cls, fn))


def render(value: Any) -> str:
    """Python source of a trace value."""
    if isinstance(value, Code):
        return value.text
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(value, float):
        return _render_float(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, IntImm):
        return str(int(value.value))
    if isinstance(value, FloatImm):
        return _render_float(float(value.value))
    if isinstance(value, StringImm):
        return render(value.value)
    if isinstance(value, list | tuple):  # both are TVM Arrays: they print (and replay) as lists
        return "[" + ", ".join(render(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{render(k)}: {render(v)}" for k, v in value.items()) + "}"
    for cls, fn in _RENDERERS:
        if isinstance(value, cls):
            return fn(value)
    if is_index_function(value):
        return lambda_source(value)
    if isinstance(value, PrimExpr):
        return str(value)
    return repr(value)


__all__ = [
    "BlockRV",
    "Instruction",
    "InstructionKind",
    "LoopRV",
    "register_kind",
    "register_python_renderer",
]
