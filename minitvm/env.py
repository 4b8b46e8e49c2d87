"""Every MINITVM_* environment flag, in one place. Read them only through these functions."""

from __future__ import annotations

import os

FLAGS = {
    "MINITVM_NUM_THREADS": "threads in the parallel-loop pool (default: number of cores)",
    "MINITVM_DUMP_IR": "directory; the lowering pipeline writes the script after each pass there",
    "MINITVM_VERIFY_IR": "1 to run the well-formedness check after every lowering pass",
    "MINITVM_EXAMPLE_SMALL": "1 to run examples/*.py at small sizes (the test suite sets it)",
}


def num_threads() -> int | None:
    value = os.environ.get("MINITVM_NUM_THREADS")
    return int(value) if value else None


def dump_ir_dir() -> str | None:
    return os.environ.get("MINITVM_DUMP_IR") or None


def verify_ir() -> bool:
    return os.environ.get("MINITVM_VERIFY_IR", "") not in ("", "0")


def example_small() -> bool:
    return os.environ.get("MINITVM_EXAMPLE_SMALL", "") not in ("", "0")
