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
    "MINITVM_CACHE_DIR": "compile cache directory (default $XDG_CACHE_HOME/minitvm or ~/.cache/minitvm; empty: off)",
    "MINITVM_CACHE_SIZE": "compile cache size bound in bytes, suffix K/M/G allowed (default 1G)",
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


def cache_dir() -> str | None:
    """MINITVM_CACHE_DIR; when unset, $XDG_CACHE_HOME/minitvm (if absolute) or ~/.cache/minitvm;
    None when set to the empty string (the cache is off)."""
    if "MINITVM_CACHE_DIR" in os.environ:
        return os.environ["MINITVM_CACHE_DIR"].strip() or None
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "minitvm")


_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def cache_size() -> int:
    """MINITVM_CACHE_SIZE in bytes (default 1 GiB): an integer with an optional K, M or G."""
    value = os.environ.get("MINITVM_CACHE_SIZE", "").strip()
    if not value:
        return 1 << 30
    unit = value[-1].upper() if value[-1].isalpha() else ""
    number = value[:-1] if unit else value
    if unit not in _SIZE_UNITS or not number.isdigit():
        raise MiniTVMError(
            f"MINITVM_CACHE_SIZE={value!r} is not a size; use bytes with an optional K, M or G "
            "suffix (e.g. 512M), or unset it for the default of 1G"
        )
    return int(number) * _SIZE_UNITS[unit]
