"""Fuzzing the files users receive from others: tuning databases, autotvm logs, parameters.

A valid JSONDatabase (workload + records), autotvm log and `relay.save_param_dict` archive are
mutated at random (seeded: case i of a kind is always the same mutation) and loaded. Every case
must end in a correct load or a MiniTVMError: no other exception, no crash, no hang, no code run
from the file (some mutations plant `pragma_import_llvm` IR that would create a canary
directory), no silent wrong result (a database that loads must give a schedule that computes
what the workload does; parameters that load must be the saved ones).

Cases run in worker subprocesses (this file run as a script) under a memory limit, with a
timeout per case; a crash or hang is reported with the case's index. The default budget is
small; MINITVM_FUZZ_EXAMPLES=N runs N cases per kind. Replay one case with
`python tests/fuzz/test_fuzz_records.py replay KIND INDEX`.
"""

from __future__ import annotations

import json
import os
import queue
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import threading

import pytest
from conftest import fuzz_examples

HERE = os.path.dirname(os.path.abspath(__file__))
BUDGET = {"database": 30, "autotvm": 40, "params": 60}  # default cases per kind
SEED = 20260509
CASE_TIMEOUT = 60.0  # a case loads a small file: seconds mean a hang
MEMORY_LIMIT = 3 << 30  # bytes of address space per worker


# ----------------------------------------------------------------------------- the tests


@pytest.mark.parametrize("kind", sorted(BUDGET))
def test_mutated_files_load_or_raise_a_minitvm_error(kind):
    outcomes, failures = run_kind(kind, fuzz_examples(BUDGET[kind]))
    summary = f"fuzz {kind}: {outcomes}\n" + "\n".join(failures[:20])
    print(summary)
    assert sum(outcomes.values()) > 0
    assert not failures, summary


def test_the_runner_reports_a_crash_and_a_hang_with_their_case(monkeypatch):
    """The harness itself: the selftest kind crashes on case 1 and hangs on case 2."""
    monkeypatch.setattr(sys.modules[__name__], "CASE_TIMEOUT", 3.0)
    outcomes, failures = run_kind("selftest", 4)
    assert outcomes == {"ok": 1, "clean": 1, "crash": 1, "hang": 1}, (outcomes, failures)
    assert (
        failures[0].startswith("crash: selftest case 1") and "hang: selftest case 2" in failures[1]
    )


# ----------------------------------------------------------------------------- parent side


def run_kind(kind: str, examples: int) -> tuple[dict, list[str]]:
    """Run cases 0..examples-1 of `kind` in as few workers as crashes and hangs allow."""
    outcomes: dict[str, int] = {}
    failures: list[str] = []
    scratch = tempfile.mkdtemp(prefix="minitvm_fuzz_records_")
    try:
        start = 0
        while start < examples:
            start = _one_worker(kind, start, examples, scratch, outcomes, failures)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return outcomes, failures


def _one_worker(kind, start, examples, scratch, outcomes, failures) -> int:
    """Run cases from `start` in one worker; returns where the next worker starts."""
    cmd = [sys.executable, os.path.abspath(__file__), "worker", kind, str(start), str(examples)]
    env = dict(os.environ, TMPDIR=scratch)
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, cwd=HERE, env=env)
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
        current, timeout = None, CASE_TIMEOUT + 60  # the first case pays for the imports
        while True:
            try:
                line = lines.get(timeout=timeout)
            except queue.Empty:
                proc.kill()
                proc.wait()
                index = current["index"] if current else start
                _count(outcomes, failures, "hang", kind, index, f"no answer in {timeout:.0f} s")
                return index + 1
            if line is None:
                rc = proc.wait()
                err.seek(0)
                tail = err.read().decode(errors="replace")[-600:]
                index = current["index"] if current else start
                _count(outcomes, failures, "crash", kind, index, f"exit {rc}: {tail}")
                return index + 1 if current else examples
            msg = json.loads(line)
            if msg["event"] == "start":
                current, timeout = msg, CASE_TIMEOUT
            elif msg["event"] == "result":
                _count(outcomes, failures, msg["outcome"], kind, msg["index"], msg["detail"])
                current = None
            else:  # done
                proc.wait()
                return examples


def _pump(stream, lines: queue.Queue) -> None:
    for raw in stream:
        text = raw.decode(errors="replace").strip()
        if text.startswith("{"):
            lines.put(text)
    lines.put(None)


def _count(outcomes, failures, outcome, kind, index, detail) -> None:
    outcomes[outcome] = outcomes.get(outcome, 0) + 1
    if outcome not in ("ok", "clean"):
        failures.append(
            f"{outcome}: {kind} case {index}: {detail[:1500]}\n"
            f"    replay: python tests/fuzz/test_fuzz_records.py replay {kind} {index}"
        )


# ----------------------------------------------------------------------------- worker side


def worker_main(kind: str, start: int, examples: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    import fuzz_record_cases as cases

    run_case = cases.KINDS[kind]
    for index in range(start, examples):
        _emit({"event": "start", "index": index})
        outcome, detail = _classify(run_case, index)
        _emit({"event": "result", "index": index, "outcome": outcome, "detail": detail})
    _emit({"event": "done"})


def _classify(run_case, index: int) -> tuple[str, str]:
    import traceback

    from fuzz_record_cases import Wrong

    from minitvm.error import MiniTVMError

    work = tempfile.mkdtemp(prefix=f"case{index}_")
    canary = os.path.join(work, "canary")
    try:
        run_case(random.Random(f"{SEED}:{index}"), work, canary)
        outcome, detail = "ok", ""
    except Wrong as err:
        outcome, detail = "wrong", str(err)
    except MiniTVMError as err:
        outcome, detail = "clean", f"{type(err).__name__}: {str(err)[:300]}"
    except Exception as err:  # noqa: BLE001 - any other exception is the bug being hunted
        outcome = "bug"
        detail = "".join(traceback.format_exception(type(err), err, err.__traceback__)[-6:])
    if os.path.exists(canary):
        outcome, detail = "codeexec", f"the canary appeared: code from the file ran; {detail}"
    shutil.rmtree(work, ignore_errors=True)
    return outcome, detail


def _emit(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    if sys.argv[1] == "worker":
        worker_main(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:  # replay KIND INDEX: run one case here, with its traceback
        import fuzz_record_cases as cases

        work = tempfile.mkdtemp()
        cases.KINDS[sys.argv[2]](random.Random(f"{SEED}:{sys.argv[3]}"), work, work + "/canary")
        print("ok", "(canary created!)" if os.path.exists(work + "/canary") else "")
