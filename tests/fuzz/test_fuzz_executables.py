"""Fuzzing exported relax Executables (fuzz_executables.py): seeded mutations of program.json
fields, instructions and member bytes, most of them re-checksummed as an attacker would, each
loaded and run in a worker subprocess with a timeout. Every case runs correctly or raises a
MiniTVMError: never a crash, a hang, another exception, or a write into the caller's input.
MINITVM_FUZZ_EXAMPLES=N runs N cases instead of the small default budget."""

from conftest import fuzz_examples
from fuzz_harness import run_campaign

BUDGET = 300  # about 5 s on 2 cores


def test_tampered_executables_never_crash_hang_or_raise_foreign_exceptions():
    report = run_campaign("executables", fuzz_examples(BUDGET))
    print(report.summary())
    assert report.tried > 0
    assert not report.failures, report.summary()
