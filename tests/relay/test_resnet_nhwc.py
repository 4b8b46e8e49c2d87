"""relay.testing.resnet.get_workload(layout="NHWC") (TVM's auto-scheduler network tutorial):
the same network as NCHW with HWIO weights, so with the weights transposed it gives the NCHW
build's outputs for the transposed image."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.error import ArgumentError


def _run(mod, params, x):
    lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("data", x)
    m.run()
    return m.get_output(0).numpy()


def test_nhwc_resnet_equals_nchw_with_transposed_weights():
    nchw, p = relay.testing.resnet.get_workload(num_layers=18, image_shape=(3, 16, 16))
    nhwc, p_nhwc = relay.testing.resnet.get_workload(
        num_layers=18, layout="NHWC", image_shape=(16, 16, 3)
    )
    w = p["conv0_weight"].numpy()
    assert p_nhwc["conv0_weight"].numpy().shape == w.shape[2:] + w.shape[:2][::-1]  # HWIO
    assert nhwc["main"].params[0].checked_type.concrete_shape == (1, 16, 16, 3)
    moved = {
        k: v.numpy().transpose(2, 3, 1, 0).copy() if v.numpy().ndim == 4 else v
        for k, v in p.items()
    }
    x = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype("float32")
    want = _run(nchw, p, x)
    got = _run(nhwc, moved, x.transpose(0, 2, 3, 1).copy())
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_default_image_shape_follows_layout_and_bad_args_are_refused():
    mod, _ = relay.testing.resnet.get_workload(num_layers=18, layout="NHWC")
    assert mod["main"].params[0].checked_type.concrete_shape == (1, 224, 224, 3)
    with pytest.raises(ArgumentError, match="layout"):
        relay.testing.resnet.get_workload(layout="NCWH")
    with pytest.raises(ArgumentError, match="unknown arguments"):
        relay.testing.resnet.get_workload(bogus=1)
