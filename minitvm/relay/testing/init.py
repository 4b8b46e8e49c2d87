"""Deterministic random parameters for the relay.testing workloads, chosen by parameter name.

Scales keep activations O(1) through deep networks: He-normal weights where a relu follows,
LeCun-normal for the classifier, batch-norm statistics that are not the identity (so that
folding them is exercised), and a small scale on the last conv of each residual branch so
that sums of many residual units do not grow (`scales`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ...ir.module import IRModule
from ...runtime import ndarray as _nd
from ..expr import Function
from ..type_infer import infer_type


def _fan_in(shape: tuple) -> int:
    return int(np.prod(shape[1:])) if len(shape) > 1 else 1


def _normal(scale: Callable[[tuple], float]) -> Callable:
    return lambda rng, s: rng.standard_normal(s) * scale(s)


# (name suffix, initialiser); the first matching suffix wins (TVM's names: "conv0_weight",
# "bn_gamma", "bn_moving_var", or plain "weight", "bn_mean", "bn_var")
RULES: tuple[tuple[str, Callable[[np.random.Generator, tuple], np.ndarray]], ...] = (
    ("weight", _normal(lambda s: math.sqrt(2 / _fan_in(s)))),
    ("bias", _normal(lambda s: 0.05)),
    ("gamma", lambda rng, s: rng.uniform(0.7, 1.3, s)),
    ("beta", _normal(lambda s: 0.1)),
    ("mean", _normal(lambda s: 0.1)),
    ("var", lambda rng, s: rng.uniform(0.6, 1.6, s)),
)


def init_value(name: str, shape: tuple, dtype: str, rng: np.random.Generator) -> np.ndarray:
    """The initial value of parameter `name` (its suffix picks the rule)."""
    for suffix, rule in RULES:
        if name.endswith(suffix):
            return np.asarray(rule(rng, shape)).astype(dtype)
    raise ValueError(f"no initialisation rule for parameter {name!r}")


def create_workload(
    func: Function, seed: int = 0, scales: dict[str, float] | None = None
) -> tuple[IRModule, dict]:
    """(mod, params): the type-checked module of `func` and a value for every param but "data"
    (`scales` multiplies the values of the named params)."""
    mod = infer_type(IRModule.from_expr(func))
    rng = np.random.default_rng(seed)
    params = {}
    for p in mod["main"].params:
        if p.name_hint == "data":
            continue
        ty = p.checked_type
        value = init_value(p.name_hint, ty.concrete_shape, ty.dtype, rng)
        factor = (scales or {}).get(p.name_hint)
        params[p.name_hint] = _nd.array(
            value if factor is None else value * value.dtype.type(factor)
        )
    return mod, params
