"""relax.analysis.well_formed checks call_tir against its PrimFunc, as TVM's checker does: the
inputs and the out_sinfo must have the ranks, dtypes and (provably) the dims of the callee's
buffers, with the buffers' symbolic dims bound by the tensors before them."""

import textwrap

import numpy as np

from minitvm import relax
from minitvm.relax.eval_ref import evaluate
from minitvm.script import from_source

_MODULE = """
from minitvm.script import ir as I, relax as R, tir as T

@I.ir_module(check_well_formed=False)
class Module:
    @R.function
    def main(A: R.Tensor({a_shape}, "{a_dtype}")):
        B = R.call_tir(Module.add_one, A, out_sinfo=R.Tensor({out_shape}, "{out_dtype}"))
        return B

    @T.prim_func
    def add_one(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n, 4), "float32")
        B = T.match_buffer(b, (n, 4), "float32")
        for i, j in T.grid(n, 4):
            with T.block("compute"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] + T.float32(1)
"""


def _module(a_shape="(3, 4)", a_dtype="float32", out_shape="(3, 4)", out_dtype="float32"):
    text = _MODULE.format(
        a_shape=a_shape, a_dtype=a_dtype, out_shape=out_shape, out_dtype=out_dtype
    )
    return from_source(textwrap.dedent(text), check_well_formed=False)


def test_matching_call_tir_is_well_formed_and_runs():
    mod = _module()
    assert relax.analysis.well_formed(mod)
    x = np.arange(12, dtype="float32").reshape(3, 4)
    np.testing.assert_array_equal(evaluate(mod, x), x + 1)


def test_symbolic_dims_are_matched_not_refused():
    mod = _module(a_shape='("m", 4)', out_shape='("m", 4)')
    assert relax.analysis.well_formed(mod)


def test_input_of_the_wrong_rank_is_ill_formed():
    errors = relax.analysis.well_formed_errors(_module(a_shape="(12,)"))
    assert any("has 1 dims, the buffer 2" in e for e in errors), errors


def test_input_of_the_wrong_dtype_is_ill_formed():
    errors = relax.analysis.well_formed_errors(_module(a_dtype="float16"))
    assert any("dtype float16" in e for e in errors), errors


def test_output_disagreeing_with_the_dim_an_input_bound_is_ill_formed():
    # n is 3 from the input, so a (5, 4) output is not what add_one writes
    errors = relax.analysis.well_formed_errors(_module(out_shape="(5, 4)"))
    assert any("dim 0 is 5" in e for e in errors), errors


def test_static_dim_mismatch_is_ill_formed():
    errors = relax.analysis.well_formed_errors(_module(a_shape="(3, 5)", out_shape="(3, 5)"))
    assert any("dim 1 is 5" in e for e in errors), errors
    assert not relax.analysis.well_formed(_module(a_shape="(3, 5)", out_shape="(3, 5)"))
