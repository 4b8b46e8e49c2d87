"""Fuzz categories of tuning records, autotvm logs and param archives (test_fuzz_records.py),
run by the shared harness (fuzz_harness.py) like every other category.

A runner `run(rng, work, canary)` builds the valid file, mutates it with `rng`, writes it under
`work` and loads it. It returns on a correct load, lets a MiniTVMError through (a clean refusal)
and raises `Wrong` for a silent wrong result. Mutations may plant LLVM IR that creates the
directory `canary` inside the harness's canary folder: the harness reports a case after which it
exists as code run from a file. A case is its index: the rng is seeded from it.
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import tempfile
import time
from typing import Any

import numpy as np
from fuzz_harness import Wrong

import minitvm as tvm
from minitvm import autotvm, relay, te
from minitvm import meta_schedule as ms
from minitvm.autotvm.measure import MeasureInput, MeasureResult
from minitvm.script import tir as T

# ----------------------------------------------------------------------------- mutations


def _canary_ir(path: str) -> str:
    """LLVM IR whose expf creates the directory `path` (linked only if a pragma is honoured)."""
    n = len(path) + 1
    return (
        "declare i32 @mkdir(i8*, i32)\n"
        f'@p = private constant [{n} x i8] c"{path}\\00"\n'
        "define float @expf(float %x) {\n"
        f"  %r = call i32 @mkdir(i8* getelementptr ([{n} x i8], [{n} x i8]* @p, i32 0, i32 0),"
        " i32 448)\n  ret float 1.0\n}\n"
    )


def _hostile_values(canary: str) -> list:
    deep: Any = 0
    for _ in range(60):
        deep = [deep]
    return [
        10**400, 2**64, -(2**63) - 1, -1, 0, 1e308, float("nan"), float("inf"), True, None, "",
        "x" * 20000, deep, {}, [], [1, 2, 3], {"__codec__": "lambda", "data": 'lambda i: "x" * 100000000000'},
        {"__codec__": "IndexMap", "data": "lambda i: (i,"}, {"__codec__": 7}, "b0", "l1", "v2",
        '"B"', "None", "Annotate", "__import__", "pragma_import_llvm", '"' + _canary_ir(canary) + '"',
        _canary_ir(canary), "llvm -mcpu=" + "x" * 100, ["TENSOR", "object", [10**12]],
    ]  # fmt: skip


def _nodes(value: Any, path: tuple = ()) -> list[tuple]:
    """Paths to every list element and dict value of a JSON value."""
    out = [path]
    if isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_nodes(v, (*path, i)))
    elif isinstance(value, dict):
        for k, v in value.items():
            out.extend(_nodes(v, (*path, k)))
    return out


def _replace(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    value[path[0]] = _replace(value[path[0]], path[1:], new)
    return value


def _mutate_json_text(rng: random.Random, text: str, canary: str) -> str:
    """One structural mutation of a JSON line: a node replaced by a hostile value (a line that
    an earlier mutation left no JSON gets a byte-level one instead)."""
    try:
        value = json.loads(text)
        path = rng.choice(_nodes(value))
    except (ValueError, RecursionError):  # nested deeper than Python parses: bytes instead
        return _mutate_bytes(rng, text.encode()).decode("latin-1")
    return json.dumps(_replace(value, path, rng.choice(_hostile_values(canary))))


def _mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    """One byte-level mutation: flip, cut, drop or repeat a span, or insert junk."""
    if not data:
        return bytes([rng.randrange(256)])
    i = rng.randrange(len(data))
    j = min(len(data), i + rng.randint(1, 64))
    op = rng.randrange(5)
    if op == 0:
        return data[:i] + bytes([rng.randrange(256)]) + data[i + 1 :]
    if op == 1:
        return data[:i]
    if op == 2:
        return data[:i] + data[j:]
    if op == 3:
        return data[:j] + data[i:j] * rng.randint(2, 50) + data[j:]
    junk = rng.choice([b"\xff\xfe", b"[" * 5000, b"\x00", b"9" * 400, b"NaN", b'"', b"}"])
    return data[:i] + junk + data[i:]


# Replacements of a script's integer literal or whole line by expressions that must be refused
# (or computed cheaply); the parser must bound every one.
_SCRIPT_EXPRS = [
    "9**9**9", '"x" * 10**11', "[0] * 10**11", "1 << 10**10", "round(1, -10**9)", "10**40",
    "2**63", "-1", "0", "1 // 0", "T.int64(2**64)", 'T.call_extern("int32", "abort")',
    "(" * 300 + "1" + ")" * 300,
]  # fmt: skip


def _mutate_script(rng: random.Random, script: str) -> str:
    lines = script.splitlines()
    k = rng.randrange(len(lines))
    expr = rng.choice(_SCRIPT_EXPRS)
    digits = [i for i, ch in enumerate(lines[k]) if ch.isdigit()]
    if digits and rng.random() < 0.7:
        i = rng.choice(digits)
        lines[k] = lines[k][:i] + f"({expr})" + lines[k][i + 1 :]
    else:
        indent = len(lines[k]) - len(lines[k].lstrip())
        lines.insert(k, " " * indent + f"x = {expr}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- database


@T.prim_func
def _expo_mm(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
             C: T.Buffer((16, 16), "float32")):  # fmt: skip
    for i, j, k in T.grid(16, 16, 16):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + T.exp(A[vi, vk]) * B[vk, vj]


def _mod():
    return tvm.IRModule({"main": _expo_mm})


def _schedules() -> list:
    """Three schedules covering sampling decisions, annotations and loop kinds."""
    out = []
    for seed in range(3):
        sch = tvm.tir.Schedule(_mod(), seed=seed)
        block = sch.get_block("C")
        i, j, k = sch.get_loops(block)
        i0, i1 = sch.split(i, sch.sample_perfect_tile(i, n=2))
        j0, j1 = sch.split(j, factors=[None, 4])
        sch.reorder(i0, j0, k, i1, j1)
        sch.annotate(block, "meta_schedule.unroll_explicit", 16)
        if seed == 1:
            sch.parallel(i0)
        if seed == 2:
            sch.vectorize(j1)
        out.append(sch)
    return out


def _database_files(work: str) -> None:
    db = ms.JSONDatabase(work_dir=work)
    args = ms.ArgInfo.from_entry_func(_mod())
    for n, sch in enumerate(_schedules()):
        db.commit_tuning_record(
            ms.TuningRecord(sch.trace, ms.Workload(_mod()), [1e-4 * (n + 1)], "llvm", args)
        )


def _check_database(work: str, rng: random.Random, planted: bool) -> None:
    db = ms.JSONDatabase(work_dir=work)
    sch = db.query_schedule(_mod(), "llvm")
    # a build per case would dominate the budget: every planted attack, a third of the rest
    if sch is None or not (planted or rng.random() < 0.3):
        return
    f = tvm.build(sch.mod, target="llvm")
    data = np.random.default_rng(0)
    a, b = (data.uniform(-1, 1, (16, 16)).astype("float32") for _ in range(2))
    c = tvm.nd.array(np.zeros((16, 16), "float32"))
    f(tvm.nd.array(a), tvm.nd.array(b), c)
    if not np.allclose(c.numpy(), np.exp(a) @ b, rtol=1e-4, atol=1e-4):
        raise Wrong("the schedule of a database that loaded computes something else")


def _json_or_none(line: bytes) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def _is_workload(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and isinstance(value[1], str)


def _is_record(value: Any) -> bool:
    try:
        return isinstance(value[1][0][0], list)
    except (TypeError, IndexError, KeyError):
        return False


def run_database(rng: random.Random, work: str, canary: str) -> None:
    _database_files(work)
    names = ["database_workload.json", "database_tuning_record.json"]
    planted = False
    for _ in range(rng.randint(1, 3)):
        path = os.path.join(work, rng.choice(names))
        with open(path, "rb") as f:
            data = f.read()
        lines = data.split(b"\n")
        k = rng.randrange(max(1, len(lines) - 1))
        first = _json_or_none(lines[0])
        style = rng.randrange(4)
        if style == 1 and lines[k].strip():
            lines[k] = _mutate_json_text(rng, lines[k].decode("latin-1"), canary).encode("latin-1")
            data = b"\n".join(lines)
        elif style == 2 and path.endswith("workload.json") and _is_workload(first):
            lines[0] = json.dumps([first[0], _mutate_script(rng, first[1])]).encode()
            data = b"\n".join(lines)
        elif style == 3 and path.endswith("record.json") and _is_record(first):
            # plant the attack: an Annotate step with pragma_import_llvm
            loop = rng.choice(["l1", "l2", "l3", "b0"])
            ir = '"' + _canary_ir(canary) + '"'
            first[1][0][0].append(["Annotate", [loop, ir], ["pragma_import_llvm"], []])
            data = (json.dumps(first) + "\n").encode()
            planted = True
        else:
            data = _mutate_bytes(rng, data)
        with open(path, "wb") as f:
            f.write(data)
    _check_database(work, rng, planted)


# ----------------------------------------------------------------------------- autotvm


@autotvm.template("fuzz/records/scale")
def _scale(n):
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    cfg = autotvm.get_config()
    cfg.define_split("tile", C.op.axis[0], num_outputs=2)
    cfg.define_knob("unroll", [0, 1])
    cfg["tile"].apply(s, C, C.op.axis[0])
    return s, [A, C]


def run_autotvm(rng: random.Random, work: str, canary: str) -> None:
    task = autotvm.task.create("fuzz/records/scale", args=(64,), target="llvm")
    lines = []
    for index, secs in [(3, 2e-3), (5, 1e-3), (1, 3e-3)]:
        inp = MeasureInput(task.target, task, task.config_space.get(index))
        lines.append(autotvm.record.encode(inp, MeasureResult([secs], 0, 0.0, time.time())))
    for _ in range(rng.randint(1, 3)):
        k = rng.randrange(len(lines))
        if rng.random() < 0.6:
            lines[k] = _mutate_json_text(rng, lines[k], canary)
        else:
            lines[k] = _mutate_bytes(rng, lines[k].encode()).decode("latin-1")
    log = os.path.join(work, "tuning.log")
    with open(log, "wb") as f:
        f.write("\n".join(lines).encode("latin-1", errors="replace"))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        records = list(autotvm.record.load_from_file(log))
        best = autotvm.apply_history_best(log)
        config = best.query(tvm.target.Target("llvm"), task.workload)
    if records and not getattr(config, "is_fallback", True) and config.index not in (1, 3, 5):
        raise Wrong(f"apply_history_best chose config {config.index}, which no record holds")


# ----------------------------------------------------------------------------- params


def run_params(rng: random.Random, work: str, canary: str) -> None:
    saved = {
        "w": np.arange(12, dtype="float32").reshape(3, 4),
        "b": np.asfortranarray(np.arange(6, dtype="int64").reshape(2, 3)),
        "s": np.float16(2.5),
    }
    data = relay.save_param_dict(saved)
    if rng.random() < 0.3:  # a header that promises more data than the file holds
        data = data.replace(
            b"(3, 4)", rng.choice([b"(10**12, 4)", b"(99999999999, 4)", b"(3,  4)"])
        )
    for _ in range(rng.randint(1, 3)):
        data = _mutate_bytes(rng, data)
    loaded = relay.load_param_dict(data)
    got = [v.numpy() for v in loaded.values()]
    if len(got) != len(saved) or not all(
        g.dtype == s.dtype and np.array_equal(g, s) for g, s in zip(got, saved.values())
    ):
        raise Wrong(f"load_param_dict gave {list(loaded)} with other values than were saved")


# ----------------------------------------------------------------------------- categories

SEED = 20260509
MEMORY_LIMIT = 3 << 30  # bytes of address space of a worker: a size bomb fails, not the machine
CASES = range(10**9)  # a case is its index (fixed cases: the harness slices this range)


def limit_memory() -> None:
    """Cap this worker's address space at MEMORY_LIMIT (a size bomb fails, not the machine)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY or soft > MEMORY_LIMIT:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, resource.RLIM_INFINITY))


def _category(run):
    """The harness's run_case(case, canary_dir) for a runner of this module."""

    def run_case(case: int, canary_dir: str) -> None:
        limit_memory()
        work = tempfile.mkdtemp(prefix=f"case{case}_")
        try:
            run(random.Random(f"{SEED}:{case}"), work, os.path.join(canary_dir, "canary"))
        finally:
            shutil.rmtree(work, ignore_errors=True)

    return run_case


CATEGORIES = {
    "records_database": (CASES, _category(run_database)),
    "records_autotvm": (CASES, _category(run_autotvm)),
    "records_params": (CASES, _category(run_params)),
}
