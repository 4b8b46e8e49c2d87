"""Scalable vectors (tir.vscale), tir.trace and tir.Any: construction, dtypes, the simplifier's
soundness on vscale lanes (brute force over vscale = 1..4), and the LLVM codegen's refusal."""

import itertools

import pytest

import minitvm as tvm
from minitvm import te, tir
from minitvm.arith import Analyzer
from minitvm.error import BuildError, DTypeError
from minitvm.ir.dtype import DataType
from minitvm.tir.expr import AnyDim
from minitvm.tir.op import trace


def vs(k):
    return tir.vscale() * k


# ----------------------------------------------------------------------------- DataType
@pytest.mark.parametrize("spec", ["int32xvscalex4", "float32xvscalex8", "boolxvscalex16"])
def test_scalable_dtype_parses_and_prints_back(spec):
    d = DataType(spec)
    assert str(d) == spec and DataType(str(d)) is d
    assert d.is_scalable_vector and not d.is_vector and not d.is_scalar
    assert d.vscale_factor == int(spec.rsplit("x", 1)[1])
    assert d.element_of().with_scalable_vscale_factor(d.vscale_factor) is d


def test_scalable_dtype_has_no_static_size():
    with pytest.raises(DTypeError, match="scalable vector"):
        _ = DataType("float32xvscalex4").bytes
    with pytest.raises(DTypeError, match="not a scalable vector"):
        _ = DataType("float32x4").vscale_factor


def test_uint1_is_bool_as_in_tvm():
    assert DataType("uint1") == DataType("bool")
    assert DataType("uint1x2") == DataType("boolx2")


# ----------------------------------------------------------------------------- nodes
@pytest.mark.parametrize("make", [lambda n: tir.Ramp(0, 1, n), lambda n: tir.Broadcast(0, n)])
@pytest.mark.parametrize("lanes", [11 * tir.vscale(), tir.vscale() * 11, -11])
def test_scalable_lanes_normalise_to_vscale_times_k(make, lanes):
    node = make(lanes)
    assert node.dtype == "int32xvscalex11"
    assert isinstance(node.lanes, tir.Mul) and node.lanes.b.value == 11
    assert node.lanes.a.op.name == "tir.vscale"


@pytest.mark.parametrize("make", [lambda n: tir.Ramp(0, 1, n), lambda n: tir.Broadcast(0, n)])
@pytest.mark.parametrize("lanes", [tir.vscale(), tir.vscale() + 3, tir.vscale() * 2 + 5])
def test_invalid_scalable_lanes_are_refused(make, lanes):
    with pytest.raises(DTypeError, match="invalid scalable lanes"):
        make(lanes)


def test_scalar_operand_broadcasts_to_scalable_lanes():
    vec = tir.Ramp(0, 1, 4 * tir.vscale()) + 3
    assert isinstance(vec.b, tir.Broadcast) and vec.b.dtype == "int32xvscalex4"


def test_buffer_load_with_scalar_and_scalable_index_is_scalable():
    buf = tir.decl_buffer((4, 24), "float32")
    load = tir.BufferLoad(buf, [tir.Var("i", "int32"), tir.Ramp(1, 1, vs(8))])
    assert load.dtype == "float32xvscalex8"


def test_scalable_ramp_prints_and_parses_back():
    buf = tir.decl_buffer((24,), "int32")
    store = tir.BufferStore(buf, tir.Broadcast(1, vs(4)), [tir.Ramp(0, 1, vs(4))])
    func = tir.PrimFunc([buf], store)
    assert "T.Ramp(0, 1, T.vscale() * 4)" in func.script()
    tvm.ir.assert_structural_equal(tvm.script.from_source(func.script()), func)


def test_any_is_an_int32_leaf_equal_only_to_itself():
    a, b = AnyDim(), AnyDim()
    assert a.dtype == "int32"
    assert not tvm.ir.structural_equal(Analyzer().rewrite_simplify(a - b), tir.IntImm("int32", 0))


# ----------------------------------------------------------------------------- simplifier
def _lanes(e, env, vscale):
    """Reference evaluator: the lanes of an integer vector (or scalar) expression."""
    if isinstance(e, tir.IntImm):
        return e.value
    if isinstance(e, tir.Var):
        return env[e]
    if isinstance(e, tir.Call) and e.op.name == "tir.vscale":
        return vscale
    if isinstance(e, tir.Ramp):
        n = _lanes(e.lanes, env, vscale) if not isinstance(e.lanes, int) else e.lanes
        base, stride = _lanes(e.base, env, vscale), _lanes(e.stride, env, vscale)
        return [base + k * stride for k in range(n)]
    if isinstance(e, tir.Broadcast):
        n = _lanes(e.lanes, env, vscale) if not isinstance(e.lanes, int) else e.lanes
        return [_lanes(e.value, env, vscale)] * n
    ops = {
        tir.Add: lambda p, q: p + q,
        tir.Sub: lambda p, q: p - q,
        tir.Mul: lambda p, q: p * q,
        tir.FloorDiv: lambda p, q: p // q,
        tir.FloorMod: lambda p, q: p % q,
    }
    a, b = _lanes(e.a, env, vscale), _lanes(e.b, env, vscale)
    if isinstance(a, list) or isinstance(b, list):
        n = len(a) if isinstance(a, list) else len(b)
        a = a if isinstance(a, list) else [a] * n
        b = b if isinstance(b, list) else [b] * n
        return [ops[type(e)](p, q) for p, q in zip(a, b, strict=True)]
    return ops[type(e)](a, b)


