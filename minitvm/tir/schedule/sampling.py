"""Sampling primitives: seeded random choices whose decisions the trace records and replays.

Every function takes the schedule's RandomEngine and an optional earlier decision; with a
decision it checks and reuses it (that is how a trace replays), without one it samples.
"""

from __future__ import annotations

import bisect
import itertools
import math
import os
from typing import Any

from ...error import ScheduleError

_MODULUS = 2**31 - 1  # the minimal-standard LCG: x <- 48271 * x mod (2**31 - 1)


class RandomEngine:
    """A seeded minimal-standard linear congruential generator, drawn from the way C++'s
    standard library draws from such an engine, so a seed gives the decisions TVM gives."""

    def __init__(self, seed: int | None) -> None:
        if seed is None or seed == -1:
            seed = int.from_bytes(os.urandom(4), "little") % _MODULUS
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise ScheduleError(
                f"Schedule seed must be None, -1 or a non-negative int, got {seed!r}"
            )
        self.state = seed % _MODULUS or 1

    def next(self) -> int:
        self.state = self.state * 48271 % _MODULUS
        return self.state

    def randint(self, lo: int, hi: int) -> int:
        """Uniform in [lo, hi): rejection, then downscaling of the engine's range [0, M-1)."""
        if hi - lo <= 1:
            return lo
        buckets = hi - lo
        scaling = (_MODULUS - 1) // buckets
        past = buckets * scaling
        while True:
            r = self.next()
            if r < past:
                return lo + r // scaling

    def canonical(self) -> float:
        """Uniform in [0, 1) from two draws (53 bits of a double)."""
        r = float(_MODULUS)
        value = (self.next() + self.next() * r) / (r * r)
        return value if value < 1.0 else math.nextafter(1.0, 0.0)

    def discrete(self, weights: list[float]) -> int:
        """An index drawn with probability proportional to its weight."""
        total = sum(weights)
        cumulative = list(itertools.accumulate(w / total for w in weights))
        cumulative[-1] = 1.0
        return bisect.bisect_left(cumulative, self.canonical())

    def choice(self, items: list) -> Any:
        return items[self.randint(0, len(items))]

    def shuffle(self, items: list) -> None:
        for i in range(len(items) - 1, 0, -1):
            j = self.randint(0, i + 1)
            items[i], items[j] = items[j], items[i]

    def fork_seed(self) -> int:
        """A seed for another engine, derived from this one's next draw."""
        return self.next() * 32767 % 1999999973


def make_rng(seed: int | None) -> RandomEngine:
    """A random engine; None or -1 seeds it from the operating system."""
    return RandomEngine(seed)


def fork(rng: RandomEngine) -> RandomEngine:
    """A new engine seeded from `rng` (a copied schedule samples differently)."""
    return RandomEngine(rng.fork_seed())


def sample_categorical(
    rng: RandomEngine, candidates: list, probs: list, decision: Any
) -> tuple[int, int]:
    """(value, index): a candidate drawn with the given probabilities."""
    cands = [int(c) for c in candidates]
    weights = [float(p) for p in probs]
    if not cands or len(cands) != len(weights):
        raise ScheduleError(
            f"sample_categorical: {len(cands)} candidates and {len(weights)} probabilities; "
            "give one probability per candidate (at least one)"
        )
    if any(w < 0 for w in weights) or sum(weights) <= 0:
        raise ScheduleError(
            f"sample_categorical: probabilities {weights} must be non-negative with a positive sum"
        )
    if decision is not None:
        index = int(decision)
        if not 0 <= index < len(cands):
            raise ScheduleError(
                f"sample_categorical: decision {index} is not an index into {len(cands)} candidates"
            )
    else:
        index = rng.discrete(weights)
    return cands[index], index


def _prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out + ([n] if n > 1 else [])


def _check_tile(what: str, factors: list, extent: int, n: int) -> None:
    prod = 1
    for f in factors:
        prod *= f
    if len(factors) != n or prod != extent or any(f < 1 for f in factors):
        raise ScheduleError(
            f"{what}: decision {factors} is not {n} positive factors whose product is the loop "
            f"extent {extent}"
        )


def sample_perfect_tile(
    rng: RandomEngine, extent: int | None, n: int, max_innermost_factor: int, decision: Any
) -> list[int]:
    """`n` factors whose product is `extent`, the innermost at most max_innermost_factor.

    A loop of unknown extent gets [-1, 1, ..., 1] (the outer factor is left to split).
    """
    if n < 1:
        raise ScheduleError(f"sample_perfect_tile: n must be at least 1, got {n}")
    if extent is None:
        return [-1] + [1] * (n - 1)
    if decision is not None:
        factors = [int(f) for f in decision]
        _check_tile("sample_perfect_tile", factors, extent, n)
        return factors
    limit = max_innermost_factor if max_innermost_factor and max_innermost_factor > 0 else None
    factors = [1] * n
    primes = _prime_factors(extent)
    rng.shuffle(primes)
    for p in primes:
        # the innermost slot takes p only while it stays within the limit
        fits = [i for i in range(n) if i < n - 1 or limit is None or factors[i] * p <= limit]
        if not fits:  # n == 1 and the whole extent exceeds the limit: nothing else is valid
            fits = [n - 1]
        factors[rng.choice(fits)] *= p
    return factors


