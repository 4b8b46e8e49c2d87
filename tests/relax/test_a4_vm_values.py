"""Values the VM carries besides tensors and int dims: R.Prim inputs of call_tir, strings and
floats for registered functions, R.memory.view, and TVMScript calls of functions defined later
in the module. Results are checked against numpy."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import BuildError, MiniTVMError, ShapeError
from minitvm.relax.expr import DataTypeImm
from minitvm.relax.vm.verify import ProgramError, verify_program
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T


def _run(mod, *args):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    return vm["main"](*args)


# ----------------------------------------------------------------------------- R.Prim inputs


@I.ir_module
class AddScalar:
    @T.prim_func
    def add_scalar(a: T.handle, s: T.int64, b: T.handle):
        A = T.match_buffer(a, (4,), "float32")
        B = T.match_buffer(b, (4,), "float32")
        for i in range(4):
            with T.block("b"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi] + T.Cast("float32", s)

    @R.function
    def main(x: R.Tensor((4,), "float32"), n: R.Prim("int64")):
        cls = AddScalar
        y = R.call_tir(cls.add_scalar, (x, n), R.Tensor((4,), "float32"))
        return y


def test_call_tir_passes_an_r_prim_input_to_the_scalar_param_at_its_position():
    vm = relax.VirtualMachine(relax.build(AddScalar, "llvm"), tvm.cpu())
    x = np.arange(4, dtype="float32")
    # the same input shapes with another value: the kernel must see the new value every call
    for n in (3, 10, 3, -2):
        np.testing.assert_allclose(vm["main"](tvm.nd.array(x), n).numpy(), x + n)


def test_call_tir_refuses_an_r_prim_where_the_prim_func_takes_a_buffer():
    @I.ir_module
    class Swapped:
        @T.prim_func
        def add_scalar(a: T.handle, s: T.int64, b: T.handle):
            A = T.match_buffer(a, (4,), "float32")
            B = T.match_buffer(b, (4,), "float32")
            for i in range(4):
                with T.block("b"):
                    vi = T.axis.spatial(4, i)
                    B[vi] = A[vi] + T.Cast("float32", s)

        @R.function
        def main(x: R.Tensor((4,), "float32"), n: R.Prim("int64")):
            cls = Swapped
            y = R.call_tir(cls.add_scalar, (n, x), R.Tensor((4,), "float32"))
            return y

    with pytest.raises(BuildError, match=r"passes \(scalar, buffer, buffer\).*takes \(buffer, "):
        relax.build(Swapped, "llvm")


# ----------------------------------------------------------------------------- str and float


def test_strings_and_floats_reach_registered_functions_as_python_values():
    seen = []

    @tvm.register_func("testing.a4.record", override=True)
    def record(tag, scale, x):
        seen.append((tag, scale))
        return x

    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((2,), "float32")):
            y = R.call_pure_packed(
                "testing.a4.record",
                R.str("hello"),
                R.prim_value(T.float32(2.5)),
                x,
                sinfo_args=R.Tensor((2,), "float32"),
            )
            return y

    x = np.array([1, 2], dtype="float32")
    np.testing.assert_allclose(_run(Mod, tvm.nd.array(x)).numpy(), x)
    assert seen == [("hello", 2.5)]
    assert type(seen[0][0]) is str and type(seen[0][1]) is float


def test_the_verifier_refuses_a_load_imm_of_another_kind_of_value():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((2,), "float32")):
            y = R.call_pure_packed(
                "testing.a4.record", R.str("a"), R.prim_value(T.float32(1.0)), x,
                sinfo_args=R.Tensor((2,), "float32"),
            )  # fmt: skip
            return y

    program = copy.deepcopy(relax.build(Mod, "llvm").program)
    code = program["functions"]["main"]["code"]
    load = next(ins for ins in code if ins[0] == "LoadImm")
    verify_program(copy.deepcopy(program), None, 0, "test")  # as built: accepted
    load[2] = ["not", "a", "str"]
    with pytest.raises(ProgramError, match="LoadImm"):
        verify_program(program, None, 0, "test")


# ----------------------------------------------------------------------------- R.memory.view


def test_view_struct_info_follows_the_new_shape_and_dtype():
    A = relax.Var("A", relax.TensorStructInfo((16,), "uint8"))
    view = relax.op.memory.view
    tvm.ir.assert_structural_equal(
        view(A, (8,), "float16").struct_info, relax.TensorStructInfo((8,), "float16")
    )
    tvm.ir.assert_structural_equal(
        view(A, (2, 8)).struct_info, relax.TensorStructInfo((2, 8), "uint8")
    )
    tvm.ir.assert_structural_equal(view(A).struct_info, A.struct_info)
    assert tvm.ir.structural_equal(DataTypeImm("int32"), DataTypeImm("int32"))
    assert not tvm.ir.structural_equal(DataTypeImm("int32"), DataTypeImm("int64"))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"shape": (17,)}, "more elements than data"),
        ({"dtype": "float16"}, "needs 32 bytes"),
        ({"shape": (4,), "dtype": "float32", "relative_byte_offset": 4}, "needs 20 bytes"),
        ({"relative_byte_offset": 1}, "ends past data's last byte"),
    ],
)
def test_view_refuses_a_view_larger_than_its_argument(kwargs, match):
    A = relax.Var("A", relax.TensorStructInfo((16,), "uint8"))
    with pytest.raises(ShapeError, match=match):
        relax.op.memory.view(A, **kwargs).struct_info  # noqa: B018


@I.ir_module
class Views:
    @R.function
    def main(A: R.Tensor([4096], "uint8")):
        B = R.memory.view(A, shape=R.shape([512]), dtype=R.dtype("int32"))
        C = R.memory.view(
            A,
            shape=R.shape([16, 64]),
            dtype=R.dtype("float16"),
            relative_byte_offset=R.prim_value(2048),
        )
        return (B, C)


def test_views_share_memory_and_match_numpy():
    a = np.random.default_rng(0).integers(0, 255, size=4096).astype("uint8")
    B, C = _run(Views, tvm.nd.array(a))
    np.testing.assert_array_equal(B.numpy(), a[:2048].view("int32"))
    np.testing.assert_array_equal(C.numpy(), a[2048:].view("float16").reshape(16, 64))


def test_legalize_ops_leaves_view_to_the_vm():
    after = relax.transform.LegalizeOps()(Views)
    tvm.ir.assert_structural_equal(after["main"], Views["main"])


@I.ir_module
class DynamicView:
    @R.function
    def main(A: R.Tensor(["N"], "float32")):
        N = T.int64()
        B = R.memory.view(A, R.shape([(N + 3) // 4, 4]))
        return B


def test_a_dynamic_view_is_checked_when_it_runs():
    vm = relax.VirtualMachine(relax.build(DynamicView, "llvm"), tvm.cpu())
    a = np.arange(8, dtype="float32")
    np.testing.assert_array_equal(vm["main"](tvm.nd.array(a)).numpy(), a.reshape(2, 4))
    # N = 6 asks for 2 x 4 elements of a 6-element tensor
    with pytest.raises(ShapeError, match="the view must lie inside its argument"):
        vm["main"](tvm.nd.array(np.arange(6, dtype="float32")))


# ----------------------------------------------------------------------------- forward refs


@I.ir_module
class Forward:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        cls = Forward
        y = cls.double(x)
        z = R.multiply(y, x)
        return z

    @R.function
    def double(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        y = R.add(x, x)
        return y


def test_a_function_may_call_one_defined_later_in_the_module():
    y = Forward["main"].body.blocks[0].bindings[0].var
    tvm.ir.assert_structural_equal(y.struct_info, relax.TensorStructInfo((2, 3), "float32"))
    x = np.arange(6, dtype="float32").reshape(2, 3)
    np.testing.assert_allclose(_run(Forward, tvm.nd.array(x)).numpy(), 2 * x * x)


def test_a_later_function_with_symbolic_dims_gives_only_rank_and_dtype():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor(("m",), "float32")):
            cls = Mod
            y = cls.ident(x)
            return y

        @R.function
        def ident(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
            return x

    y = Mod["main"].body.blocks[0].bindings[0].var
    tvm.ir.assert_structural_equal(y.struct_info, relax.TensorStructInfo(None, "float32", 1))


def test_a_call_of_a_function_without_return_annotation_still_asks_for_one():
    with pytest.raises(MiniTVMError, match="annotate the result of calling 'helper'"):

        @I.ir_module
        class Mod:
            @R.function
            def main(x: R.Tensor((2,), "float32")):
                cls = Mod
                y = cls.helper(x)
                return y

            @R.function
            def helper(x: R.Tensor((2,), "float32")):
                return x


def test_indexing_a_tuple_node_gives_its_field():
    x, y = (relax.Var(n, relax.TensorStructInfo((2,), "float32")) for n in "xy")
    t = relax.Tuple((x, y))
    assert t[0] is x and t[-1] is y
    with pytest.raises(IndexError, match="Tuple index out of range"):
        t[2]


# ----------------------------------------------------------------------------- x.ndim, x.shape


@I.ir_module
class Inspect:
    @R.function
    def rank(A: R.Tensor):
        return A.ndim

    @R.function
    def dim(A: R.Tensor, axis: R.Prim("int64")):
        return A.shape[axis]

    @R.function
    def stride(A: R.Tensor, axis: R.Prim("int64")):
        return A.strides[axis]


@pytest.mark.parametrize("shape", [(), (16,), (3, 5, 7)])
def test_tensor_properties_are_read_when_the_program_runs(shape):
    vm = relax.VirtualMachine(relax.build(Inspect, "llvm"), tvm.cpu())
    a = np.zeros(shape, "int32")
    assert vm["rank"](tvm.nd.array(a)) == a.ndim
    for axis in range(a.ndim):
        assert vm["dim"](tvm.nd.array(a), axis) == a.shape[axis]
        assert vm["stride"](tvm.nd.array(a), axis) == a.strides[axis] // a.itemsize
    if a.ndim:
        with pytest.raises(ShapeError, match=f"axis {a.ndim} is not in"):
            vm["dim"](tvm.nd.array(a), a.ndim)


def test_tensor_properties_carry_what_the_struct_info_knows():
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    tvm.ir.assert_structural_equal(x.ndim.struct_info, relax.PrimStructInfo(value=2))
    tvm.ir.assert_structural_equal(x.shape[1].struct_info, relax.PrimStructInfo(value=3))
    assert x.strides[0].struct_info.value is None  # a view may have other strides
    with pytest.raises(ShapeError, match=r"axis 2 is not in \[0, 2\)"):
        x.shape[2]
    s = relax.Var("s", relax.ShapeStructInfo((2, 3)))
    assert not hasattr(s, "ndim")
    with pytest.raises(MiniTVMError, match="s.shape: s is not a tensor"):
        s.shape  # noqa: B018


def test_a_printed_view_without_dtype_parses_back():
    @I.ir_module
    class Mod:
        @R.function
        def main(A: R.Tensor([4096], "uint8")):
            B = R.memory.view(A, shape=R.shape([512]))
            return B

    tvm.ir.assert_structural_equal(tvm.script.from_source(Mod.script()), Mod)


def test_a_printed_view_with_a_dtype_parses_back_and_runs():
    @I.ir_module
    class Mod:
        @R.function
        def main(A: R.Tensor([4, 4], "float32")):
            B = R.memory.view(A, R.shape([4, 4]), R.dtype("int32"))
            return B

    text = Mod.script()
    assert 'R.dtype("int32")' in text
    tvm.ir.assert_structural_equal(tvm.script.from_source(text), Mod)
    a = np.arange(16, dtype="float32").reshape(4, 4)
    vm = relax.VirtualMachine(relax.build(Mod, "llvm"), tvm.cpu())
    np.testing.assert_array_equal(vm["main"](tvm.nd.array(a)).numpy(), a.view("int32"))


def test_an_empty_python_shape_is_refused_as_ambiguous():
    A = relax.Var("A", relax.TensorStructInfo((16,), "uint8"))
    with pytest.raises(ShapeError, match=r"shape=\(\) is ambiguous"):
        relax.op.memory.view(A, shape=())
    tvm.ir.assert_structural_equal(  # a 0-d view said plainly
        relax.op.memory.view(A, shape=relax.ShapeExpr(())).struct_info,
        relax.TensorStructInfo((), "uint8"),
    )
