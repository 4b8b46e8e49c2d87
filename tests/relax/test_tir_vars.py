"""call_tir with tir_vars: symbolic ints passed to a PrimFunc after its tensors, end to end
(TVMScript, call_te / LegalizeOps, the VM, the reference evaluator, the torch importer)."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir, topi
from minitvm.error import ArgumentError, BuildError, ShapeError
from minitvm.relax.eval_ref import evaluate
from minitvm.script import from_source
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T


def _vm(mod, target="llvm"):
    return relax.VirtualMachine(relax.build(mod, target), tvm.cpu())


@I.ir_module
class Flatten:
    """`s` reaches the kernel only as a scalar: Y's dim is `s * 4`, never a dim of its own."""

    @T.prim_func
    def flatten(x: T.handle, y: T.handle, s: T.int64):
        X = T.match_buffer(x, (s, 4))
        Y = T.match_buffer(y, (s * 4,))
        for i in T.serial(s * 4):
            with T.block("b"):
                vi = T.axis.remap("S", [i])
                Y[vi] = X[vi // 4, vi % 4] + T.Cast("float32", s)

    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        n = T.int64()
        cls = Flatten
        y = R.call_tir(cls.flatten, (x,), R.Tensor((n * 4,), "float32"), tir_vars=R.shape([n]))
        return y


def test_script_call_tir_with_tir_vars_runs_and_round_trips():
    again = from_source(Flatten.script())
    tvm.ir.assert_structural_equal(again, Flatten)
    assert "tir_vars=R.shape(" in again.script()
    vm = _vm(again)
    for n in (3, 7):
        x = np.random.rand(n, 4).astype("float32")
        np.testing.assert_allclose(vm["main"](x).numpy(), x.reshape(-1) + n)
        np.testing.assert_allclose(evaluate(again, x), x.reshape(-1) + n)


@I.ir_module
class Fill:
    @R.function
    def main(x: R.Tensor((4,), "float32"), s: R.Shape(["n"])):
        n = T.int64()
        y = R.full((n, 4), R.const(1.5, "float32"), "float32")
        z = R.add(y, x)
        w = R.broadcast_to(x, (n, 4))
        q = R.zeros((n * 2, 4), "float32")
        return (z, w, q)


def _check_fill(outs, x, n):
    z, w, q = (np.asarray(o.numpy() if hasattr(o, "numpy") else o) for o in outs)
    np.testing.assert_allclose(z, 1.5 + np.broadcast_to(x, (n, 4)))
    np.testing.assert_allclose(w, np.broadcast_to(x, (n, 4)))
    assert q.shape == (2 * n, 4) and not q.any()


def test_full_broadcast_zeros_onto_a_shape_argument_legalize_and_run():
    legal = relax.transform.LegalizeOps()(Fill)
    calls = [line for line in legal.script().splitlines() if "R.call_tir" in line]
    # full / broadcast_to bind n from their output's dim; zeros' (n * 2, 4) needs it passed
    assert [("cls.zeros" in c, "tir_vars=" in c) for c in calls if "tir_vars=" in c] == [
        (True, True)
    ], calls
    vm = _vm(Fill)
    for n in (2, 5, 2):  # the shape argument's value keys the VM's frames
        x = np.random.rand(4).astype("float32")
        _check_fill(vm["main"](x, (n,)), x, n)
        _check_fill(evaluate(legal, x, (n,)), x, n)


def test_full_onto_a_match_cast_shape_and_an_int_argument():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor(("m",), "float32"), s: R.Shape(ndim=1), p: R.Prim(value="k")):
            n, k = T.int64(), T.int64()
            t = R.match_cast(s, R.Shape([n]))
            y = R.full((n, k), R.const(2.0, "float32"), "float32")
            return (y, t)

    vm = _vm(Mod)
    for n, k in ((2, 3), (4, 1)):
        y, t = vm["main"](np.zeros(5, "float32"), (n,), k)
        np.testing.assert_allclose(y.numpy(), np.full((n, k), 2.0, "float32"))
        assert tuple(t) == (n,)
    with pytest.raises(ArgumentError, match=r"argument 'p' \(position 2\) must be an int"):
        vm["main"](np.zeros(5, "float32"), (2,), 1.5)
    with pytest.raises(ArgumentError, match=r"argument 's' \(position 1\) must be a shape"):
        vm["main"](np.zeros(5, "float32"), 3, 1)
    with pytest.raises(
        ShapeError, match=r"argument 's' .* is the shape \(-2,\); dims must be >= 0"
    ):
        vm["main"](np.zeros(5, "float32"), (-2,), 1)
    with pytest.raises(
        ShapeError, match=r"argument 's' .* is the shape \(2, 2\), expected 1 values"
    ):
        vm["main"](np.zeros(5, "float32"), (2, 2), 1)


