"""Tutorial: train a ResNet-style CNN written in PyTorch with TVM's relax.training API.

The model is an ordinary torch.nn.Module (random init, no pretrained weights). We export its
forward pass with torch.export, import it with `from_exported_program(keep_params_as_input=True)`
so the weights become function parameters, rename "main" to "backbone", and let SetupTrainer add
the cross-entropy loss, the backward pass (relax.Gradient) and a momentum-SGD update. Trainer
then runs the compiled functions. The same module trained by torch.optim gives the same losses.

The data are synthetic: each class is a coloured stripe texture, randomly shifted, plus noise.

    python examples/train_resnet_torch.py     # about 15 s of CPU, mostly import and compile
    python examples/train_resnet_torch.py --losses out.json   # also write the losses

No BatchNorm: in training mode it updates running statistics, which would be model states
(state_num > 0); this example keeps to convolutions, ReLU, residual adds and pooling.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

SMALL = os.environ.get("MINITVM_EXAMPLE_SMALL") == "1"
SIZES = {  # image side, channels of the first block, batch, training steps, classes
    "small": {"side": 8, "width": 4, "batch": 8, "steps": 4, "classes": 4},
    "default": {"side": 16, "width": 8, "batch": 32, "steps": 60, "classes": 10},
}
CONFIG = SIZES["small" if SMALL else "default"]
LR, MOMENTUM = 0.1, 0.9


class BasicBlock(nn.Module):
    """conv-relu-conv plus the input (a projection when the shape changes), then relu."""

    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.proj = None if stride == 1 and cin == cout else nn.Conv2d(cin, cout, 1, stride=stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = x if self.proj is None else self.proj(x)
        return F.relu(skip + self.conv2(F.relu(self.conv1(x))))


class ResNetish(nn.Module):
    def __init__(self, width: int, classes: int) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, padding=1)
        self.layer1 = BasicBlock(width, width)
        self.layer2 = BasicBlock(width, 2 * width, stride=2)
        self.fc = nn.Linear(2 * width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layer2(self.layer1(F.relu(self.stem(x))))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def make_model(cfg: dict) -> ResNetish:
    torch.manual_seed(0)
    return ResNetish(cfg["width"], cfg["classes"])


def make_data(cfg: dict) -> tuple[np.ndarray, np.ndarray]:
    """`steps` batches: (steps, batch, 3, side, side) images and (steps, batch) labels.

    Class c is a stripe texture (its own orientation, frequency and colour) at a random shift,
    plus noise: what convolutions followed by global pooling can tell apart."""
    rng = np.random.default_rng(0)
    s, n, c = cfg["side"], cfg["steps"] * cfg["batch"], cfg["classes"]
    i, j = np.meshgrid(np.arange(s), np.arange(s), indexing="ij")
    angle = np.pi * np.arange(c)[:, None, None] / c
    freq = np.where(np.arange(c) % 2 == 0, 0.15, 0.3)[:, None, None]
    stripes = np.sin(2 * np.pi * freq * (i * np.cos(angle) + j * np.sin(angle)))
    colour = rng.uniform(0.5, 1.5, (c, 3))
    textures = colour[:, :, None, None] * stripes[:, None]
    labels = rng.integers(0, c, n).astype("int64")
    shifts = rng.integers(0, s, (n, 2))
    images = np.stack([np.roll(textures[k], tuple(d), axis=(1, 2)) for k, d in zip(labels, shifts)])
    images = (images + 0.5 * rng.standard_normal(images.shape)).astype("float32")
    shape = (cfg["steps"], cfg["batch"])
    return images.reshape(*shape, 3, s, s), labels.reshape(shape)


def torch_losses(cfg: dict) -> list[float]:
    """The reference: the same module, data and optimizer in PyTorch."""
    model = make_model(cfg)
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    losses = []
    for x, y in zip(*make_data(cfg)):
        loss = F.cross_entropy(model(torch.from_numpy(x)), torch.from_numpy(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses


def relax_trainer(model: nn.Module, example: np.ndarray, classes: int):
    """torch module -> backbone module -> SetupTrainer -> relax.build -> Trainer."""
    import minitvm as tvm
    from minitvm import relax
    from minitvm.ir import IRModule
    from minitvm.relax.frontend.torch import from_exported_program
    from minitvm.relax.training import SetupTrainer, Trainer
    from minitvm.relax.training.loss import CrossEntropyLoss
    from minitvm.relax.training.optimizer import MomentumSGD

    exported = torch.export.export(model, (torch.from_numpy(example),))
    mod = from_exported_program(exported, keep_params_as_input=True, unwrap_unit_return_tuple=True)
    main = mod["main"]  # main(x, *weights); the weights' values are in the "params" attribute
    weights = main.attrs["params"]
    backbone = IRModule({"backbone": main.with_attr("global_symbol", "backbone")})
    backbone = backbone.with_attr("param_num", len(weights)).with_attr("state_num", 0)
    batch = example.shape[0]
    train_mod = SetupTrainer(
        CrossEntropyLoss(),
        # TVM's momentum dampening differs from torch's only when dampening != 0
        MomentumSGD(LR, momentum=MOMENTUM),
        [relax.TensorStructInfo((batch, classes), "float32"),
         relax.TensorStructInfo((batch,), "int64")],
    )(backbone)  # fmt: skip
    vm = relax.VirtualMachine(relax.build(train_mod, "llvm"), tvm.cpu())
    trainer = Trainer(train_mod, vm, tvm.cpu())
    trainer.load_params([w.numpy() for w in weights])  # torch's random init
    return trainer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--losses", help="write {'ours': [...], 'torch': [...]} here (JSON)")
    args = parser.parse_args()
    cfg = CONFIG
    torch.set_num_threads(1)
    xs, ys = make_data(cfg)
    start = time.perf_counter()
    trainer = relax_trainer(make_model(cfg), xs[0], cfg["classes"])
    print(f"imported and compiled in {time.perf_counter() - start:.1f} s")
    start = time.perf_counter()
    ours = [float(trainer.update([x], [y]).numpy()) for x, y in zip(xs, ys)]
    print(f"{len(ours)} steps in {time.perf_counter() - start:.1f} s; "
          f"loss {ours[0]:.4f} -> {ours[-1]:.4f}")  # fmt: skip
    ref = torch_losses(cfg)
    if args.losses:
        with open(args.losses, "w") as f:
            json.dump({"ours": ours, "torch": ref}, f)
    np.testing.assert_allclose(ours[:10], ref[:10], rtol=1e-4, atol=1e-5)
    # float32 rounding differs between the two (other kernels, other summation orders) and
    # training amplifies it a little, step by step
    np.testing.assert_allclose(ours, ref, rtol=2e-3, atol=2e-3)
    print(f"losses equal PyTorch's at every step (max difference "
          f"{max(abs(a - b) for a, b in zip(ours, ref)):.1e})")  # fmt: skip
    if not SMALL:
        assert np.mean(ours[-10:]) < 0.6 * ours[0], "training did not reduce the loss"
        acc = np.mean(trainer.predict(xs[-1]).numpy().argmax(1) == ys[-1])
        print(f"accuracy on the last batch: {100 * acc:.0f}%")


if __name__ == "__main__":
    main()
