"""Configuration spaces of schedule templates (TVM's `autotvm.task.space` names).

A template is called once with a ConfigSpace, whose `define_*` calls collect the knobs, and
then with ConfigEntity points of that space, which answer `cfg[name]` with one value each.
A point's index is mixed-radix over the knobs in definition order, the first knob varying
fastest. Every knob is a TE split, reorder or plain value: any point is a legal schedule.
"""

from __future__ import annotations

import itertools
import math
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from ...error import TuningError


class InstantiationError(TuningError):
    """A template refused a configuration (`cfg.raise_error`), e.g. too much unrolling."""


# ------------------------------------------------------------------------------ axes
class VirtualAxis:
    """An axis of known length that knobs are defined on (an IterVar, an int or another)."""

    _count = 0

    def __init__(self, var: Any, name: str | None = None) -> None:
        if isinstance(var, VirtualAxis):
            self.name, self.length = name or var.name, var.length
            return
        if isinstance(var, int) and not isinstance(var, bool):
            if name is None:
                name = f"axis_{VirtualAxis._count}"
                VirtualAxis._count += 1
            self.name, self.length = name, int(var)
            return
        dom = getattr(var, "dom", None)
        if dom is None:
            raise TuningError(
                f"cannot define a knob on {type(var).__name__} {var!r}: pass a loop axis "
                "(s[C].op.axis[i], an IterVar) or its length as an int"
            )
        extent = getattr(dom.extent, "value", dom.extent)
        if not isinstance(extent, int):
            raise TuningError(
                f"axis '{var.var.name}' has symbolic extent {dom.extent}; autotvm knobs need a "
                "constant length: bind the shape before creating the task"
            )
        self.name, self.length = name or var.var.name, int(extent)

    def __repr__(self) -> str:
        return f"vaxis({self.name})"


class Axis:
    """The `index`-th output axis of a knob (what `define_split` returns)."""

    def __init__(self, space: Any, index: int) -> None:
        self.space, self.index = space, index

    def __repr__(self) -> str:
        return f"Axis({self.space!r}, {self.index})"


# ------------------------------------------------------------------------------ knobs
class TransformSpace:
    """Base of knob spaces: a list of entities, indexable and sized."""

    policy: str = ""

    def __init__(self) -> None:
        self.entities: list = []
        self.num_output = 0

    def __len__(self) -> int:
        return len(self.entities)

    def __getitem__(self, index: int) -> Any:
        return self.entities[index]

    def index_of(self, entity: Any) -> int | None:
        """Where an entity with the same value is, or None."""
        for i, e in enumerate(self.entities):
            if e == entity:
                return i
        return None


