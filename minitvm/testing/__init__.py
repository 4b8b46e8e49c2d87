"""Helpers for tests and examples: numpy checks, structural asserts, workloads and datasets."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..ir.structural import assert_structural_equal

__all__ = ["assert_allclose", "check_numpy", "main", "random_inputs", "assert_structural_equal"]


def assert_allclose(actual: Any, desired: Any, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """np.testing.assert_allclose that also accepts NDArrays."""
    to_np = lambda x: x.numpy() if hasattr(x, "numpy") else np.asarray(x)  # noqa: E731
    np.testing.assert_allclose(to_np(actual), to_np(desired), rtol=rtol, atol=atol)


def main() -> None:
    """`tvm.testing.main()` at the end of a test file: run that file's tests with pytest."""
    import __main__
    import sys

    import pytest

    sys.exit(pytest.main([__main__.__file__, *sys.argv[1:]]))


def random_inputs(shapes: Sequence[tuple], dtype: str = "float32", seed: int = 0) -> list[np.ndarray]:
    """Seeded random arrays (normal for floats, small ints for integer dtypes)."""
    rng = np.random.default_rng(seed)
    out = []
    for shape in shapes:
        if np.dtype(dtype).kind == "f":
            out.append(rng.standard_normal(shape).astype(dtype))
        elif np.dtype(dtype).kind == "b":
            out.append(rng.integers(0, 2, shape).astype(dtype))
        else:
            out.append(rng.integers(-8, 8, shape).astype(dtype))
    return out


def check_numpy(
    func: Callable[..., Any],
    reference: Callable[..., Any],
    inputs: Sequence[np.ndarray],
    out_shapes: Sequence[tuple],
    out_dtype: str = "float32",
    rtol: float = 1e-5,
    atol: float = 1e-6,
) -> list[np.ndarray]:
    """Call a compiled `func(*inputs, *outputs)` (destination-passing) and compare with numpy.

    `reference(*inputs)` returns one array or a tuple of arrays.
    """
    outs = [np.zeros(s, dtype=out_dtype) for s in out_shapes]
    func(*inputs, *outs)
    expected = reference(*inputs)
    expected = expected if isinstance(expected, tuple | list) else (expected,)
    for got, want in zip(outs, expected):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    return outs

from .grad import check_grad  # noqa: E402

__all__ += ["check_grad"]
from .tir_interp import InterpreterError, run_prim_func  # noqa: E402

__all__ += ["InterpreterError", "run_prim_func"]
