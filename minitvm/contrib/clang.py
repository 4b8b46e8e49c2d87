"""`tvm.contrib.clang.create_llvm`: C/C++ source → LLVM IR text with the clang on PATH.

The text is what `s[C].pragma(loop, "import_llvm", text)` links into a built module. minitvm
itself needs no C compiler; this helper does, and says so when there is none.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from ..error import BuildError


def find_clang(required: bool = True) -> list[str]:
    """Paths of the clang executables on PATH (empty, or a BuildError when `required`)."""
    found = [p for p in (shutil.which(n) for n in ("clang", "clang++")) if p]
    if not found and required:
        raise BuildError(
            "tvm.contrib.clang: no clang executable on PATH; install clang (e.g. apt-get "
            "install clang) or write the LLVM IR yourself and pass its text to "
            "pragma import_llvm"
        )
    return found


def create_llvm(
    inputs: str | list[str],
    output: str | None = None,
    options: list[str] | None = None,
    cc: str | None = None,
) -> str:
    """Compile C/C++ source text(s) (or .c/.cc file paths) to LLVM IR; returns the IR text."""
    cc = cc or find_clang()[0]
    sources = [inputs] if isinstance(inputs, str) else list(inputs)
    with tempfile.TemporaryDirectory(prefix="minitvm-clang-") as tmp:
        files = []
        for k, src in enumerate(sources):
            if os.path.isfile(src):
                files.append(src)
                continue
            path = os.path.join(tmp, f"input{k}.cc")
            with open(path, "w") as f:
                f.write(src)
            files.append(path)
        out = output or os.path.join(tmp, "output.ll")
        cmd = [cc, "-S", "-emit-llvm", "-O2", *(options or []), "-o", out, *files]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise BuildError(f"tvm.contrib.clang: {' '.join(cmd)} failed:\n{proc.stderr}")
        with open(out) as f:
            return f.read()
