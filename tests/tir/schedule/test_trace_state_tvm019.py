"""The trace API (instructions, JSON, printed Python), schedule state, block scopes and sampling."""

import json

import pytest
from sched_workloads import build_and_run, chain, matmul

from minitvm import tir
from minitvm.error import ScheduleError
from minitvm.ir import structural_equal
from minitvm.script import tir as T
from minitvm.tir.schedule import (
    BlockRV,
    DepKind,
    Instruction,
    InstructionKind,
    LoopRV,
    ScheduleState,
    Trace,
)
from minitvm.tir.schedule.state import CachedFlags
from minitvm.tir.schedule.testing import apply_python_trace, verify_trace_roundtrip
from minitvm.tir.schedule.trace_lambda import TraceLambda


@T.prim_func
def shifted_read(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,))
    for i in range(16):
        with T.block("B"):
            vi = T.axis.S(16, i)
            B[vi] = A[vi] * 2.0
        with T.block("C"):
            vi = T.axis.S(16, i)
            C[vi] = T.if_then_else(vi >= 1, B[vi - 1], 0.0, dtype="float32")


@T.prim_func
def read_then_overwrite(
    A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")
):
    for i in range(8):
        with T.block("C"):
            vi = T.axis.S(8, i)
            C[vi] = B[vi] + 1.0
    for i in range(8):
        with T.block("B"):
            vi = T.axis.S(8, i)
            B[vi] = A[vi] * 2.0


@T.prim_func
def two_readers(
    A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")
):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.S(8, i)
            B[vi] = A[vi] * 2.0
    for i in range(8):
        with T.block("C"):
            vi = T.axis.S(8, i)
            C[vi] = A[vi] + 1.0


# ------------------------------------------------------------------ instructions and traces


def test_instruction_kinds_are_registered_singletons():
    kind = InstructionKind.get("Split")
    assert kind is InstructionKind.get("Split") and not kind.is_pure
    assert InstructionKind.get("GetBlock").is_pure
    with pytest.raises(ScheduleError, match="unknown instruction kind 'NoSuchKind'"):
        InstructionKind.get("NoSuchKind")


def test_handmade_trace_prints_like_tvm_and_serialises():
    b0, l1, l2 = BlockRV(), LoopRV(), LoopRV()
    trace = Trace(
        [
            Instruction(InstructionKind.get("GetBlock"), [], ["C", "main"], [b0]),
            Instruction(InstructionKind.get("GetLoops"), [b0], [], [l1, l2]),
        ],
        {},
    )
    assert str(trace).splitlines() == [
        "# from tvm import tir",
        "def apply_trace(sch: tir.Schedule) -> None:",
        '  b0 = sch.get_block(name="C", func_name="main")',
        "  l1, l2 = sch.get_loops(block=b0)",
    ]
    assert trace.as_json() == [
        [["GetBlock", [], ["C", "main"], ["b0"]], ["GetLoops", ["b0"], [], ["l1", "l2"]]],
        [],
    ]
    json.dumps(trace.as_json())  # plain data


def test_json_round_trip_reproduces_the_schedule_and_its_numbers():
    wl = matmul()
    sch = tir.Schedule(wl.func())
    c = sch.get_block("C")
    i, j, _ = sch.get_loops(c)
    i0, i1 = sch.split(i, factors=[None, 4])
    sch.reorder(i0, j, i1)
    sch.annotate(c, "note", 'a "quoted" value')
    fresh = tir.Schedule(wl.func())
    # this process's own trace: trusted, so its "note" key (not on the list a trace file may
    # set, see test_a_loaded_trace_may_not_set_an_unlisted_annotation_key) replays
    Trace.apply_json_to_schedule(json.loads(json.dumps(sch.trace.as_json())), fresh, trusted=True)
    assert structural_equal(fresh.mod["main"], sch.mod["main"])
    assert fresh.trace.as_python() == sch.trace.as_python()
    build_and_run(fresh, wl)


def test_a_loaded_trace_may_not_set_an_unlisted_annotation_key():
    wl = matmul()
    sch = tir.Schedule(wl.func())
    sch.annotate(sch.get_block("C"), "note", "x")
    with pytest.raises(ScheduleError, match="annotation key 'note' is not one a trace file may"):
        Trace.apply_json_to_schedule(sch.trace.as_json(), tir.Schedule(wl.func()))


def test_verify_trace_roundtrip_checks_json_and_python_forms():
    wl = chain()
    sch = tir.Schedule(wl.func())
    d = sch.get_block("D")
    i, _ = sch.get_loops(d)
    sch.compute_at(sch.get_block("C"), i)
    sch.compute_inline("B")  # a block name: traced through its get_block
    fresh = verify_trace_roundtrip(sch, wl.func())
    assert structural_equal(fresh.mod["main"], sch.mod["main"])
    build_and_run(fresh, wl)