X, Y = tir.Var("x", "int32"), tir.Var("y", "int32")
SCALABLE_CASES = [
    tir.Ramp(X, 1, vs(4)) + tir.Ramp(Y, 2, vs(4)),
    tir.Broadcast(X, vs(8)) + tir.Broadcast(Y, vs(8)),
    tir.Ramp(X, 3, vs(4)) - tir.Broadcast(Y, vs(4)),
    tir.Ramp(X, 2, vs(4)) * tir.Broadcast(3, vs(4)),
    tir.Ramp(X * 8, 2, vs(4)) // tir.Broadcast(2, vs(4)),
    tir.Ramp(X * 8, 4, vs(4)) % tir.Broadcast(2, vs(4)),
    tir.Ramp(X * 8, 1, vs(4)) // tir.Broadcast(8, vs(4)),  # lanes may cross a bucket of 8
    tir.Ramp(X * 8 + 1, 1, vs(4)) % tir.Broadcast(8, vs(4)),
]


@pytest.mark.parametrize("before", SCALABLE_CASES, ids=str)
def test_simplify_of_scalable_vectors_is_sound(before):
    ana = Analyzer()
    ana.bind(X, tvm.ir.Range(0, 6))
    after = ana.rewrite_simplify(before)
    assert after.dtype == before.dtype
    for vscale, x, y in itertools.product(range(1, 5), range(6), range(-3, 4)):
        env = {X: x, Y: y}
        assert _lanes(after, env, vscale) == _lanes(before, env, vscale), (vscale, x, y, after)


def test_scalable_ramps_combine_like_fixed_ones():
    got = Analyzer().rewrite_simplify(tir.Ramp(X, 1, vs(4)) + tir.Ramp(Y, 2, vs(4)))
    tvm.ir.assert_structural_equal(got, tir.Ramp(X + Y, 3, vs(4)))


def test_const_int_bound_of_scalable_ramp_covers_every_vscale():
    ana = Analyzer()
    ana.bind(X, tvm.ir.Range(0, 8))
    bound = ana.const_int_bound(tir.Ramp(X, 3, vs(4)))
    for vscale, x in itertools.product(range(1, 17), range(8)):
        lanes = _lanes(tir.Ramp(X, 3, vs(4)), {X: x}, vscale)
        assert bound.min_value <= min(lanes) and max(lanes) <= bound.max_value


# ----------------------------------------------------------------------------- codegen, trace
def test_llvm_refuses_scalable_vectors():
    buf = tir.decl_buffer((24,), "int32", name="A")
    store = tir.BufferStore(buf, tir.Broadcast(1, vs(4)), [tir.Ramp(0, 1, vs(4))])
    with pytest.raises(BuildError, match=r"scalable vector \(int32xvscalex4"):
        tvm.build(tir.PrimFunc([buf], store), target="llvm")


def test_trace_builds_a_trace_call_typed_by_its_last_argument():
    x = te.placeholder((4,), name="X", dtype="float32")
    call = trace([1, x[0]], "my.trace")
    assert call.op.name == "tir.tvm_call_trace_packed" and call.dtype == "float32"
    assert call.args[0].value == "my.trace"
    with pytest.raises(DTypeError, match="non-empty list"):
        trace([])


# ----------------------------------------------------------------------------- new add/sub rules
Z = tir.Var("z", "int32")
CANCELLATION_CASES = [
    (X + (Y - X), Y),
    ((Y - X) + X, Y),
    (X - (Y + X), 0 - Y),
    (X - (X + Y), 0 - Y),
    ((X + 10) + 13, X + 23),
    ((X + -7) + 3, X + -4),
]


@pytest.mark.parametrize(("before", "expected"), CANCELLATION_CASES, ids=str)
def test_add_sub_cancellation_rules_are_sound(before, expected):
    after = Analyzer().rewrite_simplify(before)
    tvm.ir.assert_structural_equal(after, expected)
    for x, y in itertools.product(range(-5, 6), repeat=2):
        assert _lanes(after, {X: x, Y: y}, 1) == _lanes(before, {X: x, Y: y}, 1)


def test_constant_reassociation_leaves_overflowing_sums_alone():
    before = (X + 2147483647) + 1
    tvm.ir.assert_structural_equal(Analyzer().rewrite_simplify(before), before)


def test_vscale_is_at_least_one_so_min_max_with_vscale_offsets_decide():
    v = tir.vscale()
    cases = [  # (before, expected, reference on (vscale, x))
        (tir.min(X + v * 4, X), X, lambda s, x: min(x + 4 * s, x)),
        (tir.max(X - v * 4, X), X, lambda s, x: max(x - 4 * s, x)),
        (tir.max(X + v * 4, X), X + v * 4, lambda s, x: max(x + 4 * s, x)),
    ]
    assert Analyzer().const_int_bound(v).min_value == 1
    for before, expected, reference in cases:
        after = Analyzer().rewrite_simplify(before)
        tvm.ir.assert_structural_equal(after, expected)
        for vscale, x in itertools.product(range(1, 17), range(-4, 5)):
            assert _lanes(after, {X: x}, vscale) == reference(vscale, x)
