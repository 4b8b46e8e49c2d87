"""Issue 27, round 2: names TVM v0.19's unit tests need, checked against TVM's documented
behaviour and against brute-force enumeration (numpy/Python integer arithmetic)."""

import subprocess
import sys
import textwrap

import pytest

import minitvm as tvm
from minitvm import tir
from minitvm.error import MiniTVMError

X, Y, T = tir.Var("x", "int32"), tir.Var("y", "int32"), tir.Var("t", "int32")
SAMPLES = [(x, y) for x in range(-13, 14, 3) for y in range(-11, 12, 2)]


def _trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


_BINARY = {
    tir.Add: lambda a, b: a + b,
    tir.Sub: lambda a, b: a - b,
    tir.Mul: lambda a, b: a * b,
    tir.FloorDiv: lambda a, b: a // b,
    tir.FloorMod: lambda a, b: a % b,
    tir.Div: _trunc_div,
    tir.Mod: lambda a, b: a - b * _trunc_div(a, b),
    tir.Min: min,
    tir.Max: max,
    tir.LT: lambda a, b: a < b,
    tir.LE: lambda a, b: a <= b,
    tir.GT: lambda a, b: a > b,
    tir.GE: lambda a, b: a >= b,
    tir.EQ: lambda a, b: a == b,
    tir.NE: lambda a, b: a != b,
    tir.And: lambda a, b: a and b,
    tir.Or: lambda a, b: a or b,
}
_CALLS = {"tir.shift_right": lambda a, b: a >> b, "tir.bitwise_and": lambda a, b: a & b}


def _value(e, env):
    """An independent reference: evaluate an integer expression with Python integers."""
    if isinstance(e, tir.IntImm):
        return e.value
    if isinstance(e, tir.Var):
        return env[e.name]
    if type(e) in _BINARY:
        return int(_BINARY[type(e)](_value(e.a, env), _value(e.b, env)))
    if isinstance(e, tir.Not):
        return int(not _value(e.a, env))
    if isinstance(e, tir.Select):
        return _value(e.true_value if _value(e.condition, env) else e.false_value, env)
    if isinstance(e, tir.Let):
        return _value(e.body, {**env, e.var.name: _value(e.value, env)})
    if isinstance(e, tir.Call):
        return _CALLS[e.op.name](*(_value(a, env) for a in e.args))
    raise AssertionError(f"no reference for {type(e).__name__}")


