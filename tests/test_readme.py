"""The README's Python snippets run as written: in order, in one namespace, in a fresh process
(so a snippet that stops working, or a name it uses that disappears, fails here)."""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

# A fenced python block, optionally preceded by `<!-- readme-test: requires a b c -->`.
_BLOCK = re.compile(
    r"(?:<!-- readme-test: requires (?P<needs>[^>]*?) -->\n)?```python\n(?P<code>.*?)```",
    re.S,
)

_RUNNER = r"""
import importlib.util, json, sys, traceback

blocks = json.load(open(sys.argv[1]))
namespace = {"__name__": "__readme__"}


def missing(need):
    if need == "opencl":
        import minitvm
        return not minitvm.opencl(0).exist
    return importlib.util.find_spec(need) is None


for block in blocks:
    absent = [need for need in block["needs"] if missing(need)]
    if absent:
        print(f"SKIP README line {block['line']}: needs {', '.join(absent)}", flush=True)
        continue
    # a real file, so that TVMScript (which reads a class's source) finds the snippet's text
    path = f"readme_line_{block['line']}.py"
    with open(path, "w") as f:
        f.write(block["code"])
    code = compile(block["code"], path, "exec")
    try:
        exec(code, namespace)
    except BaseException:
        print(f"FAIL README line {block['line']}", flush=True)
        traceback.print_exc()
        sys.exit(1)
    print(f"OK README line {block['line']}", flush=True)
"""


def readme_blocks() -> list[dict]:
    text = README.read_text()
    blocks = []
    for match in _BLOCK.finditer(text):
        line = text.count("\n", 0, match.start("code")) + 1
        needs = (match.group("needs") or "").split()
        # leading blank lines keep tracebacks' line numbers equal to the README's
        blocks.append({"line": line, "needs": needs, "code": "\n" * (line - 1) + match["code"]})
    return blocks


def test_readme_has_python_snippets():
    blocks = readme_blocks()
    assert len(blocks) >= 6, [b["line"] for b in blocks]
    assert all(set(b["needs"]) <= {"torch", "onnx", "onnxscript", "opencl"} for b in blocks)


def test_readme_python_snippets_run(tmp_path):
    (tmp_path / "blocks.json").write_text(json.dumps(readme_blocks()))
    (tmp_path / "runner.py").write_text(_RUNNER)
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    proc = subprocess.run(
        [sys.executable, "runner.py", "blocks.json"],
        cwd=tmp_path,  # files the snippets write (model.onnx, tune_tmp/) land here
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    skipped = [line for line in proc.stdout.splitlines() if line.startswith("SKIP")]
    ran = [line for line in proc.stdout.splitlines() if line.startswith("OK")]
    assert len(ran) + len(skipped) == len(readme_blocks()), log
    if skipped:
        pytest.skip("ran %d README snippets; %s" % (len(ran), "; ".join(skipped)))
