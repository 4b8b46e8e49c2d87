"""Reshape-like kernels over symbolic dims (reshape, flatten, permute_dims, broadcast_to, full):
built once with relax.build, run at several concrete sizes and compared with numpy.

The default CPU schedule fuses the outer loops and splits the last one by 16 for vectors; with
symbolic extents (`b * 32`, `a * b`) the binding check must prove the split's pieces stay inside
their block's domain (ONNX Flatten of [1, A, B, 32], TVM's test_flatten_dynamic)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitvm as tvm
from minitvm import relax, tir
from minitvm.arith import Analyzer
from minitvm.error import ScheduleError
from minitvm.relax import op as O
from minitvm.script import tir as T
from minitvm.tir.schedule.verify import verify_block_bindings

VARS = {n: tir.Var(n, "int64") for n in "abc"}
a, b, c = VARS["a"], VARS["b"], VARS["c"]

# sizes chosen so that the vector split by 16 divides some extents and not others, unit dims
# and an empty tensor
SIZES = [
    {"a": 1, "b": 3, "c": 5},
    {"a": 4, "b": 7, "c": 16},
    {"a": 3, "b": 16, "c": 2},
    {"a": 2, "b": 1, "c": 33},
    {"a": 2, "b": 0, "c": 3},
]


def _dims(spec):
    return [VARS[d] if isinstance(d, str) else d for d in spec]


def _concrete(spec, sizes):
    return tuple(sizes[d] if isinstance(d, str) else d for d in spec)


def _build(spec, body, fused):
    """A VM for `main(x) = body(x)`, x of shape `spec` (ints and symbolic var names); `fused`:
    in a dataflow block (FuseOps makes one kernel of the chain), else one kernel per op (the
    inner ops' kernels then take dims such as `a * b` and their vars as scalar params)."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo(_dims(spec), "float32"))
    with bb.function("main", [x]):
        if fused:
            with bb.dataflow():
                out = bb.emit_output(body(x))
        else:
            out = bb.emit(body(x))
        bb.emit_func_output(out)
    return relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())


def _check(spec, body, ref, sizes=SIZES, seed=0, fused=True):
    vm = _build(spec, body, fused)
    rng = np.random.default_rng(seed)
    for s in sizes:
        x = rng.standard_normal(_concrete(spec, s)).astype("float32")
        got = vm["main"](tvm.nd.array(x)).numpy()
        want = ref(x, s)
        assert got.shape == want.shape, (s, got.shape, want.shape)
        np.testing.assert_array_equal(got, want, err_msg=str(s))


