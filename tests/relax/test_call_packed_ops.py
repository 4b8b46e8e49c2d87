"""R.call_packed / R.call_pure_packed / R.call_inplace_packed: TVM's printed form, parse back,
run in the VM against numpy, and how passes treat their purity."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import MiniTVMError
from minitvm.script import ir as I
from minitvm.script import relax as R

_CALLS: list[str] = []


@tvm.register_func("test_packed.scale2", override=True)
def _scale2(x):
    _CALLS.append("scale2")
    return tvm.nd.array(x.numpy() * 2)


@tvm.register_func("test_packed.add_inplace", override=True)
def _add_inplace(x, y):
    x[:] = x.numpy() + y.numpy()
    return x


@I.ir_module
class Packed:
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")):
        a = R.call_packed("test_packed.scale2", x, sinfo_args=R.Tensor((2, 3), "float32"))
        with R.dataflow():
            b = R.call_pure_packed("test_packed.scale2", a, sinfo_args=R.Tensor((2, 3), "float32"))
            c = R.add(b, y)
            R.output(c)
        d = R.call_inplace_packed(
            "test_packed.add_inplace",
            c,
            y,
            inplace_indices=[0],
            sinfo_args=R.Tensor((2, 3), "float32"),
        )
        return d


def _rand(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((2, 3)).astype("float32")


def test_packed_calls_print_as_tvm_prints_them():
    text = Packed.script()
    assert (
        'R.call_packed("test_packed.scale2", x, sinfo_args=(R.Tensor((2, 3), dtype="float32"),))'
        in text
    )
    assert 'R.call_pure_packed("test_packed.scale2", a, sinfo_args=(' in text
    assert 'R.call_inplace_packed("test_packed.add_inplace", c, y, inplace_indices=[0], ' in text
    assert "R.ExternFunc" not in text


def test_packed_calls_parse_back_equal():
    tvm.ir.assert_structural_equal(tvm.script.from_source(Packed.script()), Packed)


def test_builder_calls_print_and_parse_back():
    x = relax.Var("x", relax.TensorStructInfo((4,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x], pure=False):
        sinfo = relax.TensorStructInfo((4,), "float32")
        a = bb.emit(relax.Call(relax.ExternFunc("test_packed.scale2"), [x], sinfo_args=[sinfo]))
        b = bb.emit(relax.op.call_pure_packed("test_packed.scale2", a, sinfo_args=sinfo))
        bb.emit_func_output(b)
    mod = bb.get()
    assert mod["main"].body.body.struct_info.shape[0].value == 4
    tvm.ir.assert_structural_equal(tvm.script.from_source(mod.script()), mod)


def test_packed_calls_run_in_the_vm_against_numpy():
    ex = relax.build(Packed, "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    x, y = _rand(0), _rand(1)
    out = vm["main"](tvm.nd.array(x), tvm.nd.array(y)).numpy()
    np.testing.assert_allclose(out, x * 4 + 2 * y, rtol=1e-6)


def test_parsed_text_runs_like_the_original():
    ex = relax.build(tvm.script.from_source(Packed.script()), "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    x, y = _rand(2), _rand(3)
    out = vm["main"](tvm.nd.array(x), tvm.nd.array(y)).numpy()
    np.testing.assert_allclose(out, x * 4 + 2 * y, rtol=1e-6)


def test_struct_info_comes_from_sinfo_args():
    x = relax.Var("x", relax.TensorStructInfo((4, 5), "float32"))
    call = relax.op.call_pure_packed(
        "f", x, sinfo_args=[relax.TupleStructInfo([x.struct_info, x.struct_info])]
    )
    assert isinstance(call.struct_info, relax.TupleStructInfo)
    assert call.args[0].global_symbol == "f"


def _two_calls(op_text: str):
    # two equal calls in one dataflow block
    src = f"""
@I.ir_module
class M:
    @R.function
    def main(x: R.Tensor((3,), "float32")):
        with R.dataflow():
            a = {op_text}
            b = {op_text}
            c = R.add(a, b)
            R.output(c)
        return c
