"""DeadCodeElimination keeps a match_cast whose variable is unused when it is where a symbolic
dim gets its value (later shapes read the dim); a cast that only re-checks known dims goes."""

from __future__ import annotations

import numpy as np

import minitvm as tvm
from minitvm import relax
from minitvm.script import from_source

DEFINES = """
from minitvm.script import ir as I, relax as R, tir as T

@I.ir_module
class Module:
    @R.function
    def main(s: R.Shape(ndim=2)):
        m = T.int64()
        k = T.int64()
        unused = R.match_cast(s, R.Shape([m, k]))
        y = R.ones(R.shape([m, k]), "float32")
        return y
"""

RECHECKS = """
from minitvm.script import ir as I, relax as R, tir as T

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n",), dtype="float32")):
        n = T.int64()
        unused = R.match_cast(x, R.Tensor((n,), "float32"))
        y = R.add(x, x)
        return y
"""


def test_cast_that_binds_dims_stays_and_runs():
    out = relax.transform.DeadCodeElimination()(from_source(DEFINES))
    assert "R.match_cast" in out.script()
    vm = relax.VirtualMachine(relax.build(out, "llvm"), tvm.cpu())
    np.testing.assert_array_equal(vm["main"]((2, 3)).numpy(), np.ones((2, 3), "float32"))


def test_cast_of_known_dims_is_removed():
    out = relax.transform.DeadCodeElimination()(from_source(RECHECKS))
    assert "R.match_cast" not in out.script()
