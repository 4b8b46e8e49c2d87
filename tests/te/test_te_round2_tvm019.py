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


def test_topi_tag_names_and_scalar_operand_is_elemwise():
    from minitvm import topi

    B = te.placeholder((4, 3), name="B")
    S = te.placeholder((), name="S")
    assert (B + 2).op.tag == topi.tag.ELEMWISE == "elemwise"
    assert (2 * B).op.tag == topi.tag.ELEMWISE
    assert (B + S).op.tag == topi.tag.BROADCAST == "broadcast"
    assert (S + 1.5).op.tag == topi.tag.ELEMWISE
    assert topi.tag.is_broadcast("elemwise") and topi.tag.is_injective("broadcast,pad")
    assert not topi.tag.is_broadcast("injective") and not topi.tag.is_injective("comm_reduce")
    C = (B + 2) * S
    f = tvm.build(te.create_prim_func([B, S, C]))
    b = np.random.default_rng(1).standard_normal((4, 3)).astype("float32")
    s = np.array(3.0, dtype="float32")
    out = tvm.nd.empty((4, 3), "float32")
    f(tvm.nd.array(b), tvm.nd.array(s), out)
    np.testing.assert_allclose(out.numpy(), (b + 2) * s, rtol=1e-6)


def test_fuse_of_no_loops_is_a_unit_loop_that_can_be_split():
    X = te.placeholder((10,), dtype="int32", name="X")
    k = te.reduce_axis((0, 10), name="k")
    Y = te.compute((), lambda: te.sum(X[k], axis=k), name="Y")
    s = te.create_schedule(Y.op)
    unit = s[Y].fuse()
    assert int(unit.dom.extent) == 1 and s[Y].leaf_iter_vars[0] is unit
    assert any(isinstance(r, te.schedule.Singleton) and r.iter is unit for r in s[Y].relations)
    s[Y].split(unit, nparts=4)
    assert "singleton" in tvm.lower(s, [X, Y])["main"].script()
    f = tvm.build(s, [X, Y])
    x = np.arange(10, dtype="int32")
    y = tvm.nd.empty((), "int32")
    f(tvm.nd.array(x), y)
    assert int(y.numpy()) == x.sum()


def test_fuse_of_no_loops_on_a_scalar_elementwise_stage():
    A = te.placeholder((), name="A")
    T = te.compute((), lambda: A() * 3.0 + 1.0, name="T")
    s = te.create_schedule(T.op)
    unit = s[T].fuse()
    assert tuple(s[T].leaf_iter_vars) == (unit,)
    f = tvm.build(s, [A, T])
    out = tvm.nd.empty((), "float32")
    f(tvm.nd.array(np.array(2.0, dtype="float32")), out)
    assert float(out.numpy()) == 7.0


def _vadd_intrin(n):
    """An intrinsic whose kernel is plain TIR loops (so the build can run it)."""
    x = te.placeholder((n,), name="x")
    y = te.placeholder((n,), name="y")
    z = te.compute((n,), lambda i: x[i] + y[i] * 2.0, name="z")

    def kernel(ins, outs):
        j = tir.Var("j", "int32")
        store = tir.BufferStore(outs[0], ins[0][j] + ins[1][j] * 2.0, (j,))
        return tir.For(j, 0, n, tir.ForKind.SERIAL, store)

    return te.decl_tensor_intrin(z.op, kernel, default_buffer_params={"offset_factor": 1})


def test_tensor_compute_calls_the_intrinsic_on_regions():
    vadd = _vadd_intrin(8)
    A = te.placeholder((5, 8), name="A")
    B = te.placeholder((5, 8), name="B")
    C = te.compute((5, 8), lambda i: vadd(A[i, 0:8], B[i, 0:8]), name="C")
    assert len(C.op.axis) == 2
    s = te.create_schedule(C.op)
    f = tvm.build(s, [A, B, C])
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal((5, 8)).astype("float32") for _ in range(2))
    out = tvm.nd.empty((5, 8), "float32")
    f(tvm.nd.array(a), tvm.nd.array(b), out)
    np.testing.assert_allclose(out.numpy(), a + b * 2.0, rtol=1e-6)