"""
    return tvm.script.from_source(src)


def test_cse_merges_pure_packed_calls():
    mod = _two_calls(
        'R.call_pure_packed("test_packed.scale2", x, sinfo_args=R.Tensor((3,), "float32"))'
    )
    out = relax.transform.EliminateCommonSubexpr()(mod)
    calls = out.script().count("R.call_pure_packed")
    assert calls == 1
    _CALLS.clear()
    vm = relax.VirtualMachine(relax.build(out, "llvm"), tvm.cpu())
    x = np.arange(3, dtype="float32")
    np.testing.assert_allclose(vm["main"](tvm.nd.array(x)).numpy(), 4 * x)
    assert _CALLS == ["scale2"]  # once, not twice


def test_cse_keeps_impure_packed_calls():
    x = relax.Var("x", relax.TensorStructInfo((3,), "float32"))
    bb = relax.BlockBuilder()
    sinfo = relax.TensorStructInfo((3,), "float32")
    with bb.function("main", [x], pure=False):
        with bb.dataflow():
            call = relax.Call(relax.ExternFunc("test_packed.scale2"), [x], sinfo_args=[sinfo])
            a = bb.emit(call)
            b = bb.emit(call)
            c = bb.emit_output(relax.op.add(a, b))
        bb.emit_func_output(c)
    out = relax.transform.EliminateCommonSubexpr()(bb.get())
    assert out.script().count("R.call_packed") == 2


def test_inplace_packed_is_not_merged():
    # Two in-place updates of the same argument are two updates: merging them would drop one.
    mod = _two_calls(
        'R.call_inplace_packed("test_packed.add_inplace", x, x, inplace_indices=[0], '
        'sinfo_args=R.Tensor((3,), "float32"))'
    )
    out = relax.transform.EliminateCommonSubexpr()(mod)
    assert out.script().count("R.call_inplace_packed") == 2


def test_legacy_call_packed_with_out_sinfo_is_call_dps_packed():
    x = relax.Var("x", relax.TensorStructInfo((3,), "float32"))
    call = R.call_packed("env.f", (x,), out_sinfo=R.Tensor((3,), "float32"))
    assert call.op.name == "relax.call_dps_packed"


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda x: relax.op.call_pure_packed("f", x), "sinfo_args"),
        (lambda x: relax.op.call_pure_packed(3, x, sinfo_args=x.struct_info), "callee"),
        (
            lambda x: relax.op.call_inplace_packed("f", x, sinfo_args=x.struct_info),
            "inplace_indices",
        ),
        (
            lambda x: relax.op.call_inplace_packed(
                "f", x, inplace_indices=[2], sinfo_args=x.struct_info
            ),
            "inplace index 2",
        ),
        (
            lambda x: relax.op.call_inplace_packed(
                "f", x, inplace_indices=[-1], sinfo_args=x.struct_info
            ),
            "every inplace index is -1",
        ),
        (
            lambda x: relax.op.call_inplace_packed(
                "f", x, inplace_indices=[0, 0], sinfo_args=x.struct_info
            ),
            "2 entries",
        ),
        (lambda x: relax.op.call_pure_packed("f", object(), sinfo_args=x.struct_info), "object"),
        (lambda x: R.call_packed("f", x, sinfo_args=[3]), "struct infos"),
    ],
)
def test_bad_packed_calls_are_refused(make, match):
    x = relax.Var("x", relax.TensorStructInfo((3,), "float32"))
    with pytest.raises(MiniTVMError, match=match):
        make(x)


def test_unregistered_function_is_named_at_run_time():
    x = relax.Var("x", relax.TensorStructInfo((3,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        y = bb.emit(relax.op.call_pure_packed("test_packed.nowhere", x, sinfo_args=x.struct_info))
        bb.emit_func_output(y)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    with pytest.raises(MiniTVMError, match="test_packed.nowhere"):
        vm["main"](tvm.nd.array(np.zeros(3, "float32")))


def test_nn_kv_cache_module_prints_and_parses_back():
    # nn.KVCache's effects are calls of vm.builtin.* functions: they print as R.call_packed
    from minitvm.relax.frontend import nn
    from minitvm.relax.frontend.nn import modules, spec

    class AppendThenView(modules.Module):
        def __init__(self) -> None:
            self.cache = modules.KVCache(8, [2, 4])

        def forward(self, x: nn.Tensor) -> nn.Tensor:
            self.cache.append(x)
            return self.cache.view(4)

    mod, _ = AppendThenView().export_tvm(
        {"forward": {"x": spec.Tensor((2, 4), "float32")}}, debug=True
    )
    text = mod.script()
    assert 'R.call_packed("vm.builtin.attention_kv_cache_append", cache, x, ' in text
    assert "R.prim_value(T.int64(0))" in text
    tvm.ir.assert_structural_equal(tvm.script.from_source(text), mod)


def test_call_packed_keywords_are_attributes_and_parse_back():
    x = relax.Var("x", relax.TensorStructInfo((3,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x], pure=False):
        call = R.call_packed("f", x, 2, sinfo_args=x.struct_info, axes=[0, 1], mode="a")
        assert dict(call.attrs) == {"axes": (0, 1), "mode": "a"}
        bb.emit_func_output(bb.emit(call))
    mod = bb.get()
    assert 'R.call_packed("f", x, R.prim_value(T.int64(2)), axes=[0, 1], mode="a", sinfo_args=' in (
        mod.script()
    )
    tvm.ir.assert_structural_equal(tvm.script.from_source(mod.script()), mod)
