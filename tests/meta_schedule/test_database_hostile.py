"""Hostile tuning databases: a record or workload file is data from someone else. Nothing in it
may become code (LLVM IR, an extern call), a path to follow or an unbounded computation; each is
a TuningError naming the file, line and record. Cases that could run code, hang or exhaust
memory under the old behaviour run in a child process with a timeout and a memory limit."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import minitvm as tvm
from minitvm import meta_schedule as ms
from minitvm.error import MiniTVMError, TuningError
from minitvm.script import tir as T
from minitvm.tir.schedule import Trace

# The child's prelude: an address-space limit, so a regression that allocates without bound
# fails in the child instead of taking the machine down.
_PRELUDE = """
import resource
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
"""


def _child(code: str, *args: str, timeout: float = 240) -> dict:
    """Run `code` in a fresh interpreter; it prints one JSON object as its last line."""
    proc = subprocess.run(
        [sys.executable, "-c", _PRELUDE + textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, f"child failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@T.prim_func
def expo(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = T.exp(A[vi])


def _mod():
    return tvm.IRModule({"main": expo})


def _write_db(work_dir, trace_json, script=None):
    """A database of `_mod()` (or `script`) with one record whose trace is `trace_json`."""
    os.makedirs(work_dir, exist_ok=True)
    workload = ["0", script if script is not None else _mod().script()]
    args = [["TENSOR", "float32", [16]], ["TENSOR", "float32", [16]]]
    with open(os.path.join(work_dir, "database_workload.json"), "w") as f:
        f.write(json.dumps(workload) + "\n")
    with open(os.path.join(work_dir, "database_tuning_record.json"), "w") as f:
        if trace_json is not None:
            f.write(json.dumps([0, [trace_json, [1e-5], "llvm", args]]) + "\n")


def _annotate_trace(key, value):
    sch = tvm.tir.Schedule(_mod())
    (loop,) = sch.get_loops(sch.get_block("B"))
    sch.annotate(loop, key, value)
    return sch.trace.as_json()


# ------------------------------------------------------------------ code from a record

# LLVM IR that defines expf (which the kernel's T.exp calls) so that it creates a directory:
# an effect a test can see, standing for anything native code could do.
_IMPORT_LLVM_CHILD = """
import json, os, sys
import numpy as np
import minitvm as tvm
from minitvm import meta_schedule as ms
from minitvm.error import TuningError
from minitvm.tir.schedule import Trace

work, marker, control = sys.argv[1:4]
IR = '''
declare i32 @mkdir(i8*, i32)
@path = private constant [%(n)d x i8] c"%(path)s\\\\00"
define float @expf(float %%x) {
  %%r = call i32 @mkdir(i8* getelementptr ([%(n)d x i8], [%(n)d x i8]* @path, i32 0, i32 0), i32 448)
  ret float 42.0
}
'''
def payload(path):
    return IR % {"n": len(path) + 1, "path": path}

def run(sch):
    f = tvm.build(sch.mod, target="llvm")
    b = tvm.nd.array(np.zeros(16, "float32"))
    f(tvm.nd.array(np.zeros(16, "float32")), b)
    return b.numpy().tolist()

mod = tvm.script.from_source(open(os.path.join(work, "src.py")).read())
sch = tvm.tir.Schedule(mod)
(loop,) = sch.get_loops(sch.get_block("B"))
sch.annotate(loop, "pragma_import_llvm", payload(marker))
args = ms.ArgInfo.from_entry_func(mod)
ms.JSONDatabase(work_dir=work).commit_tuning_record(
    ms.TuningRecord(sch.trace, ms.Workload(mod), [1e-5], "llvm", args)
)
out = {}
for what, attempt in [
    ("load", lambda: ms.JSONDatabase(work_dir=work)),
    ("tune", lambda: ms.tune_tir(mod, "llvm", work_dir=work, max_trials_global=1)),
]:
    try:
        attempt()
        out[what] = "loaded"
    except TuningError as err:
        out[what] = str(err)
