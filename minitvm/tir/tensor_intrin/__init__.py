"""Built-in tensor intrinsics (tvm.tir.tensor_intrin): importing this package registers them.

Each intrinsic keeps TVM's registered name and description (what the instruction computes),
so `Schedule.tensorize(loop, NAME)` accepts the same loop nests as TVM. The CPU implementations
are portable loop nests over the matched sub-buffers (LLVM may vectorize them); they compute
exactly what the description computes. GPU/DSP ones (cuda, rocm, hexagon) are registered for
matching only: their implementation calls a device function that a CPU build cannot resolve.
"""

from . import arm_cpu, cuda, dot_product_common, hexagon, rocm, x86  # noqa: F401
