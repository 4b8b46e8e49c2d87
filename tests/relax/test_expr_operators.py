"""Python operators on relax expressions build op calls, as in TVM: `R.matmul(x, w) + b` in
TVMScript and `relax.op.add(x, y) * 2` in Python, checked against numpy."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.script import ir as I
from minitvm.script import relax as R


def _var(name, shape, dtype="float32"):
    return relax.Var(name, relax.TensorStructInfo(shape, dtype))


def _run(params, body, *arrays):
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        bb.emit_func_output(bb.emit(body))
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    return vm["main"](*[tvm.nd.array(a) for a in arrays]).numpy()


CASES = [
    ("x + y", lambda x, y: x + y),
    ("x - y", lambda x, y: x - y),
    ("x * y", lambda x, y: x * y),
    ("x / y", lambda x, y: x / y),
    ("x // y", lambda x, y: x // y),
    ("x % y", lambda x, y: x % y),
    ("x ** 2", lambda x, y: x**2),
    ("2 - x", lambda x, y: 2 - x),
    ("3 * x + 1", lambda x, y: 3 * x + 1),
    ("1 / x", lambda x, y: 1 / x),
    ("-x", lambda x, y: -x),
    ("x > y", lambda x, y: x > y),
    ("x <= 0.5", lambda x, y: x <= 0.5),
]


@pytest.mark.parametrize("text, fn", CASES, ids=[c[0] for c in CASES])
def test_operator_builds_the_op_and_matches_numpy(text, fn):
    rng = np.random.default_rng(0)
    a = rng.uniform(0.5, 2.0, (3, 4)).astype("float32")
    b = rng.uniform(0.5, 2.0, (3, 4)).astype("float32")
    x, y = _var("x", (3, 4)), _var("y", (3, 4))
    out = _run([x, y], fn(x, y), a, b)
    expected = fn(a, b)
    assert out.dtype == expected.dtype
    np.testing.assert_allclose(out, expected, rtol=1e-5)


def test_matmul_operator_and_python_op_chain():
    rng = np.random.default_rng(1)
    a, w, b = (rng.standard_normal(s).astype("float32") for s in ((2, 3), (3, 4), (4,)))
    x, wv, bv = _var("x", (2, 3)), _var("w", (3, 4)), _var("b", (4,))
    expr = relax.op.add(x @ wv, bv) * 2
    assert expr.op.name == "relax.multiply"
    np.testing.assert_allclose(_run([x, wv, bv], expr, a, w, b), (a @ w + b) * 2, rtol=1e-5)


def test_a_python_number_takes_the_tensor_dtype():
    x = _var("x", (4,), "int32")
    expr = x + 1
    assert str(expr.args[1].struct_info.dtype) == "int32"
    out = _run([x], expr, np.arange(4, dtype="int32"))
    assert out.dtype == np.int32 and out.tolist() == [1, 2, 3, 4]


def test_equality_stays_structural_and_unknown_operands_are_refused():
    x = _var("x", (2,))
    assert (x == x) is True
    with pytest.raises(TypeError):
        x + "a string"


def test_operators_in_tvmscript():
    @I.ir_module
    class Module:
        @R.function
        def main(
            x: R.Tensor((2, 3), "float32"), w: R.Tensor((3, 4), "float32"), b: R.Tensor((4,), "float32")
        ):
            with R.dataflow():
                y = R.matmul(x, w) + b
                z = y * 2.0 - 1.0
                R.output(z)
            return z

    rng = np.random.default_rng(2)
    a, w, b = (rng.standard_normal(s).astype("float32") for s in ((2, 3), (3, 4), (4,)))
    vm = relax.VirtualMachine(relax.build(Module, "llvm"), tvm.cpu())
    np.testing.assert_allclose(vm["main"](a, w, b).numpy(), (a @ w + b) * 2 - 1, rtol=1e-5)


def test_a_module_level_symbolic_dim_in_tvmscript_annotations():
    from minitvm.script import tir as T

    n = T.int64()

    @R.function
    def double(x: R.Tensor((n, 4), "float32")) -> R.Tensor((n, 4), "float32"):
        with R.dataflow():
            y = x + x
            R.output(y)
        return y

    (dim, four) = double.params[0].struct_info.shape
    assert dim.name == "n" and str(dim.dtype) == "int64" and int(four) == 4
    vm = relax.VirtualMachine(relax.build(tvm.IRModule({"main": double}), "llvm"), tvm.cpu())
    for rows in (1, 5):
        a = np.ones((rows, 4), "float32")
        np.testing.assert_allclose(vm["main"](a).numpy(), 2 * a)
