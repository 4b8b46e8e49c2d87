"""meta_schedule tuning against the issue's targets, in one run (heavy: minutes).

(1) The course's 128x128 matmul: tune_tir with its stochastic schedule (ScheduleFn, 64 trials)
    and with the default space; tuned vs the naive loops (target >= 5x) and vs our
    DefaultSchedule (target >= 1x), and the tuning wall time (target < 60 s).
(2) GEMM 1024^3: tuned (default space) vs the hand-written register-blocked schedule
    (benchmarks/gemm.py (b)) and the measured FMA peak (target >= 0.85x), found in < 5 min.
(3) ResNet-18 batch 1: tune_relax within a wall-time budget (default 10 minutes, all of
    tuning included), then the model built with the tuned kernels vs the default build, and
    per layer (kernel) its default and tuned times, fractions of the FMA peak and trials.

Every kernel is checked against numpy (the model against the default build) before it is
timed; the times compared in one table are taken interleaved (rounds over all of them, min per
kernel), so a slow spell of the machine hits them alike. TVM's published tuning times for the
same budgets are printed beside ours for reference (not measured here).

Usage: python benchmarks/tune.py [--cases course,gemm,resnet] [--trials-gemm 128]
                                 [--resnet-minutes 10]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
from _common import fma_peak, machine_lines, print_table, set_threads

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


def matmul_call(func_mod: tvm.IRModule, n: int):
    """A call of a matmul module's "main" on fixed inputs, checked against numpy first."""
    lib = tvm.build(func_mod, target="llvm")
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    args = [tvm.nd.array(a), tvm.nd.array(b), tvm.nd.empty((n, n), "float32")]
    lib["main"](*args)
    np.testing.assert_allclose(args[2].numpy(), a @ b, rtol=1e-3, atol=1e-3 * np.sqrt(n))
    return lambda: lib["main"](*args)


def interleaved(calls: dict, rounds: int = 7, min_sample: float = 0.01) -> dict:
    """Seconds per call of each of `calls`, timed in `rounds` rounds over all of them (each
    sample about `min_sample` long); the minimum per call."""
    numbers = {}
    for key, fn in calls.items():
        fn()
        start = time.perf_counter()
        fn()
        numbers[key] = max(1, int(min_sample / max(time.perf_counter() - start, 1e-9)))
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(rounds):
        for key, fn in calls.items():
            start = time.perf_counter()
            for _ in range(numbers[key]):
                fn()
            best[key] = min(best[key], (time.perf_counter() - start) / numbers[key])
    return best


def default_scheduled(mod: tvm.IRModule) -> tvm.IRModule:
    from minitvm.relax.transform.default_schedule import default_schedule_func

    return tvm.IRModule({"main": default_schedule_func(mod["main"])})


def tune(mod, work_dir, trials, per_iter, space="post-order-apply", target="llvm"):
    start = time.time()
    db = ms.tune_tir(
        mod, target, work_dir, max_trials_global=trials, num_trials_per_iter=per_iter,
        space=space, seed=0, verbose=False,
    )  # fmt: skip
    wall = time.time() - start
    return ms.tir_integration.compile_tir(db, mod, target).mod, wall, _phases(work_dir)


def _phases(work_dir: str) -> str:
    """Where the tuning time went (search / build / run / re-measure), from its curve."""
    import json

    with open(os.path.join(work_dir, "tuning_curve.json")) as f:
        last = json.load(f)[-1]
    keys = ("search", "build", "run", "remeasure")
    return " / ".join(f"{last.get(k + '_s', 0):.0f}" for k in keys) + " s"


def peak_gflops(threads: int) -> float:
    """The FMA peak, the better of two measurements (one in a slow spell reads low)."""
    return max(fma_peak(threads), fma_peak(threads))


def gflops(n: int, secs: float) -> str:
    return f"{2 * n**3 / secs / 1e9:.1f}"


