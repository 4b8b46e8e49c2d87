"""relax ops in other layouts: layout_transform, conv2d with data/kernel/out layouts, pooling in
NCHW{c}c / NHWC, clip; shape rules, errors, numpy references and builds on the VM."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.error import ShapeError
from minitvm.relax import op
from minitvm.relax.eval_ref import evaluate
from minitvm.topi import reference as ref
from minitvm.topi.layout import layout_index_map

RNG = np.random.default_rng(11)


def randn(*shape):
    return RNG.standard_normal(shape).astype("float32")


def make_mod(shapes, build, dtype="float32"):
    """A module whose main takes tensors of `shapes` and returns build(*params)."""
    params = [relax.Var(f"x{k}", relax.TensorStructInfo(s, dtype)) for k, s in enumerate(shapes)]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(build(*params))
        bb.emit_func_output(out)
    return bb.get(), out


def run_vm(mod, *arrays):
    ex = relax.build(mod, target="llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    return vm["main"](*[tvm.nd.array(a) for a in arrays]).numpy()


# ----------------------------------------------------------------------------- layout_transform


def test_layout_transform_shape_rule_with_symbolic_batch():
    n = tir.Var("n", "int64")
    _, out = make_mod(
        [(n, 32, 5, 7)], lambda x: op.layout_transform(x, layout_index_map("NCHW", "NCHW16c"))
    )
    shape = out.struct_info.shape
    assert shape[0] is n and [int(d) for d in shape[1:]] == [2, 5, 7, 16]


def test_layout_transform_runs_on_the_vm_with_symbolic_batch():
    n = tir.Var("n", "int64")
    imap = layout_index_map("NCHW", "NCHW4c")
    mod, _ = make_mod([(n, 8, 3, 5)], lambda x: op.layout_transform(x, imap))
    for batch in (1, 2):
        x = randn(batch, 8, 3, 5)
        np.testing.assert_array_equal(run_vm(mod, x), ref.layout_transform(x, "NCHW", "NCHW4c"))


def test_layout_transform_lambda_and_pad_value():
    mod, out = make_mod(
        [(2, 5, 3)],
        lambda x: op.layout_transform(x, lambda a, b, c: (a, b // 4, c, b % 4), pad_value=9),
    )
    assert [int(d) for d in out.struct_info.shape] == [2, 2, 3, 4]
    x = randn(2, 5, 3)
    want = evaluate(mod, x)
    np.testing.assert_array_equal(want[:, 0], x[:, :4].transpose(0, 2, 1))
    assert (want[:, 1, :, 1:] == 9).all()
    np.testing.assert_array_equal(run_vm(mod, x), want)


def test_layout_transform_that_pads_needs_pad_value():
    with pytest.raises(
        ShapeError,
        match=r"pads x of shape \(1, 20, 5, 5\).*splits dim 1 \(20\) by 16.*pass pad_value",
    ):
        make_mod(
            [(1, 20, 5, 5)], lambda x: op.layout_transform(x, layout_index_map("NCHW", "NCHW16c"))
        )


def test_layout_transform_of_symbolic_split_is_refused():
    c = tir.Var("c", "int64")
    with pytest.raises(
        ShapeError, match=r"cannot prove that .* fills its image.*splits dim 1 \(c\) by 4"
    ):
        make_mod(
            [(1, c, 5, 5)], lambda x: op.layout_transform(x, layout_index_map("NCHW", "NCHW4c"))
        )


def test_layout_transform_rank_mismatch_and_separators():
    with pytest.raises(ShapeError, match="takes 4 indices, but x has shape \\(2, 3\\)"):
        make_mod([(2, 3)], lambda x: op.layout_transform(x, layout_index_map("NCHW", "NHWC")))
    with pytest.raises(ShapeError, match="axis_separators=\\[1\\] is not supported"):
        make_mod(
            [(2, 3)], lambda x: op.layout_transform(x, lambda a, b: (b, a), axis_separators=[1])
        )


def test_layout_transform_of_a_constant_folds():
    w = randn(8, 4, 3, 3)
    imap = layout_index_map("OIHW", "OIHW2i4o")
    mod, _ = make_mod([(1,)], lambda x: op.layout_transform(relax.const(w), imap))
    folded = relax.transform.FoldConstant()(mod)
    body = folded["main"].body.blocks[0].bindings
    assert isinstance(body[0].value, relax.Constant)
    np.testing.assert_array_equal(
        body[0].value.data.numpy(), ref.layout_transform(w, "OIHW", "OIHW2i4o")
    )


def test_layout_transform_prints_and_parses_back_equal():
    imap = layout_index_map("NCHW", "NCHW4c")
    mod, _ = make_mod([(1, 8, 2, 2)], lambda x: op.layout_transform(x, imap))
    tvm.ir.assert_structural_equal(tvm.script.from_source(mod.script()), mod)
    again, _ = make_mod(
        [(1, 8, 2, 2)], lambda x: op.layout_transform(x, layout_index_map("NCHW", "NCHW4c"))
    )
    tvm.ir.assert_structural_equal(again, mod)  # equal maps give equal calls
