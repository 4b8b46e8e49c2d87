"""relax.training (TVM's training API) against PyTorch: losses and their gradients, optimizers
after k steps, SetupTrainer + Trainer on a small MLP, checkpoints that resume bit for bit."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import TVMError
from minitvm.relax.training import AppendLoss, SetupTrainer, Trainer
from minitvm.relax.training.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from minitvm.relax.training.loss import (
    CategoricalCrossEntropyLoss,
    CrossEntropyLoss,
    L1Loss,
    MSELoss,
)
from minitvm.relax.training.optimizer import SGD, Adam, MomentumSGD

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _sinfo(shape, dtype="float32"):
    return relax.TensorStructInfo(shape, dtype)


def _loss_and_grad(func, args):
    """(loss, d loss / d predictions) of a loss Function, by the reference evaluator."""
    mod = tvm.IRModule({"main": func})
    mod = relax.transform.Gradient("main", require_grads=[func.params[0]])(mod)
    out, grads = relax.eval_ref.evaluate(mod, *args, func_name="main_adjoint")
    return np.asarray(out), np.asarray(grads[0])


def _torch_loss_and_grad(fn, pred, *rest):
    p = torch.tensor(pred, requires_grad=True)
    loss = fn(p, *rest)
    (loss if loss.dim() == 0 else loss.sum()).backward()
    return loss.detach().numpy(), p.grad.numpy()


CE_CASES = [
    ("mean", -100, False),
    ("sum", -100, True),
    ("none", 2, False),
    ("mean", 1, True),
]


@pytest.mark.parametrize("reduction, ignore_index, weighted", CE_CASES)
def test_cross_entropy_loss_and_grad_match_torch(reduction, ignore_index, weighted):
    rng = np.random.default_rng(0)
    pred = rng.standard_normal((6, 4)).astype("float32")
    target = np.array([0, 1, 2, 3, 1, 2], "int64")
    weight = rng.uniform(0.5, 2.0, 4).astype("float32")
    loss = CrossEntropyLoss(reduction=reduction, ignore_index=ignore_index)
    sinfos = [_sinfo((6, 4)), _sinfo((6,), "int64")] + ([_sinfo((4,))] if weighted else [])
    func = loss(*sinfos)
    if reduction == "none":  # Gradient needs a scalar: sum the per-sample losses
        bb = relax.BlockBuilder()
        params = [relax.Var(p.name_hint, p.struct_info) for p in func.params]
        with bb.function("main", params):
            with bb.dataflow():
                per = bb.emit(relax.op.nn.nll_loss(
                    bb.emit(relax.op.nn.log_softmax(params[0])), params[1], None, "none",
                    ignore_index))  # fmt: skip
                out = bb.emit_output(relax.op.sum(per))
            bb.emit_func_output(out)
        want_items = F.cross_entropy(
            torch.tensor(pred), torch.tensor(target), reduction="none", ignore_index=ignore_index
        ).numpy()
        got_items = relax.eval_ref.evaluate(func, pred, target)
        np.testing.assert_allclose(got_items, want_items, rtol=1e-5, atol=1e-6)
        func = bb.get()["main"]
    args = [pred, target] + ([weight] if weighted else [])
    got_loss, got_grad = _loss_and_grad(func, args)
    w = torch.tensor(weight) if weighted else None
    want_loss, want_grad = _torch_loss_and_grad(
        lambda p: F.cross_entropy(
            p, torch.tensor(target), weight=w, reduction=reduction, ignore_index=ignore_index
        ),
        pred,
    )
    if reduction == "none":
        want_loss = want_loss.sum()
    np.testing.assert_allclose(got_loss, want_loss, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls, torch_fn", [(MSELoss, F.mse_loss), (L1Loss, F.l1_loss)])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_mse_and_l1_match_torch(cls, torch_fn, reduction):
    rng = np.random.default_rng(1)
    pred, target = (rng.standard_normal((3, 5)).astype("float32") for _ in range(2))
    func = cls(reduction=reduction)(_sinfo((3, 5)), _sinfo((3, 5)))
    assert func.attrs["global_symbol"] == ("mse_loss" if cls is MSELoss else "l1_loss")
    got_loss, got_grad = _loss_and_grad(func, [pred, target])
    want_loss, want_grad = _torch_loss_and_grad(
        lambda p: torch_fn(p, torch.tensor(target), reduction=reduction), pred
    )
    np.testing.assert_allclose(got_loss, want_loss, rtol=1e-5)
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-5, atol=1e-7)


def test_categorical_cross_entropy_follows_tvm_semantics():
    """One-hot targets: mean of -log_softmax * onehot over all N*C elements (TVM's definition);
    with ignore_index >= 0 it is torch's cross_entropy of the arg-max class."""
    rng = np.random.default_rng(2)
    pred = rng.standard_normal((4, 3)).astype("float32")
    labels = np.array([0, 2, 1, 2])
    onehot = np.eye(3, dtype="int64")[labels]
    logp = F.log_softmax(torch.tensor(pred), dim=-1).numpy()
    func = CategoricalCrossEntropyLoss()(_sinfo((4, 3)), _sinfo((4, 3), "int64"))
    got = relax.eval_ref.evaluate(func, pred, onehot)
    np.testing.assert_allclose(got, np.mean(-logp * onehot), rtol=1e-6)
    func = CategoricalCrossEntropyLoss(reduction="sum", ignore_index=2)(
        _sinfo((4, 3)), _sinfo((4, 3), "int64")
    )
    want = F.cross_entropy(
        torch.tensor(pred), torch.tensor(labels), reduction="sum", ignore_index=2
    )
    np.testing.assert_allclose(relax.eval_ref.evaluate(func, pred, onehot), want.numpy(), rtol=1e-6)
    with pytest.raises(TypeError, match="one-hot int"):
        CategoricalCrossEntropyLoss()(_sinfo((4, 3)), _sinfo((4, 3)))
    with pytest.raises(ValueError, match="reduction 'avg'"):
        MSELoss(reduction="avg")


def test_compiled_nll_loss_matches_torch_and_refuses_bad_targets():
    """The compiled kernel (not only the numpy reference) on the VM; a target outside [0, C)
    that is not ignore_index is an error of the compiled code, in a subprocess (no crash)."""
    rng = np.random.default_rng(3)
    pred = rng.standard_normal((5, 4)).astype("float32")
    target = np.array([3, 0, -100, 2, 1], "int64")
    func = CrossEntropyLoss()(_sinfo((5, 4)), _sinfo((5,), "int64"))
    mod = tvm.IRModule({"main": func.with_attr("global_symbol", "main")})
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    want = F.cross_entropy(torch.tensor(pred), torch.tensor(target))
    np.testing.assert_allclose(vm["main"](pred, target).numpy(), want.numpy(), rtol=1e-5)
    code = (
        "import numpy as np, minitvm as tvm\n"
        "from minitvm import relax\n"
        "from minitvm.relax.training.loss import CrossEntropyLoss\n"
        "f = CrossEntropyLoss()(relax.TensorStructInfo((2, 4), 'float32'),"
        " relax.TensorStructInfo((2,), 'int64'))\n"
        "mod = tvm.IRModule({'main': f.with_attr('global_symbol', 'main')})\n"
        "vm = relax.VirtualMachine(relax.build(mod, 'llvm'), tvm.cpu())\n"
        "try:\n"
        "    vm['main'](np.zeros((2, 4), 'float32'), np.array([1, 7]))\n"
        "except tvm.TVMError as e:\n"
        "    print('refused', type(e).__name__)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("refused"), proc.stdout


# ----------------------------------------------------------------------------- optimizers
def _torch_optimizer(name, params):
    return {
        "sgd": lambda: torch.optim.SGD(params, lr=0.1, weight_decay=0.01),
        "momentum": lambda: torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=0.02),
        "nesterov": lambda: torch.optim.SGD(
            params, lr=0.05, momentum=0.8, weight_decay=0.01, nesterov=True
        ),
        "adam": lambda: torch.optim.Adam(
            params, lr=0.01, betas=(0.8, 0.95), eps=1e-7, weight_decay=0.05
        ),
    }[name]()


OURS = {
    "sgd": lambda: SGD(0.1, weight_decay=0.01),
    "momentum": lambda: MomentumSGD(0.05, 0.9, weight_decay=0.02),
    "nesterov": lambda: MomentumSGD(0.05, 0.8, weight_decay=0.01, nesterov=True),
    "adam": lambda: Adam(0.01, (0.8, 0.95), 1e-7, 0.05),
}


@pytest.mark.parametrize("name", list(OURS))
def test_optimizer_matches_torch_after_k_steps(name):
    rng = np.random.default_rng(4)
    shapes = [(3, 4), (4,)]
    init = [rng.standard_normal(s).astype("float32") for s in shapes]
    grads = [[rng.standard_normal(s).astype("float32") for s in shapes] for _ in range(6)]
    xs = [relax.Var(f"p{i}", _sinfo(s)) for i, s in enumerate(shapes)]
    opt = OURS[name]().init(xs)
    assert int(opt.state[0].numpy()) == 0 and opt.dtype == "float32"
    func = opt.get_function()
    assert func.attrs["global_symbol"] == opt.name
    mod = tvm.IRModule({"main": func.with_attr("global_symbol", "main")})
    step = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())["main"]
    params, state = [tvm.nd.array(p) for p in init], list(opt.state)
    tparams = [torch.tensor(p, requires_grad=True) for p in init]
    topt = _torch_optimizer(name, tparams)
    for gs in grads:
        params, state = step(tuple(params), tuple(tvm.nd.array(g) for g in gs), tuple(state))
        for tp, g in zip(tparams, gs):
            tp.grad = torch.tensor(g)
        topt.step()
    assert int(state[0].numpy()) == len(grads)
    for got, want in zip(params, tparams):
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-7)


