"""te.scan, te.extern + tir.call_packed (and cblas), te.decl_tensor_intrin + tensorize with
pragma import_llvm, te.tag_scope and tir.ir_builder: numbers against numpy, and the errors."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, tir
from minitvm.contrib import cblas
from minitvm.error import BuildError, RuntimeError_, ScheduleError, TEError
from minitvm.runtime import packed_callback

RNG = np.random.default_rng(7)


def _nd(a):
    return tvm.nd.array(np.ascontiguousarray(a))


# ----------------------------------------------------------------------------- scan


def _running_sum():
    m, n = te.var("m"), te.var("n")
    x = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n), name="state")
    first = te.compute((1, n), lambda _, i: x[0, i], name="first")
    step = te.compute((m, n), lambda t, i: state[t - 1, i] + x[t, i], name="step")
    return x, first, step, te.scan(first, step, state, inputs=[x], name="running")


def test_scan_running_sum_matches_cumsum_with_split_update():
    x, _, step, out = _running_sum()
    s = te.create_schedule(out.op)
    s[step].split(step.op.axis[1], factor=4)
    f = tvm.build(s, [x, out], "llvm")
    a = RNG.random((9, 13), dtype="float32")
    b = _nd(np.zeros_like(a))
    f(_nd(a), b)
    np.testing.assert_allclose(b.numpy(), np.cumsum(a, axis=0), rtol=1e-5)


def test_scan_step_loop_is_serial_and_starts_after_init_rows():
    x, _, _, out = _running_sum()
    text = tvm.lower(te.create_schedule(out.op), [x, out]).script()
    assert "T.serial(1, m)" in text


def test_scan_two_states_read_each_other():
    m, n, l = te.var("m"), te.var("n"), te.var("l")
    x = te.placeholder((m, n), name="X")
    h, c = te.placeholder((m, n), name="h"), te.placeholder((m, l), name="c")
    h0 = te.compute((1, n), lambda _, i: x[0, i], name="h0")
    c0 = te.compute((1, l), lambda _, i: 1.0, name="c0")
    h1 = te.compute((m, n), lambda t, i: h[t - 1, i] * 0.5 + x[t, i], name="h1")
    c1 = te.compute((m, l), lambda t, j: c[t - 1, j] + h[t - 1, 0], name="c1")
    hs, cs = te.scan([h0, c0], [h1, c1], [h, c], inputs=[x])
    f = tvm.build(te.create_schedule(hs.op), [x, hs, cs], "llvm")
    a = RNG.random((6, 5), dtype="float32")
    got_h, got_c = _nd(np.zeros((6, 5), "float32")), _nd(np.zeros((6, 3), "float32"))
    f(_nd(a), got_h, got_c)
    want_h, want_c = np.zeros((6, 5), "float32"), np.zeros((6, 3), "float32")
    want_h[0], want_c[0] = a[0], 1.0
    for t in range(1, 6):
        want_h[t] = want_h[t - 1] * 0.5 + a[t]
        want_c[t] = want_c[t - 1] + want_h[t - 1, 0]
    np.testing.assert_allclose(got_h.numpy(), want_h, rtol=1e-5)
    np.testing.assert_allclose(got_c.numpy(), want_c, rtol=1e-5)


def test_scan_two_stage_body_with_compute_at():
    m, n = te.var("m"), te.var("n")
    x = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n), name="state")
    first = te.compute((1, n), lambda _, i: x[0, i], name="first")
    doubled = te.compute((m, n), lambda t, i: state[t - 1, i] * 2.0, name="doubled")
    step = te.compute((m, n), lambda t, i: doubled[t, i] + x[t, i], name="step")
    out = te.scan(first, step, state, inputs=[x])
    s = te.create_schedule(out.op)
    xo, _ = s[step].split(step.op.axis[1], factor=3)
    s[doubled].compute_at(s[step], xo)
    f = tvm.build(s, [x, out], "llvm")
    a = RNG.random((5, 7), dtype="float32")
    got = _nd(np.zeros_like(a))
    f(_nd(a), got)
    want = a.copy()
    for t in range(1, 5):
        want[t] = want[t - 1] * 2 + a[t]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5)


def test_scan_placeholder_init_is_copied_in():
    x = te.placeholder((4, 3), name="X")
    start = te.placeholder((2, 3), name="start")
    state = te.placeholder((4, 3), name="state")
    step = te.compute((4, 3), lambda t, i: state[t - 1, i] + state[t - 2, i] + x[t, i])
    out = te.scan(start, step, state, inputs=[x])
    f = tvm.build(te.create_schedule(out.op), [x, start, out], "llvm")
    a, s0 = RNG.random((4, 3), dtype="float32"), RNG.random((2, 3), dtype="float32")
    got = _nd(np.zeros((4, 3), "float32"))
    f(_nd(a), _nd(s0), got)
    want = np.concatenate([s0, np.zeros((2, 3), "float32")])
    for t in range(2, 4):
        want[t] = want[t - 1] + want[t - 2] + a[t]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5)


def test_scan_state_shape_must_match_update():
    m, n = te.var("m"), te.var("n")
    x = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n + 1), name="state")
    first = te.compute((1, n), lambda _, i: x[0, i])
    step = te.compute((m, n), lambda t, i: state[t - 1, i] + x[t, i], name="step")
    with pytest.raises(TEError, match="state 'state' has shape .* but update 'step'"):
        te.scan(first, step, state)


def test_scan_update_must_read_a_state():
    x = te.placeholder((4, 3), name="X")
    state = te.placeholder((4, 3), name="state")
    first = te.compute((1, 3), lambda _, i: x[0, i])
    step = te.compute((4, 3), lambda t, i: x[t, i] * 2.0, name="step")
    with pytest.raises(TEError, match="update 'step' does not read any state"):
        te.scan(first, step, state)


def test_scan_counts_must_agree():
    x = te.placeholder((4, 3), name="X")
    state = te.placeholder((4, 3), name="state")
    first = te.compute((1, 3), lambda _, i: x[0, i])
    step = te.compute((4, 3), lambda t, i: state[t - 1, i])
    with pytest.raises(TEError, match="got 2 init, 1 update and 1 state"):
        te.scan([first, first], [step], [state])


# ----------------------------------------------------------------------------- extern


def test_cblas_matmul_extern_then_bias_compute():
    n, k, m = 17, 8, 11
    a, b = te.placeholder((n, k), name="A"), te.placeholder((k, m), name="B")
    bias = te.var("bias", dtype="float32")
    c = cblas.matmul(a, b)
    d = te.compute(c.shape, lambda i, j: c[i, j] + bias, name="D")
    f = tvm.build(te.create_schedule(d.op), [a, b, d, bias], "llvm")
    x, y = RNG.random((n, k), dtype="float32"), RNG.random((k, m), dtype="float32")
    out = _nd(np.zeros((n, m), "float32"))
    f(_nd(x), _nd(y), out, 2.5)
    np.testing.assert_allclose(out.numpy(), x @ y + 2.5, rtol=1e-5)


def test_cblas_matmul_transposed_inputs():
    a, b = te.placeholder((5, 3), name="A"), te.placeholder((4, 5), name="B")
    c = cblas.matmul(a, b, transa=True, transb=True)
    f = tvm.build(te.create_schedule(c.op), [a, b, c], "llvm")
    x, y = RNG.random((5, 3), dtype="float32"), RNG.random((4, 5), dtype="float32")
    out = _nd(np.zeros((3, 4), "float32"))
    f(_nd(x), _nd(y), out)
    np.testing.assert_allclose(out.numpy(), x.T @ y.T, rtol=1e-5)


def test_extern_packed_function_gets_views_and_scalars():
    seen = {}

    @tvm.register_func("test.h7.scale_into", override=True)
    def scale_into(src, dst, factor, offset):
        seen["types"] = (type(src).__name__, type(factor).__name__, type(offset).__name__)
        np.multiply(np.from_dlpack(src), factor, out=np.from_dlpack(dst))
        np.from_dlpack(dst)[...] += offset

    a = te.placeholder((3, 4), name="A", dtype="float64")
    b = te.extern(
        (3, 4), [a], lambda ins, outs: tir.call_packed("test.h7.scale_into", ins[0], outs[0], 3.0, 2),
        name="B", dtype="float64",
    )  # fmt: skip
    f = tvm.build(te.create_schedule(b.op), [a, b], "llvm")
    x = RNG.random((3, 4))
    out = _nd(np.zeros((3, 4)))
    f(_nd(x), out)
    np.testing.assert_allclose(out.numpy(), x * 3.0 + 2)
    assert seen["types"] == ("NDArray", "float", "int")


def test_extern_body_built_with_ir_builder():
    n = 10
    a = te.placeholder((n,), name="A")

    def body(ins, outs):
        ib = tir.ir_builder.create()
        src, dst = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        with ib.for_range(0, n, name="i") as i:
            with ib.if_scope(i % 2 == 0):
                dst[i] = src[i] + 1.0
            with ib.else_scope():
                dst[i] = src[i] * 2.0
        return ib.get()

    b = te.extern((n,), [a], body, name="B")
    f = tvm.build(te.create_schedule(b.op), [a, b], "llvm")
    x = RNG.random(n, dtype="float32")
    out = _nd(np.zeros(n, "float32"))
    f(_nd(x), out)
    want = np.where(np.arange(n) % 2 == 0, x + 1, x * 2)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)


def _addone_module(name):
    a = te.placeholder((4,), name="A")
    b = te.extern((4,), [a], lambda ins, outs: tir.call_packed(name, ins[0], outs[0]), name="B")
    return tvm.build(te.create_schedule(b.op), [a, b], "llvm")


def test_unregistered_packed_function_fails_at_call_time_naming_it():
    f = _addone_module("test.h7.nobody.registered.this")
    with pytest.raises(RuntimeError_, match="'test.h7.nobody.registered.this' failed") as info:
        f(_nd(np.zeros(4, "float32")), _nd(np.zeros(4, "float32")))
    err = info.value.__cause__
    assert "no global function named 'test.h7.nobody.registered.this'" in str(err)


def test_exception_in_packed_function_becomes_runtime_error():
    @tvm.register_func("test.h7.raises", override=True)
    def raises(x, y):
        raise ValueError("bad input seen by the packed function")

    f = _addone_module("test.h7.raises")
    with pytest.raises(RuntimeError_, match="packed function 'test.h7.raises' failed") as info:
        f(_nd(np.zeros(4, "float32")), _nd(np.zeros(4, "float32")))
    assert isinstance(info.value.__cause__, ValueError)  # the user sees their own exception
    assert packed_callback.take_error() is None


def test_call_packed_needs_a_name_first():
    with pytest.raises(tvm.error.MiniTVMError, match="first argument must be the registered"):
        tir.call_packed(3, 4)


def test_extern_fcompute_must_return_a_statement():
    a = te.placeholder((4,), name="A")
    with pytest.raises(TEError, match="extern 'B': fcompute returned 3"):
        te.extern((4,), [a], lambda ins, outs: 3, name="B")


# ----------------------------------------------------------------------------- tensorize

GEMV_IR = r"""
define i32 @h7_gemv(ptr %cc, ptr %aa, ptr %bb, i32 %m, i32 %l, i32 %stride) {
entry:
  br label %outer
outer:
  %i = phi i32 [0, %entry], [%i.next, %latch]
  %more = icmp slt i32 %i, %m
  br i1 %more, label %pre, label %exit
pre:
  %ci = getelementptr float, ptr %cc, i32 %i
  %row = mul i32 %i, %stride
  br label %inner
inner:
  %j = phi i32 [0, %pre], [%j.next, %body]
  %jmore = icmp slt i32 %j, %l
  br i1 %jmore, label %body, label %latch
body:
  %ap = getelementptr float, ptr %aa, i32 %j
  %av = load float, ptr %ap
  %bi = add i32 %row, %j
  %bp = getelementptr float, ptr %bb, i32 %bi
  %bv = load float, ptr %bp
  %p = fmul float %av, %bv
  %cv = load float, ptr %ci
  %s = fadd float %cv, %p
  store float %s, ptr %ci
  %j.next = add i32 %j, 1
  br label %inner
latch:
  %i.next = add i32 %i, 1
  br label %outer
exit:
  ret i32 0
}

