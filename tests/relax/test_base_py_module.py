"""relax.BasePyModule and @I.pyfunc (TVM 0.24's "mix Python and TVM" tutorial): Python methods,
compiled PrimFuncs and relax functions calling each other, checked against numpy and torch."""

import gc

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import BuildError, MiniTVMError, ParseError, ShapeError
from minitvm.relax.base_py_module import BasePyModule
from minitvm.relax.relax_to_pyfunc_converter import RelaxToPyFuncConverter
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T


@I.ir_module
class Hybrid(BasePyModule):
    @T.prim_func
    def add_tir(
        A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32"), C: T.Buffer((4,), "float32")
    ):
        for i in range(4):
            C[i] = A[i] + B[i]

    @T.prim_func
    def matmul_tir(var_A: T.handle, var_B: T.handle, var_C: T.handle):
        n = T.int32()
        A = T.match_buffer(var_A, (n, 4), "float32")
        B = T.match_buffer(var_B, (4, 3), "float32")
        C = T.match_buffer(var_C, (n, 3), "float32")
        for i, j, k in T.grid(n, 3, 4):
            with T.block("matmul"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    @I.pyfunc
    def forward(self, x, y):
        """Adds through the PrimFunc; squares in Python."""
        s = self.call_tir(self.add_tir, [x, y], out_sinfo=R.Tensor((4,), "float32"))
        return np.asarray(s.numpy() if hasattr(s, "numpy") else s) ** 2

    @I.pyfunc
    def double(self, x):
        return np.asarray(x) * 2

    @R.function
    def add_relax(x: R.Tensor(("n",), "float32"), y: R.Tensor(("n",), "float32")):
        return R.add(x, y)

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        y = R.call_py_func("double", (x,), out_sinfo=R.Tensor((4,), "float32"))
        z = R.multiply(y, x)
        return z


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


@pytest.fixture(scope="module")
def hybrid():
    return Hybrid(device=tvm.cpu(0))


def test_call_tir_from_a_pyfunc_against_numpy(hybrid):
    x, y = _rand(4), _rand(4, seed=1)
    np.testing.assert_allclose(hybrid.forward(x, y), (x + y) ** 2, rtol=1e-6)


def test_call_tir_binds_symbolic_output_dims_from_inputs(hybrid):
    for n in (2, 5):
        a, b = _rand(n, 4), _rand(4, 3, seed=1)
        out = hybrid.call_tir("matmul_tir", [a, b], out_sinfo=R.Tensor(("n", 3), "float32"))
        assert isinstance(out, tvm.nd.NDArray)
        np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-5)


def test_relax_function_is_a_method_on_any_length(hybrid):
    for n in (5, 10):
        a, b = _rand(n), _rand(n, seed=2)
        np.testing.assert_allclose(hybrid.add_relax(a, b).numpy(), a + b, rtol=1e-6)


def test_vm_calls_back_into_a_pyfunc(hybrid):
    x = _rand(4)
    np.testing.assert_allclose(hybrid.main(x).numpy(), 2 * x * x, rtol=1e-6)


@tvm.register_global_func("test_bpm.bias_add", override=True)
def _bias_add(x, b, out):
    out[:] = x.numpy() + b.numpy()


def test_call_dps_packed_with_a_registered_function(hybrid):
    x, b = _rand(2, 3), _rand(3, seed=3)
    out = hybrid.call_dps_packed("test_bpm.bias_add", [x, b], R.Tensor((2, 3), "float32"))
    np.testing.assert_allclose(out.numpy(), x + b, rtol=1e-6)


def test_list_functions_and_call_py_func(hybrid):
    kinds = hybrid.list_functions()
    assert kinds["tirx"] == ["add_tir", "matmul_tir"]
    assert kinds["relax"] == ["add_relax", "main"]
    x = _rand(3)
    np.testing.assert_allclose(hybrid.call_py_func("double", [x]), 2 * x)


def test_script_prints_pyfuncs_and_parses_back(hybrid):
    text = hybrid.script()
    assert "@I.pyfunc\n    def double(self, x):\n        return np.asarray(x) * 2" in text
    assert 'R.call_py_func("double", (x,), out_sinfo=R.Tensor((4,), dtype="float32"))' in text
    parsed = tvm.script.from_source(text)
    tvm.ir.assert_structural_equal(parsed, hybrid.ir_mod)
    assert parsed.script() == text


def test_plain_extern_member_prints_and_parses_back():
    mod = tvm.IRModule({"ext": relax.ExternFunc("my.symbol")})
    text = mod.script()
    assert 'ext = R.ExternFunc("my.symbol")' in text
    tvm.ir.assert_structural_equal(tvm.script.from_source(text), mod)