def sample_partitioned_tile(
    rng: RandomEngine,
    extent: int | None,
    n: int,
    partition_pos: int,
    innerpart_factor: int,
    decision: Any,
) -> list[int]:
    """Perfect-tile factors where the product of factors[partition_pos:] divides by
    innerpart_factor."""
    if not 0 <= partition_pos <= n - 1 or innerpart_factor < 1:
        raise ScheduleError(
            f"sample_partitioned_tile: need 0 <= partition_pos < n ({partition_pos}, {n}) and "
            f"innerpart_factor >= 1 ({innerpart_factor})"
        )
    if extent is None:
        return [-1] + [1] * (n - 1)
    if decision is not None:
        factors = [int(f) for f in decision]
        _check_tile("sample_partitioned_tile", factors, extent, n)
    else:
        if extent % innerpart_factor:
            raise ScheduleError(
                f"sample_partitioned_tile: the loop extent {extent} is not a multiple of "
                f"innerpart_factor {innerpart_factor}"
            )
        factors = sample_perfect_tile(rng, extent // innerpart_factor, n, 0, None)
        factors[rng.randint(partition_pos, n)] *= innerpart_factor
    inner = 1
    for f in factors[partition_pos:]:
        inner *= f
    if inner % innerpart_factor:
        raise ScheduleError(
            f"sample_partitioned_tile: decision {factors} does not make the factors from "
            f"position {partition_pos} a multiple of {innerpart_factor}"
        )
    return factors


def pick_location(rng: RandomEngine, indices: list[int], decision: Any) -> int:
    """A compute location index among `indices` (sorted; -2 inline, -1 root, k a loop).

    An earlier decision is kept when it is still a candidate, else the nearest one before it.
    """
    if decision is None:
        return rng.choice(indices)
    old = int(decision)
    before = [i for i in indices if i <= old]
    return before[-1] if before else indices[0]


def _loop_kind(loop: Any) -> str:
    """The loop's kind: "reduce" if it drives a reduction iterator under it, else "spatial"."""
    from ..expr import IterType
    from ..stmt import BlockRealize
    from .tree import uses_var, walk

    for s, _ in walk(loop.body):
        if isinstance(s, BlockRealize):
            for iv, value in zip(s.block.iter_vars, s.iter_values):
                if iv.iter_type != IterType.DataPar and uses_var(value, {id(loop.loop_var)}):
                    return "reduce"
    return "spatial"


def _legal(fn: Any, *args: Any) -> bool:
    try:
        fn(*args)
    except ScheduleError:
        return False
    return True


def compute_locations(func: Any, r: Any, path: Any) -> list[tuple[int, Any]]:
    """Where block `r` may be computed: (-2, None) inline, (-1, None) root, (k, loop) at the
    k-th loop of its first consumer — TVM's candidate rules (no unit loops, no spatial loop
    after a reduction loop, no trailing reduction loops), each checked by trying it."""
    from . import compute_location as _loc
    from . import inline as _inline
    from .common import const_int
    from .tree import loops_above

    out = [(-2, None)] if _legal(_inline.compute_inline, func, r, path) else []
    out.append((-1, None))
    scope, scope_path = _loc._scope_of(path)
    writes = _loc._writes(r)
    consumers = [
        (b, p)
        for b, p in _loc.scope_blocks(scope, scope_path)
        if b is not r and _loc._reads(b) & writes
    ]
    if not consumers:
        return out
    common = [a for a in consumers[0][1] if all(any(a is x for x in p) for _, p in consumers)]
    loops = loops_above(consumers[0][1])
    boundary = next((a for a in reversed(common) if any(a is f for f in loops)), None)
    if boundary is None:
        return out
    candidates = loops[: next(i for i, f in enumerate(loops) if f is boundary) + 1]
    kinds = [_loop_kind(f) for f in candidates]
    last_spatial = max((i for i, k in enumerate(kinds) if k == "spatial"), default=-1)
    seen_reduce = False
    for i, loop in enumerate(candidates):
        if const_int(loop.extent) == 1:
            continue
        if kinds[i] == "spatial" and seen_reduce:
            break
        if kinds[i] == "reduce":
            seen_reduce = True
            if i > last_spatial:
                break
        loop_path = consumers[0][1][: next(k for k, a in enumerate(consumers[0][1]) if a is loop)]
        if _legal(_loc.compute_at, func, r, path, loop, loop_path, True):
            out.append((i, loop))
    return out


__all__ = [
    "compute_locations",
    "fork",
    "make_rng",
    "pick_location",
    "sample_categorical",
    "sample_partitioned_tile",
    "sample_perfect_tile",
]