out["ran"] = os.path.exists(marker)
# control: the same IR in a trace the user trusts (their own) is live, so the marker above
# would have appeared had the refused record been built
fresh = tvm.tir.Schedule(mod)
trace = json.loads(open(os.path.join(work, "database_tuning_record.json")).read())[1][0]
trace[0][2][1] = ['"' + payload(control) + '"' if x.startswith('"') else x for x in trace[0][2][1]]
Trace.apply_json_to_schedule(trace, fresh, trusted=True)
out["control_result"] = run(fresh)[0]
out["control_ran"] = os.path.exists(control)
print(json.dumps(out))
"""


def test_a_record_that_imports_llvm_ir_is_refused_and_the_ir_never_runs(tmp_path):
    """The issue's attack: a record whose trace annotates a loop with pragma_import_llvm. The
    database refuses it on load (file, record, instruction named), before compile_tir or a
    resumed tune_tir could build it; a control shows the same IR does run once linked."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "src.py").write_text(_mod().script())
    marker, control = tmp_path / "pwned", tmp_path / "control"
    out = _child(_IMPORT_LLVM_CHILD, str(work), str(marker), str(control))
    for what in ("load", "tune"):
        message = out[what]
        assert "database_tuning_record.json:1 (record 0)" in message, message
        assert "instruction 2 (Annotate)" in message and "'pragma_import_llvm'" in message
    assert out["ran"] is False and not marker.exists()
    assert out["control_result"] == 42.0 and out["control_ran"] is True


@pytest.mark.parametrize(
    "key",
    ["pragma_import_llvm", "pragma_import_c", "pragma_extern_source", "pragma_anything", "note"],
)
def test_annotation_keys_off_the_list_are_refused_on_load(tmp_path, key):
    _write_db(tmp_path, _annotate_trace(key, "/etc/passwd.ll"))
    with pytest.raises(TuningError, match=rf"record 0\).*instruction 2 \(Annotate\).*'{key}'"):
        ms.JSONDatabase(work_dir=str(tmp_path))


def test_listed_annotation_keys_still_load(tmp_path):
    _write_db(tmp_path, _annotate_trace("pragma_auto_unroll_max_step", 16))
    db = ms.JSONDatabase(work_dir=str(tmp_path))
    ir = db.query_ir_module(_mod(), "llvm")["main"]
    assert "pragma_auto_unroll_max_step" in ir.script()


def test_an_annotation_value_must_be_plain_data(tmp_path):
    trace = _annotate_trace("meta_schedule.parallel", 4)
    trace[0][2][1][1] = [[1, [2]]]  # a nested list where a number or a flat list belongs
    _write_db(tmp_path, trace)
    with pytest.raises(TuningError, match="must be a number, a string, a sampled variable"):
        ms.JSONDatabase(work_dir=str(tmp_path))


def test_a_kind_made_up_for_an_unlisted_method_is_not_loadable(tmp_path):
    from minitvm.tir.schedule.instruction import kind_of_method

    kind_of_method("some_unlisted_method", {}, 0, False)  # as Schedule._record would make one
    trace = _annotate_trace("meta_schedule.parallel", 4)
    trace[0].append(["SomeUnlistedMethod", [], [], []])
    _write_db(tmp_path, trace)
    with pytest.raises(TuningError, match="'SomeUnlistedMethod' is not a schedule primitive a"):
        ms.JSONDatabase(work_dir=str(tmp_path))


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda t: t[0][0][2].__setitem__(0, "B" * 20000), "longer than the 16384"),
        (lambda t: t[0][0][2].__setitem__(0, 10**30), "more than 64 bits"),
        (lambda t: t[0][0][2].__setitem__(0, [[[[[[[[[["B"]]]]]]]]]]), "nests deeper than 8"),
        (lambda t: t[0][0][2].__setitem__(0, {"__codec__": ["x"]}), "unknown value codec"),
        (lambda t: t[0][2][1].__setitem__(1, 5.5), None),  # a float annotation value: data
        (
            lambda t: t[0].insert(2, ["SamplePerfectTile", ["l1"], [{}, 16], ["v8", "v9"]]),
            r"instruction 2 \(SamplePerfectTile\): its arguments do not fit",
        ),
    ],
)
def test_trace_values_are_bounded_plain_data(tmp_path, edit, match):
    trace = _annotate_trace("meta_schedule.parallel", 4)
    edit(trace)
    _write_db(tmp_path, trace)
    if match is None:
        assert len(ms.JSONDatabase(work_dir=str(tmp_path))) == 1
        return
    with pytest.raises(TuningError, match=match):
        ms.JSONDatabase(work_dir=str(tmp_path))


