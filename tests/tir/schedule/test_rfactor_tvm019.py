"""rfactor and decompose_reduction on the forms TVM v0.19 accepts or refuses: the rfactor block
in a copy of the loop nest, a `let` update, a whole-reduction rfactor (no init left), a unit
rfactor loop, annotations, thread bindings. Every accepted form runs against the original
program on random data; every refusal names the cause."""

import pytest
from sched_workloads import same_numbers

from minitvm import tir
from minitvm.error import ScheduleError
from minitvm.script import tir as T


def _same_numbers(before, after, seed=0):
    same_numbers(before, after, seed, tol=1e-4)


@T.prim_func
def dot_rows(
    X: T.Buffer((6, 24), "float32"), Y: T.Buffer((6, 24), "float32"), Z: T.Buffer((6,), "float32")
):
    for r, c in T.grid(6, 24):
        with T.block("dot"):
            vr, vc = T.axis.remap("SR", [r, c])
            with T.init():
                Z[vr] = T.float32(0)
            Z[vr] = Z[vr] + X[vr, vc] * Y[vr, vc]


@T.prim_func
def dot_rows_let(
    X: T.Buffer((6, 24), "float32"), Y: T.Buffer((6, 24), "float32"), Z: T.Buffer((6,), "float32")
):
    for r, c in T.grid(6, 24):
        with T.block("dot"):
            vr, vc = T.axis.remap("SR", [r, c])
            with T.init():
                Z[vr] = T.float32(0)
            acc: T.float32 = Z[vr] + X[vr, vc] * Y[vr, vc]
            Z[vr] = acc


@T.prim_func
def total(X: T.Buffer((40,), "float32"), S: T.Buffer((), "float32")):
    for c in range(40):
        with T.block("total"):
            vc = T.axis.reduce(40, c)
            with T.init():
                S[()] = T.float32(0)
            S[()] = S[()] + X[vc]


@T.prim_func
def peak_with_tag(X: T.Buffer((5, 12), "float32"), P: T.Buffer((5,), "float32")):
    for r, c in T.grid(5, 12):
        with T.block("peak"):
            vr, vc = T.axis.remap("SR", [r, c])
            T.block_attr({"my_tag": 7})
            with T.init():
                P[vr] = T.float32(-1e30)
            P[vr] = T.max(P[vr], X[vr, vc])


@T.prim_func
def two_reductions(
    X: T.Buffer((4, 8), "float32"), P: T.Buffer((4,), "float32"), Q: T.Buffer((4,), "float32")
):
    for r in range(4):
        for c in range(8):
            with T.block("P"):
                vr, vc = T.axis.remap("SR", [r, c])
                with T.init():
                    P[vr] = T.float32(0)
                P[vr] = P[vr] + X[vr, vc]
        for c in range(8):
            with T.block("Q"):
                vr, vc = T.axis.remap("SR", [r, c])
                with T.init():
                    Q[vr] = T.float32(0)
                Q[vr] = Q[vr] + X[vr, vc] * P[vr]


@T.prim_func
def partial_consumer(X: T.Buffer((8, 8), "float32"), W: T.Buffer((16,), "float32")):
    S = T.alloc_buffer((16,), "float32")
    for r, c in T.grid(8, 8):
        with T.block("S"):
            vr, vc = T.axis.remap("SR", [r, c])
            with T.init():
                S[vr] = T.float32(0)
            S[vr] = S[vr] + X[vr, vc]
    for r in range(16):
        with T.block("W"):
            vr = T.axis.spatial(16, r)
            W[vr] = S[vr]  # reads 16 rows, 8 are produced: not a stage pipeline


@T.prim_func
def parallel_reduction(X: T.Buffer((4, 8), "float32"), P: T.Buffer((4,), "float32")):
    for r in range(4):
        for c in T.parallel(8):
            with T.block("P"):
                vr, vc = T.axis.remap("SR", [r, c])
                with T.init():
                    P[vr] = T.float32(0)
                P[vr] = P[vr] + X[vr, vc]


@T.prim_func
def thread_rows(X: T.Buffer((8, 6), "float32"), P: T.Buffer((8,), "float32")):
    for t in T.thread_binding(8, thread="threadIdx.x"):
        for c in range(6):
            with T.block("P"):
                vr, vc = T.axis.remap("SR", [t, c])
                with T.init():
                    P[vr] = T.float32(0)
                P[vr] = P[vr] + X[vr, vc]