def test_call_te_turns_dims_no_tensor_holds_into_tir_vars():
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n * 4,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        y = bb.emit_te(topi.exp, x)
        bb.emit_func_output(y)
    mod = bb.get()
    call = mod["main"].body.blocks[0].bindings[0].value
    assert len(call.args) == 3 and call.args[2].values[0] is n
    prim = mod[call.args[0]]
    scalars = [p for p in prim.params if p not in prim.buffer_map]
    assert len(scalars) == 1 and scalars[0] is n
    # n is bound nowhere in main: the build says so instead of guessing it
    with pytest.raises(BuildError, match=r"symbolic dim 'n' is not bound"):
        relax.build(mod, "llvm")


def test_call_te_cache_hit_keeps_the_tir_vars():
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n, 4), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        a = bb.emit(relax.op.reshape(x, (n * 4,)))
        b = bb.emit(relax.op.exp(a))
        c = bb.emit(relax.op.exp(b))
        bb.emit_func_output(c)
    legal = relax.transform.LegalizeOps()(bb.get())
    calls = [b.value for b in legal["main"].body.blocks[0].bindings]
    assert calls[1].args[0] is calls[2].args[0]  # one PrimFunc for both exps
    assert len(calls[1].args) == 3 and len(calls[2].args) == 3
    vm = _vm(bb.get())
    xs = np.random.rand(3, 4).astype("float32")
    np.testing.assert_allclose(vm["main"](xs).numpy(), np.exp(np.exp(xs.reshape(-1))), rtol=1e-5)


def _flatten_with(tir_vars):
    @I.ir_module
    class Mod:
        @T.prim_func
        def flatten(x: T.handle, y: T.handle, s: T.int64):
            X = T.match_buffer(x, (s, 4))
            Y = T.match_buffer(y, (s * 4,))
            for i in T.serial(s * 4):
                with T.block("b"):
                    vi = T.axis.remap("S", [i])
                    Y[vi] = X[vi // 4, vi % 4]

        @R.function
        def main(x: R.Tensor(("n", 4), "float32")):
            n = T.int64()
            cls = Mod
            y = R.call_tir(cls.flatten, (x,), R.Tensor((n * 4,), "float32"), tir_vars=tir_vars(n))
            return y

    return Mod


@pytest.mark.parametrize("tir_vars", [lambda n: R.shape([n, n]), lambda n: R.shape([])])
def test_wrong_number_of_tir_vars_is_a_build_error(tir_vars):
    with pytest.raises(
        BuildError, match=r"call_tir of 'flatten' passes .* tir_vars, .* scalar param\(s\) \(s\)"
    ):
        relax.build(_flatten_with(tir_vars), "llvm")


def test_tir_var_disagreeing_with_the_tensor_is_a_shape_error():
    vm = _vm(_flatten_with(lambda n: R.shape([n + 1])))
    with pytest.raises(ShapeError, match=r"calling 'flatten': argument 'X' .* must equal s = 4"):
        vm["main"](np.zeros((3, 4), "float32"))


def test_multihead_attention_with_a_dynamic_batch_matches_torch():
    torch = pytest.importorskip("torch")
    from minitvm.relax.frontend.torch import from_exported_program

    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = torch.nn.MultiheadAttention(16, 4, batch_first=True)

        def forward(self, x):
            return self.mha(x, x, x)  # need_weights: the head-averaged weights too

    torch.manual_seed(0)
    model = Attention().eval()
    batch = torch.export.Dim("batch")
    ep = torch.export.export(model, (torch.randn(2, 5, 16),), dynamic_shapes={"x": {0: batch}})
    vm = _vm(from_exported_program(ep))
    for b in (2, 5):
        x = torch.randn(b, 5, 16)
        with torch.no_grad():
            want = model(x)
        got = vm["main"](x.numpy())
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-4, atol=1e-5)


