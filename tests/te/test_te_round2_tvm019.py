"""Round 2 (TVM v0.19 TE tests): axis separators in FlattenBuffer, TE fixes; numpy-checked."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, tir
from minitvm.tir.transform.flatten_buffer import flatten_buffer


def _accesses(func):
    found = []
    tir.post_order_visit(
        func.body,
        lambda n: found.append(n) if isinstance(n, tir.BufferLoad | tir.BufferStore) else None,
    )
    return found


def _separated_copy():
    A = te.placeholder((2, 3, 4), name="A", dtype="int32")
    B = te.compute(A.shape, lambda i, j, k: A[i, j, k] * 2, name="B")
    s = te.create_schedule(B.op)
    s[A].transform_layout(lambda i, j, k: [k, j, te.AXIS_SEPARATOR, i])
    s[B].transform_layout(lambda i, j, k: [i, te.AXIS_SEPARATOR, j, te.AXIS_SEPARATOR, k])
    return s, A, B


def test_flatten_keeps_one_physical_dim_per_separated_group():
    s, A, B = _separated_copy()
    func = flatten_buffer(tvm.lower(s, [A, B])["main"], keep_axis_separators=True)
    shapes = {}
    for node in _accesses(func):
        shapes[node.buffer.name] = (len(node.indices), tuple(int(d) for d in node.buffer.shape))
    assert shapes["A"] == (2, (12, 2))  # (k, j) grouped: 4 * 3, then i
    assert shapes["B"] == (3, (2, 3, 4))


def test_flatten_default_is_one_dimensional_and_build_is_correct():
    s, A, B = _separated_copy()
    func = flatten_buffer(tvm.lower(s, [A, B])["main"])
    assert all(len(n.indices) == 1 for n in _accesses(func))
    f = tvm.build(s, [A, B])
    a_np = np.arange(24, dtype="int32").reshape(2, 3, 4)
    a = tvm.nd.array(a_np.transpose(2, 1, 0).copy())  # A's physical layout is (k, j, i)
    b = tvm.nd.empty((2, 3, 4), "int32")
    f(a, b)
    np.testing.assert_array_equal(b.numpy(), a_np * 2)


def test_grouped_offsets_address_the_dense_elements():
    # the grouped (N-d) indices and the 1-D offset name the same element of dense memory
    from minitvm.arith import Analyzer
    from minitvm.tir.functor import substitute

    s, A, B = _separated_copy()
    lowered = tvm.lower(s, [A, B])["main"]
    nd = {n.buffer.name: n for n in _accesses(flatten_buffer(lowered, keep_axis_separators=True))}
    flat = {n.buffer.name: n for n in _accesses(flatten_buffer(lowered))}
    loops = []
    tir.post_order_visit(
        lowered.body, lambda n: loops.append(n) if isinstance(n, tir.For) else None
    )
    ana = Analyzer()
    for name in ("A", "B"):
        shape = [int(d) for d in nd[name].buffer.shape]
        strides = [int(np.prod(shape[k + 1 :])) for k in range(len(shape))]
        dense = sum((i * st for i, st in zip(nd[name].indices, strides)), tir.const(0, "int32"))
        for point in np.ndindex(*[int(lp.extent) for lp in loops]):
            vmap = {lp.loop_var: tir.const(int(v), "int32") for lp, v in zip(loops, point)}
            got = ana.simplify(substitute(dense, vmap))
            want = ana.simplify(substitute(flat[name].indices[0], vmap))
            assert int(got) == int(want)
