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

# TVM's pytest helpers live in .utils, loaded on first use so that `import minitvm` does not
# import pytest.
_PYTEST_HELPERS = frozenset(
    {
        "CompareBeforeAfter", "DEFAULT_TEST_TARGETS", "Feature", "assert_prim_expr_equal",
        "check_numerical_grads", "device_enabled", "enabled_targets", "exclude_targets",
        "fixture", "known_failing_targets", "parameter", "parameters", "parametrize_targets",
        "requires_aarch64_sve", "requires_arm", "requires_arm_dot", "requires_arm_fp16",
        "requires_cublas", "requires_cuda", "requires_cuda_compute_version", "requires_cudagraph",
        "requires_cudnn", "requires_gpu", "requires_hexagon", "requires_hipblas", "requires_llvm",
        "requires_matrixcore", "requires_metal", "requires_multi_gpu", "requires_nvcc_version",
        "requires_nvptx", "requires_opencl", "requires_package", "requires_rocm", "requires_rpc",
        "requires_tensorcore", "requires_vulkan", "requires_x86", "requires_x86_amx",
        "requires_x86_avx512", "requires_x86_vnni", "skip_if_32bit", "skip_if_wheel_test",
        "slow", "uses_gpu", "uses_multi_gpu",
    }
)  # fmt: skip


def __getattr__(name: str):
    if name == "zoo":  # the model zoo imports relax; load it on first use
        import importlib

        return importlib.import_module(f"{__name__}.zoo")
    if name in _PYTEST_HELPERS:
        from . import utils

        return getattr(utils, name)
    raise AttributeError(f"module 'minitvm.testing' has no attribute {name!r}")
