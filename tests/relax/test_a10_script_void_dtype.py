"""TVMScript's "void" dtype spelling (TVM prints an unset dtype attribute so): it parses as
the op's default, None."""

import numpy as np

import minitvm as tvm
from minitvm import relax
from minitvm.script import relax as R


def test_void_dtype_means_the_default():
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    y = relax.Var("y", relax.TensorStructInfo((3, 4), "float32"))
    tvm.ir.assert_structural_equal(R.cumsum(x, axis=1, dtype="void"), R.cumsum(x, axis=1))
    tvm.ir.assert_structural_equal(R.matmul(x, y, out_dtype="void"), R.matmul(x, y))


def test_void_dtype_in_a_parsed_function_runs_like_numpy():
    text = """
from minitvm.script import relax as R

@R.function
def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
    y = R.cumsum(x, axis=1, dtype="void", exclusive=None)
    return y
"""
    func = tvm.script.from_source(text)
    mod = tvm.IRModule({"main": func})
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    data = np.random.default_rng(0).random((2, 3)).astype("float32")
    np.testing.assert_allclose(vm["main"](data).numpy(), np.cumsum(data, axis=1), rtol=1e-6)
