"""meta_schedule tuning against the issue's targets, in one run (heavy: minutes).

(1) The course's 128x128 matmul: tune_tir with its stochastic schedule (ScheduleFn, 64 trials)
    and with the default space; tuned vs the naive loops (target >= 5x) and vs our
    DefaultSchedule (target >= 1x), and the tuning wall time (target < 60 s).
(2) GEMM 1024^3: tuned (default space) vs the hand-written register-blocked schedule
    (benchmarks/gemm.py (b)) and the measured FMA peak (target >= 0.85x), found in < 5 min.
(3) ResNet-18 batch 1 (--resnet): tune_relax within a trial budget (about 10 minutes here),
    then the model built with the tuned kernels vs the default build, per layer before/after.

Every kernel is checked against numpy before it is timed. TVM's published tuning times for
the same budgets are printed beside ours for reference (from the TVM/Ansor/MetaSchedule
papers and docs; not measured here).

Usage: python benchmarks/tune.py [--quick] [--resnet] [--trials-gemm 256] [--trials-resnet 400]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
from _common import fma_peak, machine_lines, print_table, set_threads, timeit

import minitvm as tvm
from minitvm import meta_schedule as ms
from minitvm import te

# Published figures (tuning wall time), for context only.
TVM_PUBLISHED = {
    "course matmul, 64 trials": "TVM MetaSchedule ~60-120 s (MLC course, 64 trials on 1 core)",
    "GEMM 1024, 1000 trials": "Ansor ~10-20 min per GEMM task (1000 trials, paper's CPU runs)",
    "ResNet-18, 10 min": "AutoTVM 400-8800 s per task; Ansor/MetaSchedule tens of min to hours",
}


def matmul_mod(n: int) -> tvm.IRModule:
    a = te.placeholder((n, n), name="A")
    b = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return tvm.IRModule({"main": te.create_prim_func([a, b, c])})


def course_space(sch: tvm.tir.Schedule) -> None:
    """The course's stochastic_schedule_mm, written again here (sampled j tile)."""
    block = sch.get_block("C", "main")
    i, j, k = sch.get_loops(block=block)
    j0, j1 = sch.split(loop=j, factors=sch.sample_perfect_tile(loop=j, n=2))
    sch.reorder(i, j0, k, j1)
    sch.decompose_reduction(block, k)


def time_func(func_mod: tvm.IRModule, n: int) -> float:
    """Seconds per call of a matmul module's "main", checked against numpy first."""
    lib = tvm.build(func_mod, target="llvm")
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    args = [tvm.nd.array(a), tvm.nd.array(b), tvm.nd.empty((n, n), "float32")]
    lib["main"](*args)
    np.testing.assert_allclose(args[2].numpy(), a @ b, rtol=1e-3, atol=1e-3 * np.sqrt(n))
    return timeit(lambda: lib["main"](*args))


def default_scheduled(mod: tvm.IRModule) -> tvm.IRModule:
    from minitvm.relax.transform.default_schedule import default_schedule_func

    return tvm.IRModule({"main": default_schedule_func(mod["main"])})


def tune(mod, work_dir, trials, per_iter, space="post-order-apply", target="llvm"):
    start = time.time()
    db = ms.tune_tir(
        mod, target, work_dir, max_trials_global=trials, num_trials_per_iter=per_iter,
        space=space, seed=0,
    )  # fmt: skip
    wall = time.time() - start
    return ms.tir_integration.compile_tir(db, mod, target).mod, wall


def gflops(n: int, secs: float) -> str:
    return f"{2 * n**3 / secs / 1e9:.1f}"


def course(work: str, quick: bool) -> list[list[str]]:
    n, rows = 128, []
    mod = matmul_mod(n)
    naive = time_func(mod, n)
    default = time_func(default_scheduled(mod), n)
    spaces = {"course ScheduleFn": ms.space_generator.ScheduleFn(course_space)}
    spaces["default space"] = "post-order-apply"
    for label, space in spaces.items():
        tuned_mod, wall = tune(mod, os.path.join(work, label.replace(" ", "_")), 64, 64, space,
                               "llvm --num-cores=1")  # fmt: skip
        t = time_func(tuned_mod, n)
        rows.append([f"128^3 {label}", f"{t * 1e6:.1f} us", gflops(n, t),
                     f"{naive / t:.1f}x (>=5)", f"{default / t:.2f}x (>=1)", f"{wall:.0f} s (<60)"])  # fmt: skip
    rows.append(["128^3 naive / default", f"{naive * 1e6:.1f} / {default * 1e6:.1f} us",
                 gflops(n, default), "", "", ""])  # fmt: skip
    return rows


