"""Tutorial: the dlsys assignment's training loop with `minitvm.autodiff` (logistic regression).

Write the model with `ad` nodes, ask `ad.gradients` for the backward graph, and run forward
and backward with one `ad.Executor`: it compiles them as one graph program (fused kernels,
planned memory, the relax VM) the first time it sees the feed shapes, then reuses it.
The SGD update is the assignment's own numpy line. The last batch is checked against numpy.

    python examples/dlsys_logreg.py
"""

import time

import numpy as np

import minitvm as tvm
from minitvm import autodiff as ad
from minitvm.env import example_small
from minitvm.testing.datasets import load_digits, train_val_split

x_all, y_all = load_digits()
x_train, y_train, x_val, y_val = train_val_split(x_all, y_all, seed=0)
batch, lr, epochs = 64, 0.5, 3 if example_small() else 30
eye = np.eye(10, dtype=np.float32)

# 1. The model as a graph of nodes: logits = x @ W + b, mean softmax cross-entropy.
x = ad.Variable("x")
y_ = ad.Variable("y_")
W = ad.Variable("W")
b = ad.Variable("b")
logits = ad.matmul_op(x, W) + ad.broadcastto_op(b, ad.matmul_op(x, W))
loss = ad.softmaxcrossentropy_op(logits, y_)
grad_W, grad_b = ad.gradients(loss, [W, b])
executor = ad.Executor([loss, grad_W, grad_b, logits], ctx=tvm.cpu(0))

# 2. Train: feed numpy arrays, update the weights in numpy (the dlsys loop).
rng = np.random.default_rng(0)
W_val = (rng.standard_normal((64, 10)) * np.sqrt(2 / 74)).astype(np.float32)
b_val = np.zeros(10, np.float32)
start = time.perf_counter()
for epoch in range(epochs):
    order = rng.permutation(len(x_train))
    for k in range(len(x_train) // batch):
        idx = order[k * batch : (k + 1) * batch]
        feed = {x: x_train[idx], y_: eye[y_train[idx]], W: W_val, b: b_val}
        loss_val, gW, gb, _ = executor.run(feed, convert_to_numpy_ret_vals=True)
        W_val = W_val - lr * gW
        b_val = b_val - lr * gb
print(
    f"{epochs} epochs in {time.perf_counter() - start:.2f} s, {executor.compile_count} compile(s)"
)

# 3. The last batch's gradient equals numpy's.
xb, yb = feed[x], feed[y_]
z = xb @ (W_val + lr * gW) + (b_val + lr * gb)
p = np.exp(z - z.max(1, keepdims=True))
p /= p.sum(1, keepdims=True)
np.testing.assert_allclose(gW, xb.T @ (p - yb) / batch, rtol=1e-4, atol=1e-6)

# 4. Accuracy on held-out digits (the executor recompiles once for the new batch shape).
val_feed = {x: x_val, y_: eye[y_val], W: W_val, b: b_val}
val_logits = executor.run(val_feed, convert_to_numpy_ret_vals=True)[3]
accuracy = float(np.mean(val_logits.argmax(1) == y_val))
print(f"validation accuracy {100 * accuracy:.2f}%")
assert accuracy > (0.8 if example_small() else 0.93)