def test_momentum_dampening_follows_tvm_from_the_first_step():
    """TVM damps every step (v1 = (1 - d) g); torch skips dampening on its first step."""
    x = relax.Var("x", _sinfo((4,)))
    opt = MomentumSGD(0.1, 0.9, dampening=0.3, weight_decay=0.05, nesterov=True).init([x])
    rng = np.random.default_rng(7)
    p = rng.standard_normal(4).astype("float32")
    state = [np.asarray(s.numpy()) for s in opt.state]
    want_p, v = p.copy(), np.zeros(4)
    for _ in range(3):
        g = rng.standard_normal(4).astype("float32")
        (p,), state = relax.eval_ref.evaluate(opt.get_function(), (p,), (g,), tuple(state))
        g = g + 0.05 * want_p
        v = 0.9 * v + 0.7 * g
        want_p = want_p - 0.1 * (g + 0.9 * v)
    np.testing.assert_allclose(p, want_p, rtol=1e-5)
    assert int(state[0]) == 3


def test_optimizer_errors_name_the_parameter():
    x = relax.Var("x", _sinfo((3,)))
    with pytest.raises(ValueError, match="'x' appears twice"):
        SGD(0.1).init([x, x])
    with pytest.raises(ValueError, match="'k' .*float tensors only"):
        SGD(0.1).init([relax.Var("k", _sinfo((3,), "int64"))])
    with pytest.raises(ValueError, match="share a dtype"):
        Adam(0.1).init([x, relax.Var("y", _sinfo((3,), "float64"))])
    with pytest.raises(TVMError, match=r"Please call init\(\)"):
        MomentumSGD(0.1, 0.9).get_function()


