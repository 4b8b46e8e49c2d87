"""Collectives of a data-parallel TorchTrainer step (minitvm/training/collectives.py): one
all-reduce per synchronized BatchNorm forward, one backward, one for all the gradients; and
the synchronized statistics stay accurate on inputs far from zero (mean ~100, std ~1)."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

from minitvm.training import distributed as dd

torch = pytest.importorskip("torch", reason="TorchTrainer and DataParallel need PyTorch")
needs_gloo = pytest.mark.skipif(
    not dd.is_available("gloo"), reason="torch.distributed with the gloo backend is unavailable"
)

# a 1x1 conv of weight ~I and inputs of mean 100, std 1: BatchNorm sees mean ~100, std ~1
MODEL = textwrap.dedent(
    """
    import numpy as np
    import torch
    from torch import nn

    GB, C = 8, 5

    def model_and_batch(dtype=torch.float32):
        torch.manual_seed(0)
        model = nn.Sequential(
            nn.Conv2d(3, 3, 1), nn.BatchNorm2d(3), nn.ReLU(), nn.Flatten(),
            nn.Linear(3 * 4 * 4, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, C),
        ).train()
        with torch.no_grad():
            model[0].weight.copy_(torch.eye(3).reshape(3, 3, 1, 1)
                                  + 0.01 * torch.randn(3, 3, 1, 1))
            model[1].weight.uniform_(0.5, 1.5)
            model[1].bias.uniform_(-0.5, 0.5)
        rng = np.random.default_rng(0)
        x = (rng.standard_normal((GB, 3, 4, 4)) + 100).astype("float32")
        y = rng.integers(0, C, GB).astype("int64")
        return model.to(dtype), x, y
    """
)

WORKER = MODEL + textwrap.dedent(
    """
    import json, os, sys
    from minitvm.training import TorchTrainer
    from minitvm.training.distributed import DataParallel, shard

    world, rank = int(os.environ["WORLD_SIZE"]), int(os.environ["RANK"])
    model, x, y = model_and_batch()
    before = [p.detach().numpy().copy() for p in model.parameters()]
    xs, ys = shard(x, world, rank), shard(y, world, rank)
    trainer = TorchTrainer(model, (xs, ys), nn.CrossEntropyLoss(), ("sgd", {"lr": 1.0}),
                           world_size=world)
    dp = DataParallel(trainer, timeout_s=120)
    loss = dp.step(xs, ys)
    dp.close()
    grads = [(b - np.asarray(p)).tolist() for b, p in zip(before, trainer.parameters())]
    buffers = {k: np.asarray(v).tolist() for k, v in trainer.buffers().items()}
    with open(f"{sys.argv[1]}.rank{rank}.json", "w") as f:
        json.dump({"loss": loss, "grads": grads, "buffers": buffers}, f)
    """
)


def _torch_step(dtype) -> tuple[float, list[np.ndarray], dict]:
    """Loss, gradients and running statistics of one process on the global batch (torch)."""
    scope: dict = {}
    exec(MODEL, scope)  # noqa: S102 - the model shared with the worker script
    model, x, y = scope["model_and_batch"](dtype)
    loss = torch.nn.functional.cross_entropy(model(torch.from_numpy(x).to(dtype)),
                                             torch.from_numpy(y))  # fmt: skip
    loss.backward()
    grads = [p.grad.double().numpy() for p in model.parameters()]
    stats = {k: v.double().numpy() for k, v in model.state_dict().items() if "running" in k}
    return loss.item(), grads, stats


@needs_gloo
def test_sync_batch_norm_gradients_match_a_global_batch_norm_far_from_zero(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    out = str(tmp_path / "bn")
    dd.launch([str(script), out], 2, num_threads=1, timeout_s=300, capture=True)
    ranks = [json.loads((tmp_path / f"bn.rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0] == ranks[1]  # the replicas agree bit for bit
    ref_loss, ref_grads, ref_stats = _torch_step(torch.float64)
    _, f32_grads, _ = _torch_step(torch.float32)
    assert abs(ranks[0]["loss"] - ref_loss) <= 1e-5 * abs(ref_loss)
    for k, (got, ref, f32) in enumerate(zip(ranks[0]["grads"], ref_grads, f32_grads)):
        err, f32_err = np.abs(np.array(got) - ref).max(), np.abs(f32 - ref).max()
        # no worse than torch's own float32 BatchNorm on one process (plus SGD's rounding)
        assert err <= 3 * f32_err + 1e-5 * np.abs(ref).max() + 1e-6, (k, err, f32_err)
    for name, value in ref_stats.items():
        np.testing.assert_allclose(ranks[0]["buffers"][name], value, rtol=1e-5, atol=1e-6)


def _allreduce_count(trainer) -> int:
    return trainer.module.script().count("ccl.allreduce(")


def test_each_sync_batch_norm_all_reduces_once_forward_and_once_backward():
    from minitvm.training import TorchTrainer

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
        torch.nn.Conv2d(4, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Flatten(),
    ).train()  # fmt: skip
    x, y = torch.randn(2, 3, 6, 6), torch.randn(2, 16)
    trainer = TorchTrainer(model, (x, y), torch.nn.MSELoss(), world_size=2)
    # 2 BatchNorms x (1 forward + 1 backward) + 1 for the loss and all the gradients
    assert _allreduce_count(trainer) == 5
