"""Can code built for a Target run on this machine? LLVM's CPU and feature names, the ISA
features each common x86 CPU implies, and the one rule shared by build, call and load.

Building for another CPU or architecture is legitimate (export it, read its assembly); running
it here is not: a missing instruction set dies with SIGILL, a foreign architecture segfaults.
"""

from __future__ import annotations

import os
import platform
import re
import sys
import tempfile
import threading
from functools import lru_cache

import llvmlite.binding as llvm

# the architecture names of `platform.machine()` / ELF, for the spellings triples use
_ARCH_ALIASES = {"amd64": "x86_64", "x86-64": "x86_64", "arm64": "aarch64", "i686": "i386"}

# ISA features our code generator can emit (vector, bit manipulation, conversions), per CPU.
# Tuning-only and system features (pku, clwb, sgx ...) are left out: compiled kernels never use
# them, so lacking one does not stop code from running.
_X86_64 = frozenset({"cmov", "cx8", "fxsr", "mmx", "sse", "sse2"})
_V2 = _X86_64 | {"cx16", "sahf", "popcnt", "sse3", "sse4.1", "sse4.2", "ssse3"}
_V3 = _V2 | {"avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave"}
_V4 = _V3 | {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}
_ICELAKE = _V4 | {
    "avx512ifma",
    "avx512vbmi",
    "avx512vbmi2",
    "avx512bitalg",
    "avx512vnni",
    "avx512vpopcntdq",
    "gfni",
    "vaes",
    "vpclmulqdq",
}
_SAPPHIRE = _ICELAKE | {"avx512bf16", "avx512fp16", "amx-tile", "amx-int8", "amx-bf16", "avxvnni"}
_ZEN = _V3 | {"sse4a"}
_ZEN4 = (_ICELAKE | {"avx512bf16", "sse4a"}) - {"avx512vp2intersect"}
CPU_FEATURES: dict[str, frozenset[str]] = {
    "x86-64": _X86_64,
    "x86-64-v2": _V2,
    "x86-64-v3": _V3,
    "x86-64-v4": _V4,
    "nehalem": _V2,
    "westmere": _V2 | {"pclmul", "aes"},
    "sandybridge": _V2 | {"pclmul", "aes", "avx", "xsave"},
    "ivybridge": _V2 | {"pclmul", "aes", "avx", "xsave", "f16c"},
    "haswell": _V3,
    # LLVM's older names for the same CPUs (TVM's tutorials write -mcpu=core-avx2)
    "corei7": _V2,
    "corei7-avx": _V2 | {"pclmul", "aes", "avx", "xsave"},
    "core-avx-i": _V2 | {"pclmul", "aes", "avx", "xsave", "f16c"},
    "core-avx2": _V3,
    "broadwell": _V3,
    "skylake": _V3,
    "skylake-avx512": _V4,
    "cascadelake": _V4 | {"avx512vnni"},
    "cooperlake": _V4 | {"avx512vnni", "avx512bf16"},
    "cannonlake": _V4 | {"avx512ifma", "avx512vbmi"},
    "icelake-client": _ICELAKE,
    "icelake-server": _ICELAKE,
    "rocketlake": _ICELAKE,
    "tigerlake": _ICELAKE | {"avx512vp2intersect"},
    "alderlake": _V3 | {"avxvnni", "gfni", "vaes", "vpclmulqdq"},
    "sapphirerapids": _SAPPHIRE,
    "emeraldrapids": _SAPPHIRE,
    "graniterapids": _SAPPHIRE | {"amx-fp16"},
    "znver1": _ZEN,
    "znver2": _ZEN,
    "znver3": _ZEN | {"vaes", "vpclmulqdq"},
    "znver4": _ZEN4,
    "znver5": _ZEN4 | {"avxvnni", "avx512vp2intersect"},
}


def host_arch() -> str:
    """This machine's architecture as ELF/`platform` name it ("x86_64", "aarch64")."""
    machine = platform.machine().lower()
    return _ARCH_ALIASES.get(machine, machine)


def triple_arch(triple: str) -> str:
    """The architecture of an LLVM triple ("aarch64-linux-gnu" -> "aarch64")."""
    arch = triple.split("-", 1)[0].lower()
    return _ARCH_ALIASES.get(arch, arch)


_capture_lock = threading.Lock()


def _llvm_stderr(fn) -> str:
    """What LLVM writes to stderr (file descriptor 2) while `fn()` runs."""
    with _capture_lock, tempfile.TemporaryFile() as out:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(out.fileno(), 2)
            fn()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        return out.read().decode(errors="replace")


_HELP_LINE = re.compile(r"^  (\S+)\s+- ", re.MULTILINE)


@lru_cache(maxsize=128)
def llvm_complaints(triple: str, cpu: str, features: str) -> str:
    """What LLVM says (it only warns, then may die later) about a CPU name and feature string."""
    target = llvm.Target.from_triple(triple)
    return _llvm_stderr(lambda: target.create_target_machine(cpu=cpu, features=features))


@lru_cache(maxsize=8)
def _llvm_help(triple: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    # LLVM prints its help listing once per process, whatever the triple: cache what we get
    target = llvm.Target.from_triple(triple)
    text = _llvm_stderr(lambda: target.create_target_machine(cpu="help", features="+help"))
    cpus_at, features_at = text.find("Available CPUs"), text.find("Available features")
    cpus = _HELP_LINE.findall(text[cpus_at:features_at]) if 0 <= cpus_at < features_at else []
    features = _HELP_LINE.findall(text[features_at:]) if features_at >= 0 else []
    return tuple(sorted(cpus)), tuple(sorted(features))


def list_cpus(triple: str | None = None) -> list[str]:
    """CPU names accepted by `-mcpu=` (for the host's architecture unless `triple` is given).
    LLVM lists them once per process: call this before other triples' lists."""
    return list(_llvm_help(triple or llvm.get_process_triple())[0])


def list_features(triple: str | None = None) -> list[str]:
    """Feature names accepted by `-mattr=+name,-name` (listed once per process, as CPUs)."""
    return list(_llvm_help(triple or llvm.get_process_triple())[1])
