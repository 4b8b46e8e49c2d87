"""nn.Mutator, `define_subroutine` and the debug calls, as TVM documents them: a mutator
replaces children in place under dotted names; a subroutine is a private function per class
and argument shapes whose calls compute what the inlined forward does."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import ArgumentError, MiniTVMError
from minitvm.relax.frontend import nn

RNG = np.random.default_rng(11)


class _Leaf(nn.Module):
    def __init__(self, dtype="float32"):
        self.weight = nn.Parameter((2, 2), dtype)


def test_mutator_names_children_by_dotted_path_through_lists_and_dicts():
    root = nn.ModuleDict({"a": nn.ModuleList([_Leaf(), _Leaf()]), "b": _Leaf()})
    seen = []

    class Record(nn.Mutator):
        def visit_param(self, name, node):
            seen.append(name)
            return node

    assert Record().visit("root", root) is root
    assert seen == ["root.a.0.weight", "root.a.1.weight", "root.b.weight"]


def test_mutator_replaces_params_modules_and_effects_in_place():
    class Other(nn.Module):
        pass

    class Holder(nn.Module):
        def __init__(self):
            self.leaf = _Leaf("float16")
            self.swap = _Leaf()
            self.io = nn.IOEffect()

    class Change(nn.Mutator):
        def visit_param(self, name, node):
            return nn.Parameter(node.shape, "float32") if node.dtype == "float16" else node

        def visit_module(self, name, node):
            return Other() if name == "swap" else super().visit_module(name, node)

        def visit_effect(self, name, node):
            return None

    model = Change().visit("", Holder())
    assert model.leaf.weight.dtype == "float32"  # reached by recursing into `leaf`
    assert isinstance(model.swap, Other)
    assert model.io is None


class Act(nn.Module):
    define_subroutine = True

    def forward(self, x):
        return nn.op.silu(x)


class Layer(nn.Module):
    define_subroutine = True

    def __init__(self, n_in, n_out):
        self.weight = nn.Parameter((n_in, n_out))
        self.act = Act()

    def forward(self, x):
        return self.act(nn.op.matmul(x, self.weight))


def _silu(x):
    return x / (1 + np.exp(-x))


def test_subroutines_are_private_functions_that_compute_the_forward():
    n = tvm.tir.Var("n", "int64")
    mod, _ = Layer(4, 3).export_tvm({"forward": {"x": nn.spec.Tensor((n, 4), "float32")}})
    # named after the class in snake case, as TVM names them
    assert {gv.name_hint for gv in mod.get_global_vars()} == {"layer", "act", "forward"}
    assert "global_symbol" not in (mod["layer"].attrs or {})  # private
    assert len(mod["layer"].params) == 2  # the tensor argument, then the module's weight
    x = RNG.standard_normal((5, 4)).astype("float32")
    w = RNG.standard_normal((4, 3)).astype("float32")
    vm = relax.VirtualMachine(tvm.compile(mod, "llvm"), tvm.cpu())
    out = vm["forward"](tvm.runtime.tensor(x), tvm.runtime.tensor(w)).numpy()
    np.testing.assert_allclose(out, _silu(x @ w), rtol=1e-5, atol=1e-6)


def test_subroutines_differ_by_argument_shape_and_are_reused_when_equal():
    class Twice(nn.Module):
        def __init__(self):
            self.a, self.b, self.c = Layer(4, 3), Layer(6, 3), Layer(4, 3)

        def forward(self, x, y):
            return self.a(x) + self.b(y) + self.c(x)

    spec = {"x": nn.spec.Tensor((2, 4), "float32"), "y": nn.spec.Tensor((2, 6), "float32")}
    mod, _ = Twice().export_tvm({"forward": spec})
    layers = sorted(gv.name_hint for gv in mod.get_global_vars() if "layer" in gv.name_hint)
    assert layers == ["layer", "layer1"]  # a and c share one; b's weight shape differs
    x = RNG.standard_normal((2, 4)).astype("float32")
    y = RNG.standard_normal((2, 6)).astype("float32")
    wa, wc = (RNG.standard_normal((4, 3)).astype("float32") for _ in range(2))
    wb = RNG.standard_normal((6, 3)).astype("float32")
    vm = relax.VirtualMachine(tvm.compile(mod, "llvm"), tvm.cpu())
    args = [tvm.runtime.tensor(a) for a in (x, y, wa, wb, wc)]
    want = _silu(x @ wa) + _silu(y @ wb) + _silu(x @ wc)
    np.testing.assert_allclose(vm["forward"](*args).numpy(), want, rtol=1e-5, atol=1e-5)


def test_a_subroutine_takes_tensors_only():
    class Scaled(nn.Module):
        define_subroutine = True

        def forward(self, x, k):
            return x * k

    class Outer(nn.Module):
        def __init__(self):
            self.s = Scaled()

        def forward(self, x):
            return self.s(x, 2.0)

    with pytest.raises(ArgumentError, match="argument 'k' is a float"):
        Outer().export_tvm({"forward": {"x": nn.spec.Tensor((2,), "float32")}})


def test_debug_func_needs_debug_mode_and_threads_the_io_effect():
    class Show(nn.Module):
        def forward(self, x):
            nn.op.debug_func("my.debug", x, 3, "tag")
            return x

    with pytest.raises(MiniTVMError, match="export with debug=True"):
        Show().export_tvm({"forward": {"x": nn.spec.Tensor((2,), "float32")}})
    mod, _ = Show().export_tvm({"forward": {"x": nn.spec.Tensor((2,), "float32")}}, debug=True)
    call = mod["forward"].body.blocks[0].bindings[0].value
    assert call.args[0].global_symbol == "vm.builtin.invoke_debug_func"
    assert call.args[1] is mod["forward"].params[1]  # the incoming _io
    assert call.args[2].value == "my.debug"  # then the line info, then x, 3 and "tag"
    assert call.args[5].value.value == 3 and call.args[6].value == "tag"


def test_add_extern_records_the_module_once_per_export():
    ext = nn.ExternModule({"t5.double": lambda x: nn.Tensor.placeholder(x.shape, x.dtype)})

    class UsesExt(nn.Module):
        def forward(self, x):
            nn.add_extern(ext)
            return ext["t5.double"](x)

        def again(self, x):
            nn.add_extern(ext)
            return ext["t5.double"](x)

    spec = {"x": nn.spec.Tensor((2,), "float32")}
    _, _, ext_mods = UsesExt().export_tvm({"forward": spec, "again": spec}, allow_extern=True)
    assert len(ext_mods) == 1 and ext_mods[0] is ext
    with pytest.raises(MiniTVMError, match="while a module is exported"):
        nn.add_extern(ext)

    class Wrong(nn.Module):
        def forward(self, x):
            nn.add_extern("not a module")
            return x

    with pytest.raises(ArgumentError, match="expected an nn.ExternModule"):
        Wrong().export_tvm({"forward": spec})


def test_debug_export_initializes_io_with_the_null_value_op_in_tvms_form():
    mod, _ = nn.ReLU().export_tvm({"forward": {"x": nn.spec.Tensor((2,), "float32")}}, debug=True)
    init = mod["_initialize_effect"]
    io, lv, gv = init.body.blocks[0].bindings
    assert io.value.op.name == "relax.null_value"
    assert isinstance(lv.value, relax.Tuple) and gv.value is lv.var  # lv = (_io,); gv = lv
    again = tvm.script.from_source(mod.script())  # R.null_value() parses back
    tvm.ir.assert_structural_equal(again, mod)
    vm = relax.VirtualMachine(tvm.compile(mod, "llvm"), tvm.cpu())
    (effect,) = vm["_initialize_effect"]()
    assert effect is None  # the null object
