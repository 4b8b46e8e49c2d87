"""tvm.testing helpers, tvm.contrib.utils.tempdir and the TVMError hierarchy, as TVM's tests use them."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te
from minitvm.error import BuildError, MiniTVMError, RuntimeError_, ScheduleError, TEError, TVMError


def test_assert_allclose_takes_ndarrays_and_fails_on_a_difference():
    a = tvm.nd.array(np.array([1.0, 2.0], "float32"))
    tvm.testing.assert_allclose(a, np.array([1.0, 2.0]))
    with pytest.raises(AssertionError):
        tvm.testing.assert_allclose(a, np.array([1.0, 2.5]))


def test_assert_structural_equal_is_the_ir_one():
    assert tvm.testing.assert_structural_equal is tvm.ir.assert_structural_equal
    A = te.placeholder((4,), name="A")
    f1 = te.create_prim_func([A, te.compute((4,), lambda i: A[i] + 1.0, name="B")])
    f2 = te.create_prim_func([A, te.compute((4,), lambda i: A[i] + 2.0, name="B")])
    tvm.testing.assert_structural_equal(f1, f1)
    with pytest.raises(ValueError):
        tvm.testing.assert_structural_equal(f1, f2)


def test_testing_main_runs_the_calling_file(tmp_path):
    path = tmp_path / "test_uses_main.py"
    path.write_text(textwrap.dedent("""
        import minitvm as tvm

        def test_one():
            assert 1 + 1 == 2

        if __name__ == "__main__":
            tvm.testing.main()
    """))
    proc = subprocess.run(
        [sys.executable, str(path), "-q", "-p", "no:cacheprovider"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout


def test_tempdir_relpath_listdir_and_removal():
    temp = tvm.contrib.utils.tempdir()
    with open(temp.relpath("lib.txt"), "w") as f:
        f.write("x")
    assert temp.listdir() == ["lib.txt"]
    assert os.path.dirname(temp.relpath("lib.txt")) == temp.path
    folder = temp.path
    temp.remove()
    assert not os.path.exists(folder)
    with tvm.contrib.utils.tempdir() as scoped:
        kept = scoped.path
        assert os.path.isdir(kept)
    assert not os.path.exists(kept)


def test_tvm_error_is_a_runtime_error_and_catches_schedule_errors():
    assert issubclass(TVMError, RuntimeError) and tvm.error.TVMError is tvm.TVMError
    for cls in (ScheduleError, TEError, BuildError, RuntimeError_):
        assert issubclass(cls, TVMError) and issubclass(cls, MiniTVMError)
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
    sch = tvm.tir.Schedule(te.create_prim_func([A, B]))
    (loop,) = sch.get_loops(sch.get_block("B"))
    with pytest.raises(RuntimeError, match="split"):  # as TVM's tests write it
        sch.split(loop, factors=[3, 0])
    with pytest.raises(tvm.TVMError):
        sch.split(loop, factors=[3, 0])