def _iter_names(block):
    return [
        (iv.var.name, "R" if iv.iter_type == tir.IterVar.CommReduce else "S")
        for iv in block.iter_vars
    ]


def test_rfactor_block_lists_the_rfactor_iterator_first_and_keeps_its_nest():
    sch = tir.Schedule(dot_rows)
    r, c = sch.get_loops(sch.get_block("dot"))
    co, ci = sch.split(c, [None, 4])
    rf = sch.rfactor(ci, 0)
    assert _iter_names(sch.get(rf)) == [("vc_1", "S"), ("vr", "S"), ("vc_0", "R")]
    assert len(sch.get_loops(rf)) == 3  # a copy of the whole nest
    wb = sch.get(sch.get_block("dot"))
    assert _iter_names(wb) == [("vc_1", "R"), ("vr", "S")]
    assert [sch.get(lp).loop_var.name for lp in sch.get_loops(sch.get_block("dot"))] == ["r", "c_1"]
    _same_numbers(dot_rows, sch.mod["main"])


def test_rfactor_reads_a_let_update_as_a_plain_reduction():
    sch = tir.Schedule(dot_rows_let)
    _, c = sch.get_loops(sch.get_block("dot"))
    _, ci = sch.split(c, [None, 8])
    rf = sch.rfactor(ci, 1)
    assert not isinstance(sch.get(rf).body, tir.LetStmt)
    _same_numbers(dot_rows_let, sch.mod["main"])


def test_rfactor_of_the_whole_reduction_loop_leaves_a_plain_copy_without_init():
    sch = tir.Schedule(total)
    (c,) = sch.get_loops(sch.get_block("total"))
    rf = sch.rfactor(c, 0)
    block = sch.get(rf)
    assert block.init is None
    assert _iter_names(block) == [("vc", "S")]
    assert isinstance(block.body.value, tir.BufferLoad)  # X[vc], no `0 + X[vc]`
    _same_numbers(total, sch.mod["main"])


def test_rfactor_of_a_unit_loop_that_drives_no_iterator():
    sch = tir.Schedule(dot_rows)
    _, c = sch.get_loops(sch.get_block("dot"))
    _, unit = sch.split(c, [None, 1])
    rf = sch.rfactor(unit, 0)
    assert [int(d) for d in sch.get(rf).writes[0].buffer.shape] == [1, 6]
    _same_numbers(dot_rows, sch.mod["main"])


def test_rfactor_copies_the_annotations_onto_both_blocks():
    sch = tir.Schedule(peak_with_tag)
    _, c = sch.get_loops(sch.get_block("peak"))
    _, ci = sch.split(c, [None, 3])
    rf = sch.rfactor(ci, 1)
    assert dict(sch.get(rf).annotations) == {"my_tag": 7}
    assert dict(sch.get(sch.get_block("peak")).annotations) == {"my_tag": 7}
    _same_numbers(peak_with_tag, sch.mod["main"])


def test_rfactor_of_the_first_block_of_a_shared_loop():
    sch = tir.Schedule(two_reductions)
    _, c = sch.get_loops(sch.get_block("P"))
    _, ci = sch.split(c, [None, 2])
    sch.rfactor(ci, 0)
    _same_numbers(two_reductions, sch.mod["main"])


def test_rfactor_of_a_later_block_of_a_shared_loop_is_refused():
    sch = tir.Schedule(two_reductions)
    _, c = sch.get_loops(sch.get_block("Q"))
    with pytest.raises(ScheduleError, match=r"the first block under the outermost loop 'r' is 'P'"):
        sch.rfactor(c, 0)


def test_rfactor_refuses_a_scope_that_is_not_a_stage_pipeline():
    sch = tir.Schedule(partial_consumer)
    _, c = sch.get_loops(sch.get_block("S"))
    with pytest.raises(ScheduleError, match=r"the scope block 'root' .* is not a stage pipeline"):
        sch.rfactor(c, 0)


def test_rfactor_refuses_a_parallel_loop():
    sch = tir.Schedule(parallel_reduction)
    _, c = sch.get_loops(sch.get_block("P"))
    with pytest.raises(ScheduleError, match=r"loop 'c' is parallel; rfactor needs a serial loop"):
        sch.rfactor(c, 0)