def course(work: str) -> list[list[str]]:
    n, rows = 128, []
    mod = matmul_mod(n)
    spaces = {"course ScheduleFn": ms.space_generator.ScheduleFn(course_space)}
    spaces["default space"] = "post-order-apply"
    calls = {"naive": matmul_call(mod, n), "default": matmul_call(default_scheduled(mod), n)}
    walls = {}
    for label, space in spaces.items():
        tuned_mod, wall, phases = tune(mod, os.path.join(work, label.replace(" ", "_")), 64, 64,
                                       space, "llvm --num-cores=1")  # fmt: skip
        calls[label] = matmul_call(tuned_mod, n)
        walls[label] = (wall, phases)
    t = interleaved(calls)
    for label in spaces:
        rows.append([f"128^3 {label}", f"{t[label] * 1e6:.1f} us", gflops(n, t[label]),
                     f"{t['naive'] / t[label]:.1f}x naive (>=5)",
                     f"{t['default'] / t[label]:.2f}x default (>=1)",
                     f"{walls[label][0]:.0f} s (<60); {walls[label][1]}"])  # fmt: skip
    rows.append(["128^3 naive / default", f"{t['naive'] * 1e6:.1f} / {t['default'] * 1e6:.1f} us",
                 gflops(n, t["default"]), "", "", ""])  # fmt: skip
    return rows


def gemm(work: str, trials: int, threads: int) -> list[list[str]]:
    from minitvm.testing.workloads import gemm_te, schedule_blocked

    n = 1024
    A, B, C = gemm_te(te, n, packed=True)
    sch = tvm.tir.Schedule(te.create_prim_func([A, B, C]))
    schedule_blocked(sch, lambda s, name: s.get_block(name))
    tuned_mod, wall, phases = tune(matmul_mod(n), os.path.join(work, "gemm1024"), trials, 64)
    t = interleaved({"hand": matmul_call(sch.mod, n), "tuned": matmul_call(tuned_mod, n)})
    hand, tuned = t["hand"], t["tuned"]
    peak = peak_gflops(threads)
    return [
        ["1024^3 hand-written (b)", f"{hand * 1e3:.2f} ms", gflops(n, hand), "", "", ""],
        [f"1024^3 tuned ({trials} trials)", f"{tuned * 1e3:.2f} ms", gflops(n, tuned),
         f"{hand / tuned:.2f}x of (b) (>=1)",
         f"{2 * n**3 / tuned / 1e9 / peak:.2f} of peak {peak:.0f} (>=0.85)",
         f"{wall:.0f} s (<300); {phases}"],
    ]  # fmt: skip


def resnet(work: str, minutes: float, threads: int) -> list[list[str]]:
    from minitvm import relax
    from minitvm.testing import zoo

    mod, params = zoo.get_model("resnet18")
    x = np.random.default_rng(0).standard_normal(zoo.input_shape("resnet18")).astype("float32")
    base = relax.build(relax.transform.BindParams("main", params)(mod), "llvm")
    work_dir = os.path.join(work, "resnet18")
    start = time.time()
    db = ms.relax_integration.tune_relax(
        mod, params, "llvm", work_dir, 100_000, num_trials_per_iter=16, seed=0, verbose=False,
        max_seconds=minutes * 60,
    )  # fmt: skip
    wall = time.time() - start
    tuned = ms.relax_integration.compile_relax(db, mod, "llvm", params)
    vm0, vm1 = (relax.VirtualMachine(e, tvm.cpu()) for e in (base, tuned))
    ref, out = (v["main"](tvm.nd.array(x)).numpy() for v in (vm0, vm1))
    np.testing.assert_allclose(out, ref, rtol=1e-3, atol=1e-3)
    xs = tvm.nd.array(x)
    t = interleaved({"default": lambda: vm0["main"](xs), "tuned": lambda: vm1["main"](xs)})
    trials = len(db.get_all_tuning_records())
    rows = [["ResNet-18 default build", f"{t['default'] * 1e3:.2f} ms", "", "", "", ""],
            [f"ResNet-18 tuned ({trials} trials)", f"{t['tuned'] * 1e3:.2f} ms", "",
             f"{t['default'] / t['tuned']:.2f}x default (>=1)", "",
             f"{wall:.0f} s (budget {minutes * 60:.0f}); {_phases(work_dir)}"]]  # fmt: skip
    return rows + _per_layer(db, mod, params, peak_gflops(threads), (vm0, vm1))


