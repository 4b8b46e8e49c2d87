"""The MLC course's call sequences, re-written in our own words, under `import minitvm as tvm`.

One test per chapter: the tensor program (TVMScript, tir.Schedule, tvm.compile), the end-to-end
model (relax functions calling PrimFuncs and a registered packed function), the integration
chapter (a from_fx-style importer over torch.fx with emit_te, ending in emit_func_output of a
dataflow var), graph optimization (a PyExprMutator fusion pass then FuseTIR) and the CNN
assignment (emit_te of topi.nn.conv2d / pool2d / flatten / dense). Every result against numpy.
"""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, te, topi
from minitvm.ir.module import IRModule
from minitvm.script import from_source

RNG = np.random.default_rng(11)

MATMUL_RELU = '''
@I.ir_module
class Module:
    @T.prim_func
    def mm_relu(A: T.Buffer((16, 32), "float32"), B: T.Buffer((32, 24), "float32"),
                C: T.Buffer((16, 24), "float32")):
        T.func_attr({"global_symbol": "mm_relu", "tir.noalias": True})
        Y = T.alloc_buffer((16, 24), dtype="float32")
        for i, j, k in T.grid(16, 24, 32):
            with T.block("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(16, 24):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
'''


def _vm(mod):
    return relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())


def test_tensor_program_schedule_and_compile():
    mod = from_source(MATMUL_RELU)
    sch = tvm.tir.Schedule(mod)
    block_y = sch.get_block("Y", func_name="mm_relu")
    i, j, k = sch.get_loops(block_y)
    j0, j1 = sch.split(j, factors=[None, 4])
    sch.reorder(j0, k, j1)
    block_c = sch.get_block("C", "mm_relu")
    sch.reverse_compute_at(block_c, j0)
    sch.decompose_reduction(block_y, k)
    assert sch.get(sch.get_block("Y_update", "mm_relu")).name_hint == "Y_update"
    lib = tvm.compile(sch.mod, target="llvm")
    a = RNG.standard_normal((16, 32)).astype("float32")
    b = RNG.standard_normal((32, 24)).astype("float32")
    c = tvm.runtime.tensor(np.empty((16, 24), "float32"))
    lib["mm_relu"](tvm.runtime.tensor(a), tvm.runtime.tensor(b), c)
    np.testing.assert_allclose(c.numpy(), np.maximum(a @ b, 0), rtol=1e-5, atol=1e-5)


def _mlp_params():
    return {
        "w0": RNG.standard_normal((32, 64)).astype("float32") * 0.1,
        "b0": RNG.standard_normal(32).astype("float32") * 0.1,
        "w1": RNG.standard_normal((10, 32)).astype("float32") * 0.1,
        "b1": RNG.standard_normal(10).astype("float32") * 0.1,
    }


def _mlp_numpy(x, p):
    return np.maximum(x @ p["w0"].T + p["b0"], 0) @ p["w1"].T + p["b1"]


