"""`minitvm cache info` (where the compile cache is, its entries and size) and `minitvm cache
clear` (remove every entry). The cache itself is minitvm/driver/compile_cache.py."""

from __future__ import annotations

import argparse
import sys

EPILOG = """\
examples:
  minitvm cache info                          # directory, entries, bytes used of the limit
  minitvm cache clear                         # remove every entry
  MINITVM_CACHE_DIR=/tmp/c minitvm cache info # another cache directory (empty: cache off)
"""


DESCRIPTION = (
    "The compile cache keeps built kernels' object code between processes, so building "
    "the same model again skips lowering and LLVM. MINITVM_CACHE_DIR moves it (empty: off), "
    "MINITVM_CACHE_SIZE bounds it (default 1G)."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=("info", "clear"), help="info: show it; clear: empty it")


def run(args: argparse.Namespace) -> int:
    from ..driver import compile_cache

    if args.action == "clear":
        removed = compile_cache.clear()
        where = compile_cache.cache_dir() or "(off: MINITVM_CACHE_DIR is empty)"
        sys.stdout.write(f"removed {removed} entries from {where}\n")
        return 0
    info = compile_cache.info()
    if not info["enabled"]:
        sys.stdout.write("compile cache: off (MINITVM_CACHE_DIR is set to the empty string)\n")
        return 0
    sys.stdout.write(
        f"compile cache: {info['directory']}\n"
        f"entries: {info['entries']}\n"
        f"size: {info['bytes'] / 2**20:.1f} MiB of {info['limit'] / 2**20:.0f} MiB "
        "(MINITVM_CACHE_SIZE)\n"
    )
    return 0