def test_converter_matches_numpy_before_and_after_a_pass():
    @I.ir_module
    class DenseLayer:
        @T.prim_func
        def bias_add_tir(var_x: T.handle, var_b: T.handle, var_out: T.handle):
            x = T.match_buffer(var_x, (2, 4), "float32")
            b = T.match_buffer(var_b, (4,), "float32")
            out = T.match_buffer(var_out, (2, 4), "float32")
            for i, j in T.grid(2, 4):
                out[i, j] = x[i, j] + b[j]

        @R.function
        def main(
            x: R.Tensor((2, 4), "float32"),
            w: R.Tensor((4, 4), "float32"),
            b: R.Tensor((4,), "float32"),
        ) -> R.Tensor((2, 4), "float32"):
            h = R.matmul(x, w)
            cls = DenseLayer
            h_bias = R.call_tir(cls.bias_add_tir, (h, b), out_sinfo=R.Tensor((2, 4), "float32"))
            return R.nn.relu(h_bias)

    x, w, b = _rand(2, 4), _rand(4, 4, seed=1), _rand(4, seed=2)
    expected = np.maximum(x @ w + b, 0)
    for mod in (DenseLayer, relax.transform.DeadCodeElimination()(DenseLayer)):
        converted = RelaxToPyFuncConverter(mod).convert(["main"])
        np.testing.assert_allclose(converted.pyfuncs["main"](x, w, b), expected, rtol=1e-5)
    with pytest.raises(MiniTVMError, match="'bias_add_tir' is not a relax function"):
        RelaxToPyFuncConverter(DenseLayer).convert("bias_add_tir")


# ----------------------------------------------------------------------------- torch


def test_tutorial_steps_against_torch():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional

    @I.ir_module
    class TorchModule(BasePyModule):
        @T.prim_func
        def add_tir(
            A: T.Buffer((4,), "float32"),
            B: T.Buffer((4,), "float32"),
            C: T.Buffer((4,), "float32"),
        ):
            for i in range(4):
                C[i] = A[i] + B[i]

        @I.pyfunc
        def forward(self, x, y):
            x_tvm = self._convert_pytorch_to_tvm(x)
            y_tvm = self._convert_pytorch_to_tvm(y)
            result = self.call_tir(
                self.add_tir, [x_tvm, y_tvm], out_sinfo=R.Tensor((4,), "float32")
            )
            return self._convert_tvm_to_pytorch(result)

        @I.pyfunc
        def silu(self, x):
            return torch.sigmoid(x) * x

        @I.pyfunc
        def layer_norm(self, x):
            return F.layer_norm(x, x.shape[-1:])

        @R.function
        def main(x: R.Tensor((4, 8), "float32")) -> R.Tensor((4, 8), "float32"):
            h = R.call_py_func("layer_norm", (x,), out_sinfo=R.Tensor((4, 8), "float32"))
            out = R.call_py_func("silu", (h,), out_sinfo=R.Tensor((4, 8), "float32"))
            return out

    mod = TorchModule(device=tvm.cpu(0))
    x, y = torch.tensor([1.0, 2.0, 3.0, 4.0]), torch.tensor([10.0, 20.0, 30.0, 40.0])
    result = mod.forward(x, y)
    assert isinstance(result, torch.Tensor)
    assert torch.allclose(result, x + y)
    h = torch.randn(4, 8, generator=torch.Generator().manual_seed(0))
    ln = F.layer_norm(h, (8,))
    expected = torch.sigmoid(ln) * ln
    out = mod.main(h)
    assert isinstance(out, torch.Tensor)
    assert torch.allclose(out, expected, atol=1e-5)
    assert torch.allclose(mod.call_py_func("silu", [mod.call_py_func("layer_norm", [h])]), expected)


def test_torch_tensor_and_array_share_memory():
    torch = pytest.importorskip("torch")
    mod = BasePyModule(tvm.IRModule(), tvm.cpu(0))
    t = torch.arange(4, dtype=torch.float32)
    nd = mod._convert_pytorch_to_tvm(t)
    back = mod._convert_tvm_to_pytorch(nd)
    t[0] = 42.0
    assert nd.numpy()[0] == 42.0 and back[0].item() == 42.0


# ----------------------------------------------------------------------------- bad input


def test_pyfunc_name_clashing_with_the_module_api_is_refused():
    with pytest.raises(MiniTVMError, match="'call_tir' clashes with BasePyModule"):

        @I.ir_module
        class Clash(BasePyModule):
            @I.pyfunc
            def call_tir(self, x):
                return x


def test_two_functions_with_one_name_are_refused():
    with pytest.raises(ParseError, match="defines 'f' twice"):

        @I.ir_module
        class Twice(BasePyModule):
            @T.prim_func
            def f(A: T.Buffer((4,), "float32")):
                A[0] = T.float32(1)

            @I.pyfunc
            def f(self, x):  # noqa: F811 - the clash under test
                return x


