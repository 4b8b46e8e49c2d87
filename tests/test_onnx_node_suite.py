"""ONNX's own node conformance cases through from_onnx (tools/onnx_conformance.py).

The cases come from the installed onnx package; each runs in a worker subprocess (a crash or
hang costs one case, not the test run). The default run takes one case per op; `-m slow` runs
the whole suite and checks the table in docs/compatibility.md is the one it generates.
"""

from __future__ import annotations

import importlib.util
import os
from collections import Counter

import pytest

pytest.importorskip("onnx", reason="the ONNX node cases come from the onnx package")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(ROOT, "docs", "compatibility.md")
# outcomes a case may have: ran right, or refused/declined with a minitvm error, or not arrays
ALLOWED = {"ok", "refused", "error", "skipped"}


def _tool():
    spec = importlib.util.spec_from_file_location(
        "onnx_conformance", os.path.join(ROOT, "tools", "onnx_conformance.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tool():
    return _tool()


@pytest.fixture(scope="module")
def cases(tool):
    return tool.collect()


def _check_rows(rows: list[dict]) -> None:
    bad = [f"{r['case']}: {r['kind']} {r['msg']}" for r in rows if r["kind"] not in ALLOWED]
    assert not bad, "cases that ran wrong, crashed or raised a foreign error:\n" + "\n".join(bad)
    # a declined case says why with a minitvm error, never another exception type
    for r in rows:
        if r["kind"] in ("refused", "error"):
            assert r["msg"].startswith("minitvm.error."), r


def test_stratified_sample_is_ok_or_refused_and_matches_the_table(tool, cases):
    names = tool.stratified_sample(cases)
    assert len({tool.case_op(cases[n]) for n in names}) == len(names)  # every op once
    rows = tool.run({n: cases[n] for n in names}, batch=60, timeout=120, jobs=2)
    assert len(rows) == len(names)
    _check_rows(rows)
    table = tool.read_table(TABLE)
    mismatched = []
    for r in rows:
        total, ok, refused = table.get(r["op"], (0, 0, 0))
        column = {"ok": ok, "refused": refused}.get(r["kind"], total - ok - refused)
        if column == 0:
            mismatched.append(
                f"{r['case']} ({r['op']}): {r['kind']} but the table has {total, ok, refused}"
            )
    assert not mismatched, (
        "docs/compatibility.md is stale; regenerate it with tools/onnx_conformance.py --table:\n"
        + "\n".join(mismatched)
    )


def test_supported_ops_with_function_bodies_and_old_opsets_run(tool, cases):
    """The importer's general mechanisms, one case each, against ONNX's expected outputs."""
    names = [
        "test_swish",  # function body
        "test_nllloss_NC",  # context-dependent function body
        "test_and2d",  # opset 7, And unchanged since
        "test_bitshift_right_int8_negative_input",  # opset 28 signed shift
        "test_div_int8",  # truncating integer division without overflow
    ]
    rows = tool.run({n: cases[n] for n in names if n in cases}, batch=10, timeout=120)
    assert [r["kind"] for r in rows] == ["ok"] * len(rows), rows


def test_table_parses_back(tool, tmp_path):
    rows = [
        {"case": "a", "op": "Relu", "kind": "ok", "msg": ""},
        {"case": "b", "op": "Relu", "kind": "refused", "msg": "x"},
        {"case": "c", "op": "Foo", "kind": "error", "msg": "x"},
    ]
    text = f"x\n{tool.TABLE_BEGIN}\nold\n{tool.TABLE_END}\ny\n"
    path = str(tmp_path / "table.md")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    tool.write_table(path, rows)
    assert tool.read_table(path) == {"Relu": (2, 1, 1), "Foo": (1, 0, 0)}
    with open(path, encoding="utf-8") as f:
        text = f.read()
    assert text.startswith("x\n") and text.endswith("y\n") and "old" not in text


@pytest.mark.slow
def test_whole_suite_is_never_wrong_and_the_table_is_current(tool, cases):
    rows = tool.run(cases, batch=150, timeout=120, jobs=2)
    _check_rows(rows)
    counts = Counter(r["kind"] for r in rows)
    assert counts["ok"] > 0
    with open(TABLE, encoding="utf-8") as f:
        text = f.read()
    assert tool.op_table(rows) in text, "regenerate the table: tools/onnx_conformance.py --table"
