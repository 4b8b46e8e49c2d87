"""tvm.arith.detect_iter_map / normalize_iter_map_to_expr / iter_map_simplify, checked against
TVM's documented meaning of an iterator map: every index is base + scale * k for k in
[0, extent), and the indices are independent (a bijective map enumerates each point of the
box of extents exactly once)."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitvm as tvm
from minitvm import tir
from minitvm.arith import IterMark, IterSplitExpr, IterSumExpr


def _eval(e, env):
    """Python-int oracle for the index expressions used here."""
    if isinstance(e, int):
        return e
    if isinstance(e, tir.IntImm):
        return e.value
    if isinstance(e, tir.Var):
        return env[e]
    ops = {
        tir.Add: lambda a, b: a + b,
        tir.Sub: lambda a, b: a - b,
        tir.Mul: lambda a, b: a * b,
        tir.FloorDiv: lambda a, b: a // b,
        tir.FloorMod: lambda a, b: a % b,
    }
    return ops[type(e)](_eval(e.a, env), _eval(e.b, env))


def _points(dom):
    vars_ = list(dom)
    for vals in itertools.product(*(range(dom[v].extent.value) for v in vars_)):
        yield dict(zip(vars_, vals))


def _check_sound(indices, dom, res):
    """What a successful detection claims, checked by enumerating every iterator value."""
    exts, bases, scales = [], [], []
    for s in res.indices:
        assert len(s.args) <= 1
        exts.append(s.args[0].extent.value if s.args else 1)
        scales.append(s.args[0].scale.value if s.args else 0)
        bases.append(s.base)
    seen = set()
    for env in _points(dom):
        base_vals = [_eval(b, env) for b in bases]
        got = tuple(_eval(e, env) for e in indices)
        norm = tuple(_eval(tvm.arith.normalize_iter_map_to_expr(s), env) for s in res.indices)
        assert got == norm
        ks = []
        for v, b, sc, ext in zip(got, base_vals, scales, exts):
            k = 0 if sc == 0 else (v - b) // sc
            assert v == b + sc * k and 0 <= k < ext, (v, b, sc, ext)
            ks.append(k)
        seen.add(tuple(ks))
    return seen, exts


def test_fuse_and_split_follow_tvm_patterns():
    x, y = tir.Var("x", "int32"), tir.Var("y", "int32")
    dom = {x: tvm.ir.Range.from_min_extent(0, 3), y: tvm.ir.Range.from_min_extent(0, 4)}
    res = tvm.arith.detect_iter_map([x * 4 + y], dom)
    (split,) = res.indices[0].args
    assert split.extent.value == 12 and split.scale.value == 1
    res = tvm.arith.detect_iter_map([x * 4 + y * 2], {x: dom[x], y: tvm.ir.Range.from_min_extent(0, 2)})
    (split,) = res.indices[0].args
    assert (split.extent.value, split.scale.value) == (6, 2)
    tvm.ir.assert_structural_equal(
        tvm.arith.normalize_iter_map_to_expr(res.indices[0]), (x * 2 + y) * 2
    )


def test_compound_pattern_matches_tvm_structure():
    x, y = tir.Var("x", "int32"), tir.Var("y", "int32")
    dom = {x: tvm.ir.Range.from_min_extent(0, 10), y: tvm.ir.Range.from_min_extent(0, 9)}
    z = tir.floordiv(y, 3) * 6 + tir.floordiv(x, 5) * 3 + tir.floormod(y, 3)
    res = tvm.arith.detect_iter_map([z, tir.floormod(x, 5)], dom)
    mx, my = IterMark(x, 10), IterMark(y, 9)
    inner = IterSumExpr(
        [IterSplitExpr(my, 3, 3, 6), IterSplitExpr(mx, 5, 2, 3), IterSplitExpr(my, 1, 3, 1)], 0
    )
    expect = IterSumExpr([IterSplitExpr(IterMark(inner, 18), 1, 18, 1)], 0)
    tvm.ir.assert_structural_equal(res.indices[0], expect)
    tvm.ir.assert_structural_equal(tvm.arith.normalize_iter_map_to_expr(res.indices[0]), z)


@pytest.mark.parametrize(
    "make, level",
    [
        (lambda x, y: [x, x], "surjective"),  # the same iterator twice
        (lambda x, y: [y * 4 + x], "surjective"),  # x has extent 3, not 4: gaps
        (lambda x, y: [x * y], "surjective"),  # not affine
        (lambda x, y: [x], "bijective"),  # y unused
        (lambda x, y: [tir.floordiv(x, 2) * 2 - tir.floormod(x, 2)], "surjective"),
    ],
)
def test_not_an_iterator_map_is_reported_not_guessed(make, level):
    x, y = tir.Var("x", "int32"), tir.Var("y", "int32")
    dom = {x: tvm.ir.Range.from_min_extent(0, 3), y: tvm.ir.Range.from_min_extent(0, 4)}
    res = tvm.arith.detect_iter_map(make(x, y), dom, check_level=level)
    assert res.indices == [] and res.errors


def test_unsupported_predicate_is_refused():
    x = tir.Var("x", "int32")
    res = tvm.arith.detect_iter_map([x], {x: tvm.ir.Range.from_min_extent(0, 8)}, predicate=x < 5)
    assert res.indices == [] and "predicate" in res.errors[0]


def test_bad_check_level_names_the_choices():
    x = tir.Var("x", "int32")
    with pytest.raises(tvm.error.MiniTVMError, match="bijective"):
        tvm.arith.detect_iter_map([x], {x: tvm.ir.Range.from_min_extent(0, 8)}, check_level="exact")


def test_symbolic_split_and_fuse_simplify_back():
    x = tir.Var("x", "int64")
    n = tir.SizeVar("n", "int64")
    dom = {x: tvm.ir.Range.from_min_extent(0, n * n * 32)}
    e = tir.floormod(tir.floordiv(x, n * n), 32) * (n * n) + tir.floormod(x // n, n) * n + x % n
    (out,) = tvm.arith.iter_map_simplify([e], dom)
    tvm.ir.assert_structural_equal(out, x)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(2, 4), min_size=1, max_size=3))
def test_mixed_radix_digits_are_a_bijection(factors):
    """x over prod(factors) split into its digits: found, bijective, and each digit exact."""
    x = tir.Var("x", "int32")
    total = 1
    for f in factors:
        total *= f
    dom = {x: tvm.ir.Range.from_min_extent(0, total)}
    indices, inner = [], 1
    for f in reversed(factors):
        indices.insert(0, tir.floormod(tir.floordiv(x, inner), f) if inner > 1 else x % f)
        inner *= f
    res = tvm.arith.detect_iter_map(indices, dom, check_level="bijective")
    assert len(res.indices) == len(indices), res.errors
    seen, exts = _check_sound(indices, dom, res)
    assert exts == factors and len(seen) == total


_TEMPLATES = [
    lambda x, y, c, d: [x * c + y],
    lambda x, y, c, d: [y * c + x],
    lambda x, y, c, d: [tir.floordiv(x * c + y, d), tir.floormod(x * c + y, d)],
    lambda x, y, c, d: [tir.floordiv(x, c), tir.floormod(x, c), y],
    lambda x, y, c, d: [x * c + y * d],
    lambda x, y, c, d: [tir.floordiv(x, c) * d + y, tir.floormod(x, c)],
    lambda x, y, c, d: [x + y],
    lambda x, y, c, d: [tir.floormod(x * c, d) + y],
]


@settings(max_examples=80, deadline=None)
@given(
    st.sampled_from(range(len(_TEMPLATES))),
    st.integers(1, 6),
    st.integers(1, 6),
    st.integers(1, 6),
    st.integers(1, 6),
    st.sampled_from(["surjective", "bijective"]),
)
def test_any_detected_map_is_sound(which, ex, ey, c, d, level):
    """Whenever a map is accepted, enumeration confirms its claims; bijective ones also hit
    every point of the box exactly once."""
    x, y = tir.Var("x", "int32"), tir.Var("y", "int32")
    dom = {x: tvm.ir.Range.from_min_extent(0, ex), y: tvm.ir.Range.from_min_extent(0, ey)}
    indices = _TEMPLATES[which](x, y, c, d)
    res = tvm.arith.detect_iter_map(indices, dom, check_level=level)
    if not res.indices:
        return
    seen, exts = _check_sound(indices, dom, res)
    box = 1
    for e in exts:
        box *= e
    if level == "bijective":
        assert len(seen) == box == ex * ey
    else:  # surjective: independent indices reach every combination
        assert len(seen) == box
