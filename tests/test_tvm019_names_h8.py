"""Names TVM v0.19's own unit tests need (issue 27, item 6; helper h8): IRBuilder scopes,
block access regions, and T.ret through the LLVM codegen, each checked against numpy or
against the regions the block declares."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, tir
from minitvm.error import BuildError
from minitvm.script import tir as T
from minitvm.testing.tir_interp import run_prim_func


# ---- IRBuilder: scope_attr, allocate, while_loop, likely ---------------------------------
def _count_up_func():
    """out[i] = number of while-loop steps to reach a[i] (a local counter), as one PrimFunc."""
    n = 8
    a = tir.decl_buffer((n,), "int32", name="a")
    out = tir.decl_buffer((n,), "int32", name="out")
    ib = tir.ir_builder.create()
    pa, po = ib.buffer_ptr(a), ib.buffer_ptr(out)
    with ib.for_range(0, n, name="i") as i:
        steps = ib.allocate("int32", (1,), name="steps", scope="local")
        steps[0] = 0
        with ib.while_loop(steps[0] < pa[i]):
            steps[0] = steps[0] + 1
        with ib.if_scope(ib.likely(steps[0] > 3)):
            po[i] = steps[0] * 10
        with ib.else_scope():
            po[i] = steps[0]
    body = ib.get()
    return tir.PrimFunc([a.data, out.data], body, buffer_map={a.data: a, out.data: out})


def test_ir_builder_allocate_while_loop_and_likely_compute_like_numpy():
    func = _count_up_func()
    a = np.random.default_rng(0).integers(0, 7, size=8).astype("int32")
    got = run_prim_func(func, a, np.zeros(8, "int32"))[1]
    np.testing.assert_array_equal(got, np.where(a > 3, a * 10, a))


def test_ir_builder_allocate_wraps_the_rest_of_its_scope():
    ib = tir.ir_builder.create()
    buf = ib.allocate("float32", 4, name="tmp", scope="local")
    buf[0] = 1.0
    buf[1] = buf[0]
    stmt = ib.get()
    assert isinstance(stmt, tir.Allocate)
    assert stmt.buffer_var is buf.asobject().data
    assert len(stmt.body.seq) == 2


def test_ir_builder_scope_attr_wraps_later_statements_and_clamps_thread_extent():
    n = te.var("n")
    tx = te.thread_axis("threadIdx.x")
    ib = tir.ir_builder.create()
    x = ib.pointer("float32", name="x")
    x[0] = 0.0  # before the attr: outside it
    ib.scope_attr(tx, "thread_extent", n)
    x[tx.var] = 1.0
    stmt = ib.get()
    first, attr = stmt.seq
    assert isinstance(first, tir.BufferStore)
    assert isinstance(attr, tir.AttrStmt) and attr.attr_key == "thread_extent"
    assert isinstance(attr.value, tir.Max)  # TVM: max(1, extent)
    assert isinstance(attr.body, tir.BufferStore)


def test_ir_builder_for_range_from_zero_has_the_end_as_extent():
    n = te.var("n")
    ib = tir.ir_builder.create()
    with ib.for_range(0, n, name="i"):
        ib.emit(tir.Evaluate(0))
    with ib.for_range(2, n, name="j"):
        ib.emit(tir.Evaluate(0))
    loop0, loop1 = ib.get().seq
    assert loop0.extent is n
    assert isinstance(loop1.extent, tir.Sub)


# ---- tir.analysis.get_block_access_region / get_block_read_write_region -----------------
@T.prim_func
def _opaque_and_matched() -> None:
    with T.block("root"):
        A = T.alloc_buffer((16, 16), "float32")
        B = T.alloc_buffer((16,), "float32")
        C = T.alloc_buffer((16,), "float32")
        T.reads([])
        T.writes([])
        for i in range(4):
            with T.block("blk"):
                vi = T.axis.remap("S", [i])
                T.reads([])
                T.writes([])
                AA = T.match_buffer(A[vi * 4 : vi * 4 + 4, 2:6], (4, 4))
                for j in range(4):
                    AA[j, 1] = C[vi + j]
                T.evaluate(T.call_extern("f", B.data, dtype="int32"))


def _root_and_block(func):
    root = func.body.block
    return {b.data: b for b in root.alloc_buffers}, root.body.body.block


def test_block_access_region_maps_match_buffers_and_reports_opaque_uses():
    bufmap, block = _root_and_block(_opaque_and_matched)
    A, B, C = bufmap.values()
    reads, writes, opaques = tir.analysis.get_block_access_region(block, bufmap)
    vi = block.iter_vars[0].var
    want_reads = [tir.BufferRegion(C, [tvm.ir.Range.from_min_extent(vi, 4)])]
    want_writes = [
        tir.BufferRegion(
            A,
            [tvm.ir.Range.from_min_extent(vi * 4, 4), tvm.ir.Range.from_min_extent(3, 1)],
        )
    ]
    tvm.ir.assert_structural_equal(reads, want_reads)
    tvm.ir.assert_structural_equal(writes, want_writes, map_free_vars=True)
    tvm.ir.assert_structural_equal(opaques, [tir.BufferRegion(B, [tvm.ir.Range(0, 16)])])


def test_block_read_write_region_counts_opaque_use_as_read_and_write():
    bufmap, block = _root_and_block(_opaque_and_matched)
    _, B, _ = bufmap.values()
    reads, writes = tir.analysis.get_block_read_write_region(block, bufmap)
    assert [r.buffer for r in reads][-1] is B
    assert [w.buffer for w in writes][-1] is B


def test_block_access_region_ignores_buffers_outside_the_map():
    bufmap, block = _root_and_block(_opaque_and_matched)
    only_c = {k: v for k, v in bufmap.items() if v.name == "C"}
    reads, writes, opaques = tir.analysis.get_block_access_region(block, only_c)
    assert [r.buffer.name for r in reads] == ["C"]
    assert writes == [] and opaques == []


def test_block_access_region_sees_through_let_bindings():
    @T.prim_func
    def func(
        idx: T.Buffer((8,), "int32"), x: T.Buffer((8,), "float32"), y: T.Buffer((8,), "float32")
    ):
        for i in range(8):
            with T.block("gather"):
                vi = T.axis.remap("S", [i])
                T.reads(idx[vi], x[idx[vi]])
                T.writes(y[vi])
                k: T.int32 = idx[vi]
                y[vi] = x[k]

    blocks = []
    tvm.tir.stmt_functor.post_order_visit(
        func.body, lambda n: blocks.append(n) if isinstance(n, tir.Block) else None
    )
    (block,) = [b for b in blocks if b.name_hint == "gather"]
    bufmap = {b.data: b for b in func.buffer_map.values()}
    reads, writes, _ = tir.analysis.get_block_access_region(block, bufmap)
    tvm.ir.assert_structural_equal(list(block.reads), reads)
    tvm.ir.assert_structural_equal(list(block.writes), writes)


# ---- T.ret through the LLVM codegen and the runtime ------------------------------------
def _build_ret(dtype, expr_of):
    x = tir.Var("x", dtype)
    y = tir.Var("y", dtype)
    body = tir.Evaluate(tir.ret(expr_of(x, y)))
    func = tir.PrimFunc([x, y], body).with_attr("global_symbol", "main")
    return tvm.build(tvm.IRModule({"main": func}), target="llvm")


@pytest.mark.parametrize(
    "dtype, x, y",
    [("int8", 127, 127), ("int8", -100, 3), ("uint8", 200, 100), ("int32", 2**30, 5),
     ("uint32", 2**31, 3), ("int64", 2**40, 3), ("uint64", 2**63 + 5, 1),
     ("float32", 1.5, 2.25), ("float64", 1e300, 1e10)],
)  # fmt: skip
def test_ret_returns_the_value_in_its_dtype_like_numpy(dtype, x, y):
    f_mul = _build_ret(dtype, lambda a, b: a * b)
    with np.errstate(over="ignore"):
        want = (np.array(x, dtype) * np.array(y, dtype)).item()
    got = f_mul(x, y)
    assert got == want and type(got) is type(want)


def test_ret_of_bool_and_first_ret_wins():
    x = tir.Var("x", "float32")
    ib = tir.ir_builder.create()
    with ib.if_scope(x > 0.0):
        ib.emit(tir.Evaluate(tir.ret(x > 1.0)))
    ib.emit(tir.Evaluate(tir.ret(tir.const(True))))
    func = tir.PrimFunc([x], ib.get()).with_attr("global_symbol", "main")
    f = tvm.build(tvm.IRModule({"main": func}), target="llvm")
    assert [f(v) for v in (2.0, 0.5, -1.0)] == [True, False, True]


def test_function_without_ret_still_returns_none():
    a = te.placeholder((4,), name="a")
    b = te.compute((4,), lambda i: a[i] + 1.0, name="b")
    f = tvm.build(te.create_prim_func([a, b]), target="llvm")
    assert f(np.zeros(4, "float32"), np.zeros(4, "float32")) is None


def test_ret_of_two_dtypes_is_refused():
    x = tir.Var("x", "int32")
    ib = tir.ir_builder.create()
    with ib.if_scope(x > 0):
        ib.emit(tir.Evaluate(tir.ret(x)))
    ib.emit(tir.Evaluate(tir.ret(tir.const(1.0, "float32"))))
    func = tir.PrimFunc([x], ib.get()).with_attr("global_symbol", "main")
    with pytest.raises(BuildError, match="cast them to one dtype"):
        tvm.build(tvm.IRModule({"main": func}), target="llvm")


def test_ret_inside_a_parallel_loop_is_refused():
    x = tir.Var("x", "int32")
    ib = tir.ir_builder.create()
    with ib.for_range(0, 4, name="i", kind="parallel") as i:
        ib.emit(tir.Evaluate(tir.ret(x + i)))
    func = tir.PrimFunc([x], ib.get()).with_attr("global_symbol", "main")
    with pytest.raises(BuildError, match="T.ret is used inside a parallel loop"):
        tvm.build(tvm.IRModule({"main": func}), target="llvm")


# ---- arith.deduce_bound: the bound is checked by substitution ---------------------------
def _value(e, env):
    """The int value of `e` with the vars of `env` (Var -> int) substituted."""
    out = tvm.arith.Analyzer().simplify(tir.stmt_functor.substitute(e, env))
    assert isinstance(out, tir.IntImm), out
    return out.value


_CMPS = {"<": tir.LT, "<=": tir.LE, ">": tir.GT, ">=": tir.GE}
_PY = {"<": int.__lt__, "<=": int.__le__, ">": int.__gt__, ">=": int.__ge__}


@pytest.mark.parametrize("op", sorted(_CMPS))
def test_deduce_bound_is_sound_and_tight_on_random_linear_comparisons(op):
    rng = np.random.default_rng(0)
    a, b, c = te.var("a"), te.var("b"), te.var("c")
    for _ in range(12):
        k_a = int(rng.choice([-7, -3, -1, 1, 2, 5]))
        k_b, k_0 = int(rng.integers(-4, 5)), int(rng.integers(-20, 20))
        b_lo, c_lo = int(rng.integers(-5, 5)), int(rng.integers(-30, 30))
        b_set = tvm.arith.IntervalSet(b_lo, b_lo + int(rng.integers(0, 4)))
        c_set = tvm.arith.IntervalSet(c_lo, c_lo + int(rng.integers(0, 4)))
        lhs = b * k_b + a * k_a + k_0
        doms = {b: b_set, c: c_set}
        res = tvm.arith.deduce_bound(a, _CMPS[op](lhs, c), doms, doms)
        low_side = res.max_value is tvm.arith.int_set.pos_inf() or str(res.max_value) == "pos_inf"
        bound = _value(res.min_value if low_side else res.max_value, {})
        step = -1 if low_side else 1
        holds = _PY[op]
        for bv in range(b_set.min_value, b_set.max_value + 1):
            for cv in range(c_set.min_value, c_set.max_value + 1):
                # sound: the bound (and a few values inside it) satisfy the comparison
                for av in (bound, bound - step, bound - 3 * step):
                    assert holds(k_b * bv + k_a * av + k_0, cv), (op, k_a, k_b, k_0, bv, cv, av)
        # tight: one step past the bound fails for the worst-case b and c
        worst = [
            holds(k_b * bv + k_a * (bound + step) + k_0, cv)
            for bv in range(b_set.min_value, b_set.max_value + 1)
            for cv in range(c_set.min_value, c_set.max_value + 1)
        ]
        assert not all(worst)


def test_deduce_bound_of_floordiv_matches_brute_force():
    a = te.var("a")
    for d in (-8, -3, 3, 8):
        for r in range(-5, 6):
            for op, make in _CMPS.items():
                res = tvm.arith.deduce_bound(a, make(tir.floordiv(a, d), r), {}, {})
                sat = [x for x in range(-200, 201) if _PY[op](x // d, r)]
                if str(res.min_value) == "neg_inf":
                    assert max(sat) == _value(res.max_value, {}) and min(sat) == -200
                else:
                    assert min(sat) == _value(res.min_value, {}) and max(sat) == 200


@pytest.mark.parametrize(
    "make",
    [lambda a: a * 2 - a > 3, lambda a: tir.floormod(a, 4) < 2, lambda a: tir.max(a, 1) < 5,
     lambda a: tir.floordiv(8, a) >= 2, lambda a: a + 1],
)  # fmt: skip
def test_deduce_bound_outside_its_forms_is_nothing(make):
    a = te.var("a")
    res = tvm.arith.deduce_bound(a, make(a), {}, {})
    assert res.is_nothing()
    assert (str(res.min_value), str(res.max_value)) == ("pos_inf", "neg_inf")


def test_deduce_bound_equality_needs_an_exact_quotient():
    a, b = te.var("a"), te.var("b")
    res = tvm.arith.deduce_bound(a, a * 5 == -10, {}, {})
    assert _value(res.min_value, {}) == _value(res.max_value, {}) == -2
    assert tvm.arith.deduce_bound(a, a * 4 == b, {b: tvm.arith.IntervalSet(2, 3)}, {}).is_nothing()


# ---- arith IntSet constructors, union_lower_bound, estimate_region_*_bound --------------
def test_int_set_constructors_hold_prim_exprs():
    s = tvm.arith.IntervalSet(2, 3)
    assert (s.min_value.value, s.max_value.value) == (2, 3)
    p = tvm.arith.IntSet.single_point(7)
    assert p.min_value.value == p.max_value.value == 7
    for base, stride, lanes in [(10, 3, 4), (10, -3, 4), (0, 1, 1)]:
        v = tvm.arith.IntSet.vector(tir.Ramp(base, stride, lanes))
        values = [base + stride * k for k in range(lanes)]
        assert (v.min_value.value, v.max_value.value) == (min(values), max(values))


def test_union_lower_bound_merges_only_touching_intervals():
    ninf, pinf = tvm.arith.int_set.neg_inf(), tvm.arith.int_set.pos_inf()
    union = tvm.arith.int_set.union_lower_bound
    s0 = tvm.arith.IntervalSet(min_value=ninf, max_value=0)
    s1 = tvm.arith.IntervalSet(min_value=1, max_value=pinf)
    both = union([s0, s1])
    assert both.min_value is ninf and both.max_value is pinf
    apart = union([tvm.arith.IntervalSet(0, 3), tvm.arith.IntervalSet(5, 9)])
    assert (apart.min_value.value, apart.max_value.value) == (0, 3)  # 4 is in neither
    touching = union([tvm.arith.IntervalSet(0, 3), tvm.arith.IntervalSet(4, 9)])
    assert (touching.min_value.value, touching.max_value.value) == (0, 9)
    assert union([]).is_nothing()
    assert not s0.has_lower_bound() and s0.has_upper_bound()


def _touched(region, var_dom):
    """Per dimension, the set of indices the region touches over every loop value."""
    vars_ = list(var_dom)
    sizes = [int(var_dom[v].extent) for v in vars_]
    per_dim = [set() for _ in region]
    for point in np.ndindex(*sizes):
        env = {v: tir.const(int(x) + int(var_dom[v].min), "int32") for v, x in zip(vars_, point)}
        for d, r in enumerate(region):
            lo = _value(r.min, env)
            per_dim[d].update(range(lo, lo + _value(r.extent, env)))
    return per_dim


@pytest.mark.parametrize(
    "case",
    ["small_stride", "stride_too_wide", "negative_scale", "two_digits", "dependent"],
)
def test_estimate_region_bounds_against_enumeration(case):
    i, j = tir.Var("i", "int32"), tir.Var("j", "int32")
    dom = {i: tvm.ir.Range(0, 6), j: tvm.ir.Range(0, 4)}
    R = tvm.ir.Range.from_min_extent
    region = {
        "small_stride": [R(i * 4, 8)],
        "stride_too_wide": [R(i * 4, 2)],
        "negative_scale": [R(1 - i, 4), R(20 - j * 4, 16)],
        "two_digits": [R(i * 4 + j, 1)],
        "dependent": [R(i, 2), R(i + 2, 2)],
    }[case]
    touched = _touched(region, dom)
    strict = tvm.arith.estimate_region_lower_bound(region, dom, tir.const(True))
    upper = tvm.arith.estimate_region_upper_bound(region, dom, tir.const(True))
    if strict is not None:  # exact: every index of the interval is touched, and no other
        for s, t in zip(strict, touched):
            assert set(range(_value(s.min_value, {}), _value(s.max_value, {}) + 1)) == t
    else:
        assert case in ("stride_too_wide", "dependent")
    for s, t in zip(upper, touched):  # sound: the upper bound holds every touched index
        assert _value(s.min_value, {}) <= min(t) and max(t) <= _value(s.max_value, {})


# ---- tir.analysis.OOBChecker -------------------------------------------------------------
@T.prim_func
def _oob_store(A: T.Buffer((2, 3), "float32"), B: T.Buffer((3, 2), "float32")):
    for i in range(3):
        B[0, i] = A[1, i]


@T.prim_func
def _in_bounds(A: T.Buffer((2, 3), "float32"), B: T.Buffer((3, 2), "float32"), n: T.int32):
    for i in range(2):
        B[i, 0] = A[i, 2]
        B[0, n] = A[1, i]  # unknown index: not provably out of bounds


def test_oob_checker_names_the_buffer_written_out_of_bounds():
    with pytest.raises(tvm.tir.ScheduleError, match="buffer B"):
        tvm.tir.analysis.OOBChecker()(tvm.IRModule.from_expr(_oob_store))


def test_oob_checker_passes_accesses_not_provably_out_of_bounds():
    mod = tvm.IRModule.from_expr(_in_bounds)
    out = tvm.tir.analysis.OOBChecker()(mod)
    tvm.ir.assert_structural_equal(out, mod)


# ---- arith.detect_clip_bound: bounds match the values satisfying the condition ----------
def test_detect_clip_bound_matches_brute_force_on_random_conjunctions():
    rng = np.random.default_rng(0)
    a, b = te.var("a"), te.var("b")
    ops = [tir.LT, tir.LE, tir.GT, tir.GE]
    pyops = [int.__lt__, int.__le__, int.__gt__, int.__ge__]
    for _ in range(20):
        clauses, checks = [], []
        for _ in range(int(rng.integers(1, 4))):
            k, c, sign = (
                int(rng.integers(-9, 10)),
                int(rng.integers(-9, 10)),
                int(rng.choice([-1, 1])),
            )
            op = int(rng.integers(0, 4))
            clauses.append(ops[op](a * sign + k, c))
            checks.append(lambda x, s=sign, k=k, c=c, op=op: pyops[op](x * s + k, c))
        clauses.append(tir.Min(a, b) > -30)  # splits into a > -30 and b > -30
        lo, hi, b_lo, b_hi = tvm.arith.detect_clip_bound(tir.all(*clauses), [a, b])
        assert _value(b_lo, {}) == -29 and b_hi is None
        sat = [x for x in range(-60, 61) if x > -30 and all(f(x) for f in checks)]
        lo_v = _value(lo, {})
        hi_v = 60 if hi is None else _value(hi, {})
        assert sat == list(range(lo_v, hi_v + 1))


def test_detect_clip_bound_refuses_a_clause_over_two_variables():
    a, b = te.var("a"), te.var("b")
    assert tvm.arith.detect_clip_bound(tir.all(a < b * 6, a - 1 > 0), [a, b]) == []
    lo, hi = tvm.arith.detect_clip_bound(tir.all(a < b * 6, a - 1 > 0), [a])
    assert _value(lo, {}) == 2
    assert _value(hi - b * 6, {}) == -1


# ---- runtime: enabled, param dicts in files ---------------------------------------------
def test_runtime_enabled_follows_the_devices_present():
    assert tvm.runtime.enabled("llvm") and tvm.runtime.enabled(tvm.target.Target("llvm"))
    assert tvm.runtime.enabled("cuda") == tvm.cuda().exist
    assert tvm.runtime.enabled("opencl") == tvm.opencl().exist
    assert not tvm.runtime.enabled("vulkan") and not tvm.runtime.enabled("")


def test_param_dict_file_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    params = {"w": rng.standard_normal((3, 4)).astype("float32"), "b": np.arange(5, dtype="int64")}
    path = str(tmp_path / "params.bin")
    tvm.runtime.save_param_dict_to_file(params, path)
    loaded = tvm.runtime.load_param_dict_from_file(path)
    assert sorted(loaded) == ["b", "w"]
    for k, v in params.items():
        np.testing.assert_array_equal(loaded[k].numpy(), v)
