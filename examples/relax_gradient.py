"""Tutorial: differentiate a graph-level (relax) function and run its gradient on the VM.

We build `loss(x, w) = sum(relu(x @ w))`, let `relax.transform.Gradient` add `main_adjoint`
(returning the loss and d loss / d w), compile the module with `relax.build` and check the
gradient against a numpy derivation.

    python examples/relax_gradient.py
"""

import numpy as np

import minitvm as tvm
from minitvm import relax
from minitvm.env import example_small
from minitvm.relax import op as R

n, d, h = (8, 6, 4) if example_small() else (64, 32, 16)

# 1. The function, binding by binding (A-normal form) with the BlockBuilder.
x = relax.Var("x", relax.TensorStructInfo((n, d), "float32"))
w = relax.Var("w", relax.TensorStructInfo((d, h), "float32"))
bb = relax.BlockBuilder()
with bb.function("main", [x, w]):
    with bb.dataflow():
        y = bb.emit(R.matmul(x, w))
        r = bb.emit(R.nn.relu(y))
        loss = bb.emit_output(R.sum(r))
    bb.emit_func_output(loss)
mod = bb.get()

# 2. Reverse mode: main_adjoint(x, w) -> (loss, (grad_w,)).
mod = relax.transform.Gradient("main", require_grads=["w"])(mod)
print(mod["main_adjoint"])

# 3. Compile both functions into one executable and run the adjoint.
vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu(0))
rng = np.random.default_rng(0)
x_np = rng.standard_normal((n, d)).astype(np.float32)
w_np = rng.standard_normal((d, h)).astype(np.float32)
value, (grad_w,) = vm["main_adjoint"](x_np, w_np)

# 4. By hand: d/dw sum(relu(x @ w)) = x^T @ (x @ w > 0).
z = x_np @ w_np
print(f"loss {float(value.numpy()):.4f}; grad_w has shape {grad_w.shape}")
np.testing.assert_allclose(value.numpy(), np.maximum(z, 0).sum(), rtol=1e-5)
assert np.allclose(grad_w.numpy(), x_np.T @ (z > 0).astype(np.float32), rtol=1e-5, atol=1e-5)
