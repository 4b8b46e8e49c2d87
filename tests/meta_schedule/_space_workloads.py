"""Small workloads and helpers of the design-space tests (MSSPACE): matmul (+relu), conv2d,
softmax, a fused elementwise chain; each with a numpy reference."""

import numpy as np

import minitvm as tvm
from minitvm import te, topi
from minitvm.tir.schedule import Schedule


def _mod(tensors):
    return tvm.IRModule({"main": te.create_prim_func(tensors)})


def matmul(n=64, m=64, k=64, relu=False):
    a = te.placeholder((n, k), name="A")
    b = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="k")
    c = te.compute((n, m), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
    out = te.compute((n, m), lambda i, j: te.max(c[i, j], 0.0), name="D") if relu else c
    ref = lambda x, y: np.maximum(x @ y, 0) if relu else x @ y
    return _mod([a, b, out]), [(n, k), (k, m)], (n, m), ref


def conv2d():
    x = te.placeholder((1, 4, 10, 10), name="X")
    w = te.placeholder((8, 4, 3, 3), name="W")
    out = topi.nn.conv2d(x, w, 1, 0, 1)

    def ref(xn, wn):
        o = np.zeros((1, 8, 8, 8), "float32")
        for r in range(3):
            for s in range(3):
                o += np.einsum("nchw,oc->nohw", xn[:, :, r : r + 8, s : s + 8], wn[:, :, r, s])
        return o

    return _mod([x, w, out]), [(1, 4, 10, 10), (8, 4, 3, 3)], (1, 8, 8, 8), ref


def softmax():
    x = te.placeholder((8, 64), name="X")
    out = topi.nn.softmax(x, axis=1)

    def ref(xn):
        e = np.exp(xn - xn.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    return _mod([x, out]), [(8, 64)], (8, 64), ref


def fused_elementwise():
    a = te.placeholder((32, 48), name="A")
    b = te.placeholder((32, 48), name="B")
    s = te.compute((32, 48), lambda i, j: a[i, j] + b[i, j], name="S")
    t = te.compute((32, 48), lambda i, j: s[i, j] * 2.0, name="T")
    u = te.compute((32, 48), lambda i, j: te.max(t[i, j], 0.0), name="U")
    return _mod([a, b, u]), [(32, 48), (32, 48)], (32, 48), lambda x, y: np.maximum((x + y) * 2, 0)


WORKLOADS = {
    "matmul": lambda: matmul(relu=True),
    "conv2d": conv2d,
    "softmax": softmax,
    "elementwise": fused_elementwise,
}


def resample(mod, sch, seed):
    """`sch`'s trace replayed on a fresh schedule with every decision sampled anew."""
    fresh = Schedule(mod, seed=seed)
    sch.trace.apply_to_schedule(
        fresh, remove_postproc=True, decision_provider=lambda inst, ins, attrs, d: None
    )
    return fresh


def run(mod_or_func, in_shapes, out_shape, seed=0):
    """Build and run on seeded random inputs; (inputs, output)."""
    rng = np.random.default_rng(seed)
    ins = [rng.standard_normal(s).astype("float32") for s in in_shapes]
    f = tvm.build(mod_or_func, target="llvm")
    out = tvm.nd.array(np.zeros(out_shape, "float32"))
    f(*[tvm.nd.array(x) for x in ins], out)
    return ins, out.numpy()
