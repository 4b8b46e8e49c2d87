"""Gradient checkpointing: R.grad.start_checkpoint / end_checkpoint and relax.testing.nn's
checkpoint helpers. The backward pass recomputes a checkpointed region's values from its kept
inputs (TVM v0.19's semantics); gradients equal the un-checkpointed ones bit for bit and
torch.autograd's, and the compiled adjoint keeps fewer bytes of intermediates."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax import op as R
from minitvm.relax.expr import Call, Op
from minitvm.relax.testing import nn
from minitvm.script import ir as I
from minitvm.script import relax as RS

torch = pytest.importorskip("torch")
F32 = relax.TensorStructInfo((3, 3), "float32")


def _bindings(func):
    return [b for block in func.body.blocks for b in block.bindings]


def _op_names(func):
    return [
        b.value.op.name if isinstance(b.value, Call) and isinstance(b.value.op, Op) else None
        for b in _bindings(func)
    ]


def _recomputed(func):
    return sorted(b.var.name_hint for b in _bindings(func) if b.var.name_hint.endswith("_cp"))


def _run(mod, func_name, *args):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu(0))
    return vm[func_name](*[tvm.nd.array(a) for a in args])


@I.ir_module
class Sequential:
    @RS.function
    def main(x: RS.Tensor((3, 3), "float32")):
        with RS.dataflow():
            x_scp = RS.grad.start_checkpoint(x)
            lv1 = RS.power(x_scp, RS.const(3, "float32"))
            lv1_ecp = RS.grad.end_checkpoint(lv1)
            lv2 = RS.power(lv1_ecp, RS.const(3, "float32"))
            lv2_scp = RS.grad.start_checkpoint(lv2)
            lv3 = RS.power(lv2_scp, RS.const(3, "float32"))
            lv4 = RS.power(lv3, RS.const(3, "float32"))
            gv = RS.sum(lv4)
            gv_ecp = RS.grad.end_checkpoint(gv)
            RS.output(gv_ecp)
        return gv_ecp


def test_markers_are_tvm_names_and_round_trip_through_the_script():
    from minitvm.relax.op import grad

    x = relax.Var("x", F32)
    assert grad.start_checkpoint(x).op.name == "relax.grad.start_checkpoint"
    assert grad.end_checkpoint(x).struct_info == F32
    tvm.ir.assert_structural_equal(tvm.script.from_source(Sequential.script()), Sequential)


def test_region_values_are_recomputed_where_the_backward_pass_reads_them():
    adj = relax.transform.Gradient("main")(Sequential)["main_adjoint"]
    names = _op_names(adj)
    assert "relax.grad.start_checkpoint" not in names and "relax.grad.end_checkpoint" not in names
    # lv1 (region 1) and lv3 (region 2) are read by the power rules; lv2 starts region 2 (kept),
    # lv4 is read by nothing (sum's rule needs only its shape), gv only for its shape
    assert _recomputed(adj) == ["lv1_cp", "lv3_cp"]
    cp = {b.var.name_hint: b for b in _bindings(adj)}
    assert cp["lv3_cp"].value.args[0].name_hint == "lv2"  # from the kept value, not recomputed
    assert cp["lv1_cp"].value.args[0].name_hint == "x"


def test_only_the_values_the_asked_gradients_read_are_recomputed():
    @I.ir_module
    class Tree:
        @RS.function
        def main(
            x: RS.Tensor((3, 3), "float32"),
            y: RS.Tensor((3, 3), "float32"),
            z: RS.Tensor((3, 3), "float32"),
            u: RS.Tensor((3, 3), "float32"),
            v: RS.Tensor((3, 3), "float32"),
        ):
            with RS.dataflow():
                lv1 = x * y
                lv1_scp = RS.grad.start_checkpoint(lv1)
                z_scp = RS.grad.start_checkpoint(z)
                lv2 = lv1_scp * z_scp
                lv2_ecp = RS.grad.end_checkpoint(lv2)
                u_scp = RS.grad.start_checkpoint(u)
                v_scp = RS.grad.start_checkpoint(v)
                lv3 = u_scp * v_scp
                lv3_ecp = RS.grad.end_checkpoint(lv3)
                lv4 = lv2_ecp * lv3_ecp
                gv = RS.sum(lv4)
                RS.output(gv)
            return gv

    every = relax.transform.Gradient("main")(Tree)["main_adjoint"]
    assert _recomputed(every) == ["lv2_cp", "lv3_cp"]
    only_z = relax.transform.Gradient("main", require_grads=Tree["main"].params[2])(Tree)
    assert _recomputed(only_z["main_adjoint"]) == ["lv3_cp"]
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((3, 3)).astype("float32") for _ in range(5)]
    _, grads = _run(relax.transform.Gradient("main")(Tree), "main_adjoint", *args)
    t = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in args]
    tl = (t[0] * t[1] * t[2] * (t[3] * t[4])).sum()
    tl.backward()
    for g, tt in zip(grads, t):
        np.testing.assert_allclose(g.numpy(), tt.grad.numpy(), rtol=1e-5, atol=1e-5)


def _chain(checkpointed, n=6, segments=3, batch=32, width=64):
    """sum(h*h) for h = tanh(h @ w_i), i < n; checkpointed with emit_checkpoint_sequential."""
    x = relax.Var("x", relax.TensorStructInfo((batch, width), "float32"))
    ws = [relax.Var(f"w{i}", relax.TensorStructInfo((width, width), "float32")) for i in range(n)]
    layers = [lambda h, w=w: R.tanh(R.matmul(h, w)) for w in ws]
    bb = relax.BlockBuilder()
    with bb.function("main", [x, *ws]):
        with bb.dataflow():
            if checkpointed:
                h = nn.emit_checkpoint_sequential(layers, segments, x)
            else:
                h = x
                for layer in layers:
                    h = bb.emit(layer(h))
            out = bb.emit_output(R.sum(R.multiply(h, h)))
        bb.emit_func_output(out)
    return relax.transform.Gradient("main")(bb.get())


def test_checkpointed_gradients_are_bit_identical_with_less_memory():
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((32, 64)).astype("float32")]
    args += [(rng.standard_normal((64, 64)) * 0.2).astype("float32") for _ in range(6)]
    results, stats = {}, {}
    for checkpointed in (False, True):
        mod = _chain(checkpointed)
        ex = relax.build(mod, "llvm")
        stats[checkpointed] = ex.memory_stats("main_adjoint")["allocated_bytes"]
        loss, grads = relax.VirtualMachine(ex, tvm.cpu(0))["main_adjoint"](
            *[tvm.nd.array(a) for a in args]
        )
        results[checkpointed] = [loss.numpy(), *(g.numpy() for g in grads)]
    for plain, ckpt in zip(results[False], results[True]):
        np.testing.assert_array_equal(ckpt, plain)  # the same ops on the same values
    assert stats[True] < stats[False], stats
    t = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in args]
    h = t[0]
    for w in t[1:]:
        h = torch.tanh(h @ w)
    (h * h).sum().backward()
    for got, tt in zip(results[True][1:], t):
        np.testing.assert_allclose(got, tt.grad.numpy(), rtol=2e-4, atol=2e-4)


def test_checkpoint_sequential_cuts_segments_as_torch_does():
    def double(v):
        return R.add(v, v)

    bb = relax.BlockBuilder()
    x = relax.Var("x", F32)
    with bb.function("main", [x]):
        with bb.dataflow():
            h = nn.emit_checkpoint_sequential([double] * 5, 2, x)  # [0, 2), [2, 4), [4, 5)
            out = bb.emit_output(h)
        bb.emit_func_output(out)
    start, end, add = "relax.grad.start_checkpoint", "relax.grad.end_checkpoint", "relax.add"
    assert _op_names(bb.get()["main"]) == [start, add, add, end, start, add, add, end, add, None]
    with bb.function("last", [x]):
        with bb.dataflow():
            h = nn.emit_checkpoint_sequential([double] * 3, [0, 1], x, checkpoint_last=True)
            out = bb.emit_output(h)
        bb.emit_func_output(out)
    assert _op_names(bb.get()["last"]) == [start, add, end, start, add, add, end, None]


def test_checkpoint_marks_inputs_and_outputs_without_emitting():
    x, y = relax.Var("x", F32), relax.Var("y", F32)
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            first, second = nn.checkpoint(lambda a, b: (a * b, a + b), x, y)
            assert first.op.name == "relax.grad.end_checkpoint"
            assert first.args[0].args[0].op.name == "relax.grad.start_checkpoint"
            lv = bb.emit(first * second)
            out = bb.emit_output(R.sum(lv))
        bb.emit_func_output(out)
    mod = bb.get()
    x0 = np.arange(9, dtype="float32").reshape(3, 3) / 7
    y0 = np.ones((3, 3), "float32") / 3
    np.testing.assert_allclose(
        _run(mod, "main", x0, y0).numpy(), ((x0 * y0) * (x0 + y0)).sum(), 1e-6
    )
    _, (dx, dy) = _run(relax.transform.Gradient("main")(mod), "main_adjoint", x0, y0)
    np.testing.assert_allclose(dx.numpy(), y0 * (x0 + y0) + x0 * y0, rtol=1e-6)
    np.testing.assert_allclose(dy.numpy(), x0 * (x0 + y0) + x0 * y0, rtol=1e-6)


def test_gradient_of_an_intermediate_value():
    x = relax.Var("x", F32)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            lv1 = nn.emit_checkpoint(lambda v: R.multiply(R.multiply(v, v), v), x)
            gv = bb.emit_output(R.sum(R.multiply(lv1, lv1)))
        bb.emit_func_output(gv)
    adj = relax.transform.Gradient("main", [x, lv1])(bb.get())
    x0 = np.linspace(-1, 1, 9, dtype="float32").reshape(3, 3)
    _, (dx, dlv1) = _run(adj, "main_adjoint", x0)
    np.testing.assert_allclose(dlv1.numpy(), 2 * x0**3, rtol=1e-6)
    np.testing.assert_allclose(dx.numpy(), 6 * x0**5, rtol=1e-5, atol=1e-7)


def test_markers_pass_values_and_gradients_through():
    x = relax.Var("x", F32)
    from minitvm.relax.op.grad import start_checkpoint

    call = start_checkpoint(x)
    rule = Op.get("relax.grad.start_checkpoint").get_attr("FPrimalGradient")
    g = relax.Var("g", F32)
    assert rule(x, call, g, None) == [g]


def test_checkpoint_helper_errors_say_how_to_fix():
    x = relax.Var("x", F32)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            with pytest.raises(tvm.error.MiniTVMError, match="must return a relax Expr"):
                nn.checkpoint(lambda v: 3, x)
            with pytest.raises(tvm.error.MiniTVMError, match="segments=4 for 2 functions"):
                nn.emit_checkpoint_sequential([R.negative] * 2, 4, x)
            with pytest.raises(tvm.error.MiniTVMError, match="give increasing starts"):
                nn.emit_checkpoint_sequential([R.negative] * 3, [2, 1], x)
            out = bb.emit_output(R.sum(x))
        bb.emit_func_output(out)


def test_gradient_of_a_variable_bound_to_a_constant_is_refused():
    x = relax.Var("x", F32)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            c = bb.emit(relax.const(np.ones((3, 3), "float32")))
            gv = bb.emit_output(R.sum(R.multiply(x, c)))
        bb.emit_func_output(gv)
    with pytest.raises(tvm.error.MiniTVMError, match="not to a computed value"):
        relax.transform.Gradient("main", [c])(bb.get())


def test_parameter_gradients_are_computed_where_their_inputs_are_live():
    # each contribution is bound when it arrives (TVM's order), not all at the end: the last
    # layer's weight gradient comes before the input's, so activations die early
    names = [b.var.name_hint for b in _bindings(_chain(False)["main_adjoint"])]
    assert names.index("w5_adjoint") < names.index("lv5_adjoint") < names.index("x_adjoint")