CASES = {
    # ONNX Flatten(axis=2) of [1, A, B, 32]: the failing case of TVM's test_flatten_dynamic
    "onnx_flatten": (
        (1, "a", "b", 32),
        lambda x: O.reshape(x, [a, b * 32]),
        lambda x, s: x.reshape(s["a"], s["b"] * 32),
    ),
    "flatten_all": (("a", "b", "c"), O.flatten, lambda x, s: x.reshape(-1)),
    "merge_transpose_split": (
        ("a", "b", "c"),
        lambda x: O.reshape(O.permute_dims(O.reshape(x, [a * b, c]), [1, 0]), [c, a, b]),
        lambda x, s: x.reshape(s["a"] * s["b"], s["c"]).T.reshape(s["c"], s["a"], s["b"]),
    ),
    "split_then_transpose": (
        ("a", "b", 4),
        lambda x: O.permute_dims(O.reshape(x, [a, b * 2, 2]), [2, 0, 1]),
        lambda x, s: x.reshape(s["a"], s["b"] * 2, 2).transpose(2, 0, 1),
    ),
    "transpose_three_symbolic": (
        ("a", "b", "c"),
        lambda x: O.permute_dims(x, [2, 0, 1]),
        lambda x, s: x.transpose(2, 0, 1),
    ),
    "swap_symbolic_dims_by_reshape": (
        ("a", "b"),
        lambda x: O.reshape(x, [b, a]),
        lambda x, s: x.reshape(s["b"], s["a"]),
    ),
    "broadcast_then_flatten": (
        ("a", 3),
        lambda x: O.reshape(O.broadcast_to(x, [2, a, 3]), [a * 6]),
        lambda x, s: np.broadcast_to(x, (2, s["a"], 3)).reshape(-1),
    ),
    "broadcast_unit_between_symbolic": (
        ("a", 1, "c"),
        lambda x: O.broadcast_to(x, [a, 5, c]),
        lambda x, s: np.broadcast_to(x, (s["a"], 5, s["c"])),
    ),
    "reshape_minus_one": (
        ("a", "b", 8),
        lambda x: O.reshape(x, [-1, 8]),
        lambda x, s: x.reshape(-1, 8),
    ),
    "reshape_minus_one_symbolic": (
        ("a", "b", "c"),
        lambda x: O.reshape(x, [a, -1]),
        lambda x, s: x.reshape(s["a"], s["b"] * s["c"]),
    ),
    "full_of_the_input_shape": (
        ("a", "b"),
        lambda x: O.add(x, O.full([a, b], relax.const(2.0, "float32"))),
        lambda x, s: x + np.float32(2.0),
    ),
    "insert_unit_dims": (
        ("a", "c"),
        lambda x: O.reshape(x, [a, 1, c, 1]),
        lambda x, s: x.reshape(s["a"], 1, s["c"], 1),
    ),
    "merge_with_constant_between": (
        ("a", 3, "b"),
        lambda x: O.reshape(x, [a * 3 * b]),
        lambda x, s: x.reshape(-1),
    ),
}


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "per_op"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_symbolic_reshape_like_ops_match_numpy(name, fused):
    spec, body, ref = CASES[name]
    _check(spec, body, ref, fused=fused)


# ----------------------------------------------------------------------------- random chains

_ATOMS = ("a", "b", "c", 1, 2, 3, 4)


def _prod(atoms, sizes):
    return int(np.prod([sizes[t] if isinstance(t, str) else t for t in atoms], dtype=np.int64))


def _expr(atoms):
    out = None
    for t in atoms:
        v = VARS[t] if isinstance(t, str) else tir.const(t, "int64")
        out = v if out is None else out * v
    return out


@st.composite
def _chains(draw):
    """An input of 1-3 dims (each a symbolic var or a constant, at least one symbolic) and 1-3
    steps: a reshape (merge two adjacent dims, split a product dim, flatten), a permute, or a
    broadcast of a new unit dim to an input var or a constant. A dim is a tuple of atoms whose product
    it is."""
    rank = draw(st.integers(1, 3))
    dims = [(draw(st.sampled_from(_ATOMS)),) for _ in range(rank)]
    if not any(isinstance(d[0], str) for d in dims):
        dims[draw(st.integers(0, rank - 1))] = (draw(st.sampled_from("abc")),)
    steps, cur = [], list(dims)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["merge", "split", "permute", "broadcast", "flatten"]))
        if kind == "merge" and len(cur) > 1:
            i = draw(st.integers(0, len(cur) - 2))
            cur = cur[:i] + [cur[i] + cur[i + 1]] + cur[i + 2 :]
            steps.append(("reshape", list(cur)))
        elif kind == "split" and any(len(d) > 1 for d in cur):
            i = draw(st.sampled_from([k for k, d in enumerate(cur) if len(d) > 1]))
            cut = draw(st.integers(1, len(cur[i]) - 1))
            cur = cur[:i] + [cur[i][:cut], cur[i][cut:]] + cur[i + 1 :]
            steps.append(("reshape", list(cur)))
        elif kind == "broadcast" and len(cur) < 4:
            i = draw(st.integers(0, len(cur)))
            # a var of the input's shape (another one would have no value where it runs)
            known = [t for t in _ATOMS if not isinstance(t, str) or (t,) in dims]
            cur = cur[:i] + [(draw(st.sampled_from(known)),)] + cur[i:]
            steps.append(("broadcast", (i, list(cur))))
        elif kind == "flatten":
            cur = [sum(cur, ())]
            steps.append(("flatten", None))
        elif len(cur) > 1:
            perm = draw(st.permutations(range(len(cur))))
            cur = [cur[p] for p in perm]
            steps.append(("permute", list(perm)))
    return [d[0] for d in dims], steps