def _per_layer(db, mod, params, peak: float, vms) -> list[list[str]]:
    """Each task (kernel) timed inside the two models by the VM's profiler (rounds of both,
    interleaved; min per kernel): its default and tuned time per run, fractions of the peak,
    trials spent, and "default kept" where tuning kept the default schedule (the same code in
    both models: the difference is the profile's noise). In the model a layer finds its
    weights evicted by the other layers, which a kernel timed alone and warm does not.
    Kernels furthest from the peak first."""
    x = tvm.nd.array(np.random.default_rng(0).standard_normal(zoo_input()).astype("float32"))
    best: list[dict] = [{}, {}]
    for _ in range(10):
        for side, vm in enumerate(vms):
            for name, _calls, secs in vm.profile("main", x, number=10).rows:
                best[side][name] = min(best[side].get(name, float("inf")), secs / 10)
    rows, total, timed = [], [0.0, 0.0], []
    for task in ms.relax_integration.extract_tasks(mod, "llvm", params):
        t = [best[side].get(task.task_name) for side in (0, 1)]
        if t[0] is None or t[1] is None:
            rows.append([f"  {task.task_name[:44]}", "not in the profile", "", "", "", ""])
            continue
        workload = db._find(task.mod)
        n = sum(1 for r in db.get_all_tuning_records() if r.workload is workload)
        picked = db.query_tuning_record(task.mod, "llvm")
        kept = picked is None or not any(
            i.kind.name.startswith("Sample") for i in picked.trace.insts
        )
        total = [total[0] + t[0], total[1] + t[1]]
        timed.append((task, f"{n} trials{', default kept' if kept else ''}", t))
    timed.sort(key=lambda x: x[0].flops * x[0].weight / x[2][0] / 1e9 / peak)
    for task, n, t in timed:
        frac = [task.flops * task.weight / s / 1e9 / peak for s in t]
        rows.append([f"  {task.task_name[:44]} x{task.weight}",
                     f"{t[0] * 1e6:.0f} -> {t[1] * 1e6:.0f} us",
                     f"{task.flops * task.weight / t[1] / 1e9:.1f}",
                     f"{t[0] / t[1]:.2f}x ({n})",
                     f"{frac[0]:.2f} -> {frac[1]:.2f} of peak", ""])  # fmt: skip
    both = f"{total[0] * 1e3:.2f} -> {total[1] * 1e3:.2f} ms"
    rows.append(
        ["  sum of kernels (in the model)", both, "", f"{total[0] / total[1]:.2f}x", "", ""]
    )
    return rows


def zoo_input() -> tuple:
    from minitvm.testing import zoo

    return zoo.input_shape("resnet18")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="course,gemm,resnet",
                        help="comma-separated: course, gemm, resnet")  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="the course case only")
    parser.add_argument("--trials-gemm", type=int, default=128)
    parser.add_argument("--resnet-minutes", type=float, default=10.0)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    cases = {"course"} if args.quick else set(args.cases.split(","))
    threads = set_threads(args.threads)
    for line in machine_lines(threads):
        print(line)
    work = tempfile.mkdtemp(prefix="minitvm-bench-tune-")
    start = time.time()
    rows = []
    if "course" in cases:
        rows += course(work)
    if "gemm" in cases:
        rows += gemm(work, args.trials_gemm, threads)
    if "resnet" in cases:
        rows += resnet(work, args.resnet_minutes, threads)
    print()
    print_table(
        ["case", "time", "GFLOPS", "vs naive / (b) / default", "vs default / peak",
         "tuning wall; search / build / run / re-measure"], rows,
    )  # fmt: skip
    print(f"\nbenchmark wall time: {time.time() - start:.0f} s")
    print("TVM's published tuning times (not measured here):")
    for case, text in TVM_PUBLISHED.items():
        print(f"  {case}: {text}")
    print(f"work dirs (databases, tuning curves): {work}")


if __name__ == "__main__":
    main()
