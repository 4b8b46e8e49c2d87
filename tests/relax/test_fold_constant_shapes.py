"""FoldConstant keeps the folded value's shape exactly as its struct info says, 0-d included
(a 0-d result once came back as shape (1,), and the model then returned a (1,) tensor)."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax


@pytest.mark.parametrize("target_shape", [(), (1,), (1, 1), (6,)])
def test_folded_reshape_keeps_its_shape_and_the_model_its_output_shape(target_shape):
    size = int(np.prod(target_shape)) if target_shape else 1
    value = np.arange(1, size + 1, dtype="float32")
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo(target_shape, "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            r = bb.emit(relax.op.reshape(relax.const(value), target_shape))
            y = bb.emit_output(relax.op.add(r, x))
        bb.emit_func_output(y)
    mod = relax.transform.FoldConstant()(bb.get())
    folded = [
        b.value for b in mod["main"].body.blocks[0].bindings if isinstance(b.value, relax.Constant)
    ]
    assert folded and folded[0].data.numpy().shape == target_shape
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    xs = np.full(target_shape, 0.5, "float32")
    got = vm["main"](tvm.nd.array(xs)).numpy()
    np.testing.assert_array_equal(got, value.reshape(target_shape) + xs)
    assert got.shape == target_shape


def test_a_fold_that_would_blow_a_small_constant_up_is_left_to_run_time():
    # a model (a file) asking for a 1 GiB fill of a scalar must not get it built at compile
    # time and embedded; a same-size fold (a transposed weight) still happens. Numbers: numpy.
    n = 1 << 14
    x = relax.Var("x", relax.TensorStructInfo((4,), "float32"))
    w = np.arange(12, dtype="float32").reshape(3, 4)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            big = bb.emit(relax.op.full((n, n), relax.const(1.5, "float32")))
            s = bb.emit(relax.op.max(big))
            wt = bb.emit(relax.op.permute_dims(relax.const(w)))
            y = bb.emit_output(relax.op.add(relax.op.add(x, s), relax.op.sum(wt)))
        bb.emit_func_output(y)
    mod = relax.transform.FoldConstant()(bb.get())
    values = [b.value for b in mod["main"].body.blocks[0].bindings]
    consts = [v.data.numpy() for v in values if isinstance(v, relax.Constant)]
    assert all(c.size <= 12 for c in consts)
    assert any(c.shape == (4, 3) and (c == w.T).all() for c in consts)
    assert any(isinstance(v, relax.Call) and v.op.name == "relax.full" for v in values)
