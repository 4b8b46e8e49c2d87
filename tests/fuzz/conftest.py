"""Budget of the fuzz suite: a small fixed one by default, MINITVM_FUZZ_EXAMPLES=N for a campaign.

MINITVM_FUZZ_EXAMPLES=N: run N generated cases per fuzz category instead of the default budget
(e.g. 2000 for the long campaign recorded in docs/reliability.md).
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def fuzz_examples(default: int) -> int:
    """Cases per category: MINITVM_FUZZ_EXAMPLES when set, else `default`."""
    raw = os.environ.get("MINITVM_FUZZ_EXAMPLES", "")
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise pytest.UsageError(f"MINITVM_FUZZ_EXAMPLES must be an integer, got {raw!r}") from None
    return max(value, 1)
