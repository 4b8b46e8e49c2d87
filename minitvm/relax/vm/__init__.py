"""Running graph programs: `relax.build` → Executable → `relax.VirtualMachine`."""

from .build import build
from .exec_builder import ExecBuilder, SpecialReg, VMFuncKind, VMFuncScope
from .executable import Executable, load_executable
from .vm import Report, VirtualMachine

__all__ = [
    "ExecBuilder",
    "Executable",
    "Report",
    "SpecialReg",
    "VMFuncKind",
    "VMFuncScope",
    "VirtualMachine",
    "build",
    "load_executable",
]
