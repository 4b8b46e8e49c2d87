"""Code generation: lowered TIR → native code. `codegen.llvm.build` targets the host CPU via LLVM."""

from . import llvm
from .llvm import CodeGenLLVM, build

__all__ = ["CodeGenLLVM", "build", "llvm"]