def test_pyfunc_without_self_is_refused():
    with pytest.raises(ParseError, match="must take `self` first"):

        @I.ir_module
        class NoSelf(BasePyModule):
            @I.pyfunc
            def f(x):
                return x


def test_wrong_shaped_tensor_is_named(hybrid):
    with pytest.raises(MiniTVMError, match="add_tir"):
        hybrid.call_tir("add_tir", [_rand(5), _rand(5)], out_sinfo=R.Tensor((4,), "float32"))


def test_pyfunc_result_of_the_wrong_shape_is_named():
    @I.ir_module
    class Bad(BasePyModule):
        @I.pyfunc
        def shrink(self, x):
            return np.asarray(x)[:2]

        @R.function
        def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            y = R.call_py_func("shrink", (x,), out_sinfo=R.Tensor((4,), "float32"))
            return y

    with pytest.raises(ShapeError, match=r"pyfunc 'shrink' result 0 has shape \(2,\)"):
        Bad(device=tvm.cpu(0)).main(_rand(4))


def test_unknown_names_are_refused(hybrid):
    with pytest.raises(MiniTVMError, match="nope is not a PrimFunc"):
        hybrid.call_tir("nope", [_rand(4)], out_sinfo=R.Tensor((4,), "float32"))
    with pytest.raises(MiniTVMError, match="no global function named 'test_bpm.none'"):
        hybrid.call_dps_packed("test_bpm.none", [_rand(4)], R.Tensor((4,), "float32"))
    with pytest.raises(MiniTVMError, match="no Python function 'nope'"):
        hybrid.call_py_func("nope", [])
    with pytest.raises(ShapeError, match="output dim 'k' is symbolic"):
        hybrid.call_dps_packed("test_bpm.bias_add", [_rand(4)], R.Tensor(("k",), "float32"))
    with pytest.raises(MiniTVMError, match="takes 3 buffers, but 1 input"):
        hybrid.call_tir("add_tir", [_rand(4)], out_sinfo=R.Tensor((4,), "float32"))


def test_output_dims_follow_the_primfunc_whatever_their_name():
    # the tutorial declares its own `n` for out_sinfo: the PrimFunc's output buffer decides
    @I.ir_module
    class Dyn(BasePyModule):
        @T.prim_func
        def scale_tir(var_x: T.handle, var_out: T.handle):
            n = T.int64()
            x = T.match_buffer(var_x, (n,), "float32")
            out = T.match_buffer(var_out, (n,), "float32")
            for i in T.serial(n):
                out[i] = x[i] * T.float32(2.0)

        @T.prim_func
        def fill_tir(var_out: T.handle):
            m = T.int64()
            out = T.match_buffer(var_out, (m,), "float32")
            for i in T.serial(m):
                out[i] = T.float32(1.0)

    mod = Dyn(device=tvm.cpu(0))
    x = _rand(7)
    m = tvm.tir.Var("m", "int64")
    out = mod.call_tir("scale_tir", [x], relax.TensorStructInfo((m,), "float32"))
    np.testing.assert_allclose(out.numpy(), 2 * x)
    with pytest.raises(ShapeError, match="cannot tell dim 'm'"):
        mod.call_tir("fill_tir", [], relax.TensorStructInfo((m,), "float32"))


def test_call_py_func_of_a_missing_pyfunc_fails_the_build():
    @I.ir_module
    class Missing(BasePyModule):
        @R.function
        def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            y = R.call_py_func("absent", (x,), out_sinfo=R.Tensor((4,), "float32"))
            return y

    with pytest.raises(BuildError, match="no @I.pyfunc method 'absent'"):
        Missing(device=tvm.cpu(0))


def test_registered_callbacks_go_with_the_module():
    mod = Hybrid(device=tvm.cpu(0))
    symbols = list(mod._py_symbols)
    assert symbols and all(tvm.get_global_func(s, allow_missing=True) for s in symbols)
    del mod
    gc.collect()
    assert not any(tvm.get_global_func(s, allow_missing=True) for s in symbols)


def test_relax_build_of_call_py_func_points_to_base_py_module():
    @I.ir_module
    class Callback(BasePyModule):
        @I.pyfunc
        def ident(self, x):
            return x

        @R.function
        def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            y = R.call_py_func("ident", (x,), out_sinfo=R.Tensor((4,), "float32"))
            return y

    with pytest.raises(BuildError, match="through relax.BasePyModule"):
        relax.build(Callback.ir_module, "llvm")
    np.testing.assert_allclose(Callback(device=tvm.cpu(0)).main(np.ones(4, "float32")).numpy(), 1)