# ----------------------------------------------------------------------------- SetupTrainer
def _backbone():
    """backbone(x, w0, b0, w1, b1) -> logits of a 6-8-3 MLP (param_num 4, state_num 0)."""
    x = relax.Var("x", _sinfo((5, 6)))
    ws = [relax.Var(n, _sinfo(s)) for n, s in
          (("w0", (6, 8)), ("b0", (8,)), ("w1", (8, 3)), ("b1", (3,)))]  # fmt: skip
    R = relax.op
    bb = relax.BlockBuilder()
    with bb.function("backbone", [x, *ws]):
        with bb.dataflow():
            h = bb.emit(R.nn.relu(bb.emit(R.add(bb.emit(R.matmul(x, ws[0])), ws[1]))))
            out = bb.emit_output(bb.emit(R.add(bb.emit(R.matmul(h, ws[2])), ws[3])))
        bb.emit_func_output(out)
    return bb.get().with_attr("param_num", 4).with_attr("state_num", 0)


def _trainer(opt=None):
    setup = SetupTrainer(
        CrossEntropyLoss(), opt or MomentumSGD(0.1, 0.9), [_sinfo((5, 3)), _sinfo((5,), "int64")]
    )
    mod = setup(_backbone())
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    return mod, vm


@pytest.fixture(scope="module")
def built():
    return _trainer()


def _data(seed=5):
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype("float32") * 0.5 for s in ((6, 8), (8,), (8, 3), (3,))]
    batches = [
        (rng.standard_normal((5, 6)).astype("float32"), rng.integers(0, 3, 5).astype("int64"))
        for _ in range(6)
    ]
    return init, batches


