"""FuseOpsByPattern / MergeCompositeFunctions / RunCodegen with the example NPU backend (TVM's
"Bring Your Own Codegen" tutorial): partitions have TVM's attrs and the built module matches numpy."""

import numpy as np
import pytest

import minitvm as tvm
import minitvm.relax.backend.contrib.example_npu  # registers the example NPU's patterns
from minitvm import relax
from minitvm.error import ArgumentError, MiniTVMError
from minitvm.relax.backend.pattern_registry import get_pattern, get_patterns_with_prefix
from minitvm.relax.transform import (
    FuseOpsByPattern,
    FusionPattern,
    MergeCompositeFunctions,
    RunCodegen,
)
from minitvm.relax.transform._dpl import is_op, wildcard
from minitvm.script import ir as I
from minitvm.script import relax as R

PATTERNS = get_patterns_with_prefix("example_npu")


@I.ir_module
class MatmulReLU:
    @R.function
    def main(x: R.Tensor((2, 4), "float32"), w: R.Tensor((4, 8), "float32")) -> R.Tensor(
        (2, 8), "float32"
    ):
        with R.dataflow():
            y = relax.op.matmul(x, w)
            z = relax.op.nn.relu(y)
            R.output(z)
        return z


@I.ir_module
class MatmulUsedTwice:
    @R.function
    def main(x: R.Tensor((2, 4), "float32"), w: R.Tensor((4, 8), "float32")) -> R.Tensor(
        (2, 8), "float32"
    ):
        with R.dataflow():
            y = relax.op.matmul(x, w)
            z = relax.op.nn.relu(y)
            s = relax.op.add(y, z)
            R.output(s)
        return s


def _composites(mod) -> dict[str, str]:
    """Function name -> its Composite attr, for the composite functions of `mod`."""
    return {
        gv.name_hint: str(f.attrs["Composite"])
        for gv, f in mod.functions_items()
        if isinstance(f, relax.Function) and f.attrs.get("Composite")
    }


def _codegens(mod) -> list[str]:
    return [
        gv.name_hint
        for gv, f in mod.functions_items()
        if isinstance(f, relax.Function) and f.attrs.get("Codegen")
    ]


def _run(mod, *arrays):
    ex = relax.build(mod, "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    return vm["main"](*[tvm.nd.array(a) for a in arrays]).numpy()


def _partition(mod, annotate=True):
    mod = FuseOpsByPattern(PATTERNS, bind_constants=False, annotate_codegen=annotate)(mod)
    return MergeCompositeFunctions()(mod)


def test_fused_patterns_come_first_as_registered_last():
    names = [p.name for p in PATTERNS]
    assert names.index("example_npu.matmul_relu_fused") < names.index("example_npu.matmul")
    assert names.index("example_npu.conv2d_relu_fused") < names.index("example_npu.relu")
    assert get_pattern("example_npu.matmul").name == "example_npu.matmul"
    assert get_pattern("no_such.pattern") is None


def test_matmul_relu_is_offloaded_as_one_fused_composite_and_matches_numpy():
    mod = _partition(MatmulReLU)
    assert list(_composites(mod).values()) == ["example_npu.matmul_relu_fused"]
    (wrapper,) = _codegens(mod)
    assert mod[wrapper].attrs["Codegen"] == "example_npu"
    main_calls = [b.value.op.name_hint for b in mod["main"].body.blocks[0].bindings]
    assert main_calls == [wrapper]
    built = RunCodegen()(mod)
    assert _codegens(built) == [] and _composites(built) == {}
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4), dtype="float32")
    w = rng.standard_normal((4, 8), dtype="float32")
    np.testing.assert_allclose(_run(built, x, w), np.maximum(x @ w, 0), rtol=1e-5, atol=1e-6)


def test_a_match_whose_intermediate_is_used_elsewhere_is_not_fused():
    mod = FuseOpsByPattern(PATTERNS, bind_constants=False)(MatmulUsedTwice)
    assert sorted(_composites(mod).values()) == [
        "example_npu.add",
        "example_npu.matmul",
        "example_npu.relu",
    ]
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4), dtype="float32")
    w = rng.standard_normal((4, 8), dtype="float32")
    y = x @ w
    out = _run(RunCodegen()(MergeCompositeFunctions()(mod)), x, w)
    np.testing.assert_allclose(out, y + np.maximum(y, 0), rtol=1e-5, atol=1e-6)


def test_merge_wraps_a_run_of_one_backend_into_one_codegen_function():
    mod = _partition(MatmulUsedTwice, annotate=False)
    (wrapper,) = _codegens(mod)
    inner = [b.value.op.name_hint for b in mod[wrapper].body.blocks[0].bindings]
    assert len(inner) == 3 and all(n in _composites(mod) for n in inner)
    assert [b.value.op.name_hint for b in mod["main"].body.blocks[0].bindings] == [wrapper]


def _conv_reference(x, w, groups=1):
    """NCHW/OIHW valid convolution, stride 1, by sliding windows."""
    o, ci, kh, kw = w.shape
    win = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))
    per = o // groups
    outs = [
        np.einsum("nchwij,ocij->nohw", win[:, g * ci : (g + 1) * ci], w[g * per : (g + 1) * per])
        for g in range(groups)
    ]
    return np.concatenate(outs, axis=1)


