"""Tutorial: a whole relax model on a GPU device (OpenCL here; CUDA the same way).

`relax.build(mod, target="opencl")` runs the graph pipeline for GPUs (no CPU blocked layouts;
every fused kernel gets threads from DefaultGPUSchedule) and builds the kernels as OpenCL C.
`relax.VirtualMachine(ex, tvm.opencl(0))` keeps weights, intermediates and results in device
memory: inputs are copied there with `tvm.nd.array(x, dev)`, results read back with `.numpy()`.
The result is checked against the same model built for the CPU.

    python examples/gpu_relax_mlp.py            # opencl; pass "cuda" to use a CUDA GPU
"""

import sys

import numpy as np

import minitvm as tvm
from minitvm import relax
from minitvm.testing import zoo

kind = sys.argv[1] if len(sys.argv) > 1 else "opencl"
dev = tvm.device(kind, 0)
reason = dev.unavailable_reason()
if reason is not None:
    print(f"no {kind} device here, nothing to run: {reason}")
    sys.exit(0)

# 1. The zoo's MLP (flatten, 128 relu, 64 relu, 10, softmax) with its weights bound.
mod, params = zoo.get_model("mlp", batch_size=8)
mod = relax.transform.BindParams("main", params)(mod)

# 2. Build for the GPU and for the CPU (the reference).
ex = relax.build(mod, target=kind)
print(f"built {len(ex.mod.func_infos)} {kind} kernel(s); first lines of the source:")
print("\n".join(ex.mod.get_source().splitlines()[:8]))
vm = relax.VirtualMachine(ex, dev)
cpu_vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())

# 3. Run on the device: the input goes to device memory first.
x = np.random.default_rng(0).standard_normal((8, 1, 28, 28)).astype("float32")
out = vm["main"](tvm.nd.array(x, dev))
want = cpu_vm["main"](x).numpy()
np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-6)
print(f"result on {out.device} matches the CPU build; classes: {out.numpy().argmax(axis=1)}")

# 4. Time it: each call counts until the device has finished its kernels.
timer = vm.time_evaluator("main", dev, number=10, repeat=3)
print(f"{kind} mean time per call: {timer(tvm.nd.array(x, dev)).mean * 1e3:.3f} ms")