def test_trainer_three_class_mlp_matches_torch(built):
    mod, vm = built
    assert set(mod.attrs) >= {"input_num", "param_num", "state_num", "optim_state"}
    assert {"backbone", "backbone_loss", "backbone_loss_adjoint", "optimizer"} <= {
        gv.name_hint for gv in mod.get_global_vars()
    }
    init, batches = _data()
    trainer = Trainer(mod, vm, tvm.cpu())
    trainer.load_params({n: p for n, p in zip(["w0", "b0", "w1", "b1"], init)})
    tp = [torch.tensor(p, requires_grad=True) for p in init]
    topt = torch.optim.SGD(tp, lr=0.1, momentum=0.9)
    for x, y in batches:
        loss = trainer.update([x], [y])
        topt.zero_grad()
        h = torch.relu(torch.tensor(x) @ tp[0] + tp[1])
        tloss = F.cross_entropy(h @ tp[2] + tp[3], torch.tensor(y))
        tloss.backward()
        topt.step()
        np.testing.assert_allclose(loss.numpy(), tloss.detach().numpy(), rtol=1e-5)
    exported = trainer.export_params()
    for name, want in zip(["w0", "b0", "w1", "b1"], tp):
        np.testing.assert_allclose(
            exported[name].numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6
        )
    logits = trainer.predict(batches[0][0]).numpy()
    assert logits.shape == (5, 3)
    report = trainer.profile_adjoint([batches[0][0]], [batches[0][1]])
    assert report is not None
    with pytest.raises(ValueError, match="2 inputs given, the backbone takes 1"):
        trainer.update([batches[0][0]] * 2, [batches[0][1]])
    with pytest.raises(ValueError, match="no parameter named"):
        trainer.load_params({"w9": init[0]})


@pytest.mark.parametrize("suffix", [".npz", ".safetensors"])
def test_trainer_checkpoint_resumes_bit_identical(built, tmp_path, suffix):
    if suffix == ".safetensors":
        pytest.importorskip("safetensors")
    mod, vm = built
    init, batches = _data(seed=6)
    first = Trainer(mod, vm, tvm.cpu())
    first.load_params(init)
    for x, y in batches[:3]:
        first.update([x], [y])
    path = first.save_checkpoint(tmp_path / f"ckpt{suffix}")
    straight = [first.update([x], [y]).numpy() for x, y in batches[3:]]
    resumed = Trainer(mod, vm, tvm.cpu())
    resumed.load_checkpoint(path)
    again = [resumed.update([x], [y]).numpy() for x, y in batches[3:]]
    assert [a.tobytes() for a in again] == [s.tobytes() for s in straight]
    for k, v in first.export_params().items():
        assert resumed.export_params()[k].numpy().tobytes() == v.numpy().tobytes()


def test_checkpoint_refuses_pickles_foreign_files_and_other_models(tmp_path, built):
    pickled = tmp_path / "evil.npz"
    np.savez(pickled, x=np.array([object()], dtype=object))
    with pytest.raises(CheckpointError, match="object \\(pickled\\) arrays are refused"):
        load_checkpoint(pickled)
    plain = tmp_path / "plain.npz"
    np.savez(plain, x=np.zeros(3))
    with pytest.raises(CheckpointError, match="no minitvm metadata"):
        load_checkpoint(plain)
    with pytest.raises(CheckpointError, match="unknown file kind '.pt'"):
        save_checkpoint(tmp_path / "model.pt", {"x": np.zeros(2)}, {})
    other = tmp_path / "other.npz"
    save_checkpoint(
        other,
        {"param.w0": np.zeros((2, 2), "float32")},
        {"kind": "minitvm-relax-trainer", "version": 1},
    )
    mod, vm = built
    with pytest.raises(CheckpointError, match="does not fit this model"):
        Trainer(mod, vm, tvm.cpu()).load_checkpoint(other)


def test_append_loss_and_setup_trainer_errors():
    mod = _backbone()
    wrong = MSELoss()(_sinfo((5, 4)), _sinfo((5, 4)))
    with pytest.raises(TVMError, match="backbone output 0 is .* but loss parameter"):
        AppendLoss("backbone", wrong)(mod)
    with pytest.raises(TVMError, match="no function 'nope'"):
        AppendLoss("nope", wrong)(mod)
    loss = CrossEntropyLoss()
    args = [_sinfo((5, 3)), _sinfo((5,), "int64")]
    with pytest.raises(ValueError, match="integer attribute 'param_num'"):
        SetupTrainer(loss, SGD(0.1), args)(mod.with_attr("param_num", "two"))
    with pytest.raises(ValueError, match="fewer than param_num"):
        SetupTrainer(loss, SGD(0.1), args)(mod.with_attr("param_num", 9))
