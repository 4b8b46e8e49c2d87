"""dl.cpu.ElementWise on short inner loops: trailing loops the buffers are contiguous over are
fused into a full vector (a 3x3 kernel's optimizer update, batch norm on small images), the
vector stays a ramp after lowering, results match numpy, and other kernels keep their schedule."""

import numpy as np
import pytest

import minitvm as tvm
import minitvm.dlight as dl
from minitvm import te, tir
from minitvm.dlight.cpu import elementwise
from minitvm.ir.structural import structural_equal
from minitvm.tir.functor import post_order_visit
from minitvm.tir.stmt import For, ForKind
from minitvm.tir.transform.pipeline import lower_primfunc


def _momentum(shape):
    v = te.placeholder(shape, name="v")
    g = te.placeholder(shape, name="g")
    out = te.compute(shape, lambda *i: v[i] * tir.const(0.9, "float32") + g[i], name="v_new")
    return [v, g, out], (lambda v_, g_: v_ * np.float32(0.9) + g_)


def _scale_shift(shape):
    x = te.placeholder(shape, name="x")
    s = te.placeholder((shape[1],), name="s")
    b = te.placeholder((shape[1],), name="b")
    y = te.compute(shape, lambda n, c, h, w: x[n, c, h, w] * s[c] + b[c], name="y")

    def ref(x_, s_, b_):
        return x_ * s_[None, :, None, None] + b_[None, :, None, None]

    return [x, s, b, y], ref


def _transpose_add(shape):
    x = te.placeholder(shape, name="x")
    y = te.compute(shape, lambda n, c, h, w: x[n, c, w, h] + x[n, c, h, w], name="y")
    return [x, y], (lambda x_: x_.transpose(0, 1, 3, 2) + x_)


def _schedule(tensors):
    mod = tvm.IRModule({"main": te.create_prim_func(tensors)})
    return dl.ApplyDefaultSchedule(dl.cpu.ElementWise())(mod)


def _loops(func, kind):
    found = []
    post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, For) else None)
    return [int(f.extent) for f in found if f.kind is kind]


def _run(mod, tensors, ref):
    rng = np.random.default_rng(0)
    ins = [rng.standard_normal([int(d) for d in t.shape]).astype("float32") for t in tensors[:-1]]
    out = tvm.nd.empty([int(d) for d in tensors[-1].shape], "float32")
    tvm.build(mod, target="llvm")(*[tvm.nd.array(a) for a in ins], out)
    np.testing.assert_allclose(out.numpy(), ref(*ins), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "make, shape, lanes",
    [
        (_momentum, (64, 32, 3, 3), 9),  # 3x3 fused; a third dim would lose the ramp
        (_momentum, (16, 3, 7, 7), 7),  # 49 is no multiple of 16 and over 16: left alone
        (_momentum, (8, 8, 4, 4), 16),  # 4x4 reaches 16 lanes
        (_scale_shift, (4, 32, 1, 1), 16),  # unit loops skipped: channels are the vector
        (_scale_shift, (4, 32, 2, 2), 4),  # s[c] is neither contiguous nor invariant over c
        (_scale_shift, (2, 16, 8, 8), 16),  # 8x8 = 64 = 4 vectors of 16
    ],
)
def test_short_inner_loop_fuses_into_full_vector(make, shape, lanes):
    tensors, ref = make(shape)
    mod = _schedule(tensors)
    assert max(_loops(mod["main"], ForKind.VECTORIZED)) == lanes
    lowered = lower_primfunc(mod["main"])
    assert _loops(lowered, ForKind.VECTORIZED) == []  # became straight-line vector code
    _run(mod, tensors, ref)


def test_strided_access_keeps_short_vector():
    tensors, ref = _transpose_add((4, 8, 3, 3))
    mod = _schedule(tensors)
    assert _loops(mod["main"], ForKind.VECTORIZED) == [3]
    _run(mod, tensors, ref)


@pytest.mark.parametrize("shape", [(8, 16, 16, 16), (4, 8, 3, 3)])
def test_schedule_unchanged_when_not_fusing(monkeypatch, shape):
    """A long inner loop (and a strided one) schedule as before this rule existed."""
    make = _momentum if shape[-1] >= 16 else _transpose_add
    tensors, _ = make(shape)
    after = _schedule(tensors)
    monkeypatch.setattr(elementwise, "vector_loops", lambda *a: 1)
    before = _schedule(tensors)
    assert structural_equal(before, after)
