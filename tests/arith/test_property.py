"""Hypothesis property tests: simplification preserves values, bounds contain them, proofs hold."""

import random

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from minitvm import arith, tir
from minitvm.ir import structural_equal
from minitvm.tir import const

# variables and the ranges they are bound to: [lo, lo + extent)
X, Y, Z = tir.Var("x"), tir.Var("y"), tir.Var("z")
D = tir.Var("d")  # a symbolic divisor, bound >= 1
N = tir.SizeVar("n")  # bound to nothing: only known >= 0
VARS = (X, Y, Z, D, N)
INT32 = (-(2**31), 2**31 - 1)


class Overflow(Exception):
    pass


def _fdiv(a, b):
    return a // b


def _tdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_EVAL = {
    tir.Add: lambda a, b: a + b,
    tir.Sub: lambda a, b: a - b,
    tir.Mul: lambda a, b: a * b,
    tir.FloorDiv: _fdiv,
    tir.FloorMod: lambda a, b: a - b * _fdiv(a, b),
    tir.Div: _tdiv,
    tir.Mod: lambda a, b: a - b * _tdiv(a, b),
    tir.Min: min,
    tir.Max: max,
    tir.LT: lambda a, b: int(a < b),
    tir.LE: lambda a, b: int(a <= b),
    tir.GT: lambda a, b: int(a > b),
    tir.GE: lambda a, b: int(a >= b),
    tir.EQ: lambda a, b: int(a == b),
    tir.NE: lambda a, b: int(a != b),
    tir.And: lambda a, b: int(a and b),
    tir.Or: lambda a, b: int(a or b),
}


def evaluate(e, env, check=True):
    """Reference evaluator with exact floor / truncation semantics on Python ints; raises
    Overflow when a value leaves int32 (the simplifier assumes there is none) if `check`."""
    t = type(e)
    if isinstance(e, tir.Var):
        return env[e]
    if t is tir.IntImm:
        return e.value
    if t in _EVAL:
        a, b = evaluate(e.a, env, check), evaluate(e.b, env, check)
        if t in (tir.FloorDiv, tir.FloorMod, tir.Div, tir.Mod) and b == 0:
            raise ZeroDivisionError
        out = _EVAL[t](a, b)
    elif t is tir.Not:
        out = int(not evaluate(e.a, env, check))
    elif t is tir.Select:
        c = evaluate(e.condition, env, check)
        out = evaluate(e.true_value if c else e.false_value, env, check)
    elif t is tir.Call and e.op.name == "tir.likely":
        out = evaluate(e.args[0], env, check)
    elif t is tir.Cast:
        out = evaluate(e.value, env, check)
    else:
        raise AssertionError(f"no reference for {t.__name__}")
    if check and not INT32[0] <= out <= INT32[1]:
        raise Overflow
    return out


leaves = st.one_of(
    st.sampled_from([X, Y, Z, D, N]),
    st.integers(-9, 9).map(lambda v: const(v)),
)
pos_const = st.integers(1, 9).map(lambda v: const(v))
divisor = st.one_of(pos_const, st.just(D))


def _extend(children):
    binary = st.sampled_from([tir.Add, tir.Sub, tir.Min, tir.Max])
    cmp = st.sampled_from([tir.LT, tir.LE, tir.GT, tir.GE, tir.EQ, tir.NE])
    return st.one_of(
        st.tuples(binary, children, children).map(lambda t: t[0](t[1], t[2])),
        st.tuples(children, st.integers(-4, 4)).map(lambda t: tir.Mul(t[0], const(t[1]))),
        st.tuples(children, children).map(lambda t: tir.Mul(t[0], t[1])),
        st.tuples(st.sampled_from([tir.FloorDiv, tir.FloorMod]), children, divisor).map(
            lambda t: t[0](t[1], t[2])
        ),
        st.tuples(st.sampled_from([tir.Div, tir.Mod]), children, pos_const).map(
            lambda t: t[0](t[1], t[2])
        ),
        st.tuples(cmp, children, children, children, children).map(
            lambda t: tir.Select(t[0](t[1], t[2]), t[3], t[4])
        ),
    )


int_exprs = st.recursive(leaves, _extend, max_leaves=10)
comparisons = st.tuples(
    st.sampled_from([tir.LT, tir.LE, tir.GT, tir.GE, tir.EQ, tir.NE]), int_exprs, int_exprs
).map(lambda t: t[0](t[1], t[2]))
conditions = st.recursive(
    comparisons,
    lambda c: st.one_of(
        st.tuples(st.sampled_from([tir.And, tir.Or]), c, c).map(lambda t: t[0](t[1], t[2])),
        c.map(tir.Not),
    ),
    max_leaves=3,
)


