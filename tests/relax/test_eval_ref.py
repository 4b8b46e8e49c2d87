"""The reference evaluator: binds symbolic dims from arguments and checks them."""

from __future__ import annotations

import numpy as np
import pytest

from minitvm import relax, tir
from minitvm.error import MiniTVMError, ShapeError
from minitvm.relax import op
from minitvm.relax.eval_ref import eval_dim, evaluate


def _mod():
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n, 2), "float32"))
    y = relax.Var("y", relax.TensorStructInfo((n, 2), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        bb.emit_func_output(bb.emit(op.concat([x, y], axis=0)))
    return bb.get(), n


def test_symbolic_dims_bind_from_arguments():
    mod, n = _mod()
    a, b = np.ones((3, 2), "float32"), np.zeros((3, 2), "float32")
    out = evaluate(mod, a, b)
    assert out.shape == (6, 2)
    assert eval_dim(n * 2 + 1, {n: 3}) == 7


def test_inconsistent_symbolic_dim_is_an_error():
    mod, _ = _mod()
    with pytest.raises(ShapeError, match=r"main: argument 'y': dim 0 is 4, expected 3 \(n\)"):
        evaluate(mod, np.ones((3, 2), "float32"), np.ones((4, 2), "float32"))


def test_argument_count_dtype_and_rank_errors():
    mod, _ = _mod()
    with pytest.raises(MiniTVMError, match="main: expected 2 arguments, got 1"):
        evaluate(mod, np.ones((3, 2), "float32"))
    with pytest.raises(ShapeError, match="argument 'x': dtype is float64, expected float32"):
        evaluate(mod, np.ones((3, 2)), np.ones((3, 2), "float32"))
    with pytest.raises(ShapeError, match=r"argument 'x': has 1 dims \(3,\), expected 2"):
        evaluate(mod, np.ones(3, "float32"), np.ones((3, 2), "float32"))


def test_calls_between_relax_functions():
    x = relax.Var("x", relax.TensorStructInfo((2,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("double", [x]):
        bb.emit_func_output(bb.emit(op.add(x, x)))
    gv = bb.get().get_global_var("double")
    y = relax.Var("y", relax.TensorStructInfo((2,), "float32"))
    with bb.function("main", [y]):
        z = bb.emit(relax.Call(gv, (y,)))
        bb.emit_func_output(z)
    mod = bb.get()
    assert mod["main"].ret_struct_info.static_shape() == (2,)
    np.testing.assert_allclose(evaluate(mod, np.array([1, 2], "float32")), [2, 4])
