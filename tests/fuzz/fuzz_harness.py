"""Runs fuzz cases in worker subprocesses and classifies each case's outcome.

A worker (`python fuzz_harness.py run CATEGORY N SKIP CANARY_DIR`) draws N cases of one
category from a derandomized hypothesis strategy, skips the first SKIP, and prints one JSON line
before each case ("start") and one after ("result"). The parent reads them with a per-case
timeout: a worker that dies mid-case marks that case a crash (with the signal), one that stops
answering marks it a hang; then a fresh worker continues after that case. Replay one case with
`python tests/fuzz/fuzz_harness.py replay CATEGORY 'JSON'` (it prints the traceback).
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
# ok: correct result; clean: a MiniTVMError; skip: the case could not be judged (oracle too slow);
# accepted_invalid: ran a model that the ONNX checker and ONNX Runtime both refuse (counted apart,
# not a failure); bug: another exception; wrong: a silent wrong result; crash: the process died;
# hang: timeout; codeexec: the canary file appeared (code from a file was run).
OUTCOMES = ("ok", "clean", "skip", "accepted_invalid", "bug", "wrong", "crash", "hang", "codeexec")
BAD = ("bug", "wrong", "crash", "hang", "codeexec")


class Wrong(AssertionError):
    """A case produced a result that differs from the oracle (raised by case runners)."""


class Skip(Exception):
    """A case that cannot be judged (e.g. the oracle would take too long)."""


class AcceptedInvalid(Exception):
    """A case whose input every oracle refuses as invalid, but which ran (counted apart)."""


@dataclass
class Report:
    category: str
    counts: Counter = field(default_factory=Counter)
    failures: list = field(default_factory=list)  # (outcome, case, detail)
    seconds: float = 0.0

    @property
    def tried(self) -> int:
        return sum(self.counts.values())

    def bad(self, outcome: str) -> list:
        return [f for f in self.failures if f[0] == outcome]

    def summary(self) -> str:
        counts = ", ".join(f"{k} {self.counts.get(k, 0)}" for k in OUTCOMES)
        lines = [f"fuzz {self.category}: {self.tried} cases in {self.seconds:.0f}s: {counts}"]
        for outcome, case, detail in self.failures[:30]:
            lines.append(f"  {outcome}: {json.dumps(case)}\n      {detail[:600]}")
            lines.append(
                f"      replay: python tests/fuzz/fuzz_harness.py replay {self.category} "
                f"'{json.dumps(case)}'"
            )
        return "\n".join(lines)


# ----------------------------------------------------------------------------- parent side


def run_campaign(category: str, examples: int, case_timeout: float = 60.0) -> Report:
    """Run `examples` cases of `category` in as few worker processes as crashes allow."""
    report = Report(category)
    canary_dir = tempfile.mkdtemp(prefix="minitvm_fuzz_canary_")
    scratch = tempfile.mkdtemp(prefix="minitvm_fuzz_tmp_")  # the workers' TMPDIR, removed after
    start = time.time()
    skip = 0
    try:
        while skip < examples:
            skip = _one_worker(category, examples, skip, canary_dir, scratch, case_timeout, report)
        if os.listdir(canary_dir):
            report.counts["codeexec"] += 1
            report.failures.append(("codeexec", {}, f"canary files: {os.listdir(canary_dir)}"))
    finally:
        shutil.rmtree(canary_dir, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
        report.seconds = time.time() - start
    return report


def _one_worker(category, examples, skip, canary_dir, scratch, case_timeout, report) -> int:
    """Run one worker from case `skip`; returns the index to continue from (>= examples: done)."""
    cmd = [sys.executable, os.path.join(HERE, "fuzz_harness.py"), "run", category,
           str(examples), str(skip), canary_dir]
    with tempfile.TemporaryFile() as err:
        # the compile cache of a campaign lives in its scratch dir, not in the user's cache
        env = dict(os.environ, TMPDIR=scratch, MINITVM_CACHE_DIR=os.path.join(scratch, "cache"))
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, cwd=HERE, env=env)
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
        current = None
        timeout = case_timeout + 30  # the first case also pays for imports
        while True:
            try:
                line = lines.get(timeout=timeout)
            except queue.Empty:
                proc.kill()
                proc.wait()
                index = current["index"] if current else skip
                _record(report, "hang", current, f"no answer within {timeout:.0f}s")
                return index + 1
            if line is None:  # the worker exited
                rc = proc.wait()
                err.seek(0)
                tail = err.read().decode(errors="replace")[-800:]
                if current is None:  # died between cases: the harness itself failed
                    _record(report, "bug", {"worker": cmd[2:5]}, f"worker exited {rc}: {tail}")
                    return examples
                _record(report, "crash", current, f"exit status {rc} ({_signal_name(rc)}); {tail}")
                return current["index"] + 1
            msg = json.loads(line)
            if msg["event"] == "start":
                current, timeout = msg, case_timeout
            elif msg["event"] == "result":
                _record(report, msg["outcome"], current, msg["detail"])
                current = None
            elif msg["event"] == "done":
                proc.wait()
                return examples


def _pump(stream, lines: queue.Queue) -> None:
    for raw in stream:
        text = raw.decode(errors="replace").strip()
        if text.startswith("{"):
            lines.put(text)
    lines.put(None)


def _record(report: Report, outcome: str, start_msg: dict | None, detail: str) -> None:
    report.counts[outcome] += 1
    if outcome in BAD:
        report.failures.append((outcome, (start_msg or {}).get("case", {}), detail))


def _signal_name(rc: int) -> str:
    if rc < 0:
        try:
            return signal.Signals(-rc).name
        except ValueError:
            return f"signal {-rc}"
    return "exit"


# ----------------------------------------------------------------------------- worker side


def classify(run_case, case: dict, canary_dir: str) -> tuple[str, str]:
    """Run one case in this process and name its outcome."""
    from minitvm.error import MiniTVMError

    try:
        run_case(case, canary_dir)
        outcome, detail = "ok", ""
    except Wrong as err:
        outcome, detail = "wrong", str(err)
    except Skip as err:
        outcome, detail = "skip", str(err)
    except AcceptedInvalid as err:
        outcome, detail = "accepted_invalid", str(err)
    except MiniTVMError as err:
        outcome, detail = "clean", f"{type(err).__name__}: {err}"
    except Exception as err:  # noqa: BLE001 - any other exception is the bug being hunted
        outcome = "bug"
        detail = "".join(traceback.format_exception(type(err), err, err.__traceback__)[-6:])
    if os.listdir(canary_dir):
        outcome, detail = "codeexec", f"canary created: {os.listdir(canary_dir)}; {detail}"
        for name in os.listdir(canary_dir):  # judge the next case on its own
            path = os.path.join(canary_dir, name)
            shutil.rmtree(path) if os.path.isdir(path) else os.unlink(path)
    return outcome, detail[:2000]


def _emit(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def worker_main(category: str, examples: int, skip: int, canary_dir: str) -> None:
    import fuzz_cases
    from hypothesis import HealthCheck, Phase, given, settings

    strategy, run_case = fuzz_cases.CATEGORIES[category]
    counter = iter(range(10**9))
    if isinstance(strategy, list | range):  # fixed cases (the self-test; indexed categories)
        for index, case in enumerate(strategy[skip:examples], start=skip):
            _emit({"event": "start", "index": index, "case": case})
            outcome, detail = classify(run_case, case, canary_dir)
            _emit({"event": "result", "index": index, "outcome": outcome, "detail": detail})
        _emit({"event": "done"})
        return

    @settings(
        max_examples=examples, derandomize=True, database=None, phases=[Phase.generate],
        deadline=None, suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def drive(case):
        index = next(counter)
        if index < skip or index >= examples:
            return
        _emit({"event": "start", "index": index, "case": case})
        outcome, detail = classify(run_case, case, canary_dir)
        _emit({"event": "result", "index": index, "outcome": outcome, "detail": detail})

    drive()
    _emit({"event": "done"})


def replay(category: str, case_json: str) -> None:
    import fuzz_cases

    canary_dir = tempfile.mkdtemp(prefix="minitvm_fuzz_canary_")
    _, run_case = fuzz_cases.CATEGORIES[category]
    run_case(json.loads(case_json), canary_dir)
    print("ok", "(canary created!)" if os.listdir(canary_dir) else "")


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    import fuzz_harness  # the module, not __main__: Wrong/Skip must be the classes cases raise

    if sys.argv[1] == "run":
        fuzz_harness.worker_main(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
    else:
        fuzz_harness.replay(sys.argv[2], sys.argv[3])
