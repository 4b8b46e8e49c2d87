"""The fuzz suite of issue 10: generated cases, each class of outcome counted.

Every case runs in a worker subprocess (see fuzz_harness.py); the default budget is small and
fixed (derandomized hypothesis), MINITVM_FUZZ_EXAMPLES=N runs N cases per category. No case may
crash, hang, compute a wrong result, run code from a file, or raise anything but a MiniTVMError.
"""

import pytest
from conftest import fuzz_examples
from fuzz_harness import run_campaign

# category -> default number of cases (about 10 s each on 2 cores)
BUDGET = {"ops": 100, "args": 80, "schedules": 60, "script": 80, "exports": 60}


@pytest.mark.parametrize("category", sorted(BUDGET))
def test_fuzz_category_has_no_crash_hang_wrong_result_or_foreign_exception(category):
    report = run_campaign(category, fuzz_examples(BUDGET[category]))
    print(report.summary())
    assert report.tried > 0
    assert not report.failures, report.summary()
