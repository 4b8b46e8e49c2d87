"""A pool with `out_layout` different from `layout` after a conv: the blocked-layout rewrite
(opt_level 3) must leave it alone, or the NHWC result would be read as blocked NCHW (same
shape here, so nothing else would notice). Oracle: torch."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("opt_level", [0, 3])
@pytest.mark.parametrize("pool", ["max", "avg"])
def test_pool_with_out_layout_after_conv_matches_torch(opt_level, pool):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((1, 8, 8, 8), "float32"))
    w = relax.Var("w", relax.TensorStructInfo((8, 8, 3, 3), "float32"))
    make = relax.op.nn.max_pool2d if pool == "max" else relax.op.nn.avg_pool2d
    with bb.function("main", [x, w]):
        with bb.dataflow():
            c = bb.emit(relax.op.nn.conv2d(x, w, padding=1))
            p = bb.emit(make(c, (2, 2), strides=(1, 1), layout="NCHW", out_layout="NHWC"))
            y = bb.emit_output(p)
        bb.emit_func_output(y)
    rng = np.random.default_rng(0)
    xs = rng.random((1, 8, 8, 8), dtype=np.float32)
    ws = rng.random((8, 8, 3, 3), dtype=np.float32)
    with tvm.transform.PassContext(opt_level=opt_level):
        ex = relax.build(bb.get(), "llvm")
    got = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(xs), tvm.nd.array(ws))
    conv = torch.nn.functional.conv2d(torch.tensor(xs), torch.tensor(ws), padding=1)
    tpool = torch.nn.functional.max_pool2d if pool == "max" else torch.nn.functional.avg_pool2d
    want = tpool(conv, 2, stride=1).permute(0, 2, 3, 1).numpy()
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-4)
