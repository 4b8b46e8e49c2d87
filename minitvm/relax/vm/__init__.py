"""Running graph programs: `relax.build` → Executable → `relax.VirtualMachine`."""

from .build import build
from .executable import Executable, load_executable
from .vm import Report, VirtualMachine

__all__ = ["Executable", "Report", "VirtualMachine", "build", "load_executable"]
