"""`import minitvm` is cheap: subpackages and re-exported names load on first use (module
`__getattr__`), and every public name still resolves as an attribute."""

import json
import subprocess
import sys
import time

import pytest

import minitvm
from minitvm import _lazy


def _python(code: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return proc.stdout


def test_import_loads_no_subpackage_numpy_or_llvm():
    loaded = json.loads(_python("import json, sys, minitvm; print(json.dumps(sorted(sys.modules)))"))
    ours = [m for m in loaded if m.startswith("minitvm")]
    assert ours == ["minitvm", "minitvm._lazy", "minitvm._version", "minitvm.error"], ours
    assert "numpy" not in loaded and "llvmlite" not in loaded


def test_import_time_is_within_0_3_s_of_an_empty_interpreter():
    def best_of(args, runs=5):
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run([sys.executable, *args], check=True, timeout=120)
            times.append(time.perf_counter() - start)
        return min(times)

    empty = best_of(["-c", "pass"])
    with_minitvm = best_of(["-c", "import minitvm"])
    assert with_minitvm - empty <= 0.3, (with_minitvm, empty)


@pytest.mark.parametrize("name", sorted(minitvm._TABLE))
def test_every_lazy_name_resolves(name):
    value = getattr(minitvm, name)
    assert value is not None and getattr(minitvm, name) is value  # cached after the first use


def test_lazy_names_are_the_objects_they_name():
    import minitvm.relay
    import minitvm.runtime.ndarray
    import minitvm.te
    import minitvm.tir

    assert minitvm.relay is sys.modules["minitvm.relay"]
    assert minitvm.nd is minitvm.ndarray is minitvm.runtime.ndarray
    assert minitvm.placeholder is minitvm.te.placeholder and minitvm.any is minitvm.tir.any
    assert minitvm.ir.Range is minitvm.tir.Range
    assert minitvm.runtime.convert is minitvm.convert
    assert minitvm.TVMError is minitvm.error.TVMError


def test_attribute_access_in_a_fresh_process_loads_what_it_needs():
    out = _python(
        "import minitvm as tvm\n"
        "a = tvm.nd.array([1.0, 2.0])\n"
        "print(type(tvm.relay).__name__, tvm.ir.Range.__name__, a.numpy().sum())"
    )
    assert out.split() == ["module", "Range", "3.0"]


def test_hasattr_is_false_for_a_missing_name_or_module():
    assert not hasattr(minitvm, "no_such_thing")
    assert not hasattr(minitvm.relay, "no_such_thing")
    with pytest.raises(AttributeError, match="not part of this minitvm"):
        _lazy.resolve("minitvm", {"ghost": "minitvm.ghost_module"}, "ghost")


def test_a_module_that_fails_inside_still_raises_its_own_error(tmp_path, monkeypatch):
    (tmp_path / "needs_missing.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_xyz"):
        _lazy.resolve("pkg", {"x": "needs_missing"}, "x")


def test_load_module_loads_the_package_of_a_higher_kind(tmp_path):
    """A relax Executable exported by one process loads in another that never imported relax."""
    path = tmp_path / "exe.so"
    _python(
        "import minitvm as tvm\n"
        "from minitvm import relax\n"
        "bb = relax.BlockBuilder()\n"
        "x = relax.Var('x', relax.TensorStructInfo((4,), 'float32'))\n"
        "with bb.function('main', [x]):\n"
        "    bb.emit_func_output(bb.emit(relax.op.add(x, x)))\n"
        f"relax.build(bb.get(), 'llvm').export_library({str(path)!r})\n"
    )
    out = _python(
        "import minitvm as tvm, numpy as np\n"
        f"ex = tvm.runtime.load_module({str(path)!r})\n"
        "vm = tvm.relax.VirtualMachine(ex, tvm.cpu())\n"
        "print(vm['main'](tvm.nd.array(np.ones(4, 'float32'))).numpy().tolist())"
    )
    assert out.strip() == "[2.0, 2.0, 2.0, 2.0]"


def test_version_matches_pyproject():
    """`minitvm.__version__` (minitvm/_version.py) and the installed metadata say the same."""
    import pathlib
    import re

    pyproject = pathlib.Path(__file__).resolve().parents[1] / "pyproject.toml"
    declared = re.search(r'(?m)^version = "([^"]+)"', pyproject.read_text()).group(1)
    assert minitvm.__version__ == declared


def test_each_package_imports_first_in_a_fresh_process():
    """`from minitvm import <pkg>` as the first import of a process: a circular import between
    packages (arith <-> tir.analysis once did) fails only when the cycle's far end loads first,
    which a pytest run that has imported everything already never sees."""
    import minitvm

    packages = [p for p in minitvm._SUBPACKAGES if p not in ("_ffi", "cli")] + [
        "tir.analysis", "tir.transform", "relay.parser", "relay.qnn", "script.parser",
    ]  # fmt: skip
    code = "import importlib, sys\nfor p in sys.argv[1:]:\n"
    code += "    r = __import__('subprocess').run([sys.executable, '-c', f'import minitvm.{p}'],"
    code += " capture_output=True, text=True)\n"
    code += "    assert r.returncode == 0, (p, r.stderr[-2000:])\n"
    res = subprocess.run([sys.executable, "-c", code, *packages], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-3000:]
