"""Schedule state, lookups, random variables and the replayable trace."""

import pytest
from sched_workloads import build_and_run, chain, matmul

from minitvm import tir
from minitvm.error import ScheduleError
from minitvm.ir import IRModule, structural_equal


def test_schedule_accepts_primfunc_and_module():
    func = matmul().func()
    sch = tir.Schedule(func)
    assert isinstance(sch.mod, IRModule) and "main" in sch.mod
    sch2 = tir.Schedule(IRModule({"main": func}))
    assert structural_equal(sch2.mod["main"], func)


def test_unknown_block_lists_the_blocks():
    sch = tir.Schedule(chain().func())
    with pytest.raises(
        ScheduleError, match=r"no block named 'E' in function 'main'; blocks are: \['B', 'C', 'D'\]"
    ):
        sch.get_block("E")


def test_get_returns_current_nodes_and_child_blocks():
    sch = tir.Schedule(chain().func())
    d = sch.get_block("D")
    i, j = sch.get_loops(d)
    assert sch.get(d).name_hint == "D" and sch.get(i).loop_var.name == "i"
    sch.compute_at(sch.get_block("C"), i)
    children = [sch.get(b).name_hint for b in sch.get_child_blocks(i)]
    assert children == ["C", "D"]
    assert [sch.get(b).name_hint for b in sch.get_producers(d)] == ["C"]
    assert [sch.get(b).name_hint for b in sch.get_consumers(sch.get_block("B"))] == ["C"]


def test_schedule_does_not_mutate_input():
    func = matmul().func()
    sch = tir.Schedule(func)
    i, _, _ = sch.get_loops(sch.get_block("C"))
    sch.split(i, [None, 4])
    assert not structural_equal(sch.mod["main"], func)
    assert structural_equal(tir.Schedule(func).mod["main"], func)


def test_copy_is_independent():
    sch = tir.Schedule(matmul().func())
    b = sch.get_block("C")
    i, _, _ = sch.get_loops(b)
    other = sch.copy()
    sch.split(i, [None, 4])
    assert len(other.get_loops(b)) == 3 and len(sch.get_loops(b)) == 4


def test_trace_prints_python_with_rv_names():
    sch = tir.Schedule(matmul().func())
    b = sch.get_block("C")
    i, j, k = sch.get_loops(b)
    i0, i1 = sch.split(i, factors=[None, 4])
    sch.reorder(i0, j, i1)
    sch.parallel(i0)
    lines = str(sch.trace).splitlines()[1:]
    assert lines == [  # TVM's printed form: a function of the schedule, two-space indent
        "def apply_trace(sch: tir.Schedule) -> None:",
        '  b0 = sch.get_block(name="C", func_name="main")',
        "  l1, l2, l3 = sch.get_loops(block=b0)",
        "  l4, l5 = sch.split(loop=l1, factors=[None, 4], preserve_unit_iters=True,"
        " disable_predication=False)",
        "  sch.reorder(l4, l2, l5)",
        "  sch.parallel(loop=l4)",
    ]


def test_trace_replays_on_a_fresh_schedule():
    wl = matmul()
    sch = tir.Schedule(wl.func())
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, [None, 4])
    cw = sch.cache_write(c, 0, "local")
    sch.reverse_compute_at(cw, i0)
    init = sch.decompose_reduction(c, sch.get_loops(c)[1])
    sch.vectorize(sch.get_loops(init)[-1])
    fresh = tir.Schedule(wl.func())
    sch.trace.apply_to_schedule(fresh)
    assert structural_equal(fresh.mod["main"], sch.mod["main"])
    assert str(fresh.trace) == str(sch.trace)
    build_and_run(fresh, wl)


def test_trace_text_is_executable_python():
    wl = chain()
    sch = tir.Schedule(wl.func())
    d = sch.get_block("D")
    i, j = sch.get_loops(d)
    sch.compute_at(sch.get_block("C"), i)
    sch.compute_inline(sch.get_block("B"))
    sch.annotate(d, ann_key="note", ann_val="x")
    fresh = tir.Schedule(wl.func())
    exec("\n".join(sch.trace.as_python()), {"sch": fresh})
    assert structural_equal(fresh.mod["main"], sch.mod["main"])