def gemm(work: str, trials: int, threads: int) -> list[list[str]]:
    from minitvm.testing.workloads import gemm_te, schedule_blocked

    n = 1024
    peak = fma_peak(threads)
    A, B, C = gemm_te(te, n, packed=True)
    sch = tvm.tir.Schedule(te.create_prim_func([A, B, C]))
    schedule_blocked(sch, lambda s, name: s.get_block(name))
    hand = time_func(sch.mod, n)
    tuned_mod, wall = tune(matmul_mod(n), os.path.join(work, "gemm1024"), trials, 64)
    t = time_func(tuned_mod, n)
    return [
        ["1024^3 hand-written (b)", f"{hand * 1e3:.2f} ms", gflops(n, hand), "", "", ""],
        ["1024^3 tuned", f"{t * 1e3:.2f} ms", gflops(n, t), f"{hand / t:.2f}x of (b) (>=1)",
         f"{2 * n**3 / t / 1e9 / peak:.2f} of peak {peak:.0f} (>=0.85)", f"{wall:.0f} s (<300)"],
    ]  # fmt: skip


def resnet(work: str, trials: int) -> list[list[str]]:
    from minitvm import relax
    from minitvm.testing import zoo

    mod, params = zoo.get_model("resnet18")
    x = np.random.default_rng(0).standard_normal(zoo.input_shape("resnet18")).astype("float32")
    base = relax.build(relax.transform.BindParams("main", params)(mod), "llvm")
    start = time.time()
    db = ms.relax_integration.tune_relax(
        mod, params, "llvm", os.path.join(work, "resnet18"), trials, seed=0
    )
    wall = time.time() - start
    tuned = ms.relax_integration.compile_relax(db, mod, "llvm", params)
    vm0, vm1 = (relax.VirtualMachine(e, tvm.cpu()) for e in (base, tuned))
    ref, out = (v["main"](tvm.nd.array(x)).numpy() for v in (vm0, vm1))
    np.testing.assert_allclose(out, ref, rtol=1e-3, atol=1e-3)
    t0, t1 = (timeit(lambda v=v: v["main"](tvm.nd.array(x))) for v in (vm0, vm1))
    rows = [["ResNet-18 default build", f"{t0 * 1e3:.2f} ms", "", "", "", ""],
            ["ResNet-18 tuned", f"{t1 * 1e3:.2f} ms", "", f"{t0 / t1:.2f}x (>=1)", "", f"{wall:.0f} s"]]  # fmt: skip
    # per layer: each tuned task's best time against its default-scheduled kernel
    for task in ms.relax_integration.extract_tasks(mod, "llvm", params)[:12]:
        rec = db.query_tuning_record(task.mod, "llvm")
        if rec is None:
            continue
        default = _kernel_time(default_scheduled(task.mod), task)
        rows.append([f"  {task.task_name[:40]} x{task.weight}", f"{default * 1e6:.0f} -> {rec.best_sec * 1e6:.0f} us",
                     f"{task.flops / rec.best_sec / 1e9:.1f}", f"{default / rec.best_sec:.2f}x", "", ""])  # fmt: skip
    return rows


def _kernel_time(mod: tvm.IRModule, task) -> float:
    lib = tvm.build(mod, target="llvm")
    rng = np.random.default_rng(0)
    args = [tvm.nd.array(rng.standard_normal(a.shape).astype(a.dtype))
            for a in ms.ArgInfo.from_entry_func(task.mod)]  # fmt: skip
    return min(lib.time_evaluator("main", tvm.cpu(), number=10, repeat=3)(*args).results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="course targets only")
    parser.add_argument("--resnet", action="store_true", help="also tune ResNet-18 (~10 min)")
    parser.add_argument("--trials-gemm", type=int, default=256)
    parser.add_argument("--trials-resnet", type=int, default=400)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    threads = set_threads(args.threads)
    for line in machine_lines(threads):
        print(line)
    work = tempfile.mkdtemp(prefix="minitvm-bench-tune-")
    rows = course(work, args.quick)
    if not args.quick:
        rows += gemm(work, args.trials_gemm, threads)
    if args.resnet:
        rows += resnet(work, args.trials_resnet)
    print()
    print_table(
        ["case", "time", "GFLOPS", "vs naive / (b)", "vs default / peak", "tuning wall"], rows
    )
    print("\nTVM's published tuning times (not measured here):")
    for case, text in TVM_PUBLISHED.items():
        print(f"  {case}: {text}")
    print(f"work dirs (databases, tuning curves): {work}")


if __name__ == "__main__":
    main()