def test_end_to_end_relax_calls_prim_funcs_and_a_registered_packed_func():
    params = _mlp_params()

    @tvm.register_global_func("compat.mlc.linear", override=True)
    def torch_like_linear(x, w, b, out):  # a library function the graph calls by name
        out.copyfrom(x.numpy() @ w.numpy().T + b.numpy())

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((1, 64), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(
                relax.call_dps_packed(
                    "compat.mlc.linear",
                    [x, relax.const(params["w0"]), relax.const(params["b0"])],
                    relax.TensorStructInfo((1, 32), "float32"),
                )
            )
            h = bb.emit_te(topi.nn.relu, h)
            out = bb.emit_te(topi.nn.dense, h, relax.const(params["w1"]))
            out = bb.emit_te(topi.add, out, relax.const(params["b1"]))
            gv = bb.emit_output(out)
        bb.emit_func_output(gv)
    data = RNG.standard_normal((1, 64)).astype("float32")
    got = _vm(bb.get())["main"](tvm.runtime.tensor(data)).numpy()
    np.testing.assert_allclose(got, _mlp_numpy(data, params), rtol=1e-4, atol=1e-5)


def _from_fx(fx_mod, input_shapes, function_map, module_map):
    """An importer written the way the integration chapter writes it."""
    node_map, fn_inputs, output = {}, [], None
    named = dict(fx_mod.named_modules())
    bb = relax.BlockBuilder()
    with bb.function("main"):
        with bb.dataflow():
            for node in fx_mod.graph.nodes:
                if node.op == "placeholder":
                    var = relax.Var(node.target, relax.TensorStructInfo(input_shapes.pop(0), "float32"))
                    fn_inputs.append(var)
                    node_map[node] = var
                elif node.op == "get_attr":
                    node_map[node] = relax.const(getattr(fx_mod, node.target).detach().numpy())
                elif node.op == "call_function":
                    node_map[node] = function_map[node.target](bb, node_map, node)
                elif node.op == "call_module":
                    mod = named[node.target]
                    node_map[node] = module_map[type(mod)](bb, node_map, node, mod)
                elif node.op == "output":
                    output = node_map[node.args[0]]
                    bb.emit_output(output)
        bb.emit_func_output(output, fn_inputs)  # the dataflow var itself, as the course does
    return bb.get()


def test_integration_from_fx_with_emit_te():
    torch = pytest.importorskip("torch")
    fx = pytest.importorskip("torch.fx")

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(64, 16))
            self.linear = torch.nn.Linear(16, 8)

        def forward(self, x):
            return self.linear(torch.relu(torch.matmul(x, self.weight)))

    def te_matmul(a, b):
        k = te.reduce_axis((0, a.shape[1]), name="k")
        return te.compute(
            (a.shape[0], b.shape[1]), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="matmul"
        )

    def map_linear(bb, node_map, node, mod):
        y = bb.emit_te(topi.nn.dense, node_map[node.args[0]], relax.const(mod.weight.detach().numpy()))
        return bb.emit_te(topi.add, y, relax.const(mod.bias.detach().numpy()))

    model = Net()
    mod = _from_fx(
        fx.symbolic_trace(model),
        [(2, 64)],
        {
            torch.matmul: lambda bb, m, n: bb.emit_te(te_matmul, m[n.args[0]], m[n.args[1]]),
            torch.relu: lambda bb, m, n: bb.emit_te(topi.nn.relu, m[n.args[0]]),
        },
        {torch.nn.Linear: map_linear},
    )
    data = RNG.standard_normal((2, 64)).astype("float32")
    got = _vm(mod)["main"](tvm.runtime.tensor(data)).numpy()
    with torch.no_grad():
        want = model(torch.from_numpy(data)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@relax.expr_functor.mutator
class MatmulAddFusion(relax.PyExprMutator):
    """matmul followed by add becomes a call of a fused relax function (Primitive=1)."""

    def __init__(self, mod: IRModule) -> None:
        super().__init__()
        self.mod_ = mod
        self.add_op = tvm.ir.Op.get("relax.add")
        self.matmul_op = tvm.ir.Op.get("relax.matmul")
        self.fused = 0

    def transform(self) -> IRModule:
        for gv, func in self.mod_.functions.items():
            if isinstance(func, relax.Function) and not func.attrs.get("Primitive"):
                new = relax.analysis.remove_all_unused(self.visit_expr(func))
                self.builder_.update_func(gv, new)
        return self.builder_.get()

    def visit_call_(self, call):
        call = self.visit_expr_post_order(call)
        if not (isinstance(call, relax.Call) and call.op == self.add_op):
            return call
        producer = self.lookup_binding(call.args[0])
        if not (isinstance(producer, relax.Call) and producer.op == self.matmul_op):
            return call
        operands = [producer.args[0], producer.args[1], call.args[1]]
        params = [
            relax.Var(n, relax.TensorStructInfo(e.struct_info.shape, e.struct_info.dtype))
            for n, e in zip("xwb", operands)
        ]
        bb = relax.BlockBuilder()
        name = f"fused_matmul_add{self.fused}"
        self.fused += 1
        with bb.function(name, params):
            with bb.dataflow():
                lv = bb.emit(relax.op.matmul(params[0], params[1]))
                gv = bb.emit_output(relax.op.add(lv, params[2]))
            bb.emit_func_output(gv)
        fused = bb.get()[name].with_attr("Primitive", 1)
        return relax.Call(self.builder_.add_func(fused, name), operands, None, None)


@relax.expr_functor.mutator
class LowerWithTopi(relax.PyExprMutator):
    """Every graph op becomes call_tir of a topi compute (the chapter's LowerToTensorIR)."""

    OPS = {
        "relax.matmul": topi.nn.matmul,
        "relax.add": topi.add,
        "relax.nn.relu": topi.nn.relu,
        "relax.permute_dims": topi.transpose,
    }

    def __init__(self, mod: IRModule) -> None:
        super().__init__()
        self.mod_ = mod
        self.table = {tvm.ir.Op.get(k): v for k, v in self.OPS.items()}

    def visit_call_(self, call):
        call = self.visit_expr_post_order(call)
        if call.op in self.table:
            return self.builder_.call_te(self.table[call.op], *call.args)
        return call

    def transform(self) -> IRModule:
        for gv, func in self.mod_.functions.items():
            if isinstance(func, relax.Function):
                self.builder_.update_func(gv, self.visit_expr(func))
        return self.builder_.get()


def test_graph_optimization_pymutator_fusion_then_fuse_tir():
    params = _mlp_params()
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((1, 64), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            lv0 = bb.emit(relax.op.matmul(x, relax.op.permute_dims(relax.const(params["w0"]))))
            lv1 = bb.emit(relax.op.add(lv0, relax.const(params["b0"])))
            lv2 = bb.emit(relax.op.nn.relu(lv1))
            lv3 = bb.emit(relax.op.matmul(lv2, relax.op.permute_dims(relax.const(params["w1"]))))
            gv = bb.emit_output(relax.op.add(lv3, relax.const(params["b1"])))
        bb.emit_func_output(gv)
    model = bb.get()

    @tvm.ir.transform.module_pass(opt_level=2, name="MatmulAddFuse")
    class FusePass:
        def transform_module(self, mod, ctx):
            return MatmulAddFusion(mod).transform()

    fused = FusePass()(model)
    names = sorted(gv.name_hint for gv in fused.get_global_vars())
    assert names == ["fused_matmul_add0", "fused_matmul_add1", "main"]
    called = [
        b.value.op.name_hint
        for b in fused["main"].body.blocks[0].bindings
        if isinstance(b.value, relax.Call) and isinstance(b.value.op, tvm.ir.GlobalVar)
    ]
    assert called == ["fused_matmul_add0", "fused_matmul_add1"]
    lowered = LowerWithTopi(fused).transform()
    final = relax.transform.FuseTIR()(lowered)
    data = RNG.standard_normal((1, 64)).astype("float32")
    got = _vm(final)["main"](tvm.runtime.tensor(data)).numpy()
    np.testing.assert_allclose(got, _mlp_numpy(data, params), rtol=1e-4, atol=1e-5)


def test_ewise_fma_rewrite_with_a_mutator():
    @relax.expr_functor.mutator
    class FMARewriter(relax.PyExprMutator):
        def visit_call_(self, call):
            call = self.visit_expr_post_order(call)
            if call.op != tvm.ir.Op.get("relax.add"):
                return call
            value = self.lookup_binding(call.args[0])
            if not isinstance(value, relax.Call) or value.op != tvm.ir.Op.get("relax.multiply"):
                return call
            fma = tvm.ir.Op.get("relax.ewise_fma")
            return relax.Call(fma, [value.args[0], value.args[1], call.args[1]], None, None)

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((3, 4), "float32"))
    y = relax.Var("y", relax.TensorStructInfo((3, 4), "float32"))
    with bb.function("main", [x, y]):
        with bb.dataflow():
            lv0 = bb.emit(relax.op.multiply(x, y))
            gv = bb.emit_output(relax.op.add(lv0, y))
        bb.emit_func_output(gv)
    func = relax.analysis.remove_all_unused(FMARewriter().visit_expr(bb.get()["main"]))
    (binding,) = func.body.blocks[0].bindings  # the multiply is gone: nothing uses it
    assert binding.value.op.name == "relax.ewise_fma"
    a, b = (RNG.standard_normal((3, 4)).astype("float32") for _ in range(2))
    got = _vm(IRModule({"main": func}))["main"](tvm.runtime.tensor(a), tvm.runtime.tensor(b))
    np.testing.assert_allclose(got.numpy(), a * b + b, rtol=1e-6, atol=1e-6)  # LLVM may fuse (one rounding)


def test_cnn_assignment_with_emit_te_conv2d():
    batch = 2
    w = {
        "conv": RNG.standard_normal((4, 1, 3, 3)).astype("float32") * 0.3,
        "conv_b": RNG.standard_normal((1, 4, 1, 1)).astype("float32") * 0.1,
        "fc": RNG.standard_normal((10, 4 * 5 * 5)).astype("float32") * 0.1,
        "fc_b": RNG.standard_normal((1, 10)).astype("float32") * 0.1,
    }
    bb = relax.BlockBuilder()
    with pytest.warns(DeprecationWarning):
        x = relax.Var("x", (batch, 1, 12, 12), relax.DynTensorType(4, "float32"))  # 2022 spelling
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit_te(topi.nn.conv2d, x, relax.const(w["conv"]), 1, 0, 1)
            h = bb.emit_te(topi.nn.relu, bb.emit_te(topi.add, h, relax.const(w["conv_b"])))
            h = bb.emit_te(
                topi.nn.pool2d, h, kernel=(2, 2), stride=(2, 2), dilation=(1, 1),
                padding=(0, 0, 0, 0), pool_type="max",
            )
            h = bb.emit_te(topi.nn.flatten, h)
            h = bb.emit_te(topi.add, bb.emit_te(topi.nn.dense, h, relax.const(w["fc"])), relax.const(w["fc_b"]))
            gv = bb.emit_output(bb.emit_te(topi.nn.softmax, h, axis=1))
        bb.emit_func_output(gv)
    data = RNG.standard_normal((batch, 1, 12, 12)).astype("float32")
    got = _vm(bb.get())["main"](tvm.nd.array(data, tvm.cpu())).numpy()

    win = np.lib.stride_tricks.sliding_window_view(data, (3, 3), axis=(2, 3))
    conv = np.maximum(np.einsum("ncyxrq,ocrq->noyx", win, w["conv"]) + w["conv_b"], 0)
    pooled = conv.reshape(batch, 4, 5, 2, 5, 2).max(axis=(3, 5))
    logits = pooled.reshape(batch, -1) @ w["fc"].T + w["fc_b"]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    tvm.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-4, atol=1e-6)
