"""PyTorch references for training checks (torch is imported on first use): a trainable
torchvision-layout ResNet-18 and the eager training loop the comparisons run beside minitvm."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any


def resnet18(classes: int = 10, seed: int = 0) -> Any:
    """torchvision's ResNet-18 layout: 7x7 stem, max pool, [2, 2, 2, 2] basic blocks of
    64..512 channels, bias-free convolutions each followed by a BatchNorm; weights drawn with
    `torch.manual_seed(seed)`, so two calls give the same network."""
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
                )

        def forward(self, x: Any) -> Any:
            skip = x if self.down is None else self.down(x)
            out = torch.relu(self.bn1(self.conv1(x)))
            return torch.relu(self.bn2(self.conv2(out)) + skip)

    torch.manual_seed(seed)
    layers, cin = [], 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
        cin = cout
    return nn.Sequential(
        nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
        nn.MaxPool2d(3, 2, 1), *layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(512, classes),
    )  # fmt: skip


def train_steps(
    model: Any, batches: Iterable, make_opt: Callable, loss_fn: Callable | None = None
) -> list[float]:
    """Eager PyTorch training: one optimizer step per (x, y) batch; the losses, in order.
    `make_opt(params)` builds the optimizer; `loss_fn` defaults to cross-entropy."""
    import torch

    loss_fn = loss_fn or torch.nn.CrossEntropyLoss()
    opt = make_opt(model.parameters())
    losses = []
    for x, y in batches:
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


__all__ = ["resnet18", "train_steps"]