def test_submodule_import_through_alias_keeps_public_functions():
    # `import tvm.relax.transform.legalize_ops` binds the submodule onto its package unless the
    # package guards its public functions; the pass must stay callable afterwards.
    code = textwrap.dedent(
        """
        import sys, types, minitvm
        sys.modules["tvm"] = minitvm
        import tvm.relax.transform.legalize_ops, tvm.tir.transform.simplify, tvm.ir.node
        import tvm
        from tvm.relax.transform.fold_constant import fold_constant
        for f in (tvm.relax.transform.legalize_ops, tvm.relax.transform.fold_constant,
                  tvm.tir.transform.simplify, tvm.ir.node):
            assert callable(f) and not isinstance(f, types.ModuleType), f
        assert tvm.relax.transform.fold_constant is fold_constant
        assert sys.modules["minitvm.relax.transform.legalize_ops"].legalize_ops is \\
            tvm.relax.transform.legalize_ops
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


@pytest.mark.parametrize(
    "expr",
    [
        X * 6 + Y * 4,
        (X * 4 + 2) * (Y * 6 + 1),
        tir.floormod(X * 128 + Y * 4, 256),
        tir.floordiv(X * 4 + 2, 2),
        tir.truncdiv(X * 8, 4),
        tir.truncmod(X * 4, 4),
        tir.floormod(X * 4 + 3, 8),
        (X * 4 + 2) >> 1,
        (X * 16 + Y * 4) & 31,
        tir.min(X * 3, Y * 9),
        tir.max(X * 3 + 1, Y * 9 + 4),
        tir.Select(X > 0, X * 3 + 1, Y * 9 + 2),
        (X * 12 + 1) - (Y * 21 + 2),
        tir.Let(T, Y * 10, T + 1),
    ],
    ids=str,
)
def test_modular_set_holds_for_every_value(expr):
    m = tvm.arith.Analyzer().modular_set(expr)
    assert m.coeff >= 0
    for x, y in SAMPLES:
        v = _value(expr, {"x": x, "y": y})
        assert (v == m.base) if m.coeff == 0 else (v - m.base) % m.coeff == 0, (x, y, v, m)


def test_modular_set_matches_tvm_documented_examples():
    ana = tvm.arith.Analyzer()
    got = lambda e: (ana.modular_set(e).coeff, ana.modular_set(e).base)
    assert got(X * 6 + Y * 4) == (2, 0)
    assert got((X * 4 + 2) * (Y * 6 + 1)) == (4, 2)
    assert got(tir.max(X * 3 + 1, Y * 9 + 4)) == (3, 1)
    assert got(tir.IntImm("int32", 7)) == (0, 7)
    assert got(tir.truncdiv(X * 4 + 2, 2)) == (1, 0)  # x may be negative: trunc rounds up
    ana.update(X, tvm.arith.ConstIntBound(0, 100))
    assert got(tir.truncdiv(X * 4 + 2, 2)) == (2, 1)
    a = tir.Var("a", "int32")
    with (
        ana.constraint_scope(tir.truncmod(a, 3) == 2),
        ana.constraint_scope(tir.truncmod(a, 5) == 3),
        ana.constraint_scope(tir.truncmod(a, 7) == 2),
    ):
        assert got(a) == (105, 23)  # Chinese remainder theorem
    ana.bind(Y, X * 4 + 1)
    assert got(1 - Y) == (4, 0)


def test_can_prove_self_equality_for_unsigned_and_bool_not_float():
    ana = tvm.arith.Analyzer()
    for dtype in ("uint8", "uint32", "uint64", "bool", "int16"):
        n = tir.Var("n", dtype)
        assert ana.can_prove(tir.EQ(n, n)) and ana.can_prove_equal(n, n)
    f = tir.Var("f", "float32")
    assert not ana.can_prove(tir.EQ(f, f))  # NaN != NaN: not provable for floats


I, N, B = tir.Var("i", "int32"), tir.Var("n", "int32"), tir.Var("b", "bool")
NARROW_CASES = [
    I > N, I < N, I <= N, I >= N, N > I, N < I, tir.EQ(I, N), tir.EQ(N, I), tir.NE(I, N), tir.NE(N, I),
    tir.floordiv(I, 4) > N, tir.floordiv(I + N, 4) > 0, tir.floordiv(I + N, 4) == 0,
    I + N < 10, I - N < 10, tir.Not(I < N), tir.floormod(I, 8) == N, tir.floordiv(I, N) == 0,
    tir.And(I * -2 < N, I < 5), tir.Or(tir.Not(tir.EQ(I, N)), I > 3),
]


@pytest.mark.parametrize("pred", NARROW_CASES, ids=str)
def test_narrow_predicate_implies_original_for_every_free_value(pred):
    narrowed = tvm.arith.narrow_predicate_expression(pred, {N: tir.Range.from_min_extent(0, 8)})
    names = set()
    tir.stmt_functor.post_order_visit(narrowed, lambda e: names.add(getattr(e, "name", None)))
    assert "n" not in names
    for i in range(-20, 21):
        if _value(narrowed, {"i": i}):
            for n in range(8):
                env = {"i": i, "n": n}
                assert _value(pred, env), (i, n, narrowed)


def test_narrow_predicate_documented_forms_and_ffi_name():
    ffi = tvm.arith._ffi_api
    rng = {N: tir.Range.from_min_extent(0, 8)}
    tvm.ir.assert_structural_equal(ffi.NarrowPredicateExpression(I > N, rng), I > 7)
    tvm.ir.assert_structural_equal(ffi.NarrowPredicateExpression(I - N < 10, rng), tir.Sub(I, 0) < 10)
    tvm.ir.assert_structural_equal(ffi.NarrowPredicateExpression(B, rng), B)
    with pytest.raises(AttributeError, match="not available in minitvm"):
        ffi.DomainTouched  # noqa: B018
    with pytest.raises(MiniTVMError, match="constant and non-empty"):
        tvm.arith.narrow_predicate_expression(I > N, {N: tir.Range.from_min_extent(0, I)})
