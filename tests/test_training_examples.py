"""examples/train_resnet_torch.py and train_transformer_torch.py at their small size: the losses
relax.training gives equal those of an independent PyTorch loop written here.

Marked slow: tests/test_examples.py already runs both examples at the same size in the default
suite (each asserts its losses against PyTorch itself); this test is the outside check of those
asserts and costs about 15 s of CPU per example.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _torch_reference(module, make_optimizer):
    cfg = module.SIZES["small"]
    model = module.make_model(cfg)
    opt = make_optimizer(model.parameters())
    losses = []
    for x, y in zip(*module.make_data(cfg)):
        loss = torch.nn.functional.cross_entropy(model(torch.from_numpy(x)), torch.from_numpy(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


CASES = {
    "train_resnet_torch": lambda m: lambda ps: torch.optim.SGD(ps, lr=m.LR, momentum=m.MOMENTUM),
    "train_transformer_torch": lambda m: lambda ps: torch.optim.Adam(ps, lr=m.LR),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_example_losses_equal_pytorch(name, tmp_path):
    out = tmp_path / "losses.json"
    env = dict(os.environ, MINITVM_EXAMPLE_SMALL="1", MINITVM_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py"), "--losses", str(out)],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    ours = json.loads(out.read_text())["ours"]
    module = _load(name)
    ref = _torch_reference(module, CASES[name](module))
    assert len(ours) == len(ref) >= 3
    np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-5)
