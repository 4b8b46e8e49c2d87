"""Bound-based folding of divisions in indices: floordiv/floormod of a bounded sum simplify to
the exact quotient and remainder (checked by enumerating every value in the bounds, the
oracle), and simplify_block_indices folds a legalized reshape's digits under the block
domains so that GPT-2's split-head attention reads q and k without divisions (built and
compared with numpy)."""

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import minitvm as tvm
from minitvm import te, tir, topi
from minitvm.arith import Analyzer
from minitvm.arith.block_indices import simplify_block_indices
from minitvm.dlight.cpu import default_schedule_func
from minitvm.tir.expr import (
    Add,
    BufferLoad,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mod,
    Mul,
    Sub,
    Var,
)
from minitvm.tir.functor import post_order_visit

_BINARY = {
    Add: lambda a, b: a + b,
    Sub: lambda a, b: a - b,
    Mul: lambda a, b: a * b,
    FloorDiv: lambda a, b: a // b,  # Python's // and % are floor division, as floordiv/floormod
    FloorMod: lambda a, b: a % b,
    Min: min,
    Max: max,
}


def _eval(e, env: dict) -> int:
    """The value of an integer expression (the oracle: Python integers, no simplifier)."""
    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, Var):
        return env[e.name]
    return _BINARY[type(e)](_eval(e.a, env), _eval(e.b, env))


def _i(v: int):
    return tir.const(v, "int64")


def _bound(ana: Analyzer, name: str, lo: int, ext: int) -> Var:
    v = tir.Var(name, "int64")
    ana.bind(v, tir.Range.from_min_extent(_i(lo), _i(ext)))
    return v


def _check_everywhere(expr, simplified, ranges: dict) -> None:
    names = list(ranges)
    for values in itertools.product(*(range(lo, lo + ext) for lo, ext in ranges.values())):
        env = dict(zip(names, values))
        assert _eval(simplified, env) == _eval(expr, env), (str(expr), str(simplified), env)


@settings(max_examples=150, deadline=None)
@given(
    a_lo=st.integers(-6, 6),
    a_ext=st.integers(1, 6),
    b_lo=st.integers(-20, 20),
    b_ext=st.integers(1, 40),
    c=st.integers(-9, 9),
    d=st.sampled_from([-8, -3, 1, 2, 4, 7, 8, 16, 64]),
    m=st.sampled_from([1, 3, 4, 8, 128]),
)
def test_division_of_a_bounded_sum_matches_enumeration(a_lo, a_ext, b_lo, b_ext, c, d, m):
    """floordiv(a*c + b, d), floormod(a*c + b, d) and GPT-2's `(a + (b*c + ...) // d) % m`:
    the simplified form equals the original at every point of the bounds."""
    ana = Analyzer()
    a = _bound(ana, "a", a_lo, a_ext)
    b = _bound(ana, "b", b_lo, b_ext)
    ranges = {"a": (a_lo, a_ext), "b": (b_lo, b_ext)}
    x = a * _i(c) + b
    for expr in (
        tir.floordiv(x, _i(d)),
        tir.floormod(x, _i(d)),
        tir.floormod(a + tir.floordiv(x, _i(d)), _i(m)),
        tir.floordiv(b, _i(d)) * _i(d) + tir.floormod(b, _i(d)),
    ):
        _check_everywhere(expr, ana.simplify(expr), ranges)


@settings(max_examples=100, deadline=None)
@given(
    b_lo=st.integers(-20, 20),
    b_ext=st.integers(1, 40),
    c=st.integers(-3, 3),
    d=st.sampled_from([-4, 2, 4, 8, 16]),
    e=st.integers(-5, 5),
)
def test_division_with_an_unbounded_term_matches_enumeration(b_lo, b_ext, c, d, e):
    """floordiv(u*(c*d) + b + e, d) with `u` unbounded (a symbolic outer index): only b's
    bounds are known; the result must hold for every u checked, here u in [-12, 12]."""
    ana = Analyzer()
    u = tir.Var("u", "int64")
    b = _bound(ana, "b", b_lo, b_ext)
    x = u * _i(c * d) + b + _i(e)
    for expr in (tir.floordiv(x, _i(d)), tir.floormod(x, _i(d))):
        _check_everywhere(expr, ana.simplify(expr), {"u": (-12, 25), "b": (b_lo, b_ext)})