def _apply_relax(x, steps):
    for kind, arg in steps:
        if kind == "reshape":
            x = O.reshape(x, [_expr(d) for d in arg])
        elif kind == "permute":
            x = O.permute_dims(x, arg)
        elif kind == "broadcast":
            x = O.broadcast_to(O.expand_dims(x, [arg[0]]), [_expr(d) for d in arg[1]])
        else:
            x = O.flatten(x)
    return x


def _apply_numpy(x, steps, sizes):
    for kind, arg in steps:
        if kind == "reshape":
            x = x.reshape([_prod(d, sizes) for d in arg])
        elif kind == "permute":
            x = x.transpose(arg)
        elif kind == "broadcast":
            x = np.broadcast_to(np.expand_dims(x, arg[0]), [_prod(d, sizes) for d in arg[1]])
        else:
            x = x.reshape(x.size)
    return x


@settings(max_examples=8, deadline=None)
@given(chain=_chains(), fused=st.booleans())
def test_random_reshape_chains_over_symbolic_dims_match_numpy(chain, fused):
    spec, steps = chain
    _check(
        spec,
        lambda x: _apply_relax(x, steps),
        lambda x, s: _apply_numpy(x, steps, s),
        sizes=SIZES[:2],
        fused=fused,
    )


# ----------------------------------------------------------------------------- the proofs