@st.composite
def ranges(draw):
    out = {}
    for v in (X, Y, Z):
        lo = draw(st.integers(-20, 20))
        out[v] = (lo, lo + draw(st.integers(1, 40)))
    lo = draw(st.integers(1, 5))
    out[D] = (lo, lo + draw(st.integers(1, 6)))
    return out


def make_analyzer(rngs):
    ana = arith.Analyzer()
    for v, (lo, hi) in rngs.items():
        ana.bind(v, tir.Range.from_min_extent(lo, hi - lo))
    return ana


def samples(rngs, seed, count=40):
    rng = random.Random(seed)
    envs = []
    for k in range(count):
        env = {}
        for v, (lo, hi) in rngs.items():
            env[v] = lo if k == 0 else hi - 1 if k == 1 else rng.randrange(lo, hi)
        env[N] = rng.choice([0, 1, 7, 64, rng.randrange(0, 1000)])
        envs.append(env)
    return envs


def values(e, envs):
    out = []
    for env in envs:
        try:
            out.append(evaluate(e, env))
        except (Overflow, ZeroDivisionError):
            assume(False)
    return out


# derandomize: the same examples every run (a reproducible suite); database=None: no files written
SETTINGS = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
    derandomize=True,
)


@SETTINGS
@given(int_exprs, ranges(), st.integers(0, 2**16))
def test_simplify_preserves_values(e, rngs, seed):
    envs = samples(rngs, seed)
    expected = values(e, envs)
    out = make_analyzer(rngs).simplify(e)
    assert out.dtype == e.dtype
    assert [evaluate(out, env) for env in envs] == expected, f"{e}\n  -> {out}"


@SETTINGS
@given(int_exprs, ranges(), st.integers(0, 2**16))
def test_const_int_bound_contains_values(e, rngs, seed):
    envs = samples(rngs, seed)
    got = values(e, envs)
    bound = make_analyzer(rngs).const_int_bound(e)
    assert all(bound.min_value <= v <= bound.max_value for v in got), f"{e}: {bound} vs {got}"


@SETTINGS
@given(int_exprs, ranges(), st.integers(0, 2**16))
def test_int_set_contains_values(e, rngs, seed):
    envs = samples(rngs, seed)
    got = values(e, envs)
    s = make_analyzer(rngs).int_set(e)
    for env, v in zip(envs, got):
        if s.has_lower_bound():
            assert evaluate(s.min_value, env, check=False) <= v, f"{e}: {s}"
        if s.has_upper_bound():
            assert v <= evaluate(s.max_value, env, check=False), f"{e}: {s}"


@SETTINGS
@given(conditions, ranges(), st.integers(0, 2**16))
def test_can_prove_implies_truth(cond, rngs, seed):
    envs = samples(rngs, seed)
    got = values(cond, envs)
    ana = make_analyzer(rngs)
    if ana.can_prove(cond):
        assert all(got), f"proved {cond} but it fails on a sample"
    if ana.can_prove(tir.Not(cond)):
        assert not any(got), f"proved not {cond} but it holds on a sample"


@SETTINGS
@given(conditions, ranges(), st.integers(0, 2**16))
def test_simplify_of_conditions_preserves_truth(cond, rngs, seed):
    envs = samples(rngs, seed)
    expected = values(cond, envs)
    out = make_analyzer(rngs).simplify(cond)
    assert out.dtype == cond.dtype
    assert [evaluate(out, env) for env in envs] == expected, f"{cond}\n  -> {out}"


@SETTINGS
@given(conditions, int_exprs, ranges(), st.integers(0, 2**16))
def test_constraint_scope_is_sound(cond, e, rngs, seed):
    envs = [env for env in samples(rngs, seed, count=80) if _holds(cond, env)]
    assume(envs)
    expected = values(e, envs)
    ana = make_analyzer(rngs)
    with ana.constraint_scope(cond):
        out = ana.simplify(e)
        bound = ana.const_int_bound(e)
    assert [evaluate(out, env) for env in envs] == expected, f"under {cond}: {e}\n  -> {out}"
    assert all(bound.min_value <= v <= bound.max_value for v in expected)


def _holds(cond, env):
    try:
        return bool(evaluate(cond, env))
    except (Overflow, ZeroDivisionError):
        return False


# --- symbolic ranges: x in [0, n), z in [0, d*k), divisions by d and by n ---------------------
sym_divisor = st.one_of(pos_const, st.just(D), st.just(N))


def _extend_sym(children):
    return st.one_of(
        _extend(children),
        st.tuples(st.sampled_from([tir.FloorDiv, tir.FloorMod]), children, sym_divisor).map(
            lambda t: t[0](t[1], t[2])
        ),
        st.tuples(children, children, children).map(lambda t: t[0] * N + t[1] + t[2] * D),
    )


sym_exprs = st.recursive(leaves, _extend_sym, max_leaves=8)