def test_block_name_arguments_are_traced_as_block_variables():
    sch = tir.Schedule(chain().func())
    sch.compute_inline("B")
    assert sch.trace.as_python() == [
        'b0 = sch.get_block(name="B", func_name="main")',
        "sch.compute_inline(block=b0)",
    ]
    fresh = tir.Schedule(chain().func())
    sch.trace.apply_to_schedule(fresh)
    assert fresh.trace.as_python() == sch.trace.as_python()  # no extra get_block


@pytest.mark.parametrize(
    "tamper, message",
    [
        (
            lambda j: j[0].__setitem__(0, ["Exec", [], ["import os"], []]),
            "unknown instruction kind 'Exec'",
        ),
        (lambda j: j[0][1].__setitem__(1, ["b7"]), "input 'b7' names no random variable"),
        (lambda j: j[0].append("oops"), "must be \\[kind, inputs, attrs, output names\\]"),
        (lambda j: j.append([]), "must be \\[instructions, decisions\\]"),
        (lambda j: j[1].append([9, 0]), "decision index 9 has no instruction"),
    ],
)
def test_tampered_json_is_a_clear_schedule_error(tamper, message):
    sch = tir.Schedule(chain().func())
    sch.get_loops(sch.get_block("D"))
    data = sch.trace.as_json()
    tamper(data)
    with pytest.raises(ScheduleError, match=message):
        Trace.apply_json_to_schedule(data, tir.Schedule(chain().func()))


def test_printed_trace_replay_runs_only_schedule_calls():
    fresh = tir.Schedule(chain().func())
    apply_python_trace(
        'b0 = sch.get_block(name="B", func_name="main")\nsch.compute_inline(block=b0)', fresh
    )
    assert [r for r in fresh.trace.as_python()][-1] == "sch.compute_inline(block=b0)"
    for bad in (
        "import os",
        "os.system('true')",
        "sch._update('main', None)",
        "b0 = sch.get_block(name=__import__('os'))",
    ):
        with pytest.raises(ScheduleError, match="printed trace"):
            apply_python_trace(bad, tir.Schedule(chain().func()))


def test_trace_lambda_evaluates_index_expressions_only():
    fn = TraceLambda.parse("lambda i, j: (j, i // 4, T.min(i, 3))")
    i, j = tir.Var("i", "int32"), tir.Var("j", "int32")
    out = fn(i, j)
    assert out[0] is j and str(out[1]) == "i // 4" and str(out[2]) == "T.min(i, 3)"
    with pytest.raises(ScheduleError, match="outside the index expression grammar"):
        TraceLambda.parse("lambda i: __import__('os').system('true')")
    with pytest.raises(ScheduleError, match="not a lambda"):
        TraceLambda.parse("print(1)")
    with pytest.raises(ScheduleError, match="trace lambda 'lambda i: T.min\\(i, bogus=1\\)'"):
        TraceLambda.parse("lambda i: T.min(i, bogus=1)")(i)


def test_simplified_drops_unused_pure_instructions_and_postproc():
    sch = tir.Schedule(chain().func())
    sch.get_block("D")  # pure, unused
    sch.compute_inline(sch.get_block("B"))
    sch.enter_postproc()
    sch.compute_inline(sch.get_block("C"))
    kept = sch.trace.simplified(remove_postproc=True).as_python()
    assert kept == [
        'b0 = sch.get_block(name="B", func_name="main")',
        "sch.compute_inline(block=b0)",
    ]
    assert len(sch.trace.simplified(remove_postproc=False).insts) == 5


# ------------------------------------------------------------------ sampling


def test_sampled_tiles_multiply_to_the_extent_and_split_correctly():
    wl = matmul(n=24, m=12, k=8)
    sch = tir.Schedule(wl.func(), seed=7)
    i, _, _ = sch.get_loops(sch.get_block("C"))
    factors = sch.sample_perfect_tile(i, n=3, max_innermost_factor=4)
    values = [sch.get(f) for f in factors]
    assert values[0] * values[1] * values[2] == 24 and values[2] <= 4
    assert sch.trace.get_decision(sch.trace.insts[-1]) == values
    sch.split(i, factors=factors)
    assert [int(sch.get(x).extent) for x in sch.get_loops(sch.get_block("C"))[:3]] == values
    verify_trace_roundtrip(sch, wl.func())
    build_and_run(sch, wl)