@T.prim_func
def _flatten_split(var_A: T.handle, var_B: T.handle):
    T.func_attr({"tir.noalias": True, "tir.is_scheduled": True})
    m = T.int64()
    n = T.int64()
    A = T.match_buffer(var_A, (m, n, T.int64(32)), "float32")
    B = T.match_buffer(var_B, (m, n * T.int64(32)), "float32")
    for f in T.parallel(m * n * T.int64(2)):
        for j in T.vectorized(T.int64(16)):
            with T.block("B"):
                vi = T.axis.spatial(m, f // (n * T.int64(2)))
                vj = T.axis.spatial(n * T.int64(32), f % (n * T.int64(2)) * T.int64(16) + j)
                B[vi, vj] = A[vi, vj // T.int64(32), vj % T.int64(32)]


@T.prim_func
def _flatten_split_past_end(var_A: T.handle, var_B: T.handle):
    T.func_attr({"tir.noalias": True, "tir.is_scheduled": True})
    m = T.int64()
    n = T.int64()
    A = T.match_buffer(var_A, (m, n, T.int64(32)), "float32")
    B = T.match_buffer(var_B, (m, n * T.int64(32)), "float32")
    for f in T.parallel(m * n * T.int64(2)):
        for j in T.vectorized(T.int64(17)):
            with T.block("B"):
                vi = T.axis.spatial(m, f // (n * T.int64(2)))
                vj = T.axis.spatial(n * T.int64(32), f % (n * T.int64(2)) * T.int64(16) + j)
                B[vi, vj] = A[vi, vj // T.int64(32), vj % T.int64(32)]


@T.prim_func
def _transpose_split(var_A: T.handle, var_B: T.handle, p: T.int64, q: T.int64):
    T.func_attr({"tir.noalias": True, "tir.is_scheduled": True})
    r = T.int64()
    A = T.match_buffer(var_A, (p * q, r), "float32")
    B = T.match_buffer(var_B, (r, p * q), "float32")
    for f in T.parallel(r * ((p * q + T.int64(15)) // T.int64(16))):
        for j in T.vectorized(T.int64(16)):
            with T.block("B"):
                vi = T.axis.spatial(r, f // ((p * q + T.int64(15)) // T.int64(16)))
                vj = T.axis.spatial(
                    p * q, f % ((p * q + T.int64(15)) // T.int64(16)) * T.int64(16) + j
                )
                T.where(f % ((p * q + T.int64(15)) // T.int64(16)) * T.int64(16) + j < p * q)
                B[vi, vj] = A[vj, vi]


@T.prim_func
def _transpose_split_one_row_too_many(var_A: T.handle, var_B: T.handle, p: T.int64, q: T.int64):
    T.func_attr({"tir.noalias": True, "tir.is_scheduled": True})
    r = T.int64()
    A = T.match_buffer(var_A, (p * q, r), "float32")
    B = T.match_buffer(var_B, (r, p * q), "float32")
    for f in T.parallel((r + T.int64(1)) * ((p * q + T.int64(15)) // T.int64(16))):
        for j in T.vectorized(T.int64(16)):
            with T.block("B"):
                vi = T.axis.spatial(r, f // ((p * q + T.int64(15)) // T.int64(16)))
                vj = T.axis.spatial(
                    p * q, f % ((p * q + T.int64(15)) // T.int64(16)) * T.int64(16) + j
                )
                T.where(f % ((p * q + T.int64(15)) // T.int64(16)) * T.int64(16) + j < p * q)
                B[vi, vj] = A[vj, vi]


def test_binding_check_proves_an_exact_split_of_a_symbolic_extent():
    verify_block_bindings(_flatten_split)  # (f % (n*2)) * 16 + j < n * 32 for j < 16


def test_binding_check_proves_a_fused_loop_over_a_product_dim():
    verify_block_bindings(_transpose_split)  # f // ceil(p*q / 16) < r: p*q is a dim, >= 0


def test_binding_check_still_refuses_a_split_that_runs_past_the_end():
    with pytest.raises(ScheduleError, match="iterator 'vj'"):
        verify_block_bindings(_flatten_split_past_end)  # j < 17 reaches n * 32 + 0


def test_binding_check_still_refuses_a_fused_loop_one_row_too_long():
    with pytest.raises(ScheduleError, match="iterator 'vi'"):
        verify_block_bindings(_transpose_split_one_row_too_many)  # f // D reaches r


def test_floormod_bound_needs_only_a_non_negative_divisor():
    """A shape dim n is known >= 0, not > 0; a divisor is never 0, so x % (n*2) < n*2 holds."""
    n, x, j = (tir.Var(s, "int64") for s in "nxj")
    ana = Analyzer()
    ana.bind(j, tir.Range(0, 16))
    e = tir.floormod(x, n * 2) * 16 + j
    assert not ana.can_prove(e < n * 32)  # n may be negative: no proof
    with ana.constraint_scope(n >= 0):
        assert ana.can_prove(e < n * 32)
        assert not ana.can_prove(e < n * 32 - 1)


@settings(max_examples=60, deadline=None)
@given(
    c=st.integers(-4, 4),
    k=st.integers(-40, 40),
    d=st.integers(-3, 3),
    op=st.sampled_from(["lt", "le", "gt", "ge"]),
)
def test_non_negative_divisor_never_proves_a_false_comparison(c, k, d, op):
    """c * (x % m) + d * m + k <op> 0 knowing only m >= 0: whatever can_prove says yes to holds
    for every x in [-20, 20) and m in [1, 7) (m = 0 is a division by zero: no value)."""
    m, x = tir.Var("m", "int64"), tir.Var("x", "int64")
    lhs = tir.floormod(x, m) * c + m * d + k
    zero = tir.const(0, "int64")
    cond = {"lt": lhs < zero, "le": lhs <= zero, "gt": lhs > zero, "ge": lhs >= zero}[op]
    ana = Analyzer()
    with ana.constraint_scope(m >= 0):
        proven = ana.can_prove(cond)
    if proven:
        for xv, mv in itertools.product(range(-20, 20), range(1, 7)):
            v = c * (xv % mv) + d * mv + k
            assert {"lt": v < 0, "le": v <= 0, "gt": v > 0, "ge": v >= 0}[op], (xv, mv)


# ----------------------------------------------------------------------------- scalar-only vars


def test_full_with_a_symbolic_fill_value_gets_it_as_a_tir_var():
    n = tir.Var("n", "int64")
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo([n], "int64"))
    with bb.function("main", [x]):
        out = bb.emit(O.full([1], relax.PrimValue(n), "int64"))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    for size in (0, 5):
        got = vm["main"](tvm.nd.array(np.zeros(size, "int64"))).numpy()
        np.testing.assert_array_equal(got, np.full([1], size, "int64"))