def test_work_on_and_multi_function_modules():
    mod = IRModule({"mm": matmul().func(), "ew": chain().func()})
    sch = tir.Schedule(mod)
    with pytest.raises(ScheduleError, match=r"several PrimFuncs; pass func_name="):
        sch.get_block("C")
    sch.work_on("ew")
    (i, j) = sch.get_loops(sch.get_block("D"))
    sch.parallel(i)
    c = sch.get_block("C", func_name="mm")
    assert len(sch.get_loops(c)) == 3
    with pytest.raises(ScheduleError, match=r"work_on: no PrimFunc named 'nope'"):
        sch.work_on("nope")


def test_wrong_rv_kinds_raise():
    sch = tir.Schedule(matmul().func())
    b = sch.get_block("C")
    with pytest.raises(ScheduleError, match=r"expected a LoopRV"):
        sch.parallel(b)
    i, _, _ = sch.get_loops(b)
    with pytest.raises(ScheduleError, match=r"expected a BlockRV"):
        sch.compute_inline(i)


def test_mlc_course_mm_relu_from_tvmscript():
    import numpy as np

    from minitvm.driver import build
    from minitvm.runtime.ndarray import array
    from minitvm.script import ir as I
    from minitvm.script import tir as T

    @I.ir_module
    class MyModule:
        @T.prim_func
        def mm_relu(
            A: T.Buffer((32, 32), "float32"),
            B: T.Buffer((32, 32), "float32"),
            C: T.Buffer((32, 32), "float32"),
        ):
            T.func_attr({"global_symbol": "mm_relu", "tir.noalias": True})
            Y = T.alloc_buffer((32, 32), dtype="float32")
            for i, j, k in T.grid(32, 32, 32):
                with T.block("Y"):
                    vi = T.axis.spatial(32, i)
                    vj = T.axis.spatial(32, j)
                    vk = T.axis.reduce(32, k)
                    with T.init():
                        Y[vi, vj] = T.float32(0)
                    Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
            for i, j in T.grid(32, 32):
                with T.block("C"):
                    vi = T.axis.spatial(32, i)
                    vj = T.axis.spatial(32, j)
                    C[vi, vj] = T.max(Y[vi, vj], T.float32(0))

    sch = tir.Schedule(MyModule)
    block_y = sch.get_block("Y", func_name="mm_relu")
    i, j, k = sch.get_loops(block_y)
    j0, j1 = sch.split(j, factors=[None, 4])
    sch.reorder(j0, k, j1)
    sch.reverse_compute_at(sch.get_block("C", "mm_relu"), j0)
    sch.decompose_reduction(block_y, k)
    text = sch.mod.script()
    assert 'T.block("Y_init")' in text and "for ax0 in range(4)" in text
    rt = build(sch.mod, target="llvm")
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((32, 32)).astype("float32") for _ in range(2))
    c = array(np.zeros((32, 32), "float32"))
    rt["mm_relu"](array(a), array(b), c)
    np.testing.assert_allclose(c.numpy(), np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)


def test_annotate_with_a_sampled_value_stores_the_value():
    """A sampled ExprRV as annotation value: the IR holds its int, the trace the variable."""
    import minitvm as tvm
    from minitvm import te

    a = te.placeholder((64,), name="A")
    b = te.compute((64,), lambda i: a[i] * 2, name="B")
    mod = tvm.IRModule({"main": te.create_prim_func([a, b])})
    sch = tvm.tir.Schedule(mod, seed=3)
    v = sch.sample_categorical([16, 64], [0.5, 0.5])
    sch.annotate(sch.get_block("B"), "meta_schedule.unroll_explicit", v)
    stored = sch.get(sch.get_block("B")).annotations["meta_schedule.unroll_explicit"]
    assert int(stored) == sch.get(v) and int(stored) in (16, 64)
    assert "ann_val=v" in str(sch.trace)
    replay = tvm.tir.Schedule(mod)
    sch.trace.apply_to_schedule(replay, remove_postproc=False)
    tvm.ir.assert_structural_equal(sch.mod, replay.mod)