@settings(max_examples=200, deadline=None)
@given(
    cu=st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128, 3, 6, 12]),
    ck=st.sampled_from([1, 2, 4, 8, 16, 3, 5]),
    k_lo=st.integers(-4, 4),
    k_ext=st.integers(1, 12),
    j_lo=st.integers(-3, 3),
    j_ext=st.integers(1, 9),
    e=st.integers(-6, 6),
    d=st.sampled_from([2, 4, 8, 16, 32, 64, 256, 6, 12]),
)
def test_division_of_a_split_sum_matches_enumeration(cu, ck, k_lo, k_ext, j_lo, j_ext, e, d):
    """floordiv/floormod(u*cu + k*ck + j + e, d), `u` unbounded, k and j bounded: the
    multiples of a divisor of d separate from a low part whose bounds may fit under it (the
    grouped-query attention index `(h*8192 + k*64 + j) // 16384`); the result must equal the
    original at every point, u in [-10, 10]."""
    ana = Analyzer()
    u = tir.Var("u", "int64")
    k = _bound(ana, "k", k_lo, k_ext)
    j = _bound(ana, "j", j_lo, j_ext)
    x = u * _i(cu) + k * _i(ck) + j + _i(e)
    ranges = {"u": (-10, 21), "k": (k_lo, k_ext), "j": (j_lo, j_ext)}
    for expr in (tir.floordiv(x, _i(d)), tir.floormod(x, _i(d))):
        _check_everywhere(expr, ana.simplify(expr), ranges)


def test_a_sum_splits_at_a_divisor_of_the_divisor():
    """`(h*8192 + k*64 + j) // 16384` with k < 128, j < 64 is `h // 2` (the low part,
    k*64 + j, stays below 8192), and the remainder keeps the low part as it is."""
    ana = Analyzer()
    h = tir.Var("h", "int64")
    k, j = _bound(ana, "k", 0, 128), _bound(ana, "j", 0, 64)
    x = h * _i(8192) + k * _i(64) + j
    assert ana.can_prove_equal(ana.simplify(tir.floordiv(x, _i(16384))), tir.floordiv(h, _i(2)))
    mod = ana.simplify(tir.floormod(x, _i(16384)))
    assert ana.can_prove_equal(mod, tir.floormod(h, _i(2)) * _i(8192) + k * _i(64) + j)
    # j < 65 can carry into the 8192s: no split may be made
    j2 = _bound(ana, "j2", 0, 65)
    x2 = h * _i(8192) + k * _i(64) + j2
    out = ana.simplify(tir.floordiv(x2, _i(16384)))
    assert not ana.can_prove_equal(out, tir.floordiv(h, _i(2)))


def test_division_folds_when_the_bounds_allow_it():
    """0 <= i*64 + k < 256 makes the quotient 0 and the remainder the operand itself."""
    ana = Analyzer()
    i, k, j = _bound(ana, "i", 0, 4), _bound(ana, "k", 0, 64), _bound(ana, "j", 0, 128)
    x = i * _i(64) + k
    assert ana.can_prove_equal(ana.simplify(tir.floordiv(x, _i(256))), _i(0))
    assert ana.simplify(tir.floormod(x, _i(256))).same_as(x) or ana.can_prove_equal(
        ana.simplify(tir.floormod(x, _i(256))), x
    )
    gpt2 = tir.floormod(j + tir.floordiv(x, _i(256)), _i(128))
    assert ana.simplify(gpt2).same_as(j)
    # one past the bound: the quotient is no longer 0, and nothing may fold
    wide = _bound(ana, "w", 0, 65)
    assert not isinstance(ana.simplify(tir.floordiv(i * _i(64) + wide, _i(256))), IntImm)


def _divisions(func) -> list:
    """Every division or remainder inside a buffer load's indices."""
    found: list = []

    def visit(n):
        if isinstance(n, BufferLoad):
            for idx in n.indices:
                post_order_visit(
                    idx,
                    lambda e: (
                        found.append(e) if isinstance(e, FloorDiv | FloorMod | Div | Mod) else None
                    ),
                )

    post_order_visit(func.body, visit)
    return found


