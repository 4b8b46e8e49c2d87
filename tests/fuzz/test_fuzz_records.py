"""Fuzzing the files users receive from others: tuning databases, autotvm logs, parameters.

A valid JSONDatabase (workload + records), autotvm log and `relay.save_param_dict` archive are
mutated at random (seeded: case i of a kind is always the same mutation) and loaded. Every case
must end in a correct load or a MiniTVMError: no other exception, no crash, no hang, no code run
from the file (some mutations plant `pragma_import_llvm` IR that would create a canary
directory), no silent wrong result (a database that loads must give a schedule that computes
what the workload does; parameters that load must be the saved ones).

Cases run in the shared harness's worker subprocesses (fuzz_harness.py) under a memory limit,
with a timeout per case; a crash or hang is reported with the case's index. The default budget
is small; MINITVM_FUZZ_EXAMPLES=N runs N cases per kind. Replay one case with
`python tests/fuzz/fuzz_harness.py replay records_KIND INDEX`.
"""

import pytest
from conftest import fuzz_examples
from fuzz_harness import run_campaign

BUDGET = {"database": 30, "autotvm": 40, "params": 60}  # default cases per kind (about 15 s)


@pytest.mark.parametrize("kind", sorted(BUDGET))
def test_mutated_files_load_or_raise_a_minitvm_error(kind):
    report = run_campaign(f"records_{kind}", fuzz_examples(BUDGET[kind]))
    print(report.summary())
    assert report.tried > 0
    assert not report.failures, report.summary()