def test_rfactor_of_a_guarded_split_matches_numpy():
    # a guard over the reduction loops stays on the partial block; every slot is written
    for factors, pick in (([5, None], 0), ([7, None], 0), ([None, 16], 1)):  # all > 24
        sch = tir.Schedule(dot_rows)
        _, c = sch.get_loops(sch.get_block("dot"))
        parts = sch.split(c, factors)
        sch.rfactor(parts[pick], 0)
        _same_numbers(dot_rows, sch.mod["main"])


def test_rfactor_keeps_a_predicate_over_spatial_loops():
    sch = tir.Schedule(dot_rows)
    r, c = sch.get_loops(sch.get_block("dot"))
    sch.split(r, [None, 4])  # 2 * 4 > 6: predicate on the rows
    _, ci = sch.split(c, [None, 6])
    sch.rfactor(ci, 0)
    _same_numbers(dot_rows, sch.mod["main"])


def test_rfactor_refuses_a_spatial_loop():
    sch = tir.Schedule(dot_rows)
    r, _ = sch.get_loops(sch.get_block("dot"))
    with pytest.raises(ScheduleError, match=r"loop 'r' does not drive a reduction iterator"):
        sch.rfactor(r, 0)


def test_decompose_reduction_copies_annotations_and_reads_what_the_update_writes():
    sch = tir.Schedule(peak_with_tag)
    blk = sch.get_block("peak")
    r, _ = sch.get_loops(blk)
    init = sch.decompose_reduction(blk, r)
    assert dict(sch.get(init).annotations) == {"my_tag": 7}
    update = sch.get(sch.get_block("peak_update"))
    assert update.reads[0].buffer.name == "P"
    _same_numbers(peak_with_tag, sch.mod["main"])


def test_decompose_reduction_binds_the_init_loop_to_its_own_thread_var():
    sch = tir.Schedule(thread_rows)
    blk = sch.get_block("P")
    t, _ = sch.get_loops(blk)
    init = sch.decompose_reduction(blk, t)
    (t_init,) = sch.get_loops(init)
    a = sch.get(t_init).thread_binding
    b = sch.get(sch.get_loops(sch.get_block("P_update"))[0]).thread_binding
    assert a.thread_tag == b.thread_tag == "threadIdx.x"
    assert a.var is not b.var


@T.prim_func
def shared_reduction_loop(
    X: T.Buffer((4, 8), "float32"), P: T.Buffer((4,), "float32"), Q: T.Buffer((4,), "float32")
):
    for r, c in T.grid(4, 8):
        with T.block("P"):
            vr, vc = T.axis.remap("SR", [r, c])
            with T.init():
                P[vr] = T.float32(0)
            P[vr] = P[vr] + X[vr, vc]
        with T.block("Q"):
            vr, vc = T.axis.remap("SR", [r, c])
            with T.init():
                Q[vr] = T.float32(0)
            Q[vr] = Q[vr] + X[vr, vc] * T.float32(2)


@T.prim_func
def repeated_sum(X: T.Buffer((4, 8), "float32"), P: T.Buffer((4,), "float32")):
    for r, again, c in T.grid(4, 3, 8):
        with T.block("P"):
            vr, vc = T.axis.remap("SR", [r, c])
            with T.init():
                P[vr] = T.float32(0)
            P[vr] = P[vr] + X[vr, vc]


def test_rfactor_refuses_a_reduction_loop_shared_with_another_block():
    sch = tir.Schedule(shared_reduction_loop)
    _, c = sch.get_loops(sch.get_block("P"))
    with pytest.raises(
        ScheduleError, match=r"the loop must enclose exactly one block, it encloses 2"
    ):
        sch.rfactor(c, 0)


def test_rfactor_refuses_a_loop_that_repeats_the_reduction():
    sch = tir.Schedule(repeated_sum)
    _, _, c = sch.get_loops(sch.get_block("P"))
    with pytest.raises(ScheduleError, match=r"loop 'again' \(extent 3\) drives no iterator of 'P'"):
        sch.rfactor(c, 0)


