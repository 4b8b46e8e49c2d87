"""`python -m minitvm demo`: train the MLP on the bundled digits, then build, check and time a
scheduled matmul and an elementwise kernel."""

from __future__ import annotations

import argparse
import time

import numpy as np

from .. import driver, runtime, te, tir

DESCRIPTION = __doc__
EPILOG = "example:\n  python -m minitvm demo"


def run(args: argparse.Namespace) -> int:
    return run_demo()


def _median_seconds(fn, repeat: int = 7, number: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    return float(np.median(times))


def _matmul(n: int):
    """The register-blocked GEMM schedule of benchmarks/gemm.py (packed B, 8x32 local tile)."""
    from ..testing.workloads import gemm_te, schedule_blocked

    A, B, C = gemm_te(te, n, packed=True)
    sch = tir.Schedule(te.create_prim_func([A, B, C]).with_attr("global_symbol", "matmul"))
    schedule_blocked(sch, lambda s, name: s.get_block(name))
    return driver.build(sch.mod, target="llvm")


def _elementwise():
    """C = relu(A * 2 + B) over a symbolic length, vectorized and parallel."""
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: te.max(A[i] * 2.0 + B[i], 0.0), name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=64)
    s[C].parallel(xo)
    s[C].vectorize(xi)
    return driver.build(s, [A, B, C], "llvm", name="axpy_relu")


def _train_digits() -> list[str]:
    """The 64-128-64-10 relu MLP on the bundled 8x8 digits: one compiled step per batch."""
    from . import training as tr

    data = tr.load_dataset("digits")
    layers = tr.build_model("mlp", data.image_shape)
    config = tr.default_config("mlp", "digits")
    epochs, batch_size, lr = config.epochs, config.batch_size, config.lr
    start = time.perf_counter()
    result = tr.train(layers, data, config)
    total = time.perf_counter() - start
    compile_s = result.program.compile_seconds
    return [
        (
            f"training mlp ({tr.describe_model(layers)}) on the bundled 8x8 digits "
            f"({len(data.x_train)} train / {len(data.x_val)} validation samples)"
        ),
        (
            f"  {epochs} epochs of {config.optimizer} (lr {lr}, batch {batch_size}): "
            "forward + backward + update compiled as one graph program"
        ),
        f"  validation accuracy {100 * result.val_acc:.2f}%  final loss {result.history[-1].loss:.4f}",
        f"  time {total:.2f} s (compile {compile_s:.2f} s, training {total - compile_s:.2f} s)",
    ]


def run_demo(n: int = 512, length: int = 1 << 20) -> int:
    dev = runtime.cpu(0)
    rng = np.random.default_rng(0)
    lines = _train_digits()
    print("\n".join(lines), flush=True)
    lines = []

    start = time.perf_counter()
    mm = _matmul(n)
    compile_s = time.perf_counter() - start
    a = runtime.nd.array(rng.standard_normal((n, n), dtype=np.float32), dev)
    b = runtime.nd.array(rng.standard_normal((n, n), dtype=np.float32), dev)
    c = runtime.nd.empty((n, n), "float32", dev)
    mm(a, b, c)
    np.testing.assert_allclose(c.numpy(), a.numpy() @ b.numpy(), rtol=1e-4, atol=1e-3)
    t_ours = mm.time_evaluator("matmul", dev, number=3, repeat=5, min_repeat_ms=60)(a, b, c).median
    a_np, b_np = a.numpy(), b.numpy()
    t_np = _median_seconds(lambda: a_np @ b_np, number=20)
    gflops = lambda t: 2 * n**3 / t / 1e9
    lines.append(
        f"matmul {n}x{n}x{n} (B packed, 8x32 register tile, unrolled, vectorized, parallel)"
    )
    lines.append(f"  compiled in {compile_s:.2f} s; matches numpy")
    lines.append(f"  minitvm {t_ours * 1e3:8.3f} ms  {gflops(t_ours):7.1f} GFLOPS")
    lines.append(
        f"  numpy   {t_np * 1e3:8.3f} ms  {gflops(t_np):7.1f} GFLOPS  (ratio {t_np / t_ours:.2f}x)"
    )

    start = time.perf_counter()
    ew = _elementwise()
    compile_s = time.perf_counter() - start
    x = rng.standard_normal(length, dtype=np.float32)
    y = rng.standard_normal(length, dtype=np.float32)
    out = np.empty_like(x)
    ew(x, y, out)
    np.testing.assert_allclose(out, np.maximum(x * 2 + y, 0), rtol=1e-6)
    t_ours = ew.time_evaluator("axpy_relu", dev, number=10, repeat=5)(x, y, out).median
    tmp = np.empty_like(x)

    def numpy_version():
        np.multiply(x, 2, out=tmp)
        np.add(tmp, y, out=tmp)
        np.maximum(tmp, 0, out=tmp)

    t_np = _median_seconds(numpy_version, number=10)
    lines.append(f"elementwise relu(2a + b), n = {length} (symbolic n, vectorized, parallel)")
    lines.append(f"  compiled in {compile_s:.2f} s; matches numpy")
    lines.append(f"  minitvm {t_ours * 1e6:8.1f} us")
    lines.append(f"  numpy   {t_np * 1e6:8.1f} us  (ratio {t_np / t_ours:.2f}x)")
    print("\n".join(lines))
    return 0
