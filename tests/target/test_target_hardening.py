"""Targets LLVM does not know are TargetErrors (LLVM itself only warns, then kills the process),
and code built for a CPU or architecture this machine lacks builds and exports but never runs."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te
from minitvm.error import RuntimeError_, TargetError
from minitvm.target import Target, list_cpus, unavailable_reason
from minitvm.target.host import CPU_FEATURES
from minitvm.target.target import enabled_features, host_cpu_features


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def _double(target: str):
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] * 2.0, name="B")
    return tvm.build(te.create_schedule(B.op), [A, B], target, name="double")


def test_unknown_cpu_is_a_target_error_not_an_llvm_abort():
    out = _run(
        """
        import minitvm as tvm
        from minitvm import te
        A = te.placeholder((16,), name="A")
        B = te.compute((16,), lambda i: A[i] * 2.0, name="B")
        try:
            tvm.build(te.create_schedule(B.op), [A, B], "llvm -mcpu=pentium99")
        except tvm.error.TargetError as err:
            print("refused:", err)
        """
    )
    assert out.returncode == 0, out.stderr
    assert "unknown CPU 'pentium99' for x86_64" in out.stdout
    assert "minitvm.target.list_cpus()" in out.stdout
    assert "LLVM ERROR" not in out.stderr


@pytest.mark.parametrize("mattr", ["+bogus", "avx2", "+avx2,-nonsense", "+avx2;rm"])
def test_unknown_or_malformed_mattr_is_a_target_error(mattr):
    with pytest.raises(TargetError, match="unknown CPU feature .* in -mattr; write \\+name"):
        Target(f"llvm -mattr={mattr}")


def test_known_cpus_and_features_are_accepted():
    assert "x86-64-v3" in list_cpus() or not list_cpus()  # listed once per process by LLVM
    for cpu in ("x86-64", "x86-64-v3", "skylake-avx512", "znver4", "sapphirerapids"):
        assert str(Target(f"llvm -mcpu={cpu} -mattr=+avx2,-avx512f")).startswith("llvm -mcpu=")


def test_every_cpu_in_the_feature_table_is_known_to_llvm():
    for cpu in CPU_FEATURES:
        Target(f"llvm -mcpu={cpu}")


def _lacking_cpu() -> str | None:
    have = enabled_features(host_cpu_features())
    for cpu in ("sapphirerapids", "graniterapids", "znver5", "tigerlake"):
        if not CPU_FEATURES[cpu] <= have:
            return cpu
    return None


def test_code_for_a_cpu_this_machine_lacks_builds_but_refuses_to_run(tmp_path):
    cpu = _lacking_cpu()
    if cpu is None:
        pytest.skip("this machine has every feature of the CPUs tried")
    mod = _double(f"llvm -mcpu={cpu}")
    assert "ret" in mod.get_source("asm")
    a, b = np.ones(16, "float32"), np.zeros(16, "float32")
    with pytest.raises(RuntimeError_, match="needs CPU features this .* CPU lacks: .*'llvm'"):
        mod(a, b)
    with pytest.raises(RuntimeError_, match="cannot run on this machine"):
        mod["double"]
    path = str(tmp_path / "foreign.so")
    mod.export_library(path)  # exporting for another CPU is legitimate
    with pytest.raises(RuntimeError_, match="needs CPU features this machine lacks"):
        tvm.runtime.load_module(path)


def test_code_for_another_architecture_never_reaches_the_jit():
    out = _run(
        """
        import numpy as np
        import minitvm as tvm
        from minitvm import te
        A = te.placeholder((16,), name="A")
        B = te.compute((16,), lambda i: A[i] * 2.0, name="B")
        mod = tvm.build(te.create_schedule(B.op), [A, B], "llvm -mtriple=aarch64-linux-gnu")
        print("asm has ret:", "ret" in mod.get_source("asm"))
        try:
            mod(np.ones(16, "float32"), np.zeros(16, "float32"))
        except tvm.error.RuntimeError_ as err:
            print("refused:", err)
        """
    )
    assert out.returncode == 0, out.stderr
    assert "asm has ret: True" in out.stdout
    assert "it was built for aarch64, this machine is x86_64" in out.stdout


def test_host_targets_run():
    assert unavailable_reason(Target("llvm")) is None
    mod = _double("llvm -mcpu=x86-64")
    a, b = np.arange(16, dtype="float32"), np.zeros(16, "float32")
    mod(a, b)
    np.testing.assert_array_equal(b, 2 * a)


def test_cpus_without_a_feature_table_refuse_to_run_with_a_reason():
    reason = unavailable_reason(Target("llvm -mcpu=k8"))
    assert reason is not None and "does not know which instruction sets -mcpu=k8" in reason