_LAMBDA_CHILD = """
import json, sys
from minitvm.error import MiniTVMError
from minitvm.tir.schedule.trace_lambda import TraceLambda
from minitvm.tir import Var
out = {}
for name, text in json.load(open(sys.argv[1])).items():
    try:
        TraceLambda.parse(text)(Var("i", "int32"))
        out[name] = "ok"
    except MiniTVMError as err:
        out[name] = f"{type(err).__name__}: {err}"
print(json.dumps(out))
"""


def test_an_index_map_lambda_from_a_file_cannot_allocate_or_nest_without_bound(tmp_path):
    cases = {
        "repeat": 'lambda i: ("x" * 100000000000, i)',
        "list": "lambda i: ([0] * 100000000000, i)",
        "deep": "lambda i: " + "-(" * 100000 + "i" + ")" * 100000,
        "nul": "lambda i: i\x00",
    }
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    out = _child(_LAMBDA_CHILD, str(tmp_path / "cases.json"), timeout=120)
    assert "applies arithmetic to a string or a list" in out["repeat"]
    assert "applies arithmetic to a string or a list" in out["list"]
    assert out["deep"].startswith("ScheduleError") and "does not parse" in out["deep"]
    assert out["nul"].startswith("ScheduleError")


# ------------------------------------------------------------------ code in a workload

_WORKLOAD_EDITS = {
    "call_extern": ("B[vi] = T.exp(A[vi])", 'B[vi] = T.call_extern("float32", "expf", A[vi])'),
    "call_packed": (
        "B[vi] = T.exp(A[vi])",
        'T.evaluate(T.call_packed("my.func", A[vi]))\n                B[vi] = A[vi]',
    ),
    "pragma_loop": (
        "for i in range(16):",
        'for i in T.serial(16, annotations={"pragma_import_llvm": "x.ll"}):',
    ),
    "pragma_block": (
        "vi = T.axis.spatial(16, i)",
        'vi = T.axis.spatial(16, i)\n                T.block_attr({"pragma_import_c": "int f;"})',
    ),
}


@pytest.mark.parametrize("name", sorted(_WORKLOAD_EDITS))
def test_a_workload_that_calls_or_links_native_code_is_refused(tmp_path, name):
    old, new = _WORKLOAD_EDITS[name]
    script = _mod().script()
    assert old in script
    _write_db(tmp_path, None, script.replace(old, new))
    with pytest.raises(TuningError, match=r"database_workload.json:1 \(workload 0\).*native"):
        ms.JSONDatabase(work_dir=str(tmp_path))


def test_a_workload_holding_a_relax_function_is_refused(tmp_path):
    script = textwrap.dedent(
        """
        # from minitvm.script import ir as I
        # from minitvm.script import relax as R

        @I.ir_module
        class Module:
            @R.function
            def main(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
                return x
        """
    )
    _write_db(tmp_path, None, script)
    with pytest.raises(TuningError, match="holds TensorIR functions"):
        ms.JSONDatabase(work_dir=str(tmp_path))


# ------------------------------------------------------------------ unbounded evaluation

_SCRIPT_CHILD = """
import json, os, sys, time
from minitvm import meta_schedule as ms
from minitvm.error import MiniTVMError
out = {}
for name in sorted(os.listdir(sys.argv[1])):
    start = time.time()
    try:
        ms.JSONDatabase(work_dir=os.path.join(sys.argv[1], name))
        out[name] = ["loaded", time.time() - start]
    except MiniTVMError as err:
        out[name] = [f"{type(err).__name__}: {err}", time.time() - start]
print(json.dumps(out))
"""

