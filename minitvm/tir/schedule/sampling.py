"""Sampling primitives: seeded random choices whose decisions the trace records and replays.

Every function takes the schedule's `random.Random` and an optional earlier decision; with a
decision it checks and reuses it (that is how a trace replays), without one it samples.
"""

from __future__ import annotations

import random
from typing import Any

from ...error import ScheduleError

_MAX_SEED = 2**31 - 1


def make_rng(seed: int | None) -> random.Random:
    """TVM's seed rule: None or -1 means a random seed, else 1 <= seed < 2**31."""
    if seed is None or seed == -1:
        return random.Random()
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= _MAX_SEED:
        raise ScheduleError(f"Schedule seed must be None, -1 or an int in [0, 2**31), got {seed!r}")
    return random.Random(seed)


def fork(rng: random.Random) -> random.Random:
    """A new generator seeded from `rng` (a copied schedule samples differently)."""
    return random.Random(rng.getrandbits(31))


def sample_categorical(
    rng: random.Random, candidates: list, probs: list, decision: Any
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
        index = rng.choices(range(len(cands)), weights=weights)[0]
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
    rng: random.Random, extent: int | None, n: int, max_innermost_factor: int, decision: Any
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
    rng: random.Random,
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
        factors[rng.randrange(partition_pos, n)] *= innerpart_factor
    inner = 1
    for f in factors[partition_pos:]:
        inner *= f
    if inner % innerpart_factor:
        raise ScheduleError(
            f"sample_partitioned_tile: decision {factors} does not make the factors from "
            f"position {partition_pos} a multiple of {innerpart_factor}"
        )
    return factors


def pick_location(rng: random.Random, indices: list[int], decision: Any) -> int:
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
