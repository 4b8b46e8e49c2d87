"""avg_pool2d with dilation and count_include_pad divides by the window's taps inside the
padded input (TVM's topi and ONNX's AveragePool), not by the dilated window's extent. Oracles:
a brute-force loop over taps, and ONNX's reference evaluator when onnx is installed."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax import op

CASES = [
    ((3, 3), (1, 1), (2, 2), (1, 1, 1, 1), False),
    ((3, 2), (2, 1), (2, 3), (2, 0, 1, 2), False),
    ((3, 3), (2, 2), (2, 1), (1, 2, 2, 1), True),
]


def _brute(x, k, s, d, p, ceil):
    n, c, h, w = x.shape
    pt, pl, pb, pr = p

    def out_len(size, lo, hi, kk, ss, dd):
        span = (size + lo + hi - dd * (kk - 1) - 1) / ss
        return int(np.ceil(span) if ceil else np.floor(span)) + 1

    oh, ow = out_len(h, pt, pb, k[0], s[0], d[0]), out_len(w, pl, pr, k[1], s[1], d[1])
    if ceil:  # the last window must start inside the input or its leading padding
        oh -= (oh - 1) * s[0] >= h + pt
        ow -= (ow - 1) * s[1] >= w + pl
    out = np.zeros((n, c, oh, ow), "float64")
    for y in range(oh):
        for xx in range(ow):
            total, taps = 0.0, 0
            for i in range(k[0]):
                for j in range(k[1]):
                    r, q = y * s[0] - pt + i * d[0], xx * s[1] - pl + j * d[1]
                    if -pt <= r < h + pb and -pl <= q < w + pr:  # a tap in the padded input
                        taps += 1
                        if 0 <= r < h and 0 <= q < w:
                            total = total + x[:, :, r, q]
            out[:, :, y, xx] = total / max(taps, 1)
    return out.astype(x.dtype)


@pytest.mark.parametrize("k,s,d,p,ceil", CASES)
def test_compiled_and_reference_match_the_tap_count(k, s, d, p, ceil):
    x = np.random.default_rng(0).standard_normal((1, 2, 9, 8)).astype("float32")
    want = _brute(x, k, s, d, p, ceil)
    v = relax.Var("x", relax.TensorStructInfo(x.shape, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [v]):
        y = op.nn.avg_pool2d(v, k, s, p, d, ceil_mode=ceil, count_include_pad=True)
        bb.emit_func_output(bb.emit(y))
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    got = vm["main"](tvm.nd.array(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    from minitvm.topi import reference as ref

    np.testing.assert_allclose(ref.pool2d(x, k, s, d, p, "avg", ceil, True), want, rtol=1e-5)


@pytest.mark.parametrize("k,s,d,p,ceil", CASES)
def test_onnx_reference_agrees(k, s, d, p, ceil):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    x = np.random.default_rng(1).standard_normal((1, 2, 9, 8)).astype("float32")
    node = helper.make_node(
        "AveragePool", ["x"], ["y"], kernel_shape=list(k), strides=list(s),
        dilations=list(d), pads=list(p), count_include_pad=1, ceil_mode=int(ceil),
    )  # fmt: skip
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 19)])
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    np.testing.assert_allclose(_brute(x, k, s, d, p, ceil), want, rtol=1e-5, atol=1e-6)
