"""Model zoo: every model builds with relax.build after BindParams and matches PyTorch (or the
numpy reference evaluator when torch is absent); weights are deterministic; errors name the fix."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import ArgumentError, ShapeError
from minitvm.relax.eval_ref import evaluate
from minitvm.testing import zoo

try:
    import torch
except ImportError:  # the numpy reference evaluator stands in
    torch = None

# CNNs run at 64x64 here (compile time does not depend on the image, run time does);
# full size is for benchmarks/models.py.
SMALL = {"image_shape": (3, 64, 64)}
CASES = {
    "mlp": {},
    "lenet": {},
    "resnet18": SMALL,
    "mobilenet_v2": SMALL,
    "bert_layer": {"seq_len": 32},
    "resnet50": SMALL,
    "vgg16": SMALL,
}
SLOW = {"resnet50", "vgg16"}


def _reference(name, mod, params, x):
    if torch is None:
        return np.asarray(evaluate(mod, x, *params.values()))
    with torch.no_grad():
        return zoo.torch_model(name, params)(torch.from_numpy(x)).numpy()


def _build(mod, params):
    mod = relax.transform.BindParams("main", params)(mod)
    return relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())


def _check(got, want):
    # rtol as the issue asks; atol relative to the output's scale (logits of a deep net)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def _input(name, batch, kwargs, seed=1):
    shape = zoo.input_shape(name, batch, **kwargs)
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=tvm.testing.slow) if n in SLOW else n for n in CASES]
)
def test_model_builds_and_matches_reference(name):
    kwargs = CASES[name]
    mod, params = zoo.get_model(name, **kwargs)
    x = _input(name, 1, kwargs)
    want = _reference(name, mod, params, x)
    assert np.isfinite(want).all() and 0.05 < float(np.abs(want).max()) < 100  # O(1) outputs
    _check(_build(mod, params)["main"](tvm.nd.array(x)).numpy(), want)


def test_symbolic_batch_runs_at_batch_two():
    kwargs = {"image_shape": (3, 32, 32)}
    mod, params = zoo.get_model("resnet18", batch_size=None, **kwargs)
    batch = mod["main"].params[0].struct_info.shape[0]
    assert isinstance(batch, tvm.tir.Var) and batch.name == "n"
    vm = _build(mod, params)
    x = _input("resnet18", 2, kwargs)
    _check(vm["main"](tvm.nd.array(x)).numpy(), _reference("resnet18", mod, params, x))


@pytest.mark.skipif(torch is None, reason="needs torch")
def test_numpy_reference_evaluator_agrees_with_torch():
    kwargs = {"image_shape": (3, 32, 32)}
    mod, params = zoo.get_model("mobilenet_v2", **kwargs)
    x = _input("mobilenet_v2", 1, kwargs)
    _check(
        np.asarray(evaluate(mod, x, *params.values())), _reference("mobilenet_v2", mod, params, x)
    )


def test_params_follow_data_input_and_bind_by_name():
    mod, params = zoo.get_model("lenet")
    main = mod["main"]
    assert main.attrs["num_input"] == 1
    names = [p.name_hint for p in main.params]
    assert names[0] == "data" and names[1:] == list(params)
    for p in main.params[1:]:
        assert tuple(int(d) for d in p.struct_info.shape) == params[p.name_hint].shape
    bound = relax.transform.BindParams("main", params)(mod)
    assert [p.name_hint for p in bound["main"].params] == ["data"]


def test_weights_are_deterministic_per_seed():
    _, a = zoo.get_model("mlp", seed=0)
    _, b = zoo.get_model("mlp", seed=0)
    _, c = zoo.get_model("mlp", seed=1)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["fc1_weight"], c["fc1_weight"])


def test_batch_norm_statistics_are_not_identity():
    _, params = zoo.get_model("resnet18", image_shape=(3, 32, 32))
    mean, var = params["conv1_bn_running_mean"], params["conv1_bn_running_var"]
    assert np.abs(mean).max() > 0.05 and np.abs(var - 1).max() > 0.1


# learnable weights of torchvision's models (running statistics excluded)
PUBLISHED = {"resnet18": 11_689_512, "resnet50": 25_557_032, "vgg16": 138_357_544,
             "mobilenet_v2": 3_504_872}  # fmt: skip


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_architecture_has_the_published_parameter_count(name):
    # the count does not depend on the image size except through VGG's fixed 7x7 pool
    _, params = zoo.get_model(name, image_shape=(3, 32, 32))
    learnable = sum(v.size for k, v in params.items() if "running" not in k)
    assert learnable == PUBLISHED[name]


def test_bert_layer_shapes():
    mod, params = zoo.get_model("bert_layer", batch_size=2)
    assert tuple(int(d) for d in mod["main"].ret_struct_info.shape) == (2, 128, 768)
    assert params["ffn1_weight"].shape == (3072, 768)


def test_dtype_is_carried_to_inputs_and_weights():
    mod, params = zoo.get_model("mlp", dtype="float64")
    assert str(mod["main"].params[0].struct_info.dtype) == "float64"
    assert all(v.dtype == np.float64 for v in params.values())


def test_list_models():
    names = ["mlp", "lenet", "resnet18", "resnet50", "vgg16", "mobilenet_v2", "bert_layer"]
    assert zoo.list_models() == names
    assert tvm.testing.zoo is zoo


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: zoo.get_model("resnet"), ArgumentError, "unknown model 'resnet'; choose one of"),
        (lambda: zoo.get_model("bert_layer", image_shape=(3, 8, 8)), ArgumentError,
         "takes a sequence, not an image: pass seq_len"),
        (lambda: zoo.get_model("lenet", seq_len=8), ArgumentError,
         "is an image model: pass image_shape, not seq_len"),
        (lambda: zoo.get_model("lenet", image_shape=(28, 28)), ShapeError,
         r"must be \(C, H, W\) with positive dims"),
        (lambda: zoo.get_model("mlp", batch_size=0), ShapeError,
         "batch_size must be positive or None"),
        (lambda: zoo.get_model("bert_layer", seq_len=0), ShapeError, "seq_len .* must be positive"),
        (lambda: zoo.torch_model("vgg", {}), ArgumentError, "unknown model 'vgg'"),
    ],
)  # fmt: skip
def test_errors_name_the_fix(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.skipif(torch is None, reason="needs torch")
def test_torch_model_names_a_missing_weight():
    _, params = zoo.get_model("mlp")
    del params["fc2_bias"]
    model = zoo.torch_model("mlp", params)
    with pytest.raises(ArgumentError, match=r"params has no weight 'fc2_bias'; pass the dict"):
        model(torch.zeros(1, 1, 28, 28))


def test_mobilenet_relu6_is_one_clip_op():
    mod, _ = zoo.get_model("mobilenet_v2", image_shape=(3, 32, 32))
    ops = [b.value.op.name for blk in mod["main"].body.blocks for b in blk.bindings
           if isinstance(b.value, relax.Call) and hasattr(b.value.op, "name")]  # fmt: skip
    assert ops.count("relax.clip") == 35 and "relax.minimum" not in ops