def test_tensor_compute_region_with_offset_and_outer_split():
    vadd = _vadd_intrin(4)
    A = te.placeholder((6, 10), name="A")
    B = te.placeholder((6, 4), name="B")
    C = te.compute((6, 4), lambda i: vadd(A[i, 3:7], B[i, 0:4]), name="C")
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=2)
    f = tvm.build(s, [A, B, C])
    rng = np.random.default_rng(3)
    a = rng.standard_normal((6, 10)).astype("float32")
    b = rng.standard_normal((6, 4)).astype("float32")
    out = tvm.nd.empty((6, 4), "float32")
    f(tvm.nd.array(a), tvm.nd.array(b), out)
    np.testing.assert_allclose(out.numpy(), a[:, 3:7] + b * 2.0, rtol=1e-6)


def test_tensor_compute_errors_name_the_problem():
    vadd = _vadd_intrin(4)
    A = te.placeholder((6, 4), name="A")
    with pytest.raises(tvm.error.TEError, match="takes 2 input region"):
        te.compute((6, 4), lambda i: vadd(A[i, 0:4]), name="C")
    with pytest.raises(tvm.error.TEError, match="slices 2 dimension"):
        te.compute((6, 4), lambda i: vadd(A[0:6, 0:4], A[0:6, 0:4]), name="C")
    with pytest.raises(tvm.error.TEError, match="only an argument of a tensor intrinsic"):
        te.compute((6, 4), lambda i, j: A[i, 0:4] + 1.0, name="C")
    with pytest.raises(tvm.error.TEError, match="computes 1 dimension"):
        te.compute((6, 4, 4), lambda i: vadd(A[i, 0:4], A[i, 0:4]), name="C")


def test_tensor_intrin_exposes_body_reset_and_update():
    k = te.reduce_axis((0, 4), name="k")
    x = te.placeholder((4,), name="x")
    z = te.compute((1,), lambda i: te.sum(x[k], axis=k), name="z")

    def kernel(ins, outs):
        call = tvm.tir.call_extern("float32", "vsum", ins[0].data, outs[0].data)
        reset = tvm.tir.call_extern("float32", "vzero", outs[0].data)
        return call, reset, call

    red = te.decl_tensor_intrin(z.op, kernel)
    assert isinstance(red.body, tir.Evaluate) and isinstance(red.reduce_update, tir.Evaluate)
    assert "vzero" in str(red.reduce_init.value)
    plain = _vadd_intrin(4)
    assert plain.reduce_init is None and plain.reduce_update is None
    assert isinstance(plain.body, tir.For)


def test_schedule_record_under_pass_context_config():
    A = te.placeholder((8, 8), name="A")
    B = te.compute((8, 8), lambda i, j: A[i, j] + 1.0, name="B")
    assert te.create_schedule(B.op).schedule_record == []
    with tvm.transform.PassContext(config={"te.keep_schedule_record": True}):
        s = te.create_schedule(B.op)
        *_, yi = s[B].tile(B.op.axis[0], B.op.axis[1], 4, 4)
        s[B].vectorize(yi)
    assert s.primitive_record == ["vanilla", "split", "split", "reorder", "vectorize"]
    assert len(s.schedule_record) == 5
    assert s.schedule_record[0] == {"B": ("i", "j")}
    assert s.schedule_record[-1]["B"] == ("i.outer", "j.outer", "i.inner", "j.inner")
    f = tvm.build(s, [A, B])
    a = np.random.default_rng(4).standard_normal((8, 8)).astype("float32")
    out = tvm.nd.empty((8, 8), "float32")
    f(tvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), a + 1.0)


def test_infer_bound_gives_a_scans_time_axis_its_range():
    m, n = 5, 3
    X = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n), name="state")
    init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    update = te.compute((m, n), lambda t, i: state[t - 1, i] + X[t, i], name="update")
    res = te.scan(init, update, state, inputs=[X])
    s = te.create_schedule(res.op)
    bounds = te.schedule.InferBound(s)
    axis = res.op.scan_axis
    assert int(bounds[axis].min) == 1 and int(bounds[axis].extent) == m - 1
    f = tvm.build(s, [X, res])
    x = np.random.default_rng(5).standard_normal((m, n)).astype("float32")
    out = tvm.nd.empty((m, n), "float32")
    f(tvm.nd.array(x), out)
    np.testing.assert_allclose(out.numpy(), np.cumsum(x, axis=0), rtol=1e-5)