@T.prim_func
def shared_outer_reduction_loop(
    X: T.Buffer((4, 8), "float32"), P: T.Buffer((4,), "float32"), Q: T.Buffer((4,), "float32")
):
    for r, co in T.grid(4, 2):
        for ci in range(4):
            with T.block("P"):
                vr = T.axis.spatial(4, r)
                vc = T.axis.reduce(8, co * 4 + ci)
                with T.init():
                    P[vr] = T.float32(0)
                P[vr] = P[vr] + X[vr, vc]
        with T.block("Q"):
            vr, vco = T.axis.remap("SR", [r, co])
            with T.init():
                Q[vr] = T.float32(0)
            Q[vr] = Q[vr] + X[vr, vco]


def test_rfactor_refuses_an_outer_reduction_loop_holding_another_block():
    sch = tir.Schedule(shared_outer_reduction_loop)
    _, _, ci = sch.get_loops(sch.get_block("P"))
    with pytest.raises(
        ScheduleError, match=r"the outermost reduction loop 'co' of 'P' holds 2 blocks"
    ):
        sch.rfactor(ci, 0)


@T.prim_func
def arg_peak(
    X: T.Buffer((4, 8), "float32"), I: T.Buffer((4,), "int32"), V: T.Buffer((4,), "float32")
):
    for r, c in T.grid(4, 8):
        with T.block("arg_peak"):
            vr, vc = T.axis.remap("SR", [r, c])
            with T.init():
                I[vr] = -1
                V[vr] = T.float32(-1e30)
            i_next: T.int32 = T.Select(V[vr] >= X[vr, vc], I[vr], vc)
            v_next: T.float32 = T.Select(V[vr] >= X[vr, vc], V[vr], X[vr, vc])
            I[vr] = i_next
            V[vr] = v_next


def test_rfactor_of_a_tuple_reduction_is_refused_with_the_reason():
    sch = tir.Schedule(arg_peak)
    _, c = sch.get_loops(sch.get_block("arg_peak"))
    _, ci = sch.split(c, [None, 4])
    with pytest.raises(ScheduleError, match=r"updates 2 buffers together \(a tuple reduction"):
        sch.rfactor(ci, 0)


def test_rfactor_keeps_a_constant_offset_of_the_accumulator():
    sch = tir.Schedule(total)
    (c,) = sch.get_loops(sch.get_block("total"))
    _, ci = sch.split(c, [None, 8])
    rf = sch.rfactor(ci, 0)
    (buf,) = [w.buffer for w in sch.get(rf).writes]
    assert const_offset(buf) == 0
    _same_numbers(total, sch.mod["main"])


def const_offset(buf):
    return int(buf.elem_offset)


@T.prim_func
def total_then_scale(X: T.Buffer((40,), "float32"), Y: T.Buffer((40,), "float32")):
    S = T.alloc_buffer((), "float32")
    for c in range(40):
        with T.block("total"):
            vc = T.axis.reduce(40, c)
            with T.init():
                S[()] = T.float32(0)
            S[()] = S[()] + X[vc]
    for c in range(40):
        with T.block("scale"):
            vc = T.axis.spatial(40, c)
            Y[vc] = X[vc] / S[()]


def test_rfactor_of_an_outermost_reduction_loop_among_siblings():
    sch = tir.Schedule(total_then_scale)
    (c,) = sch.get_loops(sch.get_block("total"))
    _, ci = sch.split(c, [None, 5])
    sch.rfactor(ci, 0)
    root = sch.mod["main"].body.block.body
    assert isinstance(root, tir.SeqStmt) and len(root.seq) == 3  # rf nest, write-back, scale
    _same_numbers(total_then_scale, sch.mod["main"])


@T.prim_func
def offset_loop(X: T.Buffer((4, 8), "float32"), P: T.Buffer((4,), "float32")):
    for r in range(4):
        for c in range(2, 8):
            with T.block("P"):
                vr = T.axis.spatial(4, r)
                vc = T.axis.reduce(8, c)
                with T.init():
                    P[vr] = T.float32(0)
                P[vr] = P[vr] + X[vr, vc]


def test_rfactor_refuses_a_loop_that_does_not_start_at_zero():
    sch = tir.Schedule(offset_loop)
    _, c = sch.get_loops(sch.get_block("P"))
    with pytest.raises(ScheduleError, match=r"loop 'c' starts at 2; .* a loop that starts at 0"):
        sch.rfactor(c, 0)