def _sym_analyzer(k, d_lo):
    ana = arith.Analyzer()
    ana.bind(X, tir.Range.from_min_extent(0, N))
    ana.bind(D, tir.Range.from_min_extent(d_lo, 4))
    ana.bind(Z, tir.Range.from_min_extent(0, D * k))
    ana.bind(Y, tir.Range.from_min_extent(-3, 7))
    return ana


def _sym_samples(k, d_lo, seed, count=40):
    rng = random.Random(seed)
    envs = []
    for _ in range(count):
        n = rng.choice([1, 2, 5, rng.randrange(1, 200)])
        d = rng.randrange(d_lo, d_lo + 4)
        envs.append(
            {
                N: n,
                X: rng.randrange(0, n),
                D: d,
                Z: rng.randrange(0, d * k),
                Y: rng.randrange(-3, 4),
            }
        )
    return envs


@SETTINGS
@given(sym_exprs, st.integers(1, 5), st.integers(1, 3), st.integers(0, 2**16))
def test_symbolic_ranges_preserve_values_and_bounds(e, k, d_lo, seed):
    envs = _sym_samples(k, d_lo, seed)
    expected = values(e, envs)
    ana = _sym_analyzer(k, d_lo)
    out = ana.simplify(e)
    assert [evaluate(out, env) for env in envs] == expected, f"{e}\n  -> {out}"
    bound = ana.const_int_bound(e)
    assert all(bound.min_value <= v <= bound.max_value for v in expected)
    s = ana.int_set(e)
    for env, v in zip(envs, expected):
        assert not s.has_lower_bound() or evaluate(s.min_value, env, check=False) <= v, f"{e}: {s}"
        assert not s.has_upper_bound() or v <= evaluate(s.max_value, env, check=False), f"{e}: {s}"


@SETTINGS
@given(sym_exprs, sym_exprs, st.integers(1, 5), st.integers(1, 3), st.integers(0, 2**16))
def test_symbolic_can_prove_implies_truth(a, b, k, d_lo, seed):
    envs = _sym_samples(k, d_lo, seed)
    va, vb = values(a, envs), values(b, envs)
    ana = _sym_analyzer(k, d_lo)
    if ana.can_prove(tir.LT(a, b)):
        assert all(p < q for p, q in zip(va, vb)), f"proved {a} < {b}"
    if ana.can_prove_equal(a, b):
        assert va == vb, f"proved {a} == {b}"


# --- split / fuse identities on random index expressions ------------------------------------
affine_exprs = st.lists(
    st.tuples(st.sampled_from([X, Y, Z]), st.integers(-5, 5)), min_size=1, max_size=3
).map(lambda terms: sum((v * c for v, c in terms[1:]), terms[0][0] * terms[0][1]))


@SETTINGS
@given(st.one_of(affine_exprs, int_exprs), divisor, ranges(), st.integers(0, 2**16))
def test_split_fuse_identities(e, c, rngs, seed):
    envs = samples(rngs, seed)
    expected = values(e, envs)
    ana = make_analyzer(rngs)
    for fused in (
        tir.FloorDiv(e, c) * c + tir.FloorMod(e, c),
        e - tir.FloorDiv(e, c) * c + tir.FloorDiv(e, c) * c,
    ):
        out = ana.simplify(fused)
        assert [evaluate(out, env) for env in envs] == expected, f"{fused}\n  -> {out}"
    out = ana.simplify(e - tir.FloorDiv(e, c) * c)
    got = [evaluate(out, env) for env in envs]
    assert got == [v - evaluate(c, env) * (v // evaluate(c, env)) for v, env in zip(expected, envs)]


def test_split_fuse_round_trip_on_affine_forms():
    ana = make_analyzer({X: (0, 8), Y: (0, 8), Z: (0, 8), D: (1, 4)})
    for e in (X * 3 + Y, X * 8 + Y * 2 + Z, X - Y):
        for c in (const(4), D):
            out = ana.simplify(tir.FloorDiv(e, c) * c + tir.FloorMod(e, c))
            assert structural_equal(out, ana.simplify(e)), f"{e} by {c}: {out}"


@SETTINGS
@given(conditions, int_exprs, ranges(), st.integers(0, 2**16))
def test_facts_do_not_leak_out_of_their_scope(cond, e, rngs, seed):
    envs = samples(rngs, seed)
    expected = values(e, envs)
    ana = make_analyzer(rngs)
    before = ana.simplify(e)
    with ana.constraint_scope(cond):
        ana.simplify(e)
        ana.simplify(tir.Select(cond, e, e + 1))
    after = ana.simplify(e)
    assert structural_equal(before, after), f"{e}: {before} before, {after} after `{cond}`"
    assert [evaluate(after, env) for env in envs] == expected
