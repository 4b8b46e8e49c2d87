"""Helpers of the command-line tests: `python -m minitvm` in a subprocess, the reference of the
hand-built artifact."""

from __future__ import annotations

import subprocess
import sys

import numpy as np


def cli(*args: str, cwd=None, timeout: int = 300) -> subprocess.CompletedProcess:
    """`python -m minitvm ARGS` in a fresh process (a crash shows as a return code)."""
    return subprocess.run(
        [sys.executable, "-m", "minitvm", *map(str, args)],
        check=False,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
    )


W = np.random.default_rng(1).standard_normal((8, 4)).astype("float32")
B = np.random.default_rng(2).standard_normal(4).astype("float32")


def reference(x: np.ndarray) -> np.ndarray:
    """What the hand-built artifact computes: relu(x @ W + B)."""
    return np.maximum(x @ W + B, 0)
