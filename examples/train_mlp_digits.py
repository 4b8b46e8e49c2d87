"""Tutorial: train a multi-layer perceptron on the bundled 8x8 digits with minitvm.

`minitvm.training.TrainingProgram` emits ONE relax function per training step -- the forward
pass, the softmax cross-entropy loss, the backward pass (reverse-mode, from the op table's
gradient rules) and the SGD update -- and compiles it with `relax.build`. We first check one
step against numpy, then train for a few epochs.

    python examples/train_mlp_digits.py        # or: python -m minitvm train --model mlp
"""

import numpy as np

from minitvm import training as tr
from minitvm.env import example_small

data = tr.load_dataset("digits")
layers = tr.build_model("mlp", data.image_shape)  # 64-128-64-10 with relu
print("model:", tr.describe_model(layers))

# 1. One step of the compiled program equals the same step written in numpy.
batch, lr = 32, 0.1
program = tr.TrainingProgram(layers, (64,), batch, "sgd", lr)
print(f"compiled forward + backward + update in {program.compile_seconds:.2f} s")
params = tr.init_params(layers, seed=0)
xb, yb = data.x_train[:batch], np.eye(10, dtype=np.float32)[data.y_train[:batch]]
loss, logits, new_params, _ = program.step(xb, yb, params, [])

acts, ws, bs = [xb], params[0::2], params[1::2]
for i in range(3):
    z = acts[-1] @ ws[i] + bs[i]
    acts.append(np.maximum(z, 0) if i < 2 else z)
p = np.exp(acts[-1] - acts[-1].max(1, keepdims=True))
p /= p.sum(1, keepdims=True)
g = (p - yb) / batch
expected = [None] * 6
for i in reversed(range(3)):
    expected[2 * i], expected[2 * i + 1] = ws[i] - lr * acts[i].T @ g, bs[i] - lr * g.sum(0)
    g = (g @ ws[i].T) * (acts[i] > 0)
np.testing.assert_allclose(loss, -np.mean(np.sum(yb * np.log(p), 1)), rtol=1e-4)
for got, want in zip(new_params, expected):
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)
print("one compiled step matches numpy")

# 2. Train: one compiled call per batch, parameters fed back in.
config = tr.TrainConfig(epochs=3 if example_small() else 20, batch_size=batch, lr=lr)
result = tr.train(layers, data, config, on_epoch=lambda s: print(s.line(config.epochs)))
print(f"validation accuracy {100 * result.val_acc:.2f}%")
assert result.val_acc >= (0.85 if example_small() else 0.95)
