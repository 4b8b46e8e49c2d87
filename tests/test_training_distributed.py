"""Data-parallel training (minitvm/training/distributed.py): 2 processes x 1 thread over gloo
give the losses of one process on the whole batch, and both equal PyTorch's."""

from __future__ import annotations

import json
import sys
import textwrap

import numpy as np
import pytest

from minitvm.error import TVMError
from minitvm.training import distributed as dd

needs_gloo = pytest.mark.skipif(
    not dd.is_available("gloo"), reason="torch.distributed with the gloo backend is unavailable"
)

GB, D, H, C, STEPS, LR = 16, 8, 16, 4, 4, 0.05

# One script for both runs: with WORLD_SIZE in the environment it trains through DataParallel
# on its shard, else with Trainer.update on the whole batch.
WORKER = textwrap.dedent(
    f"""
    import json, os, sys
    import numpy as np
    import minitvm as tvm
    from minitvm import relax
    from minitvm.relax.training import SetupTrainer, Trainer
    from minitvm.relax.training.loss import CrossEntropyLoss
    from minitvm.relax.training.optimizer import Adam
    from minitvm.training.distributed import DataParallel, shard

    GB, D, H, C, STEPS, LR = {GB}, {D}, {H}, {C}, {STEPS}, {LR}
    world = int(os.environ.get("WORLD_SIZE", "1"))
    B = GB // world
    x = relax.Var("x", relax.TensorStructInfo((B, D), "float32"))
    shapes = (("w0", (D, H)), ("b0", (H,)), ("w1", (H, C)), ("b1", (C,)))
    ps = [relax.Var(n, relax.TensorStructInfo(s, "float32")) for n, s in shapes]
    R = relax.op
    bb = relax.BlockBuilder()
    with bb.function("backbone", [x, *ps]):
        with bb.dataflow():
            h = bb.emit(R.nn.relu(R.add(R.matmul(x, ps[0]), ps[1])))
            out = bb.emit_output(R.add(R.matmul(h, ps[2]), ps[3]))
        bb.emit_func_output(out)
    backbone = bb.get().with_attr("param_num", 4).with_attr("state_num", 0)
    sinfo = [relax.TensorStructInfo((B, C), "float32"), relax.TensorStructInfo((B,), "int64")]
    mod = SetupTrainer(CrossEntropyLoss(), Adam(LR), sinfo)(backbone)
    trainer = Trainer(mod, relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu()), tvm.cpu())
    rng = np.random.default_rng(0)
    init = [(0.5 * rng.standard_normal(s)).astype("float32") for _, s in shapes]
    xs = rng.standard_normal((STEPS, GB, D)).astype("float32")
    ys = rng.integers(0, C, (STEPS, GB)).astype("int64")
    rank = int(os.environ.get("RANK", "0"))
    # rank 1 starts from other weights: DataParallel must broadcast rank 0's
    trainer.load_params(init if rank == 0 else [w + 1 for w in init])
    losses = []
    if "WORLD_SIZE" in os.environ:
        with DataParallel(trainer) as dp:
            for k in range(STEPS):
                losses.append(dp.step(shard(xs[k], world, rank), shard(ys[k], world, rank)))
    else:
        losses = [float(trainer.update([xs[k]], [ys[k]]).numpy()) for k in range(STEPS)]
    params = {{k: v.numpy().tolist() for k, v in trainer.export_params().items()}}
    with open(sys.argv[1] + f".rank{{rank}}.json", "w") as f:
        json.dump({{"losses": losses, "params": params}}, f)
    """
)


