"""Default CPU schedule of Whisper's conv1d stems (conv1d + bias + erf GELU): the conv, computed
as a conv2d over a height-1 image, gets the register tile with output channels as its rows (the
unit height hoisted out of the way), and still matches a float64 numpy reference."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax import op
from minitvm.relax.pipeline import default_build_pipeline

T = relax.TensorStructInfo


def _stem(shapes, stride, pad, dilation=1, groups=1):
    x, w, b = (relax.Var(f"p{k}", T(s, "float32")) for k, s in enumerate(shapes))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w, b]):
        with bb.dataflow():
            y = bb.emit(
                op.nn.conv1d(x, w, strides=stride, padding=pad, dilation=dilation, groups=groups)
            )
            gv = bb.emit_output(op.nn.gelu(op.add(y, b)))
        bb.emit_func_output(gv)
    return bb.get()


def _reference(x, w, b, stride, pad, dilation, groups):
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad)))
    k = w.shape[-1]
    width = (xp.shape[-1] - dilation * (k - 1) - 1) // stride + 1
    taps = [xp[:, :, r * dilation : r * dilation + stride * width : stride] for r in range(k)]
    cols = np.stack(taps, -1)  # (n, c, x, k)
    cg, og = w.shape[1], w.shape[0] // groups
    y = np.concatenate(
        [
            np.einsum("bcxk,fck->bfx", cols[:, g * cg : (g + 1) * cg], w[g * og : (g + 1) * og])
            for g in range(groups)
        ],
        axis=1,
    )
    y = y + b.astype(np.float64)
    erf = np.vectorize(math.erf)
    return 0.5 * y * (1.0 + erf(y / math.sqrt(2.0)))


CASES = [
    # (batch, in ch, width, out ch, stride, dilation, groups): Whisper's two stems, scaled down,
    # then odd widths and channel counts (guarded tiles), dilation and groups
    (2, 20, 32, 32, 1, 1, 1),
    (2, 32, 32, 32, 2, 1, 1),
    (1, 12, 37, 30, 2, 1, 1),
    (3, 8, 29, 17, 1, 2, 1),
    (2, 16, 24, 16, 1, 1, 2),
]


@pytest.mark.parametrize("n, c, width, o, stride, dilation, groups", CASES)
def test_conv1d_gelu_stem_matches_numpy(n, c, width, o, stride, dilation, groups):
    shapes = [(n, c, width), (o, c // groups, 3), (1, o, 1)]
    mod = _stem(shapes, stride, 1, dilation, groups)
    rng = np.random.default_rng(1)
    x, w, b = (rng.standard_normal(s).astype("float32") for s in shapes)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    got = vm["main"](*[tvm.nd.array(a) for a in (x, w, b)]).numpy()
    want = _reference(x, w, b, stride, 1, dilation, groups)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("stride", [1, 2])
def test_conv1d_stem_is_register_tiled_over_output_channels(stride):
    shapes = [(8, 32, 64), (64, 32, 3), (1, 64, 1)]
    lowered = default_build_pipeline()(_stem(shapes, stride, 1))
    script = next(f.script() for gv, f in lowered.functions_items() if "conv" in gv.name_hint)
    # the tile's rows are output channels (f_1, innermost but the vector) under the reduction,
    # not the unit height: before, each multiply-add of a 1-row tile loaded and stored its sum
    conv = script[script.index('T.block("conv2d_nchw")') - 400 :]
    assert re.search(r"for x_0, rc, ry, rx, f_1 in T.grid\(.*T.int64\(4\)\)", conv), script
