"""TVM 0.20+ spellings on built modules: `mod.<function>` and `tvm.runtime.empty`."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te


def test_function_by_attribute_and_runtime_empty():
    A = te.placeholder((5,), name="A")
    B = te.compute((5,), lambda i: A[i] * 2.0, name="B")
    mod = tvm.build(te.create_prim_func([A, B]), target="llvm")
    a = tvm.nd.array(np.arange(5, dtype="float32"))
    b = tvm.runtime.empty((5,), "float32", device=tvm.cpu(0))
    assert b.shape == (5,) and str(b.dtype) == "float32"
    mod.main(a, b)
    np.testing.assert_array_equal(b.numpy(), np.arange(5, dtype="float32") * 2)
    assert mod.main is mod["main"]
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        mod.nope  # noqa: B018
    assert not hasattr(mod, "_private")
