"""Default CPU schedule on shapes of HF models: a stride-2 conv1d reads its padded input
de-interleaved (contiguous vectors), and a softmax over 197 keeps its guarded last vector
in a loop of its own; both still match numpy."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax import op
from minitvm.relax.pipeline import default_build_pipeline

T = relax.TensorStructInfo


def _module(shapes, body):
    params = [relax.Var(f"p{k}", T(s, "float32")) for k, s in enumerate(shapes)]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            gv = bb.emit_output(body(*params))
        bb.emit_func_output(gv)
    return bb.get()


def _run(mod, *arrays):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    return vm["main"](*[tvm.nd.array(a) for a in arrays]).numpy()


def _kernel_script(mod, word):
    lowered = default_build_pipeline()(mod)
    return next(f.script() for gv, f in lowered.functions_items() if word in gv.name_hint)


def _conv1d_reference(x, w, stride, pad):
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad)))
    width = (xp.shape[-1] - w.shape[-1]) // stride + 1
    cols = np.stack([xp[:, :, k : k + stride * width : stride] for k in range(w.shape[-1])], -1)
    return np.einsum("bcxk,fck->bfx", cols, w)


@pytest.mark.parametrize("stride, width", [(2, 64), (2, 37), (3, 48), (1, 40)])
def test_strided_conv1d_matches_numpy(stride, width):
    shapes = [(2, 24, width), (32, 24, 3)]
    mod = _module(shapes, lambda x, w: op.nn.conv1d(x, w, strides=stride, padding=1))
    rng = np.random.default_rng(0)
    x, w = (rng.standard_normal(s).astype("float32") for s in shapes)
    got = _run(mod, x, w)
    np.testing.assert_allclose(got, _conv1d_reference(x, w, stride, 1), rtol=1e-5, atol=1e-5)


def test_stride_2_conv1d_reads_its_padded_input_deinterleaved():
    mod = _module([(1, 24, 64), (32, 24, 3)], lambda x, w: op.nn.conv1d(x, w, strides=2, padding=1))
    script = _kernel_script(mod, "conv")
    # pad [.., 66] becomes [.., 2, 33]: even and odd columns, each read contiguously
    assert 'T.int64(2), T.int64(33)), "float32")' in script


@pytest.mark.parametrize("n", [197, 128, 20])
def test_softmax_with_a_ragged_row_matches_numpy(n):
    mod = _module([(2, n, n)], lambda x: op.nn.softmax(x, axis=-1))
    x = np.random.default_rng(1).standard_normal((2, n, n)).astype("float32") * 4
    e = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
    np.testing.assert_allclose(_run(mod, x), e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_ragged_row_keeps_its_vector_loop_unfused_from_the_parallel_rows():
    script = _kernel_script(_module([(2, 197, 197)], lambda x: op.nn.softmax(x, -1)), "softmax")
    # rows fused and parallel; the 13 vectors of a row (the last one guarded) a loop below
    assert "T.parallel(T.int64(394))" in script and "range(T.int64(13))" in script