def get_factors(n: int) -> list[int]:
    """Every divisor of n, ascending."""
    small = [i for i in range(1, math.isqrt(n) + 1) if n % i == 0]
    return sorted(set(small) | {n // i for i in small})


def get_pow2s(n: int) -> list[int]:
    """The powers of two up to n."""
    return [1 << i for i in range(max(n, 1).bit_length())]


class _Entity:
    """A knob's value: equal to an entity of its class holding an equal `_value`, printed as
    that value."""

    @property
    def _value(self) -> Any:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return isinstance(other, type(self)) and other._value == self._value

    def __hash__(self) -> int:
        return hash(repr(self._value))

    def __repr__(self) -> str:
        return str(self._value)


class SplitEntity(_Entity):
    """The sizes of the axes one axis is split into; `size[0]` may be -1 (the rest)."""

    def __init__(self, size: Any) -> None:
        self.size = [int(s) for s in size]

    def apply(self, sch: Any, op: Any, axis: Any) -> list:
        """Split `axis` of `op`'s stage into len(size) axes, outermost first."""
        out = []
        for i in range(1, len(self.size)):
            outer, axis = sch[op].split(axis, math.prod(self.size[i:]))
            out.append(outer)
        return [*out, axis]

    @property
    def _value(self) -> list[int]:
        return self.size


def _split_factors(length: int, policy: str, max_factor: int) -> list[int]:
    """The inner factors a split policy draws from."""
    table = {
        "factors": lambda: get_factors(length),
        "power2": lambda: get_pow2s(length),
        "verbose": lambda: sorted(set(get_factors(length)) | set(get_pow2s(length))),
    }
    if policy not in table:
        raise TuningError(
            f"define_split: unknown policy {policy!r}; use one of {sorted([*table, 'candidate'])}"
        )
    return [f for f in table[policy]() if f <= max_factor]


class SplitSpace(TransformSpace):
    """Every way to split an axis into `num_outputs` axes under a policy: "factors" (exact
    divisors, no tail), "power2" (powers of two, may leave a tail), "verbose" (both), or
    "candidate" (the listed sizes)."""

    def __init__(self, axes: list, policy: str, **kwargs: Any) -> None:
        super().__init__()
        self.policy = policy
        self.product = axes[0].length
        self.num_output = int(kwargs.get("num_outputs", 0))
        if self.num_output < 1:
            raise TuningError(f"define_split: num_outputs must be >= 1, got {self.num_output}")
        if policy == "candidate":
            sizes = [list(c) for c in kwargs["candidate"]]
            bad = [c for c in sizes if len(c) != self.num_output]
            if bad:
                raise TuningError(
                    f"define_split: candidate {bad[0]} has {len(bad[0])} sizes, "
                    f"num_outputs is {self.num_output}"
                )
        else:
            factors = _split_factors(self.product, policy, int(kwargs.get("max_factor", 1 << 31)))
            no_tail = kwargs.get("no_tail", policy == "factors")
            sizes = self._enumerate(factors, no_tail)
        keep: Callable = kwargs.get("filter") or (lambda _: True)
        self.entities = [e for e in map(SplitEntity, sizes) if keep(e)]
        if not self.entities:
            raise TuningError(
                f"define_split: no split of length {self.product} into {self.num_output} axes "
                f"passes policy {policy!r} and the filter; loosen the filter"
            )

    def _enumerate(self, factors: list[int], no_tail: bool) -> list[list[int]]:
        """Inner sizes (innermost varying slowest, as TVM orders them) whose product fits."""
        sizes = []
        for inner in itertools.product(factors, repeat=self.num_output - 1):
            prod = math.prod(inner)  # Python ints: a product of big factors must not wrap
            if prod > self.product:
                continue
            if self.product % prod == 0 or (not no_tail and prod < self.product):
                sizes.append([-1, *inner])
        return sizes

    def __repr__(self) -> str:
        return (
            f"Split(policy={self.policy}, product={self.product}, "
            f"num_outputs={self.num_output}) len={len(self)}"
        )


class ReorderEntity(_Entity):
    """A permutation of a knob's axes."""

    def __init__(self, perm: Any) -> None:
        self.perm = [int(p) for p in perm]

    def apply(self, sch: Any, op: Any, axes: list) -> list:
        """Reorder `axes` of `op`'s stage by the permutation; returns them in the new order."""
        if len(axes) != len(self.perm):
            raise TuningError(
                f"reorder knob has {len(self.perm)} axes, apply() got {len(axes)}; pass the "
                "axes the knob was defined on"
            )
        ordered = [axes[i] for i in self.perm]
        sch[op].reorder(*ordered)
        return ordered

    @property
    def _value(self) -> list[int]:
        return self.perm


class ReorderSpace(TransformSpace):
    """Orders of a list of axes: "identity", "all", "interval_all" (interval=(b, e)) or
    "candidate" (candidate=[axes lists])."""

    def __init__(self, axes: list, policy: str, **kwargs: Any) -> None:
        super().__init__()
        self.policy = policy
        self.num_output = n = len(axes)
        if policy == "identity":
            perms = [range(n)]
        elif policy == "all":
            perms = itertools.permutations(range(n))
        elif policy == "interval_all":
            begin, end = kwargs["interval"]
            head, tail = tuple(range(begin)), tuple(range(end, n))
            perms = [head + p + tail for p in itertools.permutations(range(begin, end))]
        elif policy == "candidate":
            perms = [[_position(axes, a) for a in cand] for cand in kwargs["candidate"]]
        else:
            raise TuningError(
                f"define_reorder: policy {policy!r} is not supported; use 'identity', 'all', "
                "'interval_all' or 'candidate'"
            )
        self.entities = [ReorderEntity(p) for p in perms]

    def __repr__(self) -> str:
        return f"Reorder(policy={self.policy}) len={len(self)}"


def _position(axes: list, axis: Any) -> int:
    for i, a in enumerate(axes):
        if a is axis:
            return i
    raise TuningError(f"define_reorder: candidate axis {axis!r} is not one of the knob's axes")


class OtherOptionEntity(_Entity):
    """One value of a `define_knob` knob (`.val`)."""

    def __init__(self, val: Any) -> None:
        self.val = val

    @property
    def _value(self) -> Any:
        return self.val


class OtherOptionSpace(TransformSpace):
    """A knob with listed candidate values."""

    def __init__(self, axes: list, policy: Any, **kwargs: Any) -> None:
        super().__init__()
        candidate = list(kwargs["candidate"])
        if not candidate:
            raise TuningError("define_knob: the candidate list is empty; give at least one value")
        self.entities = [OtherOptionEntity(c) for c in candidate]

    def __repr__(self) -> str:
        return f"OtherOption({self.entities}) len={len(self)}"


# entity class <-> the short kind names of the JSON log
ENTITY_KINDS = {"sp": SplitEntity, "re": ReorderEntity, "ot": OtherOptionEntity}
# what a knob value read from a log may be, by kind (the error text says it)
_KNOB_VALUES = {
    "sp": "a list of 64-bit integers",
    "re": "a list of 64-bit integers",
    "ot": "a number, a string, a bool or null",
}


def _is_knob_value(kind: str, value: Any) -> bool:
    if kind == "ot":
        return value is None or isinstance(value, bool | int | float | str)
    return isinstance(value, list) and all(type(v) is int and v.bit_length() < 64 for v in value)


_ENTITY_FIELD = {SplitEntity: "size", ReorderEntity: "perm", OtherOptionEntity: "val"}


# ------------------------------------------------------------------------------ spaces
class ConfigSpace:
    """The knobs of a template (collected while the template runs with it)."""

    def __init__(self) -> None:
        self.space_map: OrderedDict[str, TransformSpace] = OrderedDict()
        self._entity_map: OrderedDict[str, Any] = OrderedDict()
        self._collect = True
        self.errors: list[str] = []
        self.code_hash = None
        self.flop = 0.0
        self.cost = None
        self.is_fallback = False
        self._shared_filter: Callable | None = None
        self._valid: tuple[bool, ...] | None = None  # per index, with a multi_filter

    @staticmethod
    def axis(var: Any) -> VirtualAxis:
        """A virtual axis of the given IterVar's (or int's) length."""
        return VirtualAxis(var)

    reduce_axis = axis

    def define_split(self, name: str, axis: Any, policy: str = "factors", **kwargs: Any) -> list:
        """Knob `name`: ways to split `axis` (num_outputs=, filter=, max_factor=, no_tail=,
        candidate=). >>> cfg.define_split("tile_y", y, num_outputs=2)"""
        return self._add(SplitSpace, name, [axis], policy, kwargs)

    def define_reorder(self, name: str, axes: list, policy: str, **kwargs: Any) -> list:
        """Knob `name`: orders of `axes` (policy "identity", "all", "interval_all",
        "candidate")."""
        return self._add(ReorderSpace, name, list(axes), policy, kwargs)

    def define_knob(self, name: str, candidate: list) -> list:
        """Knob `name`: one of the listed values (`cfg[name].val`)."""
        return self._add(OtherOptionSpace, name, [], None, {"candidate": candidate})

    def define_annotate(self, name: str, axes: list, policy: str, **kwargs: Any) -> list:
        """Not supported: annotate knobs (unroll/vectorize/bind choices)."""
        raise TuningError(
            f"define_annotate('{name}', policy={policy!r}) is not supported by minitvm.autotvm; "
            "use define_knob(name, [...]) and apply the annotation in the template"
        )

    def _add(self, space_cls: type, name: str, axes: list, policy: Any, kwargs: dict) -> list:
        if not self._collect:  # a point: knobs are already fixed
            n = len(axes) if space_cls is ReorderSpace else kwargs.get("num_outputs", 0)
            return [Axis(None, i) for i in range(n)]
        if name in self.space_map and self.is_fallback:  # a re-run keeps the value it has
            return [Axis(self.space_map[name], i) for i in range(self.space_map[name].num_output)]
        if space_cls is SplitSpace:  # a split needs the axis length; a reorder only positions
            axes = [a if isinstance(a, VirtualAxis) else VirtualAxis(a) for a in axes]
        space = space_cls(axes, policy, **kwargs)
        self.space_map[name] = space  # defining a knob again replaces it, as in TVM
        self._entity_map[name] = space[0]
        self._valid = None
        return [Axis(space, i) for i in range(space.num_output)]

    def add_flop(self, flop: Any) -> None:
        """Count `flop` floating-point operations for the task (else they are estimated)."""
        self.flop += float(getattr(flop, "value", flop))

    def raise_error(self, msg: str) -> None:
        """Mark this configuration invalid (measured as an instantiation error)."""
        self.errors.append(msg)

    def valid(self) -> bool:
        return not self.errors

    @property
    def dims(self) -> list[int]:
        return [len(s) for s in self.space_map.values()]

    @property
    def range_length(self) -> int:
        return int(np.prod(self.dims, dtype=object)) if self.space_map else 1

    def __len__(self) -> int:
        """How many points pass the multi_filter (all of range_length without one)."""
        return self.range_length if self._shared_filter is None else sum(self._flags())

    # ---------------------------------------------------------------- multi_filter
    def multi_filter(self, filter: Callable) -> None:
        """Keep only the points for which filter({name: entity}) is true (a condition
        between knobs; `define_split(filter=...)` restricts one knob)."""
        if self._collect:
            self._shared_filter, self._valid = filter, None

    def _flags(self) -> tuple[bool, ...]:
        if self._valid is None:
            names = list(self.space_map)
            self._valid = tuple(
                bool(self._shared_filter(dict(zip(names, self._entities(i)))))
                for i in range(self.range_length)
            )
        return self._valid

    def _entities(self, index: int) -> list:
        return [space[k] for space, k in zip(self.space_map.values(), self.point2knob(index))]

    def is_index_valid(self, index: int) -> bool:
        """Whether the point at `index` passes the multi_filter."""
        self._check_range(index, index + 1)
        return self._shared_filter is None or self._flags()[index]

    def _check_range(self, start: int, end: int) -> None:
        if not 0 <= start <= end <= self.range_length:
            raise TuningError(
                f"index range [{start}, {end}) is outside the space's 0..{self.range_length}"
            )

    def subrange_length(self, start: int, end: int) -> int:
        """How many valid points lie in [start, end)."""
        self._check_range(start, end)
        if self._shared_filter is None:
            return end - start
        return sum(self._flags()[start:end])

    def get_rand_index(
        self, start: int | None = None, end: int | None = None, to_exclude: Any = None
    ) -> int:
        """A random valid index in [start, end) not in `to_exclude`."""
        start, end = start or 0, end or self.range_length
        excluded = set(to_exclude or ())
        blocked = sum(1 for e in excluded if start <= e < end and self.is_index_valid(e))
        if self.subrange_length(start, end) <= blocked:
            raise TuningError(f"no valid index left in [{start}, {end}) to draw")
        while True:
            index = int(np.random.randint(start, end))
            if index not in excluded and self.is_index_valid(index):
                return index

    def get_next_index(
        self, index: int, n: int = 1, start: int | None = None, end: int | None = None
    ) -> int | None:
        """The n-th valid index after `index` (before it for n < 0), or None."""
        if n == 0:
            raise TuningError("get_next_index: n must not be 0")
        start, end = start or 0, end or self.range_length
        step, left = (1 if n > 0 else -1), abs(n)
        while left:
            index += step
            if not start <= index < end:
                return None
            left -= self.is_index_valid(index)
        return index

    def sample_ints(self, m: int) -> np.ndarray:
        """`m` distinct valid indices, drawn at random."""
        if m > len(self):
            raise TuningError(f"sample_ints: asked for {m} points of a space of {len(self)}")
        seen: set[int] = set()
        while len(seen) < m:
            seen.add(self.get_rand_index())
        return np.fromiter(seen, dtype=np.int64, count=m)

    def random_walk(self, point: int) -> int:
        """A valid neighbour of `point`: one knob changed at random."""
        knob = self.point2knob(point)
        if len(self) < 2:
            raise TuningError("random_walk: the space has no other point")
        while True:
            new = list(knob)
            j = int(np.random.randint(len(knob)))
            new[j] = int(np.random.randint(self.dims[j]))
            index = self.knob2point(new)
            if new != knob and self.is_index_valid(index):
                return index

    def point2knob(self, point: int) -> list[int]:
        """A point's index per knob (the first knob varies fastest)."""
        knob = []
        for dim in self.dims:
            knob.append(point % dim)
            point //= dim
        return knob

    def knob2point(self, knob: list[int]) -> int:
        point, scale = 0, 1
        for k, dim in zip(knob, self.dims):
            point += int(k) * scale
            scale *= dim
        return point

    def get(self, index: int) -> ConfigEntity:
        """The point at `index` of the space."""
        if not 0 <= index < self.range_length:
            raise TuningError(
                f"config index {index} is outside the space of {self.range_length} points"
            )
        if not self.is_index_valid(index):
            raise TuningError(f"config index {index} does not pass the space's multi_filter")
        entities = OrderedDict(
            (name, space[k])
            for (name, space), k in zip(self.space_map.items(), self.point2knob(index))
        )
        return ConfigEntity(index, self.code_hash, entities)

    def index_of(self, entity_map: dict) -> int | None:
        """The index of the point with these knob values, or None when it is not a point."""
        if list(entity_map) != list(self.space_map):
            return None
        knob = [space.index_of(entity_map[n]) for n, space in self.space_map.items()]
        if None in knob or not self.is_index_valid(self.knob2point(knob)):
            return None
        return self.knob2point(knob)

    def __iter__(self):
        return iter(self._entity_map)

    def __getitem__(self, name: str) -> Any:
        if name not in self._entity_map:
            raise TuningError(
                f"config has no knob '{name}'; it has {list(self._entity_map)}: define it "
                "(cfg.define_split / define_knob) before reading it"
            )
        return self._entity_map[name]

    def __repr__(self) -> str:
        rows = "".join(f"  {i:2d} {n}: {s}\n" for i, (n, s) in enumerate(self.space_map.items()))
        return (
            f"ConfigSpace (len={len(self)}, range_length={self.range_length}, space_map=\n{rows})"
        )


class ConfigEntity(ConfigSpace):
    """One point of a space: `cfg[name]` is the knob's value; define_* calls do nothing."""

    def __init__(self, index: int, code_hash: Any, entity_map: dict, constraints: Any = None):
        super().__init__()
        self.index = int(index)
        self.code_hash = code_hash
        self._entity_map = OrderedDict(entity_map)
        self._collect = False

    def get_flatten_feature(self) -> np.ndarray:
        """The knob values as one float vector (split sizes, permutations, numeric values)."""
        feature: list[float] = []
        for entity in self._entity_map.values():
            value = getattr(entity, _ENTITY_FIELD[type(entity)])
            if isinstance(value, list):
                feature.extend(float(v) for v in value)
            else:
                feature.append(float(value) if isinstance(value, int | float) else 0.0)
        return np.array(feature, dtype=np.float32)

    def get_other_option(self) -> dict:
        return {n: e.val for n, e in self._entity_map.items() if isinstance(e, OtherOptionEntity)}

    def to_json_dict(self) -> dict:
        """The point as JSON data: index, code hash and [name, kind, value] per knob."""
        kinds = {cls: kind for kind, cls in ENTITY_KINDS.items()}
        return {
            "index": self.index,
            "code_hash": self.code_hash,
            "entity": [
                [name, kinds[type(e)], getattr(e, _ENTITY_FIELD[type(e)])]
                for name, e in self._entity_map.items()
            ],
        }

    @staticmethod
    def from_json_dict(data: Any) -> ConfigEntity:
        """A point from `to_json_dict` output; anything malformed is a TuningError. A log is
        data from someone else: knob values must be of the kinds templates define (split and
        reorder: lists of 64-bit ints; knob: a number, string, bool or None)."""
        if not isinstance(data, dict) or type(data.get("index")) is not int:
            raise TuningError(f"config must be a dict with an int 'index', got {data!r:.80}")
        code_hash, items = data.get("code_hash"), data.get("entity", [])
        if not (code_hash is None or isinstance(code_hash, str)) or not isinstance(items, list):
            raise TuningError(
                f"config: 'code_hash' must be a string or null and 'entity' a list, got "
                f"{data!r:.80}"
            )
        entities = OrderedDict()
        for item in items:
            if not (
                isinstance(item, list)
                and len(item) == 3
                and isinstance(item[0], str)
                and isinstance(item[1], str)
                and item[1] in ENTITY_KINDS
            ):
                raise TuningError(
                    f"config knob must be [name, kind in {sorted(ENTITY_KINDS)}, value], "
                    f"got {item!r:.80}"
                )
            name, kind, value = item
            if not _is_knob_value(kind, value):
                raise TuningError(
                    f"config knob '{name[:80]}': a {kind} value must be "
                    f"{_KNOB_VALUES[kind]}, got {value!r:.80}"
                )
            entities[name] = ENTITY_KINDS[kind](value)
        return ConfigEntity(data["index"], code_hash, entities)

    def __repr__(self) -> str:
        knobs = ", ".join(f"('{n}', {e!r})" for n, e in self._entity_map.items())
        return f"[{knobs}],{self.code_hash},{self.index}"


class FallbackConfigEntity(ConfigSpace):
    """The config of a template called without a record: each knob takes its first value
    (`is_fallback` is True); `fallback_split` picks a split under size limits instead."""

    def __init__(self) -> None:
        super().__init__()
        self.is_fallback = True

    def fallback_split(self, name: str, constraints: list[int]) -> None:
        """Set split knob `name` to the largest divisors within `constraints` (-1: none),
        innermost first."""
        space = self.space_map.get(name)
        if not isinstance(space, SplitSpace) or len(constraints) != space.num_output:
            raise TuningError(
                f"fallback_split('{name}'): needs a split knob with {len(constraints)} outputs"
            )
        left, size = space.product, [1] * space.num_output
        for i in reversed(range(space.num_output)):
            limit = math.inf if constraints[i] == -1 else constraints[i]
            fits = [f for f in get_factors(left) if f <= limit]
            if not fits:
                raise TuningError(
                    f"fallback_split('{name}'): no divisor of {left} is within the limit "
                    f"{constraints[i]} of output {i}; limits must be -1 or >= 1"
                )
            size[i] = max(fits)
            left //= size[i]
        self._entity_map[name] = SplitEntity(size)
