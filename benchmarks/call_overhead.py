"""Time the cost of calling compiled code from Python, and of launching a parallel region.

1. A 3-argument kernel C = A + B on 4 elements, called through the checked wrapper with
   tvm.nd arrays and with numpy arrays, against numpy's `np.add(a, b, out=c)`.
2. An empty parallel region (`minitvm_parallel_for` over one task per pool thread), timed
   back to back (workers spinning) and after a pause (workers asleep on the futex).

Run: python benchmarks/call_overhead.py
"""

from __future__ import annotations

import time

import numpy as np

from minitvm.runtime import CodegenResult, Module, cpu, threadpool
from minitvm.runtime import ndarray as nd
from minitvm.runtime.meta import signature_llvm_ir
from minitvm.target import compile_llvm_ir

IR = r"""
declare i32 @minitvm_parallel_for(ptr, ptr, i32)

define i32 @add(ptr noalias %args, ptr noalias %scalars) {
entry:
  %n = load i64, ptr %scalars
  %pa = load ptr, ptr %args
  %pb.addr = getelementptr ptr, ptr %args, i64 1
  %pb = load ptr, ptr %pb.addr
  %pc.addr = getelementptr ptr, ptr %args, i64 2
  %pc = load ptr, ptr %pc.addr
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i.next, %body]
  %more = icmp slt i64 %i, %n
  br i1 %more, label %body, label %exit
body:
  %a.addr = getelementptr float, ptr %pa, i64 %i
  %b.addr = getelementptr float, ptr %pb, i64 %i
  %c.addr = getelementptr float, ptr %pc, i64 %i
  %a = load float, ptr %a.addr
  %b = load float, ptr %b.addr
  %sum = fadd float %a, %b
  store float %sum, ptr %c.addr
  %i.next = add i64 %i, 1
  br label %loop
exit:
  ret i32 0
}

define internal void @empty_task(ptr %closure, i32 %id, i32 %n) {
  ret void
}

define i32 @empty_parallel(ptr noalias %args, ptr noalias %scalars) {
  %r = call i32 @minitvm_parallel_for(ptr @empty_task, ptr null, i32 0)
  ret i32 %r
}

; each task: `scalars[0]` volatile increments (~1 ns each); num_tasks = scalars[1]
define internal void @spin_task(ptr %scalars, i32 %id, i32 %n) {
entry:
  %count = load i64, ptr %scalars
  %counter = alloca i64
  store volatile i64 0, ptr %counter
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i.next, %body]
  %more = icmp slt i64 %i, %count
  br i1 %more, label %body, label %done
body:
  %c = load volatile i64, ptr %counter
  %c1 = add i64 %c, 1
  store volatile i64 %c1, ptr %counter
  %i.next = add i64 %i, 1
  br label %loop
done:
  ret void
}

define i32 @spin_parallel(ptr noalias %args, ptr noalias %scalars) {
  %nt.addr = getelementptr i64, ptr %scalars, i64 1
  %nt64 = load i64, ptr %nt.addr
  %nt = trunc i64 %nt64 to i32
  %r = call i32 @minitvm_parallel_for(ptr @spin_task, ptr %scalars, i32 %nt)
  ret i32 %r
}

define i32 @noop(ptr noalias %args, ptr noalias %scalars) {
  ret i32 0
}
"""

VEC = {"kind": "buffer", "dtype": "float32", "shape": ["n"]}
INFOS = (
    {
        "name": "add",
        "params": [dict(VEC, name=name) for name in "ABC"],
        "sym_vars": [{"name": "n", "dtype": "int32", "param": 0, "dim": 0}],
    },
    {"name": "empty_parallel", "params": [], "sym_vars": []},
    {"name": "noop", "params": [], "sym_vars": []},
    {
        "name": "spin_parallel",
        "params": [
            {"name": "count", "kind": "scalar", "dtype": "int64"},
            {"name": "num_tasks", "kind": "scalar", "dtype": "int32"},
        ],
        "sym_vars": [],
    },
)


def per_call_us(f, *args, number: int = 200_000, repeat: int = 5) -> float:
    """Best-of-`repeat` mean time of f(*args) in microseconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            f(*args)
        best = min(best, (time.perf_counter() - start) / number)
    return best * 1e6


def main() -> None:
    optimised, obj = compile_llvm_ir(IR + signature_llvm_ir(INFOS), "llvm")
    mod = Module(CodegenResult(obj, optimised, INFOS, "llvm"))
    add = mod["add"]
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(4).astype("float32"), rng.standard_normal(4).astype("float32")
    c = np.empty(4, "float32")
    A, B, C = nd.array(a), nd.array(b), nd.empty(4)
    add(A, B, C)
    np.testing.assert_allclose(C.numpy(), a + b)

    numpy_us = per_call_us(lambda x, y, z: np.add(x, y, out=z), a, b, c)
    ufunc_us = per_call_us(np.add, a, b, c)
    nd_us = per_call_us(add, A, B, C)
    np_us = per_call_us(add, a, b, c)
    noop_us = per_call_us(mod["noop"])
    print("call overhead, C = A + B on 4 float32 elements (best of 5, us per call)")
    print(f"  np.add(a, b, c)                    {ufunc_us:7.3f}")
    print(f"  lambda: np.add(a, b, out=c)        {numpy_us:7.3f}")
    print(
        f"  mod['add'](A, B, C)  tvm.nd arrays {nd_us:7.3f}   ratio to np.add {nd_us / ufunc_us:5.2f}x"
    )
    print(
        f"  mod['add'](a, b, c)  numpy arrays  {np_us:7.3f}   ratio to np.add {np_us / ufunc_us:5.2f}x"
    )
    print(f"  mod['noop']()        no arguments  {noop_us:7.3f}")

    n = threadpool.num_threads()
    timer = mod.time_evaluator("empty_parallel", cpu(0), number=20_000, repeat=5)
    base = mod.time_evaluator("noop", cpu(0), number=20_000, repeat=5)
    hot = (timer().min - base().min) * 1e6
    empty = mod["empty_parallel"]
    cold = []
    for _ in range(50):
        time.sleep(0.005)  # workers give up spinning (~0.2 ms) and sleep on the futex
        start = time.perf_counter()
        empty()
        cold.append(time.perf_counter() - start)
    cold_us = float(np.median(cold)) * 1e6 - noop_us
    print(f"empty parallel region on {n} threads (us per launch)")
    print(f"  back to back (workers spinning)    {hot:7.3f}")
    print(f"  after 5 ms idle (workers asleep)   {cold_us:7.3f}  (median of 50)")

    spin = mod.time_evaluator("spin_parallel", cpu(0), number=2000, repeat=5)
    count = 20_000
    one = spin(count, 1).min * 1e6
    two = spin(count, 2).min * 1e6
    print(f"{n} tasks of {one:.1f} us each (busy loops), back to back (us per launch)")
    print(f"  1 task on the caller               {one:7.2f}")
    print(f"  2 tasks on the pool                {two:7.2f}   overhead {two - one:6.2f}")


if __name__ == "__main__":
    main()
