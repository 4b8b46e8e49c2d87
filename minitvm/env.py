"""Every MINITVM_* environment flag, in one place. Read them only through these functions."""

from __future__ import annotations

import os

from .error import MiniTVMError

FLAGS = {
    "MINITVM_NUM_THREADS": "threads in the parallel-loop pool (default: number of cores)",
    "TVM_NUM_THREADS": "TVM's spelling of MINITVM_NUM_THREADS, read when that one is unset",
    "MINITVM_BUILD_JOBS": "processes a build's kernels are compiled in (default: every core; 1: serial)",
    "MINITVM_DUMP_IR": "directory; the lowering pipeline writes the script after each pass there",
    "MINITVM_VERIFY_IR": "1 to run the well-formedness check after every lowering pass",
    "MINITVM_EXAMPLE_SMALL": "1 to run examples/*.py at small sizes (the test suite sets it)",
    "MINITVM_FUZZ_EXAMPLES": "cases per category of tests/fuzz (default: a small fixed budget)",
}


def _positive_int(names: tuple[str, ...], what: str) -> int | None:
    """The first of the flags `names` that is set, as a positive int; None when none is set.
    A value that is not one is an error naming the flag and saying what it sets (`what`)."""
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            break
    else:
        return None
    try:
        n = int(value, 10)
    except ValueError:
        n = 0
    if n < 1:
        raise MiniTVMError(
            f"{name}={value!r} is not a positive integer; set it to the number of {what}, or "
            "unset it to use every core"
        )
    return n


def num_threads() -> int | None:
    """MINITVM_NUM_THREADS (else TVM's TVM_NUM_THREADS) as a positive int, None when both are
    unset or empty."""
    return _positive_int(
        ("MINITVM_NUM_THREADS", "TVM_NUM_THREADS"),
        f"threads for parallel loops (e.g. {os.cpu_count() or 1}, the cores of this machine)",
    )


def build_jobs() -> int | None:
    """MINITVM_BUILD_JOBS as a positive int, None when unset or empty."""
    return _positive_int(
        ("MINITVM_BUILD_JOBS",),
        "processes a build may compile kernels in (1 builds serially)",
    )


def dump_ir_dir() -> str | None:
    return os.environ.get("MINITVM_DUMP_IR") or None


def verify_ir() -> bool:
    return os.environ.get("MINITVM_VERIFY_IR", "") not in ("", "0")


def example_small() -> bool:
    return os.environ.get("MINITVM_EXAMPLE_SMALL", "") not in ("", "0")