def test_sampling_is_deterministic_per_seed():
    def draws(seed):
        sch = tir.Schedule(matmul(n=360).func(), seed=seed)
        i, _, _ = sch.get_loops(sch.get_block("C"))
        tiles = [[sch.get(v) for v in sch.sample_perfect_tile(i, n=3)] for _ in range(5)]
        cats = [sch.get(sch.sample_categorical([1, 2, 3], [0.2, 0.3, 0.5])) for _ in range(20)]
        return tiles, cats

    assert draws(11) == draws(11)
    assert draws(11) != draws(12)


def test_sample_categorical_checks_its_arguments_and_decision():
    sch = tir.Schedule(chain().func(), seed=1)
    assert sch.get(sch.sample_categorical([5, 6], [0.5, 0.5], decision=1)) == 6
    with pytest.raises(ScheduleError, match="2 candidates and 1 probabilities"):
        sch.sample_categorical([5, 6], [1.0])
    with pytest.raises(ScheduleError, match="decision 4 is not an index into 2 candidates"):
        sch.sample_categorical([5, 6], [0.5, 0.5], decision=4)
    with pytest.raises(ScheduleError, match="decision \\[3, 3\\] is not 2 positive factors"):
        sch.sample_perfect_tile(sch.get_loops(sch.get_block("D"))[0], n=2, decision=[3, 3])


def test_sample_compute_location_offers_inline_root_and_loops():
    wl = chain()
    sch = tir.Schedule(wl.func(), seed=3)
    seen = {
        sch.trace.get_decision(sch.trace.insts[-1])
        for _ in range(40)
        if sch.sample_compute_location("C") is not None
    }
    assert seen == {-2, -1, 0, 1}  # inline, root, D's loops i and j
    loc = sch.sample_compute_location("C", decision=0)
    sch.compute_at(sch.get_block("C"), loc)
    assert sch.get(sch.get_loops(sch.get_block("C"))[0]).loop_var.name == "i"
    build_and_run(sch, wl)


def test_copied_schedule_keeps_sampled_values_and_forgets_new_variables():
    sch = tir.Schedule(chain().func(), seed=5)
    v = sch.sample_categorical([1, 2, 3], [0.3, 0.3, 0.4])
    other = sch.copy()
    assert other.get(v) == sch.get(v)
    b = sch.get_block("B")
    with pytest.raises(IndexError):
        other.get(b)
    sch.remove_rv(b)
    with pytest.raises(IndexError):
        sch.get(b)


# ------------------------------------------------------------------ state, srefs, scopes


def test_srefs_are_stable_objects_with_parents():
    sch = tir.Schedule(matmul().func())
    c = sch.get_block("C")
    i, _, k = sch.get_loops(c)
    sref = sch.get_sref(c)
    assert sref is sch.state.get_sref(sch.get(c)) and sref.stmt is sch.get(c)
    assert sref.parent is sch.get_sref(k) and sch.get_sref(i).parent.stmt.name_hint == "root"


def test_block_scope_dependencies():
    state = ScheduleState(read_then_overwrite)
    root = state.get_sref(state.mod["main"].body.block)
    c, b = state.child_blocks(root)
    (dep,) = state.get_block_scope(root).get_deps_by_src(c)
    assert dep.dst is b and dep.kind == DepKind.WAR
    assert state._get_cached_flags(root) == CachedFlags(True, True, False)


def test_region_cover_sees_a_read_of_the_previous_iteration():
    state = ScheduleState(shifted_read)
    body = state.mod["main"].body.block.body  # the i loop
    blocks = body.body.seq
    flags = [state._get_cached_flags(state.get_sref(r.block)) for r in blocks]
    assert flags == [CachedFlags(True, True, True), CachedFlags(True, False, True)]
    root = state.get_sref(state.mod["main"].body.block)
    assert state._get_cached_flags(root).stage_pipeline is False


def test_get_output_blocks_and_error_render_levels():
    sch = tir.Schedule(chain().func(), error_render_level="fast")
    assert [sch.get(b).name_hint for b in sch.get_output_blocks("root")] == ["D"]
    with pytest.raises(ScheduleError, match="^Cannot find a block with the specified name$"):
        sch.get_block("nope")
    quiet = tir.Schedule(chain().func(), error_render_level="none")
    with pytest.raises(ScheduleError, match="^\\(not rendered\\)$"):
        quiet.get_block("nope")
    with pytest.raises(ScheduleError, match="error_render_level must be one of"):
        tir.Schedule(chain().func(), error_render_level="loud")