@pytest.mark.parametrize("groups,expected", [(1, "example_npu.conv2d_relu_fused")])
def test_conv2d_relu_offloads_and_matches_numpy(groups, expected):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((1, 4, 8, 8), "float32"))
    w = relax.Var("w", relax.TensorStructInfo((4, 4 // groups, 3, 3), "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.conv2d(x, w, groups=groups))
            z = bb.emit_output(relax.op.nn.relu(y))
        bb.emit_func_output(z)
    mod = _partition(bb.get())
    assert list(_composites(mod).values()) == [expected]
    rng = np.random.default_rng(2)
    xs = rng.standard_normal((1, 4, 8, 8), dtype="float32")
    ws = rng.standard_normal((4, 4 // groups, 3, 3), dtype="float32")
    ref = np.maximum(_conv_reference(xs, ws, groups), 0)
    np.testing.assert_allclose(_run(RunCodegen()(mod), xs, ws), ref, rtol=1e-4, atol=1e-5)


def test_grouped_conv_is_the_depthwise_pattern():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((1, 4, 8, 8), "float32"))
    w = relax.Var("w", relax.TensorStructInfo((4, 1, 3, 3), "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            y = bb.emit_output(relax.op.nn.conv2d(x, w, groups=4))
        bb.emit_func_output(y)
    mod = _partition(bb.get())
    assert list(_composites(mod).values()) == ["example_npu.depthwise_conv2d"]
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((1, 4, 8, 8), dtype="float32")
    ws = rng.standard_normal((4, 1, 3, 3), dtype="float32")
    out = _run(RunCodegen()(mod), xs, ws)
    np.testing.assert_allclose(out, _conv_reference(xs, ws, 4), rtol=1e-4, atol=1e-5)


def _add_const_module():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((3,), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            c = relax.const(np.array([1.0, 2.0, 3.0], "float32"))
            y = bb.emit_output(relax.op.add(x, c))
        bb.emit_func_output(y)
    return bb.get()


@pytest.mark.parametrize("bind_constants,n_params", [(True, 1), (False, 2)])
def test_bind_constants_keeps_constants_inside_the_composite(bind_constants, n_params):
    pattern = [("example_npu.add", is_op("relax.add")(wildcard(), wildcard()))]
    mod = FuseOpsByPattern(pattern, bind_constants=bind_constants)(_add_const_module())
    (name,) = _composites(mod)
    assert len(mod[name].params) == n_params


def test_a_check_that_says_no_leaves_the_op_alone():
    pattern = FusionPattern(
        "mine.add", is_op("relax.add")(wildcard(), wildcard()), {}, lambda c: False
    )
    mod = _add_const_module()
    assert _composites(FuseOpsByPattern([pattern])(mod)) == {}


def test_run_codegen_without_a_generator_names_the_backend():
    pattern = [("nobackend.add", is_op("relax.add")(wildcard(), wildcard()))]
    mod = FuseOpsByPattern(pattern, annotate_codegen=True)(_add_const_module())
    with pytest.raises(MiniTVMError, match="relax.ext.nobackend"):
        RunCodegen()(mod)


def test_bad_patterns_are_refused_by_name():
    with pytest.raises(ArgumentError, match="relax.no_such_op"):
        is_op("relax.no_such_op")
    with pytest.raises(ArgumentError, match="not a pattern"):
        is_op("relax.add")(wildcard(), 3)
    with pytest.raises(ArgumentError, match="neither a FusionPattern nor a tuple"):
        FuseOpsByPattern(["relax.add"])


def test_the_example_npu_runtime_entry_refuses_to_run():
    create = tvm.get_global_func("runtime.ExampleNPUJSONRuntimeCreate")
    with pytest.raises(MiniTVMError, match="emulates the example NPU on the host"):
        create("sym", "{}", [])


def test_a_wildcard_matching_a_tuple_makes_its_fields_parameters():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    y = relax.Var("y", relax.TensorStructInfo((2, 3), "float32"))
    with bb.function("main", [x, y]):
        with bb.dataflow():
            c = bb.emit(relax.op.concat(relax.Tuple([x, y]), axis=0))
            r = bb.emit_output(relax.op.nn.relu(c))
        bb.emit_func_output(r)
    pattern = [("host.concat_relu", is_op("relax.nn.relu")(is_op("relax.concat")(wildcard())))]
    mod = FuseOpsByPattern(pattern)(bb.get())
    (name,) = _composites(mod)
    assert [p.name_hint for p in mod[name].params] == ["x", "y"]
    rng = np.random.default_rng(4)
    xs = rng.standard_normal((2, 3), dtype="float32")
    ys = rng.standard_normal((2, 3), dtype="float32")
    ref = np.maximum(np.concatenate([xs, ys]), 0)
    np.testing.assert_allclose(_run(mod, xs, ys), ref)


def test_a_match_inside_a_nested_call_takes_the_inner_vars_as_parameters():
    sinfo = relax.TensorStructInfo((2, 3), "float32")
    x, y = relax.Var("x", sinfo), relax.Var("y", sinfo)
    out = relax.Var("out", sinfo)
    # an unnormalised binding (as the parser keeps `R.add(R.nn.relu(x), y)`): no var for relu
    nested = relax.Call(relax.op.add(x, y).op, (relax.op.nn.relu(x), y))
    body = relax.SeqExpr((relax.DataflowBlock((relax.VarBinding(out, nested),)),), out)
    mod = tvm.IRModule({"main": relax.Function((x, y), body, sinfo)})
    relu_add = is_op("relax.add")(is_op("relax.nn.relu")(wildcard()), wildcard())
    mod = FuseOpsByPattern([("host.relu_add", relu_add)])(mod)
    (name,) = _composites(mod)
    assert [p.name_hint for p in mod[name].params] == ["x", "y"]
