"""tvm_ffi's `Shape` and `Array` as TVM 0.22+ code uses them: a VM tuple output is an Array,
`Shape([...])` goes wherever the VM takes a shape."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
import minitvm.ffi as tvm_ffi
from minitvm import relax
from minitvm.error import ArgumentError
from minitvm.script import from_source

SOURCE = """
from minitvm.script import ir as I, relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3,), "float32")):
        y = R.add(x, x)
        return (x, y)
"""


def test_tuple_output_is_an_array():
    vm = relax.VirtualMachine(relax.build(from_source(SOURCE), "llvm"), tvm.cpu())
    x = np.arange(3, dtype="float32")
    out = vm["main"](tvm.nd.array(x))
    assert isinstance(out, tvm_ffi.Array) and isinstance(out, tuple) and len(out) == 2
    np.testing.assert_array_equal(out[1].numpy(), 2 * x)


def test_shape_is_a_checked_tuple_of_ints():
    s = tvm_ffi.Shape([1, np.int64(2048)])
    assert s == (1, 2048) and s is not None and tvm.runtime.ShapeTuple is tvm_ffi.Shape
    assert tvm.get_global_func("vm.builtin.shape_of")(tvm.nd.array(np.zeros((2, 5)))) == (2, 5)
    with pytest.raises(ArgumentError, match="negative"):
        tvm_ffi.Shape([-1])
    with pytest.raises(ArgumentError, match="must be ints"):
        tvm_ffi.Shape([1.5])


def test_executable_module_functions(tmp_path):
    ex = relax.build(from_source(SOURCE), "llvm")
    path = str(tmp_path / "lib.so")
    ex.export_library(path)
    loaded = tvm.runtime.load_module(path)
    assert loaded["stats"]() == ex.stats() and "main" in loaded["stats"]()
    assert "function main" in loaded["as_text"]()
    with pytest.raises(tvm.error.MiniTVMError, match="no module function 'main'"):
        loaded["main"]
