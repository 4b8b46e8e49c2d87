"""Hostile autotvm logs: a log is data from someone else. A malformed line (not UTF-8, nested
past the JSON reader, numbers past a float, knob values of the wrong kind) is skipped with a
RecordWarning naming the file and line; nothing leaks a Python error, nothing is evaluated."""

import io
import json

import pytest

import minitvm as tvm
from minitvm import autotvm, te
from minitvm.autotvm.measure import MeasureInput, MeasureResult
from minitvm.autotvm.record import decode, encode
from minitvm.autotvm.task.dispatcher import RecordWarning
from minitvm.error import TuningError


@autotvm.template("test/record_hostile/scale")
def scale(n):
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    cfg = autotvm.get_config()
    cfg.define_split("tile", C.op.axis[0], num_outputs=2)
    cfg.define_knob("unroll", [0, 1])
    cfg["tile"].apply(s, C, C.op.axis[0])
    return s, [A, C]


def _task():
    return autotvm.task.create("test/record_hostile/scale", args=(64,), target="llvm")


def _row(index=3, secs=1e-3):
    task = _task()
    inp = MeasureInput(task.target, task, task.config_space.get(index))
    return json.loads(encode(inp, MeasureResult([secs], 0, 0.0, 0.0)))


def _edited(edit):
    row = _row()
    edit(row)
    return json.dumps(row).encode()


_BAD_LINES = {
    "not utf-8": (b'{"input": "\xff\xfe"}', "invalid start byte"),
    "deep": (b"[" * 100000 + b"]" * 100000, "nests too deeply"),
    "huge cost": (
        _edited(lambda r: r["result"].__setitem__(0, [10**400])),
        "non-negative finite costs",
    ),
    "entity not a list": (
        _edited(lambda r: r["config"].__setitem__("entity", 5)),
        "'entity' a list",
    ),
    "code_hash": (
        _edited(lambda r: r["config"].__setitem__("code_hash", {"a": 1})),
        "'code_hash' must be a string",
    ),
    "knob value dict": (
        _edited(lambda r: r["config"]["entity"][1].__setitem__(2, {"__import__": "os"})),
        "value must be a number, a string, a bool or null",
    ),
    "split 65-bit": (
        _edited(lambda r: r["config"]["entity"][0].__setitem__(2, [-1, 2**64])),
        "a list of 64-bit integers",
    ),
    "knob name": (
        _edited(lambda r: r["config"]["entity"][0].__setitem__(0, ["tile"])),
        "config knob must be",
    ),
    "bool index": (
        _edited(lambda r: r["config"].__setitem__("index", True)),
        "int 'index'",
    ),
    "deep args": (
        _edited(lambda r: r["input"].__setitem__(2, [[[[[[[[[[64]]]]]]]]]])),
        "nest deeper than 8",
    ),
}


@pytest.mark.parametrize("name", sorted(_BAD_LINES))
def test_a_malformed_line_is_skipped_with_a_warning_naming_file_and_line(tmp_path, name):
    line, match = _BAD_LINES[name]
    log = tmp_path / "tuning.log"
    log.write_bytes(json.dumps(_row(5, 2e-3)).encode() + b"\n" + line + b"\n")
    with pytest.warns(RecordWarning, match=rf"tuning.log:2: skipped a malformed .*{match}"):
        records = list(autotvm.record.load_from_file(str(log)))
    assert [inp.config.index for inp, _ in records] == [5]
    with pytest.warns(RecordWarning):
        best = autotvm.apply_history_best(str(log))
    assert best.query(tvm.target.Target("llvm"), _task().workload).index == 5


@pytest.mark.parametrize("name", sorted(set(_BAD_LINES) - {"not utf-8"}))
def test_decode_refuses_each_malformed_line_with_a_tuning_error(name):
    line, match = _BAD_LINES[name]
    with pytest.raises(TuningError, match=match):
        decode(line.decode())


def test_a_buffer_that_is_not_utf8_is_a_tuning_error():
    buffer = io.TextIOWrapper(io.BytesIO(b"\xff\xfe\n"), encoding="utf-8")
    with pytest.raises(TuningError, match="not UTF-8 text"):
        list(autotvm.record.load_from_buffer(buffer))


def test_a_well_formed_knob_round_trips():
    inp, _ = decode(json.dumps(_row(3)))
    assert inp.config.to_json_dict()["entity"] == _row(3)["config"]["entity"]
