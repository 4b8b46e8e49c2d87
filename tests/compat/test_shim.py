"""`sys.modules['tvm'] = minitvm` (and `['topi'] = minitvm.topi`): submodule imports resolve to minitvm's own."""

import subprocess
import sys

SHIM = "import sys, minitvm; sys.modules['tvm'] = minitvm; sys.modules['topi'] = minitvm.topi\n"


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SHIM + code], capture_output=True, text=True)


def test_submodule_imports_are_the_same_module_objects():
    code = (
        "from tvm.script import tir as T\n"
        "import tvm.relax, tvm.ir.module, tvm.script.tir, topi.nn\n"
        "from tvm.ir.module import IRModule\n"
        "assert T is minitvm.script.tir and tvm.relax is minitvm.relax\n"
        "assert IRModule is minitvm.IRModule and topi.nn is minitvm.topi.nn\n"
        "assert sys.modules['tvm.script.tir'] is minitvm.script.tir\n"
        "print('ok')\n"
    )
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_a_module_parsed_through_the_alias_builds():
    code = (
        "from tvm.script import tir as T\n"
        "import numpy as np, tvm\n"
        "src = '''\n"
        "@T.prim_func\n"
        "def add1(A: T.Buffer((4,), 'float32'), B: T.Buffer((4,), 'float32')):\n"
        "    for i in range(4):\n"
        "        with T.block('B'):\n"
        "            vi = T.axis.spatial(4, i)\n"
        "            B[vi] = A[vi] + T.float32(1)\n"
        "'''\n"
        "import minitvm.script\n"
        "f = tvm.build(minitvm.script.from_source(src), target='llvm')\n"
        "a = tvm.nd.array(np.arange(4, dtype='float32')); b = tvm.nd.empty((4,), 'float32')\n"
        "f(a, b); assert (b.numpy() == np.arange(4) + 1).all(); print('ok')\n"
    )
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr


def test_a_missing_submodule_is_still_a_module_not_found_error():
    proc = _run("import tvm.no_such_module\n")
    assert proc.returncode != 0
    assert "No module named 'tvm.no_such_module'" in proc.stderr
