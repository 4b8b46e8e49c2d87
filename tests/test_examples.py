"""Examples are tests: every examples/*.py runs at small sizes and ends with its own assert."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = sorted((pathlib.Path(__file__).resolve().parents[1] / "examples").glob("*.py"))


def test_there_are_examples():
    assert len(EXAMPLES) >= 2


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_at_small_size(path):
    env = dict(os.environ, MINITVM_EXAMPLE_SMALL="1")
    proc = subprocess.run(
        [sys.executable, str(path)], env=env, capture_output=True, text=True, timeout=300, check=False,
        cwd=path.parent,
    )  # fmt: skip
    assert proc.returncode == 0, (
        f"{path.name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
