"""Data-parallel TorchTrainer (minitvm/training/distributed.py, collectives.py): the gradients
are averaged by a relax.ccl.allreduce inside the one compiled step, train-mode BatchNorm is
synchronized (global batch statistics, forward and backward), and 2 processes reach the
losses of 1 process on the whole batch; without a process group the all-reduce refuses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax.transform.gradient import Emitter, backprop
from minitvm.training import distributed as dd

torch = pytest.importorskip("torch", reason="TorchTrainer and DataParallel need PyTorch")
needs_gloo = pytest.mark.skipif(
    not dd.is_available("gloo"), reason="torch.distributed with the gloo backend is unavailable"
)

WORKER = textwrap.dedent(
    """
    import json, os, sys
    import numpy as np
    import torch
    from torch import nn
    from minitvm.training import TorchTrainer, TrainError
    from minitvm.training.distributed import DataParallel, DistributedError, shard

    kind, out = sys.argv[1], sys.argv[2]
    GB, STEPS, C = 8, 3, 5
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))

    def model_and_batches():
        torch.manual_seed(1)
        rng = np.random.default_rng(0)
        if kind == "mlp":
            model = nn.Sequential(nn.Linear(12, 16), nn.Tanh(), nn.Linear(16, C))
            xs = rng.standard_normal((STEPS, GB, 12)).astype("float32")
        else:  # train-mode BatchNorm; inputs far from mean 0 (the variance is two-pass)
            model = nn.Sequential(
                nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                nn.Linear(4 * 5 * 5, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, C),
            ).train()
            xs = (rng.standard_normal((STEPS, GB, 3, 5, 5)) * 3 + 4).astype("float32")
        ys = rng.integers(0, C, (STEPS, GB)).astype("int64")
        xs[2], ys[2] = xs[0], ys[0]  # the last step sees the first batch again: a lower loss
        return model, xs, ys

    model, xs, ys = model_and_batches()
    opt = ("sgd", {"lr": 0.1, "momentum": 0.9})
    x0, y0 = shard(xs[0], world, rank), shard(ys[0], world, rank)
    trainer = TorchTrainer(model, (x0, y0), nn.CrossEntropyLoss(), opt, world_size=world)
    result = {}
    if world == 1:
        result["losses"] = [trainer.step(x, y) for x, y in zip(xs, ys)]
        ref, _, _ = model_and_batches()  # torch, one process, the whole batch, plain BatchNorm
        topt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
        result["torch"] = []
        for x, y in zip(xs, ys):
            topt.zero_grad()
            loss = nn.functional.cross_entropy(ref(torch.from_numpy(x)), torch.from_numpy(y))
            loss.backward()
            topt.step()
            result["torch"].append(loss.item())
        result["torch_buffers"] = {k: v.tolist() for k, v in ref.state_dict().items()
                                   if "running" in k}
    else:
        dp = DataParallel(trainer, timeout_s=120)
        result["losses"] = [dp.step(shard(x, world, rank), shard(y, world, rank))
                            for x, y in zip(xs, ys)]
        dp.close()
        try:  # the program's all-reduce refuses once the group is gone
            trainer.step(x0, y0)
        except TrainError as err:
            result["refused"] = str(err)
        try:  # ... even from a VM that looked the function up while the group was open
            trainer.vm["train_step"](x0, y0, trainer.rng_key(), *trainer._params,
                                     *trainer._states, *trainer._buffers)
        except DistributedError as err:
            result["vm_refused"] = str(err)
    result["params"] = [p.tolist() for p in trainer.parameters()]
    result["buffers"] = {k: np.asarray(v).tolist() for k, v in trainer.buffers().items()}
    with open(f"{out}.w{world}.rank{rank}.json", "w") as f:
        json.dump(result, f)
    """
)


def _run(tmp_path, kind: str) -> tuple[dict, list[dict]]:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    out = str(tmp_path / kind)
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK")}
    env["MINITVM_NUM_THREADS"] = env["OMP_NUM_THREADS"] = "1"
    proc = subprocess.run(
        [sys.executable, str(script), kind, out], env=env, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    dd.launch([str(script), kind, out], 2, num_threads=1, timeout_s=300, capture=True)
    one = json.loads((tmp_path / f"{kind}.w1.rank0.json").read_text())
    two = [json.loads((tmp_path / f"{kind}.w2.rank{r}.json").read_text()) for r in (0, 1)]
    return one, two


def _check_replicas_match_one_process(one: dict, two: list[dict]) -> None:
    assert two[0]["losses"] == two[1]["losses"]  # every rank returns the global batch's loss
    np.testing.assert_allclose(two[0]["losses"], one["losses"], rtol=1e-5)
    np.testing.assert_allclose(one["losses"], one["torch"], rtol=1e-5)
    assert one["losses"][-1] < one["losses"][0]  # it trains
    for a, b, c in zip(one["params"], two[0]["params"], two[1]["params"]):
        assert b == c  # the replicas stay equal
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
    for rank in two:
        assert "world_size=2" in rank["refused"]
        assert "no process group is active" in rank["vm_refused"]


@needs_gloo
def test_an_mlp_on_two_processes_has_the_losses_of_one(tmp_path):
    one, two = _run(tmp_path, "mlp")
    _check_replicas_match_one_process(one, two)


@needs_gloo
def test_sync_batch_norm_on_two_processes_has_the_losses_and_statistics_of_one(tmp_path):
    one, two = _run(tmp_path, "bn")
    _check_replicas_match_one_process(one, two)
    assert two[0]["buffers"] == two[1]["buffers"]  # running statistics equal on every rank
    for name, value in one["torch_buffers"].items():
        np.testing.assert_allclose(two[0]["buffers"][name], value, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(one["buffers"][name], value, rtol=1e-5, atol=1e-6)


def _tiny_trainer(world_size: int):
    from minitvm.training import TorchTrainer

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3))
    x, y = torch.randn(2, 4), torch.tensor([0, 2])
    return TorchTrainer(model, (x, y), torch.nn.CrossEntropyLoss(), world_size=world_size), x, y


def test_a_data_parallel_step_refuses_without_a_process_group():
    from minitvm.training import TrainError

    trainer, x, y = _tiny_trainer(2)
    text = trainer.module.script() if hasattr(trainer.module, "script") else str(trainer.module)
    assert "ccl.allreduce" in text
    with pytest.raises(TrainError, match=r"built with world_size=2.*no DataParallel"):
        trainer.step(x, y)
    with pytest.raises(dd.DistributedError, match="no process group is active"):
        dd._program_allreduce(tvm.nd.array(np.ones(2, "float32")), (0,), 1, None)


def test_data_parallel_refuses_a_torch_trainer_of_another_world_size():
    trainer, _, _ = _tiny_trainer(2)
    with pytest.raises(dd.DistributedError, match=r"TorchTrainer\(\.\.\., world_size=1\)"):
        dd.DataParallel(trainer, world_size=1, rank=0)


def test_allreduce_gradient_is_the_allreduce_of_the_incoming_gradient():
    x = relax.Var("x", relax.TensorStructInfo((3,), "float32"))
    w = relax.Var("w", relax.TensorStructInfo((3,), "float32"))
    for op_type in ("sum", "avg"):
        bb = relax.BlockBuilder()
        with bb.function("main", [x, w]):
            with bb.dataflow():
                em = Emitter(bb)
                y = em.emit(relax.op.ccl.allreduce(relax.op.multiply(x, w), op_type))
                loss = em.emit(relax.op.sum(relax.op.multiply(y, w)))
                (gx,) = backprop(em, loss, [x])
                out = bb.emit_output(gx)
            bb.emit_func_output(out)
        calls = [
            b.value
            for blk in bb.get()["main"].body.blocks
            for b in blk.bindings
            if isinstance(b.value, relax.Call)
            and getattr(b.value.op, "name", "") == "relax.ccl.allreduce"
        ]
        assert len(calls) == 2, calls  # the forward one and its adjoint
        assert all(c.attrs["op_type"] == op_type for c in calls)


def test_allreduce_max_has_no_gradient():
    x = relax.Var("x", relax.TensorStructInfo((3,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            em = Emitter(bb)
            loss = em.emit(relax.op.sum(relax.op.ccl.allreduce(x, "max")))
            with pytest.raises(tvm.error.MiniTVMError, match="op_type 'max'.*no gradient rule"):
                backprop(em, loss, [x])
            bb.emit_output(loss)
        bb.emit_func_output(loss)


def test_allreduce_of_a_tuple_reduces_each_field():
    a = relax.Var("a", relax.TensorStructInfo((3,), "float32"))
    b = relax.Var("b", relax.TensorStructInfo((2, 2), "int64"))
    sinfo = relax.BlockBuilder().normalize(relax.op.ccl.allreduce([a, b], "avg")).struct_info
    assert isinstance(sinfo, relax.TupleStructInfo)
    assert [str(f.dtype) for f in sinfo.fields] == ["float32", "int64"]
    with pytest.raises(tvm.error.MiniTVMError, match="not tensors"):
        relax.BlockBuilder().normalize(relax.op.ccl.allreduce(relax.Tuple(()), "sum"))