@T.prim_func
def strided_producer(A: T.Buffer((16,), "float32"), C: T.Buffer((15,), "float32")):
    B = T.alloc_buffer((16,))
    for i in range(8):
        with T.block("B"):
            vi = T.axis.S(8, i)
            B[vi * 2] = A[vi * 2]  # B[0], B[2], ..., B[14]: the odd elements stay unwritten
    for i in range(15):
        with T.block("C"):
            vi = T.axis.S(15, i)
            C[vi] = B[vi]


@T.prim_func
def clipped_producer(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,))
    for i in range(18):
        with T.block("B"):
            vi = T.axis.S(16, i - 1)
            T.where(1 <= i < 17)
            B[vi] = A[vi]
    for i in range(16):
        with T.block("C"):
            vi = T.axis.S(16, i)
            C[vi] = B[vi]


@pytest.mark.parametrize("func, covered", [(strided_producer, False), (clipped_producer, True)])
def test_region_cover_is_exact_for_strides_and_predicates(func, covered):
    state = ScheduleState(func)
    consumer = state.get_sref(state.mod["main"].body.block.body.seq[1].body.block)
    assert consumer.stmt.name_hint == "C"
    assert state._get_cached_flags(consumer).region_cover is covered


def test_random_engine_is_the_minimal_standard_generator():
    from minitvm.tir.schedule.sampling import RandomEngine

    rng = RandomEngine(1)
    draws = [rng.next() for _ in range(10000)]
    assert draws[:2] == [48271, 182605794] and draws[-1] == 399268537  # C++ minstd_rand
    counts = [0] * 8
    for _ in range(8000):
        counts[rng.randint(0, 8)] += 1
    assert all(900 < c < 1100 for c in counts)
    with pytest.raises(ScheduleError, match="seed must be None, -1 or a non-negative int"):
        RandomEngine(-5)


def test_state_replace_copies_on_write_and_expires_replaced_srefs():
    state = ScheduleState(read_then_overwrite)
    before = state.mod
    seq = before["main"].body.block.body.seq
    loop_sref = state.get_sref(seq[0])
    block_sref = state.get_sref(seq[1].body.block)
    new_loop = seq[0].replace(extent=tir.IntImm("int32", 4))
    state.replace(loop_sref, new_loop)
    assert loop_sref.stmt is new_loop  # a loop replaced by a loop keeps its sref
    assert before["main"].body.block.body.seq[0] is seq[0]  # the caller's module is untouched
    assert int(state.mod["main"].body.block.body.seq[0].extent) == 4
    state.replace(state.get_sref(state.mod["main"].body.block.body.seq[1]), tir.Evaluate(0))
    assert block_sref.stmt is None  # the block left the module: its sref expired


def test_producers_and_consumers_follow_program_order():
    sch = tir.Schedule(read_then_overwrite)
    # block B writes what C read before it: a write-after-read, not a producer of C
    assert sch.get_producers("C") == [] and sch.get_consumers("B") == []
    chain_sch = tir.Schedule(chain().func())
    assert [chain_sch.get(b).name_hint for b in chain_sch.get_producers("D")] == ["C"]
    assert [chain_sch.get(b).name_hint for b in chain_sch.get_consumers("B")] == ["C"]


def test_debug_mask_takes_tvm_spellings():
    from minitvm.tir.schedule.state import ScheduleDebugMask

    for mask in ("all", "none", ScheduleDebugMask.VERIFY_SREF_TREE, 3):
        tir.Schedule(chain().func(), debug_mask=mask)
    with pytest.raises(ScheduleError, match="debug_mask must be 'all', 'none' or an int"):
        tir.Schedule(chain().func(), debug_mask="loud")


@pytest.mark.parametrize("decision, blocks", [(-2, ["B", "D"]), (-1, ["B", "C", "D"])])
def test_compute_at_a_sampled_root_or_inline_mark(decision, blocks):
    wl = chain()
    sch = tir.Schedule(wl.func())
    loc = sch.sample_compute_location("C", decision=decision)
    sch.compute_at(sch.get_block("C"), loc)
    names = [sch.get(b).name_hint for b in sch.get_child_blocks(sch.get_block("root"))]
    assert names == blocks
    verify_trace_roundtrip(sch, wl.func())
    build_and_run(sch, wl)


def test_several_block_names_in_one_primitive_are_all_traced_as_variables():
    sch = tir.Schedule(two_readers)
    sch.cache_read("B", 0, "global", consumer_blocks=["B", "C"])
    *lookups, call = sch.trace.as_python()
    assert len(lookups) == 3 and all("get_block" in line for line in lookups)
    assert '"B"' not in call and '"C"' not in call  # every name became its BlockRV
    verify_trace_roundtrip(sch, two_readers)