def _torch_losses() -> tuple[list[float], dict[str, np.ndarray]]:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    shapes = (("w0", (D, H)), ("b0", (H,)), ("w1", (H, C)), ("b1", (C,)))
    ws = {n: torch.tensor((0.5 * rng.standard_normal(s)).astype("float32")) for n, s in shapes}
    for w in ws.values():
        w.requires_grad_(True)
    xs = rng.standard_normal((STEPS, GB, D)).astype("float32")
    ys = rng.integers(0, C, (STEPS, GB)).astype("int64")
    opt = torch.optim.Adam(list(ws.values()), lr=LR)
    losses = []
    for k in range(STEPS):
        h = torch.relu(torch.tensor(xs[k]) @ ws["w0"] + ws["b0"])
        loss = torch.nn.functional.cross_entropy(h @ ws["w1"] + ws["b1"], torch.tensor(ys[k]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses, {n: w.detach().numpy() for n, w in ws.items()}


def _run(tmp_path, name, nproc):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    out = str(tmp_path / name)
    if nproc:
        dd.launch([str(script), out], nproc, num_threads=1, timeout_s=240, capture=True)
    else:  # one process, no DataParallel
        import os
        import subprocess

        env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK")}
        env["MINITVM_NUM_THREADS"] = "1"
        proc = subprocess.run(
            [sys.executable, str(script), out], env=env, capture_output=True, text=True,
            timeout=240, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = range(max(nproc, 1))
    return [json.loads((tmp_path / f"{name}.rank{r}.json").read_text()) for r in ranks]


@needs_gloo
def test_two_processes_match_one_process_and_torch(tmp_path):
    (single,) = _run(tmp_path, "single", 0)
    dp = _run(tmp_path, "dp", 2)
    ref_losses, ref_params = _torch_losses()
    np.testing.assert_allclose(single["losses"], ref_losses, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dp[0]["losses"], single["losses"], rtol=1e-5, atol=1e-6)
    assert dp[0]["losses"] == dp[1]["losses"]  # every rank returns the global loss
    for name, ref in ref_params.items():
        np.testing.assert_allclose(dp[0]["params"][name], ref, rtol=1e-4, atol=1e-5)
        assert dp[0]["params"][name] == dp[1]["params"][name], name  # replicas stay equal


@needs_gloo
def test_launch_names_the_failing_rank_and_stops_the_others(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text(
        "import os, sys, time\n"
        "if os.environ['RANK'] == '1':\n    print('rank one fails'); sys.exit(3)\n"
        "time.sleep(60)\n"
    )
    with pytest.raises(dd.DistributedError, match=r"rank 1 exited with code 3[\s\S]*rank one"):
        dd.launch([str(script)], 2, timeout_s=30, capture=True)


def test_launch_times_out(tmp_path):
    script = tmp_path / "hang.py"
    script.write_text("import time\ntime.sleep(60)\n")
    with pytest.raises(dd.DistributedError, match="did not finish within 1"):
        dd.launch([str(script)], 1, timeout_s=1, capture=True)


def test_launch_sets_the_torchrun_environment(tmp_path):
    script = tmp_path / "env.py"
    script.write_text(
        "import os\nprint(*(os.environ[k] for k in ('RANK', 'LOCAL_RANK', 'WORLD_SIZE', "
        "'MASTER_ADDR', 'MINITVM_NUM_THREADS')))\n"
    )
    outs = dd.launch([str(script)], 2, nnodes=2, node_rank=1, master_port=29999, capture=True,
                     timeout_s=60)  # fmt: skip
    assert [o.split() for o in outs] == [
        ["2", "0", "4", "127.0.0.1", "1"],
        ["3", "1", "4", "127.0.0.1", "1"],
    ]


def test_bad_arguments_are_refused(monkeypatch):
    with pytest.raises(dd.DistributedError, match="needs a relax.training.Trainer"):
        dd.DataParallel(object(), world_size=2, rank=0)
    with pytest.raises(dd.DistributedError, match="does not split into 2 equal shards"):
        dd.shard(np.zeros((5, 3)), 2, 0)
    with pytest.raises(dd.DistributedError, match="rank 2 is not in 0..1"):
        dd.shard(np.zeros((4, 3)), 2, 2)
    with pytest.raises(dd.DistributedError, match="pass master_port"):
        dd.launch(["x.py"], 1, nnodes=2)
    assert issubclass(dd.DistributedError, TVMError)
    np.testing.assert_array_equal(dd.shard(np.arange(8), 2, 1), [4, 5, 6, 7])


@needs_gloo
def test_missing_environment_is_named(monkeypatch):
    from minitvm.relax.training import Trainer

    trainer = Trainer.__new__(Trainer)  # only the type is checked before the environment
    for var in ("WORLD_SIZE", "RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(dd.DistributedError, match="WORLD_SIZE is not set"):
        dd.DataParallel(trainer)
    with pytest.raises(dd.DistributedError, match="MASTER_ADDR and MASTER_PORT not set"):
        dd.DataParallel(trainer, world_size=2, rank=0)


@needs_gloo
def test_a_dead_peer_is_a_distributed_error_not_a_hang(tmp_path):
    script = tmp_path / "dead_peer.py"
    script.write_text(
        textwrap.dedent(
            """
            import os, sys
            import numpy as np
            from minitvm.relax.training import Trainer
            from minitvm.training.distributed import DataParallel, DistributedError

            # only the type is checked when broadcast_params=False
            dp = DataParallel(Trainer.__new__(Trainer), broadcast_params=False, timeout_s=10)
            if dp.rank == 1:
                os._exit(0)  # leaves without a word
            try:
                dp._all_reduce([np.ones(3, "float32")])
            except DistributedError as err:
                print("caught:", err)
            else:
                sys.exit(5)
            try:  # the broken group was torn down: a second call says so
                dp._all_reduce([np.ones(3, "float32")])
            except DistributedError as err:
                print("again:", err)
                sys.exit(0)
            sys.exit(5)
            """
        )
    )
    outs = dd.launch([str(script)], 2, timeout_s=90, capture=True)
    assert "caught: DataParallel: all_reduce failed on rank 0" in outs[0], outs[0][-2000:]
    assert "again: DataParallel: rank 0 has no process group" in outs[0], outs[0][-2000:]


def test_command_line_launcher(tmp_path, capsys):
    ok, bad = tmp_path / "ok.py", tmp_path / "bad.py"
    ok.write_text("import os, sys\nsys.exit(0 if os.environ['WORLD_SIZE'] == '2' else 4)\n")
    bad.write_text("import os, sys\nsys.exit(7 if os.environ['RANK'] == '0' else 0)\n")
    assert dd.main(["--nproc-per-node", "2", "--timeout", "60", str(ok)]) == 0
    assert dd.main(["--nproc-per-node", "2", "--timeout", "60", str(bad)]) == 1
    assert "rank 0 exited with code 7" in capsys.readouterr().err
