"""A whole CNN with no tuning: the zoo's ResNet-18 through relax.build, checked against PyTorch
(or the numpy reference evaluator when torch is not installed), timed, and profiled per kernel.

relax.build folds batch norm into the convolutions, moves every conv to the blocked NCHW16c
layout with its weights packed at compile time, fuses bias/residual/relu into each conv's
write-back and schedules every kernel with the default CPU rules.

    python examples/whole_model_resnet.py                      # 224x224, all cores
    MINITVM_NUM_THREADS=1 python examples/whole_model_resnet.py
"""

import time

import numpy as np

import minitvm as tvm
from minitvm import relax
from minitvm.env import example_small
from minitvm.testing import zoo

size = 32 if example_small() else 224
mod, params = zoo.get_model("resnet18", image_shape=(3, size, size))
mod = relax.transform.BindParams("main", params)(mod)  # weights become constants

start = time.perf_counter()
ex = relax.build(mod, "llvm")
print(f"relax.build: {time.perf_counter() - start:.2f} s")
vm = relax.VirtualMachine(ex, tvm.cpu())

x = np.random.default_rng(0).standard_normal((1, 3, size, size)).astype("float32")
out = vm["main"](tvm.nd.array(x)).numpy()

try:
    import torch

    with torch.inference_mode():
        ref = zoo.torch_model("resnet18", params)(torch.from_numpy(x)).numpy()
except ImportError:  # the numpy evaluator of the same relax graph
    from minitvm.relax.eval_ref import evaluate

    ref = np.asarray(evaluate(mod, x))

timer = vm.time_evaluator("main", tvm.cpu(), number=3, repeat=3)
print(f"{tvm.runtime.num_threads()} threads: {timer(tvm.nd.array(x)).mean * 1e3:.2f} ms per image")
print(vm.profile("main", tvm.nd.array(x)))
np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
