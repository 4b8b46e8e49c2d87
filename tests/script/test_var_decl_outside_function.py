"""`n = T.int64()` in plain Python (TVM 0.20+ tutorials) is one symbolic variable usable in relax
annotations and struct infos, checked by running the built function on two sizes."""

from __future__ import annotations

import numpy as np

import minitvm as tvm
from minitvm import relax
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T

n = T.int64()


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((n, 4), "float32"), y: R.Tensor((n, 4), "float32")):
        z = R.add(x, y)
        return z


def test_declaration_is_one_named_variable():
    a = relax.TensorStructInfo((n, 4), "float32")
    b = relax.TensorStructInfo((n,), "float32")
    assert a.shape[0] is b.shape[0] and a.shape[0].name == "n" and a.shape[0].dtype == "int64"
    m = T.int64()
    assert relax.TensorStructInfo((m,), "float32").shape[0] is not a.shape[0]


def test_annotation_binds_the_same_dim_and_runs():
    params = Module["main"].params
    assert params[0].struct_info.shape[0] is params[1].struct_info.shape[0]
    vm = relax.VirtualMachine(relax.build(Module, "llvm"), tvm.cpu())
    for rows in (1, 5):
        x = np.arange(rows * 4, dtype="float32").reshape(rows, 4)
        np.testing.assert_array_equal(vm["main"](tvm.nd.array(x), tvm.nd.array(x)).numpy(), 2 * x)
    assert "n = T.int64()" in Module.script()