def test_shape_argument_checked_against_a_tensor_dim():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor(("n",), "float32"), s: R.Shape(["n"])):
            n = T.int64()
            return R.zeros((n * 2,), "float32")

    vm = _vm(Mod)
    assert vm["main"](np.zeros(3, "float32"), (3,)).shape == (6,)
    with pytest.raises(
        ShapeError, match=r"argument 's' \(position 1\) is the shape \(4,\): value 0 must be 3"
    ):
        vm["main"](np.zeros(3, "float32"), (4,))


def test_intermediates_shaped_by_tir_vars_are_memory_planned():
    @I.ir_module
    class Mod:
        @T.prim_func
        def flatten(x: T.handle, y: T.handle, s: T.int64):
            X = T.match_buffer(x, (s, 4))
            Y = T.match_buffer(y, (s * 4,))
            for i in T.serial(s * 4):
                with T.block("b"):
                    vi = T.axis.remap("S", [i])
                    Y[vi] = X[vi // 4, vi % 4]

        @R.function
        def main(x: R.Tensor(("n", 4), "float32")):
            n = T.int64()
            cls = Mod
            with R.dataflow():
                y = R.call_tir(
                    cls.flatten, (x,), R.Tensor((n * 4,), "float32"), tir_vars=R.shape([n])
                )
                z = R.exp(y)
                w = R.add(z, y)
                R.output(w)
            return w

    with tvm.transform.PassContext(opt_level=0):  # unfused: y and z are intermediates
        ex = relax.build(Mod, "llvm")
    stats = ex.memory_stats("main", n=5)
    assert stats["planned"] and stats["num_intermediates"] == 2 and stats["num_storages"] == 2
    assert stats["allocated_bytes"] == 2 * 5 * 4 * 4
    fused = relax.build(Mod, "llvm")  # flatten, exp and add fuse; n comes from x's shape
    assert (
        "tir_vars" not in fused.as_text()
        and fused.memory_stats("main", n=5)["num_intermediates"] == 0
    )
    for vm in (relax.VirtualMachine(ex, tvm.cpu()), relax.VirtualMachine(fused, tvm.cpu())):
        for n in (2, 6, 2):
            x = np.random.rand(n, 4).astype("float32")
            want = np.exp(x.reshape(-1)) + x.reshape(-1)
            np.testing.assert_allclose(vm["main"](x).numpy(), want, rtol=1e-5)
            np.testing.assert_allclose(evaluate(Mod, x), want, rtol=1e-5)


@I.ir_module
class FullExpAdd:
    """n reaches the fused kernel only through full's tir_vars: no tensor has it as a dim."""

    @R.function
    def main(x: R.Tensor((4,), "float32"), s: R.Shape(["n"])):
        n = T.int64()
        with R.dataflow():
            y = R.full((n * 2, 4), R.const(1.5, "float32"), "float32")
            z = R.exp(y)
            w = R.add(z, x)
            R.output(w)
        return w


def _full_exp_add(x, n):
    return np.exp(np.float32(1.5)) + np.broadcast_to(x, (2 * n, 4))


def test_fusion_carries_tir_vars_no_tensor_binds():
    seq = tvm.transform.Sequential(
        [
            relax.transform.LegalizeOps(),
            relax.transform.AnnotateTIROpPattern(),
            relax.transform.FuseOps(),
        ]
    )
    grouped = seq(FullExpAdd)
    group = grouped["fused_full_exp_add"]
    assert isinstance(group.params[-1].struct_info, relax.ShapeStructInfo)  # defines n
    fused = relax.transform.FuseTIR()(grouped)
    call = fused["main"].body.blocks[0].bindings[0].value
    assert call.args[0].name_hint == "fused_full_exp_add" and len(call.args) == 3
    prim = fused["fused_full_exp_add"]
    assert [p.name for p in prim.params if p not in prim.buffer_map] == ["n"]
    vm = _vm(FullExpAdd)
    for n in (1, 3):
        x = np.random.rand(4).astype("float32")
        want = _full_exp_add(x, n)
        np.testing.assert_allclose(vm["main"](x, (n,)).numpy(), want, rtol=1e-6)
        np.testing.assert_allclose(evaluate(fused, x, (n,)), want, rtol=1e-6)


def test_twin_groups_share_one_fused_kernel_each_call_passing_its_own_tir_vars():
    @I.ir_module
    class Twice:
        @R.function
        def main(x: R.Tensor((4,), "float32"), s: R.Shape(["n", "m"])):
            n = T.int64()
            m = T.int64()
            with R.dataflow():
                y = R.full((n * 2, 4), R.const(1.5, "float32"), "float32")
                z = R.exp(y)
                w = R.add(z, x)
                y2 = R.full((m * 2, 4), R.const(1.5, "float32"), "float32")
                z2 = R.exp(y2)
                w2 = R.add(z2, x)
                R.output(w, w2)
            return (w, w2)

    fused = _fuse(Twice)
    assert [gv.name_hint for gv, _ in fused.functions_items()] == ["main", "fused_full_exp_add"]
    calls = [b.value for b in fused["main"].body.blocks[0].bindings]
    assert [str(c.args[2].values[0]) for c in calls] == ["n", "m"]
    x = np.random.rand(4).astype("float32")
    w, w2 = _vm(Twice)["main"](x, (1, 3))
    np.testing.assert_allclose(w.numpy(), _full_exp_add(x, 1), rtol=1e-6)
    np.testing.assert_allclose(w2.numpy(), _full_exp_add(x, 3), rtol=1e-6)


def test_a_nested_call_is_left_out_of_fusion_and_still_builds():
    """The parser keeps `R.add(R.exp(y), x)` nested; FuseOps grouped full with that add and
    FuseTIR then failed the build on the inner call, which no binding names."""

    @I.ir_module
    class Nested:
        @R.function
        def main(x: R.Tensor((4,), "float32"), s: R.Shape(["n"])):
            n = T.int64()
            with R.dataflow():
                y = R.full((n * 2, 4), R.const(1.5, "float32"), "float32")
                w = R.add(R.exp(y), x)
                R.output(w)
            return w

    x = np.random.rand(4).astype("float32")
    got = _vm(Nested)["main"](x, (3,)).numpy()
    np.testing.assert_allclose(got, _full_exp_add(x, 3), rtol=1e-6)


def _flatten_then_exp(tir_var_offset):
    """flatten (s, 4) -> (s * 4,) called with tir_vars n + offset on an (n, 4) tensor, then exp."""

    @I.ir_module
    class Mod:
        @T.prim_func
        def flatten(x: T.handle, y: T.handle, s: T.int64):
            X = T.match_buffer(x, (s, 4))
            Y = T.match_buffer(y, (s * 4,))
            for i in T.serial(s * 4):
                with T.block("b"):
                    vi = T.axis.remap("S", [i])
                    Y[vi] = X[vi // 4, vi % 4]

        @R.function
        def main(x: R.Tensor(("n", 4), "float32")):
            n = T.int64()
            cls = Mod
            with R.dataflow():
                y = R.call_tir(
                    cls.flatten,
                    (x,),
                    R.Tensor((n * 4,), "float32"),
                    tir_vars=R.shape([n + tir_var_offset]),
                )
                z = R.exp(y)
                R.output(z)
            return z

    return Mod


def _fuse(mod):
    passes = [
        relax.transform.LegalizeOps(),
        relax.transform.AnnotateTIROpPattern(),
        relax.transform.FuseOps(),
        relax.transform.FuseTIR(),
    ]
    return tvm.transform.Sequential(passes)(mod)


def test_fusion_inlines_a_call_whose_tir_vars_agree_with_its_tensors():
    fused = _fuse(_flatten_then_exp(0))
    assert [gv.name_hint for gv, _ in fused.functions_items()] == ["main", "fused_flatten_exp"]
    x = np.random.rand(3, 4).astype("float32")
    np.testing.assert_allclose(_vm(fused)["main"](x).numpy(), np.exp(x.reshape(-1)), rtol=1e-6)


def test_fusion_leaves_alone_a_call_whose_tir_vars_disagree_with_its_tensors():
    """Fused, flatten would loop over (n + 1) * 4 elements of an n * 4 intermediate with no
    check between the kernels; alone, the VM's argument check names the mismatch."""
    mod = _flatten_then_exp(1)
    fused = _fuse(mod)
    assert "flatten" in [gv.name_hint for gv, _ in fused.functions_items()]
    with pytest.raises(ShapeError, match=r"calling 'flatten': argument 'X' .* must equal s = 4"):
        _vm(mod)["main"](np.zeros((3, 4), "float32"))


def test_fuse_tir_rejects_a_primitive_function_whose_tir_vars_disagree():
    mod = relax.transform.LegalizeOps()(_flatten_then_exp(1))
    mod["main"] = mod["main"].with_attr("Primitive", 1)
    with pytest.raises(
        ShapeError,
        match=r"FuseTIR: function 'main', call of flatten: dim 0 of buffer 'X' is s, which is "
        r"n \+ .*1.* but the tensor passed to it has n; make the call's out_sinfo and tir_vars",
    ):
        relax.transform.FuseTIR()(mod)


@pytest.mark.parametrize("kind", ["opencl", "cuda"])
def test_tir_vars_on_a_gpu_through_the_default_gpu_schedule(kind):
    dev = {"opencl": tvm.opencl(0), "cuda": tvm.cuda(0)}[kind]
    reason = dev.unavailable_reason()
    if reason is not None:
        pytest.skip(f"no {kind} device: {reason}")
    vm = relax.VirtualMachine(relax.build(Fill, kind), dev)
    for n in (2, 5):
        x = np.random.rand(4).astype("float32")
        _check_fill(vm["main"](tvm.nd.array(x, dev), (n,)), x, n)


@pytest.mark.parametrize("kind", ["opencl", "cuda"])
def test_fused_tir_vars_kernel_on_a_gpu(kind):
    dev = {"opencl": tvm.opencl(0), "cuda": tvm.cuda(0)}[kind]
    reason = dev.unavailable_reason()
    if reason is not None:
        pytest.skip(f"no {kind} device: {reason}")
    ex = relax.build(FullExpAdd, kind)
    assert 'CallTIR "fused_full_exp_add"' in ex.as_text()
    vm = relax.VirtualMachine(ex, dev)
    for n in (1, 3):
        x = np.random.rand(4).astype("float32")
        got = vm["main"](tvm.nd.array(x, dev), (n,)).numpy()
        np.testing.assert_allclose(got, _full_exp_add(x, n), rtol=1e-5)