_EXPRESSIONS = {
    "pow": ("9**9**9", "9 ** 387420489 would have more than 128 bits"),
    "string": ('"x" * 10**11', "a str repeated 100000000000 times"),
    "list": ("[0] * 10**11", "a list repeated 100000000000 times"),
    "shift": ("1 << 10**10", "1 << 10000000000 would have more than 128 bits"),
    "round": ("round(1, -10**9)", "ndigits below -38"),
    "format": ('"%0999999999d" % 1', "string formatting with % is not TVMScript"),
    "zero": ("1 // 0", "ZeroDivisionError"),
    "nested": ("str([[0] * 1024] * 1024)", "a list repeated 1024 times"),
}


def test_workload_constants_that_would_not_finish_are_refused_at_their_line(tmp_path):
    """9**9**9 made JSONDatabase() never return and "x" * 10**11 allocated 100 GB: each is a
    ParseError at the script's line now, reported with the database file's line."""
    script = _mod().script()
    for name, (expr, _) in _EXPRESSIONS.items():
        text = script.replace("for i in range(16):", f"x = {expr}\n        for i in range(16):")
        _write_db(tmp_path / name, None, text)
    _write_db(tmp_path / "zz_control", None, script.replace("range(16)", "range(2**4)"))
    out = _child(_SCRIPT_CHILD, str(tmp_path), timeout=180)
    line = script.splitlines().index("        for i in range(16):") + 1
    for name, (_, match) in _EXPRESSIONS.items():
        message, secs = out[name]
        assert message.startswith("TuningError: ") and match in message, (name, message)
        assert "database_workload.json:1 (workload 0)" in message
        assert f"<string>:{line}:" in message, message  # the script's own line
        assert secs < 20, (name, secs)
    assert out["zz_control"][0] == "loaded"


def test_a_script_of_small_constants_still_parses():
    from minitvm.script import from_source

    text = _mod().script().replace("range(16)", "range((2**64 - 1) // (2**60) + 1)")
    assert "range(16)" in from_source(text).script()


# ------------------------------------------------------------------ damaged files


@pytest.mark.parametrize(
    "content, match",
    [
        (b"\xff\xfe[0, 1]\n", "not UTF-8 text"),
        (b"[" * 100000 + b"]" * 100000 + b"\n", "nests too deeply"),
        (b'[0, [[[], []], [1e400], "llvm", null]]\n', "run_secs must be null or a list"),
        (b"[0, [[[], []], [" + b"9" * 400 + b'], "llvm", null]]\n', "run_secs must be null"),
        (b'[0, [[[], []], [NaN], "llvm", null]]\n', "run_secs must be null or a list"),
        (b'[0, [[[], []], [-1], "llvm", null]]\n', "run_secs must be null or a list"),
        (b"[0, [[[], []], [1], 7, null]]\n", "target must be a string"),
        (b'[0, [[[], []], [1], "llvm", {"a": 1}]]\n', "args_info must be a list"),
        (
            (
                b'[0, [[[], []], [1], "llvm", [["TENSOR", "float32", [1000000000000]], '
                b'["TENSOR", "float32", [16]]]]]\n'
            ),
            "is not the argument list of its workload",
        ),
        (b"[7, [[[], []], [1], null, null]]\n", "with an index of the 1 workloads"),
    ],
)
def test_a_damaged_record_file_is_a_tuning_error_naming_file_and_line(tmp_path, content, match):
    _write_db(tmp_path, None)
    with open(tmp_path / "database_tuning_record.json", "wb") as f:
        f.write(b"\n" + content)
    with pytest.raises(TuningError, match=match) as info:
        ms.JSONDatabase(work_dir=str(tmp_path))
    assert "database_tuning_record.json:2" in str(info.value)


def test_every_database_error_is_a_minitvm_error():
    assert issubclass(TuningError, MiniTVMError)
    assert Trace.apply_json_to_schedule.__kwdefaults__ == {"trusted": False}
