"""Tutorial: TVM's relax.training API -- a backbone, a loss, an optimizer, a Trainer.

SetupTrainer appends CrossEntropyLoss to the backbone, differentiates it (relax.Gradient) and
adds the Adam update; Trainer runs the compiled functions and keeps the weights. We check the
first steps against the same model in numpy, train a 3-class problem, and resume from a
checkpoint with identical losses.

    python examples/train_relax_trainer.py
"""

import tempfile
from pathlib import Path

import numpy as np

import minitvm as tvm
from minitvm import relax
from minitvm.relax.training import SetupTrainer, Trainer
from minitvm.relax.training.loss import CrossEntropyLoss
from minitvm.relax.training.optimizer import SGD

N, D, H, C = 16, 2, 16, 3  # batch, features, hidden units, classes

# 1. The backbone: backbone(x, w0, b0, w1, b1) -> logits, with param_num / state_num attributes.
x = relax.Var("x", relax.TensorStructInfo((N, D), "float32"))
params = [relax.Var(n, relax.TensorStructInfo(s, "float32"))
          for n, s in (("w0", (D, H)), ("b0", (H,)), ("w1", (H, C)), ("b1", (C,)))]  # fmt: skip
R = relax.op
bb = relax.BlockBuilder()
with bb.function("backbone", [x, *params]):
    with bb.dataflow():
        h = bb.emit(R.nn.relu(R.add(R.matmul(x, params[0]), params[1])))
        logits = bb.emit_output(R.add(R.matmul(h, params[2]), params[3]))
    bb.emit_func_output(logits)
backbone = bb.get().with_attr("param_num", 4).with_attr("state_num", 0)

# 2. Loss + optimizer -> a trainer module, built once.
train_mod = SetupTrainer(
    CrossEntropyLoss(),
    SGD(0.5),
    [relax.TensorStructInfo((N, C), "float32"), relax.TensorStructInfo((N,), "int64")],
)(backbone)
vm = relax.VirtualMachine(relax.build(train_mod, "llvm"), tvm.cpu())
trainer = Trainer(train_mod, vm, tvm.cpu())

# Three blobs, one per class.
rng = np.random.default_rng(0)
centers = np.array([[2.0, 0.0], [-1.0, 1.7], [-1.0, -1.7]], "float32")
labels = rng.integers(0, C, 20 * N).astype("int64")
points = (centers[labels] + 0.5 * rng.standard_normal((20 * N, D))).astype("float32")
init = [(0.5 * rng.standard_normal(p.struct_info.shape)).astype("float32") for p in params]
trainer.load_params(init)


# 3. One step against numpy: softmax cross-entropy, backprop by hand, SGD.
def numpy_step(ps, xb, yb, lr=0.5):
    w0, b0, w1, b1 = ps
    z = xb @ w0 + b0
    a = np.maximum(z, 0)
    out = a @ w1 + b1
    e = np.exp(out - out.max(1, keepdims=True))
    p = e / e.sum(1, keepdims=True)
    loss = -np.mean(np.log(p[np.arange(len(yb)), yb]))
    g = p.copy()
    g[np.arange(len(yb)), yb] -= 1
    g /= len(yb)
    gw1, gb1 = a.T @ g, g.sum(0)
    ga = (g @ w1.T) * (z >= 0)
    gw0, gb0 = xb.T @ ga, ga.sum(0)
    return loss, [q - lr * gq for q, gq in zip(ps, (gw0, gb0, gw1, gb1))]


ref = [p.astype(np.float64) for p in init]
for k in range(3):
    xb, yb = points[k * N : (k + 1) * N], labels[k * N : (k + 1) * N]
    loss = float(trainer.update([xb], [yb]).numpy())
    ref_loss, ref = numpy_step(ref, xb, yb)
    assert abs(loss - ref_loss) < 1e-4 * max(1.0, ref_loss), (loss, ref_loss)
print("3 steps equal numpy; loss", round(loss, 4))

# 4. Train a few epochs, then check accuracy.
for epoch in range(3):
    for k in range(len(points) // N):
        trainer.update([points[k * N : (k + 1) * N]], [labels[k * N : (k + 1) * N]])
pred = np.concatenate([trainer.predict(points[k * N : (k + 1) * N]).numpy().argmax(1)
                       for k in range(len(points) // N)])  # fmt: skip
accuracy = float(np.mean(pred == labels))
print(f"training accuracy {100 * accuracy:.1f}%")
assert accuracy > 0.9

# 5. A checkpoint (.npz, no pickle) resumes with bit-identical losses.
with tempfile.TemporaryDirectory() as tmp:
    path = trainer.save_checkpoint(Path(tmp) / "trainer.npz")
    batch = [points[:N]], [labels[:N]]
    first = trainer.update(*batch).numpy()
    again = Trainer(train_mod, vm, tvm.cpu())
    again.load_checkpoint(path)
    assert again.update(*batch).numpy().tobytes() == first.tobytes()
print("resumed from the checkpoint with the same loss")
