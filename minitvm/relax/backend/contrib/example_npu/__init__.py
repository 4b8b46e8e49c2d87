"""The example NPU of TVM's "Bring Your Own Codegen" tutorial, emulated on the host CPU.

Importing it registers the `example_npu.*` fusion patterns and the code generator
`relax.ext.example_npu`. TVM's example runtime is a stub that leaves outputs uninitialised;
minitvm's generator turns each offloaded function back into ordinary ops that the normal
build compiles for the host, so offloaded graphs compute real results.
"""

from . import codegen, patterns

__all__ = ["codegen", "patterns"]
