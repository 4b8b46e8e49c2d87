"""Tutorial: train a ResNet-style CNN written in PyTorch with TVM's relax.training API.

The model is an ordinary torch.nn.Module with batch norm, trained in train mode (random init,
no pretrained weights). `torch_backbone` exports its forward pass with torch.export and imports
it so the weights are function parameters and the BatchNorm buffers (running statistics) are
TVM-style states: `backbone(x, *weights, *states) -> (logits, *new states)`. SetupTrainer adds
the cross-entropy loss, the backward pass (relax.Gradient) and a momentum-SGD update; Trainer
runs the compiled functions and feeds the updated running statistics into the next step, and
`predict` uses them (eval mode). The same module trained by torch.optim gives the same losses.

The data are synthetic: each class is a coloured stripe texture, randomly shifted, plus noise.

    python examples/train_resnet_torch.py     # about 15 s of CPU, mostly import and compile
    python examples/train_resnet_torch.py --losses out.json   # also write the losses

Every convolution is followed by a BatchNorm (so it has no bias), as in ResNets.
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
    """conv-bn-relu-conv-bn plus the input (a projection when the shape changes), then relu."""

    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.proj = None
        if stride != 1 or cin != cout:
            self.proj = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = x if self.proj is None else self.proj(x)
        return F.relu(skip + self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))))


class ResNetish(nn.Module):
    def __init__(self, width: int, classes: int) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1, bias=False), nn.BatchNorm2d(width)
        )
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


def torch_losses(cfg: dict) -> tuple[list[float], nn.Module]:
    """The reference: the same module (train mode), data and optimizer in PyTorch."""
    model = make_model(cfg)
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    losses = []
    for x, y in zip(*make_data(cfg)):
        loss = F.cross_entropy(model(torch.from_numpy(x)), torch.from_numpy(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses, model


def relax_trainer(model: nn.Module, example: np.ndarray, classes: int):
    """torch module -> backbone module (weights as params, buffers as states) -> SetupTrainer
    -> relax.build -> Trainer."""
    import minitvm as tvm
    from minitvm import relax
    from minitvm.relax.training import SetupTrainer, Trainer
    from minitvm.relax.training.loss import CrossEntropyLoss
    from minitvm.relax.training.optimizer import MomentumSGD
    from minitvm.training import torch_backbone

    # backbone(x, *weights, *states) -> (logits, *new states); param_num / state_num attrs
    backbone, weights, states = torch_backbone(model, example)
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
    trainer.load_params(weights)  # torch's random init
    trainer.load_states(states)  # running statistics (means 0, variances 1)
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
    ref, ref_model = torch_losses(cfg)
    if args.losses:
        with open(args.losses, "w") as f:
            json.dump({"ours": ours, "torch": ref}, f)
    np.testing.assert_allclose(ours[:10], ref[:10], rtol=1e-4, atol=1e-5)
    # float32 rounding differs between the two (other kernels, other summation orders) and
    # training amplifies it a little, step by step
    np.testing.assert_allclose(ours, ref, rtol=2e-3, atol=2e-3)
    print(f"losses equal PyTorch's at every step (max difference "
          f"{max(abs(a - b) for a, b in zip(ours, ref)):.1e})")  # fmt: skip
    # the running statistics were carried through every step, as torch's were (after 60 steps
    # the weights' rounding differences have moved them by up to ~5e-3)
    tol = 1e-4 if SMALL else 2e-2
    for ours_s, theirs_s in zip(trainer.export_states().values(), ref_model.buffers()):
        np.testing.assert_allclose(ours_s.numpy(), theirs_s.numpy(), rtol=tol, atol=tol)
    if not SMALL:
        assert np.mean(ours[-10:]) < 0.6 * ours[0], "training did not reduce the loss"
        acc = np.mean(trainer.predict(xs[-1]).numpy().argmax(1) == ys[-1])
        print(f"accuracy on the last batch: {100 * acc:.0f}%")


if __name__ == "__main__":
    main()