define i32 @h7_zero(ptr %cc, i32 %m) {
entry:
  br label %loop
loop:
  %i = phi i32 [0, %entry], [%i.next, %body]
  %more = icmp slt i32 %i, %m
  br i1 %more, label %body, label %exit
body:
  %p = getelementptr float, ptr %cc, i32 %i
  store float 0.0, ptr %p
  %i.next = add i32 %i, 1
  br label %loop
exit:
  ret i32 0
}
"""


def _gemv_intrin(m, l, with_reset=True, combine=lambda x, y: x * y):
    a = te.placeholder((l,), name="a")
    b = te.placeholder((m, l), name="b")
    k = te.reduce_axis((0, l), name="k")
    c = te.compute((m,), lambda i: te.sum(combine(a[k], b[i, k]), axis=k), name="c")
    ab = tir.decl_buffer(a.shape, a.dtype, name="A", offset_factor=1, strides=[1])
    bb = tir.decl_buffer(b.shape, b.dtype, name="B", offset_factor=1, strides=[te.var("s1"), 1])
    cb = tir.decl_buffer(c.shape, c.dtype, name="C", offset_factor=1, strides=[1])

    def intrin(ins, outs):
        aa, bbuf = ins
        cc = outs[0]
        update = tir.call_extern("int32", "h7_gemv", cc.access_ptr("w"), aa.access_ptr("r"),
                                 bbuf.access_ptr("r"), m, l, bbuf.strides[0])  # fmt: skip
        reset = tir.call_extern("int32", "h7_zero", cc.access_ptr("w"), m) if with_reset else None
        return update, reset, update

    return te.decl_tensor_intrin(c.op, intrin, binds={a: ab, b: bb, c: cb})


def _gemm(n=8, m=32, l=24):
    a = te.placeholder((n, l), name="A")
    b = te.placeholder((m, l), name="B")
    k = te.reduce_axis((0, l), name="k")
    c = te.compute((n, m), lambda i, j: te.sum(a[i, k] * b[j, k], axis=k), name="C")
    return a, b, c


def _check_gemm(f, n=8, m=32, l=24, start=0.0):
    x, y = RNG.random((n, l), dtype="float32"), RNG.random((m, l), dtype="float32")
    out = _nd(np.full((n, m), start, "float32"))
    f(_nd(x), _nd(y), out)
    np.testing.assert_allclose(out.numpy(), x @ y.T, rtol=1e-4)


def test_tensorize_gemv_whole_reduction_with_imported_llvm():
    a, b, c = _gemm()
    s = te.create_schedule(c.op)
    x, y = c.op.axis
    (z,) = c.op.reduce_axis
    yo, yi = s[c].split(y, factor=8)
    s[c].reorder(x, yo, yi, z)
    s[c].tensorize(yi, _gemv_intrin(8, 24))
    s[c].pragma(x, "import_llvm", GEMV_IR)
    assert "h7_gemv" in tvm.lower(s, [a, b, c]).script()
    _check_gemm(tvm.build(s, [a, b, c], "llvm"))  # the intrinsic's body accumulates into 0s


def test_tensorize_gemv_split_reduction_resets_then_updates():
    a, b, c = _gemm()
    s = te.create_schedule(c.op)
    x, y = c.op.axis
    (z,) = c.op.reduce_axis
    yo, yi = s[c].split(y, factor=8)
    zo, zi = s[c].split(z, factor=6)
    s[c].reorder(x, yo, zo, yi, zi)
    s[c].tensorize(yi, _gemv_intrin(8, 6))
    s[c].pragma(yo, "import_llvm", GEMV_IR)
    _check_gemm(tvm.build(s, [a, b, c], "llvm"), start=5.0)  # reset clears what was there


def test_tensorize_without_reset_uses_the_stage_init():
    a, b, c = _gemm()
    s = te.create_schedule(c.op)
    x, y = c.op.axis
    (z,) = c.op.reduce_axis
    yo, yi = s[c].split(y, factor=8)
    zo, zi = s[c].split(z, factor=6)
    s[c].reorder(x, yo, zo, yi, zi)
    s[c].tensorize(yi, _gemv_intrin(8, 6, with_reset=False))
    s[c].pragma(x, "import_llvm", GEMV_IR)
    _check_gemm(tvm.build(s, [a, b, c], "llvm"), start=-3.0)


def test_tensorize_refuses_a_different_computation():
    a, b, c = _gemm()
    s = te.create_schedule(c.op)
    x, y = c.op.axis
    (z,) = c.op.reduce_axis
    yo, yi = s[c].split(y, factor=8)
    s[c].reorder(x, yo, yi, z)
    s[c].tensorize(yi, _gemv_intrin(8, 24, combine=lambda p, q: p + q))
    with pytest.raises(ScheduleError, match="tensorize of stage 'C'.*not the intrinsic's"):
        tvm.lower(s, [a, b, c])


def test_tensorize_refuses_loops_of_another_size():
    a, b, c = _gemm()
    s = te.create_schedule(c.op)
    x, y = c.op.axis
    (z,) = c.op.reduce_axis
    yo, yi = s[c].split(y, factor=4)
    s[c].reorder(x, yo, yi, z)
    s[c].tensorize(yi, _gemv_intrin(8, 24))
    with pytest.raises(ScheduleError, match="loop 'j.inner' runs 4 iterations"):
        tvm.lower(s, [a, b, c])


def test_import_llvm_rejects_malformed_ir():
    a = te.placeholder((4,), name="A")
    b = te.compute((4,), lambda i: a[i] + 1.0, name="B")
    s = te.create_schedule(b.op)
    s[b].pragma(b.op.axis[0], "import_llvm", "define i32 @broken( {")
    with pytest.raises(BuildError, match="pragma import_llvm is not valid"):
        tvm.build(s, [a, b], "llvm")


def test_import_llvm_rejects_two_different_bodies_of_one_function():
    a, b, c = _gemm()
    s = te.create_schedule(c.op)
    x, y = c.op.axis
    other = GEMV_IR.replace("store float 0.0", "store float 1.0")
    s[c].pragma(x, "import_llvm", GEMV_IR)
    s[c].pragma(y, "import_llvm", other)
    with pytest.raises(BuildError, match="define 'h7_zero' differently"):
        tvm.build(s, [a, b, c], "llvm")


def test_access_ptr_mask_is_checked():
    buf = tir.decl_buffer((4,), "float32", name="X")
    with pytest.raises(tvm.error.MiniTVMError, match="access mask 'x' is not one of"):
        buf.access_ptr("x")


# ----------------------------------------------------------------------------- tags, builder


def test_tag_scope_tags_computes_and_does_not_nest():
    a = te.placeholder((4,), name="A")
    with te.tag_scope(tag="elemwise"):
        b = te.compute((4,), lambda i: a[i] + 1.0)
        c = te.compute((4,), lambda i: a[i] * 2.0, tag="mine")
    assert (b.op.tag, c.op.tag) == ("elemwise", "mine")

    @te.tag_scope(tag="double")
    def double(t):
        return te.compute(t.shape, lambda i: t[i] * 2.0)

    assert double(a).op.tag == "double"
    with pytest.raises(ValueError, match="tag scopes do not nest"), te.tag_scope(tag="outer"):
        double(a)


def test_ir_builder_else_scope_needs_an_if_scope():
    ib = tir.ir_builder.create()
    scope = ib.else_scope()
    with pytest.raises(tvm.error.MiniTVMError, match="else_scope must follow an if_scope"):
        scope.__enter__()


# ----------------------------------------------------------------------------- groups, graph


def test_scan_body_includes_stages_fed_by_the_given_inputs():
    m, n = 6, 4
    x = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n), name="state")
    # reads X[t - 1]: valid only because, fed by the scan's input, it runs at steps t >= 1
    prev = te.compute((m, n), lambda t, i: x[t - 1, i] * 2.0, name="prev")
    first = te.compute((1, n), lambda _, i: x[0, i], name="first")
    step = te.compute((m, n), lambda t, i: state[t - 1, i] + prev[t, i], name="step")
    out = te.scan(first, step, state, inputs=[x])
    assert {op.name for op in te.schedule.ScanGetBody(out.op)} == {"prev", "step", "scan"}
    f = tvm.build(te.create_schedule(out.op), [x, out], "llvm")
    a = RNG.random((m, n), dtype="float32")
    got = _nd(np.zeros_like(a))
    f(_nd(a), got)
    want = a.copy()
    for t in range(1, m):
        want[t] = want[t - 1] + 2 * a[t - 1]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5)


def _chain():
    a = te.placeholder((6, 5), name="A")
    x = te.compute(a.shape, lambda i, j: a[i, j] + 1.0, name="x")
    x1 = te.compute(a.shape, lambda i, j: x[i, j] * 3.0, name="x1")
    x2 = te.compute(a.shape, lambda i, j: x1[i, j] - 2.0, name="x2")
    return a, x, x1, x2


def test_group_compute_at_places_every_member():
    a, x, x1, x2 = _chain()
    s = te.create_schedule(x2.op)
    g = s.create_group(outputs=x1, inputs=a, include_inputs=False)
    assert (s[x].group, s[x1].group, g.num_child_stages) == (g, g, 2)
    g.compute_at(s[x2], x2.op.axis[0])
    assert g.attach_stage is s[x2]
    text = tvm.lower(s, [a, x2]).script()
    assert text.index("for i in") < text.index("x[") < text.index("x1[")  # both inside x2's i
    f = tvm.build(s, [a, x2], "llvm")
    v = RNG.random((6, 5), dtype="float32")
    got = _nd(np.zeros_like(v))
    f(_nd(v), got)
    np.testing.assert_allclose(got.numpy(), (v + 1) * 3 - 2, rtol=1e-6)


def test_compute_at_outside_the_group_is_refused():
    _, x, x1, x2 = _chain()
    s = te.create_schedule(x2.op)
    s.create_group(outputs=x1, inputs=x)
    with pytest.raises(ScheduleError, match="stage 'x' is outside group"):
        s[x1].compute_at(s[x], x.op.axis[0])


def test_read_graph_and_post_order():
    a, x, x1, x2 = _chain()
    graph = te.schedule.CreateReadGraph([x2.op])
    assert graph[x2.op] == [x1] and graph[x.op] == [a]
    assert te.schedule.PostDFSOrder([x2.op], graph) == [a.op, x.op, x1.op, x2.op]


def test_call_packed_refuses_a_strided_buffer():
    row = tir.decl_buffer((4,), "float32", name="row", strides=[8])
    with pytest.raises(tvm.error.MiniTVMError, match="buffer 'row' has strides \\[8\\]"):
        tir.call_packed("f", row)
    compact = tir.decl_buffer((2, 4), "float32", name="ok", strides=[4, 1])
    assert tir.call_packed("f", compact).args[1].args[1] is compact.data


def test_scan_fix_point_analysis_tells_elementwise_recurrences():
    n = 4
    x = te.placeholder((5, n, n), name="X")
    state = te.placeholder((5, n, n), name="state")
    first = te.compute((1, n, n), lambda _, i, j: x[0, i, j])
    same = te.compute((5, n, n), lambda t, i, j: state[t - 1, i, j] + x[t, j, i])
    swapped = te.compute((5, n, n), lambda t, i, j: state[t - 1, j, i] + 1.0)
    for update, want in ((same, [1, 1]), (swapped, [0, 0])):
        out = te.scan(first, update, state)
        fix = te.schedule.ScanFixPointAnalysis(out.op)
        assert [fix[iv].value for iv in out.op.spatial_axis_] == want


def test_tensorize_refuses_a_guarded_tail():
    a, b, c = _gemm(m=36)
    s = te.create_schedule(c.op)
    x, y = c.op.axis
    (z,) = c.op.reduce_axis
    yo, yi = s[c].split(y, factor=8)
    s[c].reorder(x, yo, yi, z)
    s[c].tensorize(yi, _gemv_intrin(8, 24))
    with pytest.raises(ScheduleError, match="guarded by .* the kernel would run past"):
        tvm.lower(s, [a, b, c])


def test_tensorize_refuses_a_region_that_is_not_compact_for_a_compact_buffer():
    a, b, c = _gemm()
    s = te.create_schedule(c.op)
    x, y = c.op.axis
    (z,) = c.op.reduce_axis
    yo, yi = s[c].split(y, factor=8)
    zo, zi = s[c].split(z, factor=6)
    s[c].reorder(x, yo, zo, yi, zi)
    w = te.placeholder((6,), name="w")
    v = te.placeholder((8, 6), name="v")  # declared without strides: rows 6 apart, B's are 24
    k = te.reduce_axis((0, 6), name="k")
    out = te.compute((8,), lambda i: te.sum(w[k] * v[i, k], axis=k), name="out")
    intrin = te.decl_tensor_intrin(out.op, lambda ins, outs: tir.call_packed("f", *ins, *outs))
    s[c].tensorize(yi, intrin)
    with pytest.raises(ScheduleError, match="declared with stride 6 in dimension 0, but 'B'"):
        tvm.lower(s, [a, b, c])


def test_import_llvm_reads_a_ll_file(tmp_path):
    path = tmp_path / "gemv.ll"
    path.write_text(GEMV_IR)
    a, b, c = _gemm()
    s = te.create_schedule(c.op)
    x, y = c.op.axis
    (z,) = c.op.reduce_axis
    yo, yi = s[c].split(y, factor=8)
    s[c].reorder(x, yo, yi, z)
    s[c].tensorize(yi, _gemv_intrin(8, 24))
    s[c].pragma(x, "import_llvm", str(path))
    _check_gemm(tvm.build(s, [a, b, c], "llvm"))
    s[c].pragma(x, "import_llvm", str(tmp_path / "missing.ll"))
    with pytest.raises(BuildError, match="names the file .*missing.ll', which cannot be read"):
        tvm.build(s, [a, b, c], "llvm")


def test_system_exit_in_packed_function_is_not_reported_as_success():
    @tvm.register_func("test.h7.exits", override=True)
    def exits(x, y):
        raise SystemExit(3)

    f = _addone_module("test.h7.exits")
    with pytest.raises(RuntimeError_, match="packed function 'test.h7.exits' failed") as info:
        f(_nd(np.zeros(4, "float32")), _nd(np.zeros(4, "float32")))
    assert isinstance(info.value.__cause__, SystemExit)
