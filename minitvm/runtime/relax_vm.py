"""`tvm.runtime.relax_vm`: TVM's older home of the relax VirtualMachine (the same class as
`relax.VirtualMachine`, which lives in relax/, a floor above the runtime: resolved on first use
through the public-surface table)."""

from .. import _lazy

__getattr__ = _lazy.module_getattr(
    __name__,
    {
        "VirtualMachine": "minitvm.relax.vm:VirtualMachine",
        "Executable": "minitvm.relax.vm:Executable",
    },
)
