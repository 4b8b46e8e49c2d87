"""fp32 GEMM C = A·B: minitvm schedules vs numpy (and TVM 0.27 when installed), same run.

(a) the classic dlsys schedule: tile 32x32, split k by 4, reorder, vectorize inner j, parallel i.
(b) our best schedule with the same primitives: B packed by a layout stage into (n/32, n, 32)
    panels, an 8x32 register tile accumulated through cache_write("local"), k unrolled by 4,
    32 lanes vectorized; column panels outermost and in parallel, so each packed panel stays
    in L2 while the row blocks of A stream past it.
(c) TVM's own builds of (a) and (b) — the fair test of our code generator.

Usage: python benchmarks/gemm.py [--sizes 256 512 1024 2048] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from minitvm.testing.workloads import gemm_te, schedule_blocked, schedule_classic

SCHEDULES = {"a": schedule_classic, "b": schedule_blocked}


def build_minitvm(n, which):
    import minitvm as tvm
    from minitvm import te

    A, B, C = gemm_te(te, n, packed=(which == "b"))
    sch = tvm.tir.Schedule(te.create_prim_func([A, B, C]))
    SCHEDULES[which](sch, lambda s, name: s.get_block(name))
    f = tvm.build(sch.mod, target="llvm")
    cache = {}

    def run(a, b, c):  # 64-byte-aligned NDArrays, as TVM's own tensors are
        key = (id(a), id(b), id(c))
        if key not in cache:
            cache.clear()
            cache[key] = tuple(tvm.nd.array(x) for x in (a, b, c))
        f(*cache[key])

    run.result = lambda: next(iter(cache.values()))[2].numpy()
    return run


def build_tvm(n, which):
    import tvm
    import tvm.s_tir
    from tvm import te

    A, B, C = gemm_te(te, n, packed=(which == "b"))
    sch = tvm.s_tir.Schedule(te.create_prim_func([A, B, C]))
    SCHEDULES[which](sch, lambda s, name: s.get_sblock(name))
    target = {"kind": "llvm", "mcpu": _llvm_cpu(), "num-cores": os.cpu_count()}
    f = tvm.compile(sch.mod, target=target)["main"]
    dev = tvm.cpu()
    wrap = lambda x: tvm.runtime.tensor(x, dev)  # noqa: E731
    cache = {}

    def run(a, b, c):
        key = (id(a), id(b), id(c))
        if key not in cache:
            cache.clear()
            cache[key] = (wrap(a), wrap(b), wrap(c), c)
        ta, tb, tc, _ = cache[key]
        f(ta, tb, tc)

    run.result = lambda: next(iter(cache.values()))[2].numpy()
    return run


def _llvm_cpu():
    import llvmlite.binding as llvm

    return llvm.get_host_cpu_name()


def timeit(fn, min_time=0.3, repeat=5):
    fn()
    times = []
    for _ in range(repeat):
        number, start = 0, time.perf_counter()
        while True:
            fn()
            number += 1
            elapsed = time.perf_counter() - start
            if elapsed > min_time / repeat:
                break
        times.append(elapsed / number)
    return float(np.median(times))


def blas_info():
    try:
        from threadpoolctl import threadpool_info

        infos = [i for i in threadpool_info() if i.get("user_api") == "blas"]
        return ", ".join(
            f"{i['internal_api']} {i.get('version')} kernel={i.get('architecture')} "
            f"threads={i.get('num_threads')}"
            for i in infos
        ) or "unknown"
    except ImportError:
        return "unknown (pip install threadpoolctl)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024, 2048])
    parser.add_argument("--threads", type=int, default=None, help="minitvm pool size")
    parser.add_argument("--no-tvm", action="store_true")
    args = parser.parse_args()
    if args.threads:
        from minitvm.runtime import threadpool

        threadpool.set_num_threads(args.threads)
    try:
        import tvm  # noqa: F401

        have_tvm = not args.no_tvm
    except ImportError:
        have_tvm = False
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"llvm cpu {_llvm_cpu()}")
    print(f"numpy {np.__version__} BLAS: {blas_info()}")
    from minitvm.runtime import threadpool

    print(f"minitvm threads: {threadpool.num_threads()}")
    cols = ["numpy", "ours(a)", "ours(b)"] + (["tvm(a)", "tvm(b)"] if have_tvm else [])
    print(f"{'n':>6} " + " ".join(f"{c:>9}" for c in cols) + "   GFLOPS;  b/numpy  b/tvm(b)  a/tvm(a)")
    rng = np.random.default_rng(0)
    for n in args.sizes:
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        c = np.zeros((n, n), np.float32)
        ref = a @ b
        results = {"numpy": timeit(lambda: a @ b)}
        builders = {"ours(a)": (build_minitvm, "a"), "ours(b)": (build_minitvm, "b")}
        if have_tvm:
            builders.update({"tvm(a)": (build_tvm, "a"), "tvm(b)": (build_tvm, "b")})
        for name, (builder, which) in builders.items():
            f = builder(n, which)
            c[:] = 0
            f(a, b, c)
            got = f.result() if hasattr(f, "result") else c
            np.testing.assert_allclose(got, ref, rtol=1e-3, atol=1e-2 * np.sqrt(n))
            results[name] = timeit(lambda: f(a, b, c))
        gf = {k: 2 * n**3 / t / 1e9 for k, t in results.items()}
        line = f"{n:>6} " + " ".join(f"{gf[c]:9.1f}" for c in cols)
        line += f"   {gf['ours(b)'] / gf['numpy']:7.2f}x"
        if have_tvm:
            line += f"  {gf['ours(b)'] / gf['tvm(b)']:7.2f}x  {gf['ours(a)'] / gf['tvm(a)']:7.2f}x"
        print(line, flush=True)


if __name__ == "__main__":
    main()
