"""topi.cuda schedules build for "opencl" (PoCL runs the kernels on the CPU) and give numpy's
values; for "cuda" they produce PTX source (running it needs a GPU)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, topi

RNG = np.random.default_rng(11)


def _opencl_dev():
    try:
        dev = tvm.opencl(0)
        if not dev.exist:
            pytest.skip("no OpenCL device")
    except tvm.error.MiniTVMError as err:
        pytest.skip(f"no OpenCL runtime: {err}")
    return dev


def _run(sched, outs, args, inputs):
    """Build `sched(outs)` for opencl, run on `inputs`, return the output arrays."""
    dev = _opencl_dev()
    with tvm.target.Target("opencl"):
        s = sched(outs)
    f = tvm.build(s, args, "opencl")
    arrays = [tvm.nd.array(x, dev) for x in inputs]
    outs_nd = [
        tvm.nd.array(np.zeros([int(d) for d in t.shape], t.dtype), dev) for t in args[len(inputs) :]
    ]
    f(*arrays, *outs_nd)
    return [o.numpy() for o in outs_nd]


REDUCE_CASES = [  # (topi fn, numpy fn, shape, axis, keepdims)
    (topi.sum, np.sum, (10, 7, 7), None, False),
    (topi.sum, np.sum, (10, 7, 7), 1, False),
    (topi.sum, np.sum, (10, 7, 7), (0, 2), True),
    (topi.max, np.max, (33, 65), 1, False),
    (topi.min, np.min, (33, 65), 0, True),
    (topi.prod, np.prod, (4, 5), None, False),
    (topi.argmax, np.argmax, (9, 37), 1, False),
    (topi.argmin, np.argmin, (9, 37), 0, False),
    (topi.sum, np.sum, (1000,), 0, False),
]


@pytest.mark.parametrize("fn,ref,shape,axis,keepdims", REDUCE_CASES)
def test_schedule_reduce_runs_on_opencl_like_numpy(fn, ref, shape, axis, keepdims):
    a = te.placeholder(shape, name="a")
    # the injective stage before the reduction is inlined into it (TVM's test does the same)
    b = fn(topi.sqrt(topi.exp(a)), axis=axis, keepdims=keepdims)
    an = RNG.random(shape, dtype=np.float32)
    (got,) = _run(topi.cuda.schedule_reduce, b, [a, b], [an])
    x = np.sqrt(np.exp(an))
    if ref in (np.argmax, np.argmin):
        expected = ref(x, axis=axis)
        np.testing.assert_array_equal(got, expected)
    else:
        expected = ref(x, axis=axis, keepdims=keepdims)
        np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_schedule_reduce_full_sum_of_fused_elementwise_matches_numpy():
    a = te.placeholder((10, 7, 7), name="a")
    b = te.placeholder((7, 7), name="b")
    g = topi.sum(topi.elemwise_sum([a + b, a * b]) / 2.0)
    an = RNG.random((10, 7, 7), dtype=np.float32)
    bn = RNG.random((7, 7), dtype=np.float32)
    (got,) = _run(topi.cuda.schedule_reduce, g, [a, b, g], [an, bn])
    np.testing.assert_allclose(got, ((an + bn) + an * bn).sum() / 2, rtol=1e-5)


@pytest.mark.parametrize("shape,axis", [((16, 40), -1), ((3, 20, 5), 1), ((2, 3, 7, 9), 1)])
@pytest.mark.parametrize("log", [False, True])
def test_schedule_softmax_runs_on_opencl_like_numpy(shape, axis, log):
    t = te.placeholder(shape, name="t")
    sm = topi.nn.log_softmax(t, axis) if log else topi.nn.softmax(t, axis)
    tn = RNG.standard_normal(shape).astype("float32") * 3
    (got,) = _run(topi.cuda.schedule_softmax, sm, [t, sm], [tn])
    shifted = tn - tn.max(axis, keepdims=True)
    logsum = np.log(np.exp(shifted).sum(axis, keepdims=True))
    expected = shifted - logsum if log else np.exp(shifted - logsum)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def _conv_ref(x, w, stride, pad, dilation):
    import torch

    out = torch.nn.functional.conv2d(
        torch.from_numpy(x), torch.from_numpy(w), stride=stride, padding=pad, dilation=dilation
    )
    return out.numpy()


@pytest.mark.parametrize(
    "n,c,hw,f,k,stride,pad,dilation",
    [(1, 3, 9, 4, 3, 1, 1, 1), (2, 5, 12, 6, 3, 2, 0, 1), (1, 4, 11, 3, 3, 1, 2, 2)],
)
def test_schedule_conv2d_nchw_runs_on_opencl_like_torch(n, c, hw, f, k, stride, pad, dilation):
    data = te.placeholder((n, c, hw, hw), name="data")
    kernel = te.placeholder((f, c, k, k), name="kernel")
    bias = te.placeholder((f, 1, 1), name="bias")
    with tvm.target.Target("opencl"):
        conv = topi.cuda.conv2d_nchw(data, kernel, stride, pad, dilation, "float32")
        out = topi.nn.relu(topi.add(conv, bias))
    dn = RNG.standard_normal((n, c, hw, hw)).astype("float32")
    kn = RNG.standard_normal((f, c, k, k)).astype("float32")
    bn = RNG.standard_normal((f, 1, 1)).astype("float32")
    (got,) = _run(topi.cuda.schedule_conv2d_nchw, [out], [data, kernel, bias, out], [dn, kn, bn])
    expected = np.maximum(_conv_ref(dn, kn, stride, pad, dilation) + bn, 0)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "make,sched",
    [
        (lambda a: topi.sum(a), topi.cuda.schedule_reduce),
        (lambda a: topi.nn.softmax(a), topi.cuda.schedule_softmax),
    ],
)
def test_schedules_build_for_cuda_as_ptx_source(make, sched):
    a = te.placeholder((8, 24), name="a")
    b = make(a)
    with tvm.target.Target("cuda"):
        s = sched(b)
    f = tvm.build(s, [a, b], "cuda")
    src = f.imported_modules[0].get_source()
    assert ".entry" in src and "%tid.x" in src
