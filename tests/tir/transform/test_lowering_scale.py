"""Parsing, lowering and printing take time linear in the number of loops (issue 10, item 14)."""

import time

from minitvm.script import from_source
from minitvm.tir.transform.pipeline import lower_primfunc


def _many_loops(n):
    lines = ["@T.prim_func", f'def f(A: T.Buffer(({n}, 4), "float32")):']
    for k in range(n):
        lines.append("    for i in range(4):")
        lines.append(f"        A[{k}, i] = A[{k}, i] + T.float32({k})")
    return "\n".join(lines)


def _cpu_seconds(n):
    """Best of two CPU-time measurements (other processes share the machine)."""
    src = _many_loops(n)
    best = float("inf")
    for _ in range(2):
        start = time.process_time()
        func = from_source(src)
        lower_primfunc(func)
        func.script()
        best = min(best, time.process_time() - start)
    return best


def test_four_times_the_loops_takes_about_four_times_as_long():
    small, large = _cpu_seconds(100), _cpu_seconds(400)
    # linear gives 4x; the quadratic behaviour this guards against gave 16x
    assert large < 8 * small, (small, large)
