"""DataParallel (minitvm/training/distributed.py) beyond the MLP of test_training_distributed:
the all-reduce of NDArrays through one reused flat buffer per dtype equals numpy's mean of the
ranks' arrays, and a convolutional network with BatchNorm (eval mode: per-sample, so shards
see what the whole batch sees) trains on 2 processes with the losses of 1 process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from minitvm.training import distributed as dd

pytestmark = pytest.mark.skipif(
    not dd.is_available("gloo"), reason="torch.distributed with the gloo backend is unavailable"
)

SHAPES = [(), (3, 4), (7,), (2, 1, 5)]

REDUCE = textwrap.dedent(
    f"""
    import json, os, sys
    import numpy as np
    import minitvm as tvm
    from minitvm.relax.training import Trainer
    from minitvm.training.distributed import DataParallel

    SHAPES = {SHAPES!r}

    def arrays(rank, step):
        rng = np.random.default_rng(10 * rank + step)
        f32 = [tvm.nd.array(rng.standard_normal(s).astype("float32")) for s in SHAPES]
        return [*f32, rng.integers(-50, 50, (4,)), rng.standard_normal((3,))]

    dp = DataParallel(Trainer.__new__(Trainer), broadcast_params=False, timeout_s=60)
    got = []
    for step in range(2):  # the second call reuses the buffers of the first
        got.append([np.array(a).tolist() for a in dp._all_reduce(arrays(dp.rank, step))])
    dp.close()
    with open(sys.argv[1] + f".rank{{dp.rank}}.json", "w") as f:
        json.dump(got, f)
    """
)


def test_all_reduce_of_ndarrays_is_the_mean_of_the_ranks_arrays(tmp_path):
    import minitvm as tvm

    script = tmp_path / "reduce.py"
    script.write_text(REDUCE)
    out = str(tmp_path / "reduce")
    dd.launch([str(script), out], 2, num_threads=1, timeout_s=120, capture=True)
    results = [json.loads((tmp_path / f"reduce.rank{r}.json").read_text()) for r in (0, 1)]
    assert results[0] == results[1]
    for step, got in enumerate(results[0]):
        per_rank = []
        for rank in (0, 1):
            rng = np.random.default_rng(10 * rank + step)
            f32 = [rng.standard_normal(s).astype("float32") for s in SHAPES]
            per_rank.append([*f32, rng.integers(-50, 50, (4,)), rng.standard_normal((3,))])
        for k, (a, b) in enumerate(zip(*per_rank)):
            want = ((a + b) / 2).astype(a.dtype)  # the former formula: sum, divide, cast back
            np.testing.assert_array_equal(np.array(got[k], dtype=a.dtype), want, err_msg=f"{k}")
    assert tvm is not None


WORKER = textwrap.dedent(
    """
    import json, os, sys
    import numpy as np
    import torch
    import minitvm as tvm
    from minitvm import relax
    from minitvm.ir import IRModule
    from minitvm.relax.frontend.torch import from_exported_program
    from minitvm.relax.training import SetupTrainer, Trainer
    from minitvm.relax.training.loss import CrossEntropyLoss
    from minitvm.relax.training.optimizer import SGD
    from minitvm.training.distributed import DataParallel, shard

    GB, STEPS, C = 8, 3, 3
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(2, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(4 * 3 * 3, C),
    ).eval()
    model[1].running_mean.uniform_(-0.5, 0.5)
    model[1].running_var.uniform_(0.5, 2.0)
    B = GB // world
    ep = torch.export.export(model, (torch.zeros(B, 2, 6, 6),))
    main = from_exported_program(ep, keep_params_as_input=True, unwrap_unit_return_tuple=True)
    main = main["main"]
    values = main.attrs["params"]
    backbone = IRModule({"backbone": main.with_attr("global_symbol", "backbone")})
    backbone = backbone.with_attr("param_num", len(values)).with_attr("state_num", 0)
    sinfo = [relax.TensorStructInfo((B, C), "float32"), relax.TensorStructInfo((B,), "int64")]
    mod = SetupTrainer(CrossEntropyLoss(), SGD(0.1), sinfo)(backbone)
    trainer = Trainer(mod, relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu()), tvm.cpu())
    trainer.load_params([v.numpy() for v in values])
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((STEPS, GB, 2, 6, 6)).astype("float32")
    ys = rng.integers(0, C, (STEPS, GB)).astype("int64")
    if world > 1:
        with DataParallel(trainer) as dp:
            losses = [dp.step(shard(xs[k], world, rank), shard(ys[k], world, rank))
                      for k in range(STEPS)]
    else:
        losses = [float(trainer.update([xs[k]], [ys[k]]).numpy()) for k in range(STEPS)]
    params = [p.numpy().tolist() for p in trainer.export_params().values()]
    with open(sys.argv[1] + f".rank{rank}.json", "w") as f:
        json.dump({"losses": losses, "params": params}, f)
    """
)


def test_a_conv_bn_network_on_two_processes_has_the_losses_of_one(tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK")}
    env["MINITVM_NUM_THREADS"] = "1"
    single = str(tmp_path / "single")
    proc = subprocess.run(
        [sys.executable, str(script), single], env=env, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    dd.launch([str(script), str(tmp_path / "dp")], 2, num_threads=1, timeout_s=300, capture=True)
    one = json.loads((tmp_path / "single.rank0.json").read_text())
    two = [json.loads((tmp_path / f"dp.rank{r}.json").read_text()) for r in (0, 1)]
    assert two[0]["losses"] == two[1]["losses"]
    np.testing.assert_allclose(two[0]["losses"], one["losses"], rtol=1e-5, atol=1e-6)
    assert one["losses"][-1] < one["losses"][0]  # it trains
    for a, b, c in zip(one["params"], two[0]["params"], two[1]["params"]):
        assert b == c  # the replicas stay equal
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
