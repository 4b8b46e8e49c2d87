"""relay.testing workloads: built with relay.build and checked against a numpy forward of the
same parameters (an interpreter of the Relay graph over minitvm.topi.reference), plus the seed's
quick start flow (build, run, export, load in a fresh process) on small images."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from relay_numpy_refs import conv2d_transpose_ref

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.error import ArgumentError
from minitvm.relay import testing
from minitvm.relay.expr_functor import ExprFunctor
from minitvm.topi import reference as ref

# op name -> numpy forward of (args, attrs), in float64 for a tight reference
NUMPY = {
    "add": lambda a, at: a[0] + a[1],
    "nn.relu": lambda a, at: np.maximum(a[0], 0),
    "nn.conv2d": lambda a, at: ref.conv2d_nchw(
        a[0], a[1], at.strides, at.padding, at.dilation, at.groups
    ),
    "nn.bias_add": lambda a, at: (
        a[0] + a[1].reshape((-1,) + (1,) * (a[0].ndim - at.axis % a[0].ndim - 1))
    ),
    "nn.batch_norm": lambda a, at: ref.batch_norm(*a, at.axis, at.epsilon, at.center, at.scale),
    "nn.max_pool2d": lambda a, at: ref.pool2d(
        a[0], at.pool_size, at.strides, at.dilation, at.padding, "max"
    ),
    "nn.global_avg_pool2d": lambda a, at: a[0].mean(axis=(2, 3), keepdims=True),
    "nn.batch_flatten": lambda a, at: a[0].reshape(a[0].shape[0], -1),
    "nn.dense": lambda a, at: a[0] @ a[1].T,
    "nn.dropout": lambda a, at: (a[0], np.ones_like(a[0])),
    "nn.softmax": lambda a, at: ref.softmax(a[0], at.axis),
    "concatenate": lambda a, at: np.concatenate(a[0], axis=at.axis),
    "reshape": lambda a, at: a[0].reshape(at.newshape),
    "tanh": lambda a, at: np.tanh(a[0]),
    "nn.conv2d_transpose": lambda a, at: conv2d_transpose_ref(
        a[0], a[1], at.strides, at.padding, at.output_padding
    ),
}


class NumpyForward(ExprFunctor):
    """Evaluates a Relay function body on numpy values (the reference of the tests)."""

    def __init__(self, env):
        super().__init__()
        self.env = env

    def visit_var(self, v):
        return self.env[v.name_hint]

    def visit_call(self, call):
        return NUMPY[call.op.name]([self.visit(a) for a in call.args], call.attrs)

    def visit_tuple(self, tup):
        return [self.visit(f) for f in tup.fields]

    def visit_tuple_getitem(self, item):
        return self.visit(item.tuple_value)[item.index]


def numpy_forward(mod, params, data):
    env = {k: v.numpy().astype("float64") for k, v in params.items()}
    env["data"] = data.astype("float64")
    return NumpyForward(env).visit(mod["main"].body)


def _build_and_run(mod, params, data):
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, "llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("data", data)
    m.run()
    return lib, m.get_output(0).numpy()


def _logits(p):
    return np.log(p)  # softmax outputs compared through their logs (differences of logits)


WORKLOADS = {
    "vgg11": lambda: testing.vgg.get_workload(num_layers=11, batch_size=1, image_shape=(3, 32, 32)),
    "resnet18": lambda: testing.resnet.get_workload(
        num_layers=18, batch_size=1, image_shape=(3, 32, 32)
    ),
    "resnet50": lambda: testing.resnet.get_workload(
        num_layers=50, batch_size=1, image_shape=(3, 32, 32)
    ),
    "mobilenet": lambda: testing.mobilenet.get_workload(batch_size=1, image_shape=(3, 32, 32)),
    "mlp": lambda: testing.mlp.get_workload(batch_size=2),
    "dcgan": lambda: testing.dcgan.get_workload(batch_size=1, ngf=16),
    "squeezenet1.1": lambda: testing.squeezenet.get_workload(
        version="1.1", image_shape=(3, 64, 64)
    ),
}


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workload_matches_numpy_forward(name):
    mod, params = WORKLOADS[name]()
    shape = mod["main"].params[0].checked_type.concrete_shape
    data = np.random.default_rng(1).uniform(-1, 1, shape).astype("float32")
    _, out = _build_and_run(mod, params, data)
    expected = numpy_forward(mod, params, data)
    assert out.shape == expected.shape
    if name == "dcgan":  # a tanh image, not class probabilities
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
        return
    np.testing.assert_allclose(out.sum(axis=1), 1, rtol=1e-5)
    # log-probabilities: every class, not only the largest ones, is compared
    np.testing.assert_allclose(_logits(out), _logits(expected), rtol=0, atol=2e-3)


def test_parameter_counts_match_the_published_architectures():
    def count(func):
        return sum(int(np.prod(p.type_annotation.shape)) for p in func.params[1:])

    assert count(testing.vgg.get_net(1, 1000, (3, 224, 224), 16)) == 138_357_544
    assert count(testing.vgg.get_net(1, 1000, (3, 224, 224), 19)) == 143_667_240
    assert count(testing.mobilenet.get_net(1, 1000, (3, 224, 224))) == 4_253_864  # with BN stats
    assert count(testing.squeezenet.get_net(1, (3, 224, 224), 1000, "1.0")) == 1_248_424
    assert count(testing.squeezenet.get_net(1, (3, 224, 224), 1000, "1.1")) == 1_235_496


def test_workloads_use_tvm_parameter_names():
    mod, params = testing.resnet.get_workload(num_layers=18, image_shape=(3, 32, 32))
    assert mod["main"].params[0].name_hint == "data"
    assert {"bn_data_moving_var", "conv0_weight", "stage2_unit1_sc_weight", "fc1_bias"} <= set(
        params
    )
    _, vparams = testing.vgg.get_workload(num_layers=11, image_shape=(3, 32, 32))
    assert {"conv1_1_weight", "conv5_2_bias", "fc6_weight", "fc8_bias"} <= set(vparams)


def test_workload_values_are_deterministic():
    _, a = testing.mlp.get_workload(batch_size=1)
    _, b = testing.mlp.get_workload(batch_size=1)
    assert all(np.array_equal(a[k].numpy(), b[k].numpy()) for k in a)


def test_bottleneck_resnet_builds_types():
    mod, params = testing.resnet.get_workload(num_layers=50, image_shape=(3, 32, 32))
    assert mod["main"].ret_type == relay.TensorType((1, 1000))
    assert params["stage1_unit1_conv3_weight"].shape == (256, 64, 1, 1)


def test_unknown_depths_are_refused():
    with pytest.raises(ArgumentError, match=r"vgg: num_layers must be one of \[11, 13, 16, 19\]"):
        testing.vgg.get_workload(num_layers=12)
    with pytest.raises(ArgumentError, match=r"resnet: num_layers must be one of"):
        testing.resnet.get_workload(num_layers=20)


# The seed's quick start (tvn -> tvm, target llvm, small images), run as a script in a fresh
# process, with the deployed module loaded and compared as the homework does.
QUICK_START = textwrap.dedent(
    """
    import numpy as np

    from minitvm import relay
    from minitvm.relay import testing
    import minitvm as tvm
    from minitvm import te
    from minitvm.contrib import graph_executor
    import minitvm.testing

    batch_size = 1
    num_class = 1000
    image_shape = (3, 32, 32)
    data_shape = (batch_size,) + image_shape
    out_shape = (batch_size, num_class)

    mod, params = relay.testing.{net}.get_workload(
        num_layers={layers}, batch_size=batch_size, image_shape=image_shape
    )

    opt_level = 3
    target = tvm.target.Target("llvm")
    with tvm.transform.PassContext(opt_level=opt_level):
        lib = relay.build(mod, target, params=params)

    dev = tvm.cpu()
    data = np.random.uniform(-1, 1, size=data_shape).astype("float32")
    module = graph_executor.GraphModule(lib["default"](dev))
    module.set_input("data", data)
    module.run()
    out = module.get_output(0, tvm.nd.empty(out_shape)).asnumpy()
    print(out.flatten()[0:10])

    from minitvm.contrib import utils

    temp = utils.tempdir()
    path_lib = temp.relpath("deploy_lib.tar")
    lib.export_library(path_lib)
    print(temp.listdir())

    loaded_lib = tvm.runtime.load_module(path_lib)
    input_data = tvm.nd.array(data)

    module = graph_executor.GraphModule(loaded_lib["default"](dev))
    module.run(data=input_data)
    out_deploy = module.get_output(0).asnumpy()
    print(out_deploy.flatten()[0:10])

    tvm.testing.assert_allclose(out_deploy, out, atol=1e-5)
    print("QUICK START OK")
    """
)


@pytest.mark.parametrize("net,layers", [("vgg", 11), ("resnet", 18)])
def test_seed_quick_start_runs_as_written(net, layers):
    code = QUICK_START.format(net=net, layers=layers)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "['deploy_lib.tar']" in proc.stdout and "QUICK START OK" in proc.stdout


def test_build_after_relay_fusion_computes_the_same_numbers():
    mod, params = testing.resnet.get_workload(num_layers=18, image_shape=(3, 32, 32))
    data = np.random.default_rng(2).uniform(-1, 1, (1, 3, 32, 32)).astype("float32")
    _, plain = _build_and_run(mod, params, data)
    fused = relay.transform.FuseOps(fuse_opt_level=2)(relay.transform.InferType()(mod))
    assert "Primitive" in str(fused)
    _, out = _build_and_run(fused, params, data)
    np.testing.assert_allclose(out, plain, rtol=1e-4, atol=1e-7)


def test_run_infer_type_and_run_opt_pass_helpers():
    x = relay.var("x", shape=(2, 3))
    f = relay.Function([x], relay.nn.relu(x) + relay.nn.relu(x))
    assert testing.run_infer_type(f).ret_type == relay.TensorType((2, 3))
    body = testing.run_opt_pass(f.body, relay.transform.EliminateCommonSubexpr())
    assert body.args[0] is body.args[1]


def test_create_workload_of_untyped_weights_builds_and_matches_numpy():
    data = relay.var("data", relay.TensorType((1, 3, 16, 16), "float32"))
    stats = [relay.var(n) for n in ("bn_gamma", "bn_beta", "bn_mean", "bn_var")]
    weight = relay.var("weight")
    y = relay.nn.conv2d(data=data, weight=weight, kernel_size=(3, 3), channels=8, padding=(1, 1))
    y = relay.nn.relu(relay.nn.batch_norm(y, *stats)[0])
    net, params = testing.create_workload(relay.Function(relay.analysis.free_vars(y), y))
    assert params["weight"].shape == (8, 3, 3, 3) and params["bn_var"].shape == (8,)
    x = np.random.default_rng(3).uniform(-1, 1, (1, 3, 16, 16)).astype("float32")
    _, out = _build_and_run(net, params, x)
    np.testing.assert_allclose(out, numpy_forward(net, params, x), rtol=1e-4, atol=1e-5)


def test_tvm_style_layers_with_untyped_weights():
    from minitvm.relay.testing import layers

    data = relay.var("data", shape=(2, 3, 8, 8))
    y = layers.conv2d(data, name="c0", channels=4, kernel_size=(3, 3), padding=(1, 1))
    y = relay.nn.relu(layers.batch_norm_infer(y, name="bn0"))
    y = layers.dense_add_bias(relay.nn.batch_flatten(y), units=5, name="fc")
    net, params = testing.create_workload(relay.Function(relay.analysis.free_vars(y), y))
    assert sorted(params) == sorted(
        [
            "c0_weight",
            "bn0_gamma",
            "bn0_beta",
            "bn0_moving_mean",
            "bn0_moving_var",
            "fc_weight",
            "fc_bias",
        ]
    )
    x = np.random.default_rng(4).uniform(-1, 1, (2, 3, 8, 8)).astype("float32")
    _, out = _build_and_run(net, params, x)
    np.testing.assert_allclose(out, numpy_forward(net, params, x), rtol=1e-4, atol=1e-5)