def _split_heads_qk(seq=16, heads=4, dim=8):
    """q @ k^T of heads split out of (1, seq, heads*dim) projections, as GPT-2 computes it."""
    q_in = te.placeholder((1, seq, heads * dim), name="q_in")
    k_in = te.placeholder((1, seq, heads * dim), name="k_in")
    q = topi.transpose(topi.reshape(q_in, (1, seq, heads, dim)), (0, 2, 1, 3))
    k = topi.transpose(topi.reshape(k_in, (1, seq, heads, dim)), (0, 2, 3, 1))
    r = te.reduce_axis((0, dim), name="r")
    s = te.compute(
        (1, heads, seq, seq),
        lambda b, h, i, j: te.sum(q[b, h, i, r] * k[b, h, r, j], axis=r),
        name="scores",
    )
    return te.create_prim_func([q_in, k_in, s])


def _reference(qv, kv, seq, heads, dim):
    q = qv.reshape(1, seq, heads, dim).transpose(0, 2, 1, 3)
    k = kv.reshape(1, seq, heads, dim).transpose(0, 2, 3, 1)
    return q @ k


def test_reshape_digits_fold_and_the_kernel_still_matches_numpy():
    seq, heads, dim = 16, 4, 8
    func = _split_heads_qk(seq, heads, dim)
    assert _divisions(func)  # the legalized reshapes split the flat offset with // and %
    simplified = simplify_block_indices(func)
    assert not _divisions(simplified)
    assert simplify_block_indices(simplified) is simplified  # nothing left: the same object
    scheduled = default_schedule_func(func)
    assert not _divisions(scheduled)  # inlining carries no division into the matmul
    rng = np.random.default_rng(0)
    qv, kv = (rng.standard_normal((1, seq, heads * dim)).astype("float32") for _ in range(2))
    want = _reference(qv, kv, seq, heads, dim)
    for f in (simplified, scheduled):
        out = tvm.nd.array(np.zeros((1, heads, seq, seq), "float32"))
        tvm.build(f, target="llvm")(tvm.nd.array(qv), tvm.nd.array(kv), out)
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)


def test_an_index_that_needs_its_division_keeps_it():
    """Heads merged back, `x[k // dim, i, k % dim]` with k over all heads: no bound removes
    the division, and the result still matches numpy."""
    seq, heads, dim = 8, 4, 8
    x = te.placeholder((heads, seq, dim), name="x")
    merged = topi.reshape(topi.transpose(x, (1, 0, 2)), (seq, heads * dim))
    func = te.create_prim_func([x, merged])
    out_func = simplify_block_indices(func)
    assert _divisions(out_func)
    xv = np.random.default_rng(1).standard_normal((heads, seq, dim)).astype("float32")
    out = tvm.nd.array(np.zeros((seq, heads * dim), "float32"))
    tvm.build(default_schedule_func(func), target="llvm")(tvm.nd.array(xv), out)
    np.testing.assert_allclose(out.numpy(), xv.transpose(1, 0, 2).reshape(seq, -1))


def test_attention_values_read_in_place_by_the_register_tile():
    """P @ V with V's heads split out of a (seq, heads*dim) projection: with the reshape's
    divisions folded, V reads `v[k, h*dim + j]` (contiguous along j), so the matmul rule
    register-blocks it (a `local` accumulator) reading V in place, no transposed copy of V;
    the result matches numpy."""
    seq, heads, dim = 64, 4, 64
    p_in = te.placeholder((heads, seq, seq), name="p")
    v_in = te.placeholder((seq, heads * dim), name="v")
    v = topi.transpose(topi.reshape(v_in, (seq, heads, dim)), (1, 0, 2))
    r = te.reduce_axis((0, seq), name="r")
    out = te.compute(
        (heads, seq, dim), lambda h, i, j: te.sum(p_in[h, i, r] * v[h, r, j], axis=r), name="o"
    )
    func = default_schedule_func(te.create_prim_func([p_in, v_in, out]))
    allocs = func.body.block.alloc_buffers
    assert [b.scope() for b in allocs] == ["local"], [b.name for b in allocs]
    assert not _divisions(func)
    rng = np.random.default_rng(2)
    pv = rng.standard_normal((heads, seq, seq)).astype("float32")
    vv = rng.standard_normal((seq, heads * dim)).astype("float32")
    got = tvm.nd.array(np.zeros((heads, seq, dim), "float32"))
    tvm.build(func, target="llvm")(tvm.nd.array(pv), tvm.nd.array(vv), got)
    want = pv @ vv.reshape(seq, heads, dim).transpose(1, 0, 2)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
