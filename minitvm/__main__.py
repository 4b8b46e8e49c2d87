"""Command line: `python -m minitvm demo`."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minitvm", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="build, check and time a scheduled matmul and an elementwise kernel")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from .demo import run_demo

        return run_demo()
    return 2


if __name__ == "__main__":
    sys.exit(main())
