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


# ----------------------------------------------------------------------------- conv2d layouts

# name -> (data_layout, kernel_layout, out_layout, (C, H, W), (O, KH, KW), groups, strides, padding, dilation)
CONV = {
    "nchw": ("NCHW", "OIHW", None, (3, 7, 6), (5, 3, 3), 1, 2, (1, 0, 2, 1), 1),
    "nhwc_hwio": ("NHWC", "HWIO", None, (3, 7, 5), (4, 3, 2), 1, 1, 1, (2, 1)),
    "nhwc_ohwi_depthwise": ("NHWC", "OHWI", None, (5, 6, 6), (5, 3, 3), 5, 2, 1, 1),
    "nchwc": ("NCHW4c", "OIHW4i8o", None, (8, 7, 5), (16, 3, 3), 1, 1, 1, 1),
    "nchwc_out_own_block": (
        "NCHW4c",
        "OIHW4i8o",
        "NCHW8c",
        (4, 9, 9),
        (8, 3, 3),
        1,
        2,
        (0, 1, 1, 0),
        2,
    ),
    "nchwc_depthwise": ("NCHW4c", "OIHW1i4o", None, (8, 7, 6), (8, 3, 3), 8, 2, 1, 1),
}


def _conv_call(name):
    dl, kl, ol, _, _, groups, s, p, d = CONV[name]
    return lambda x, w: op.nn.conv2d(x, w, s, p, d, groups, dl, kl, ol)


def _conv_shapes(name, batch):
    dl, kl, _, (c, h, w), (o, kh, kw), groups, *_ = CONV[name]
    from minitvm.topi.layout import transformed_shape

    return (
        transformed_shape((batch, c, h, w), "NCHW", dl),
        transformed_shape((o, c // groups, kh, kw), "OIHW", kl),
    )


@pytest.mark.parametrize("name", sorted(CONV))
def test_conv2d_layouts_on_the_vm_with_symbolic_batch(name):
    n = tir.Var("n", "int64")
    mod, out = make_mod(_conv_shapes(name, n), _conv_call(name))
    assert out.struct_info.shape[0] is n
    dl, kl, ol, _, _, groups, s, p, d = CONV[name]
    for batch in (1, 2):
        x, w = (randn(*shape) for shape in _conv_shapes(name, batch))
        got = run_vm(mod, x, w)
        want = evaluate(mod, x, w)  # the op table's numpy reference
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        assert got.shape == tuple(
            batch if k == 0 else int(dim) for k, dim in enumerate(out.struct_info.shape)
        )
        # and the reference itself against the NCHW oracle
        xn, wn = ref.layout_transform(x, dl, "NCHW"), ref.layout_transform(w, kl, "OIHW")
        nchw = ref.conv2d_nchw(xn, wn, s, p, d, groups)
        np.testing.assert_allclose(
            ref.layout_transform(nchw, "NCHW", ol or dl), want, rtol=1e-4, atol=1e-4
        )


def test_conv2d_out_layout_defaults_to_data_layout():
    mod, out = make_mod(
        [(1, 2, 5, 5, 4), (2, 2, 3, 3, 4, 8)],
        lambda x, w: op.nn.conv2d(x, w, padding=1, data_layout="NCHW4c", kernel_layout="OIHW4i8o"),
    )
    assert [int(d) for d in out.struct_info.shape] == [1, 4, 5, 5, 4]
    call = mod["main"].body.blocks[0].bindings[0].value
    assert call.attrs["out_layout"] is None  # one spelling of "same as data_layout"
    explicit = op.nn.conv2d(
        *call.args, 1, 1, data_layout="NCHW4c", kernel_layout="OIHW4i8o", out_layout="NCHW4c"
    )
    tvm.ir.assert_structural_equal(explicit, call)


def infer(call):
    """The call's struct info (inference runs when it is read)."""
    return call.struct_info


def T(shape):
    return relax.Var("t", relax.TensorStructInfo(shape, "float32"))


def test_conv2d_layout_errors_name_the_mismatch():
    with pytest.raises(
        ShapeError,
        match=r"channels differ: .*C of data \(8: dims 1 and 4 of NCHW4c\) / groups \(1\)",
    ):
        infer(
            op.nn.conv2d(
                T((1, 2, 5, 5, 4)),
                T((2, 3, 3, 3, 4, 8)),
                data_layout="NCHW4c",
                kernel_layout="OIHW4i8o",
            )
        )
    with pytest.raises(
        ShapeError,
        match=r"weight has shape \(2, 2, 3, 3, 4, 4\), which does not match its layout 'OIHW4i8o'.*'o' must have extent 8, got 4",
    ):
        infer(
            op.nn.conv2d(
                T((1, 2, 5, 5, 4)),
                T((2, 2, 3, 3, 4, 4)),
                data_layout="NCHW4c",
                kernel_layout="OIHW4i8o",
            )
        )
    with pytest.raises(
        ShapeError,
        match=r"data has shape \(1, 8, 5, 5\) \(rank 4\); expected rank 5 \(layout NCHW4c\)",
    ):
        infer(
            op.nn.conv2d(
                T((1, 8, 5, 5)),
                T((2, 2, 3, 3, 4, 8)),
                data_layout="NCHW4c",
                kernel_layout="OIHW4i8o",
            )
        )
    with pytest.raises(ShapeError, match="layouts NCHW/HWIO are not supported"):
        op.nn.conv2d(T((1, 8, 5, 5)), T((3, 3, 8, 4)), kernel_layout="HWIO")
    with pytest.raises(
        ShapeError, match="blocks input channels by 8 but data layout 'NCHW4c' by 4"
    ):
        infer(
            op.nn.conv2d(
                T((1, 2, 5, 5, 4)),
                T((2, 1, 3, 3, 8, 8)),
                data_layout="NCHW4c",
                kernel_layout="OIHW8i8o",
            )
        )
    with pytest.raises(
        ShapeError, match=r"layouts NCHW4c/OIHW1i4o are not supported with groups=4 and 8 channels"
    ):
        infer(
            op.nn.conv2d(
                T((1, 2, 5, 5, 4)),
                T((2, 2, 3, 3, 1, 4)),
                groups=4,
                data_layout="NCHW4c",
                kernel_layout="OIHW1i4o",
            )
        )
    with pytest.raises(
        ShapeError,
        match="out_layout: axis C has extent 8, which the block 16c of layout 'NCHW16c' does not divide",
    ):
        infer(
            op.nn.conv2d(
                T((1, 2, 5, 5, 4)),
                T((1, 2, 3, 3, 4, 8)),
                data_layout="NCHW4c",
                kernel_layout="OIHW4i8o",
                out_layout="NCHW16c",
            )
        )
    with pytest.raises(ShapeError, match="layout 'NCHWc': block 'c' needs a positive size"):
        op.nn.conv2d(T((1, 2, 5, 5, 4)), T((1, 2, 3, 3, 4, 8)), data_layout="NCHWc")


def test_conv2d_gradient_in_other_layouts_is_refused():
    from minitvm.error import MiniTVMError

    mod, _ = make_mod(
        [(1, 5, 5, 2), (3, 3, 2, 4)],
        lambda x, w: op.sum(op.nn.conv2d(x, w, data_layout="NHWC", kernel_layout="HWIO")),
    )
    with pytest.raises(MiniTVMError, match="data_layout='NHWC' has no gradient rule"):
        relax.transform.Gradient("main")(mod)


# ----------------------------------------------------------------------------- pooling, clip


@pytest.mark.parametrize("layout", ["NHWC", "NCHW4c"])
def test_pooling_layouts_on_the_vm_with_symbolic_batch(layout):
    from minitvm.topi.layout import transformed_shape

    n = tir.Var("n", "int64")
    shape = transformed_shape((n, 8, 9, 7), "NCHW", layout)

    def build(x):
        a = op.nn.max_pool2d(x, 3, 2, 1, layout=layout)
        b = op.nn.avg_pool2d(a, 2, 1, (0, 0, 1, 1), layout=layout)
        return op.nn.adaptive_avg_pool2d(b, 1, layout=layout)

    mod, out = make_mod([shape], build)
    want_shape = transformed_shape((n, 8, 1, 1), "NCHW", layout)
    assert out.struct_info.shape[0] is n
    assert [int(d) for d in out.struct_info.shape[1:]] == [int(d) for d in want_shape[1:]]
    for batch in (1, 2):
        x = randn(batch, 8, 9, 7)
        nchw = ref.adaptive_avg_pool2d(
            ref.pool2d(ref.pool2d(x, 3, 2, 1, 1, "max"), 2, 1, 1, (0, 0, 1, 1), "avg"), 1
        )
        xl = ref.layout_transform(x, "NCHW", layout)
        np.testing.assert_allclose(
            run_vm(mod, xl), ref.layout_transform(nchw, "NCHW", layout), rtol=1e-5, atol=1e-6
        )
        np.testing.assert_allclose(
            evaluate(mod, xl), ref.layout_transform(nchw, "NCHW", layout), rtol=1e-5, atol=1e-6
        )


def test_pooling_layout_errors():
    with pytest.raises(ShapeError, match="layout 'OIHW' is not supported; use NCHW, NHWC or NCHW"):
        op.nn.max_pool2d(T((1, 4, 4, 4)), 2, layout="OIHW")
    with pytest.raises(ShapeError, match="adaptive_avg_pool2d: layout 'NCHW2w' is not supported"):
        op.nn.adaptive_avg_pool2d(T((1, 4, 4, 4, 2)), 1, layout="NCHW2w")
    with pytest.raises(
        ShapeError,
        match=r"data has shape \(1, 4, 4, 4\) \(rank 4\); expected rank 5 \(layout NCHW4c\)",
    ):
        infer(op.nn.avg_pool2d(T((1, 4, 4, 4)), 2, layout="NCHW4c"))
    with pytest.raises(ShapeError, match="the block axis 'c' must have extent 4, got 2"):
        infer(op.nn.max_pool2d(T((1, 4, 4, 4, 2)), 2, layout="NCHW4c"))


def test_clip_and_relu6_on_the_vm():
    n = tir.Var("n", "int64")
    mod, out = make_mod(
        [(n, 5)],
        lambda x: op.add(
            op.clip(x, -0.25, 0.5), op.nn.relu6(op.multiply(x, relax.const(np.float32(8))))
        ),
    )
    assert out.struct_info.shape[0] is n
    for batch in (1, 3):
        x = randn(batch, 5)
        want = np.clip(x, -0.25, 0.5) + np.clip(x * 8, 0, 6)
        np.testing.assert_allclose(run_vm(mod, x), want, rtol=1e-6)
        np.testing.assert_allclose(evaluate(mod, x), want, rtol=1e-6)
    call = op.clip(T((2,)), relax.PrimValue(tir.IntImm("int64", 0)), relax.const(np.float32(6)))
    assert (call.attrs["min"], call.attrs["max"]) == (0.0, 6.0)


def test_clip_errors():
    with pytest.raises(ShapeError, match=r"relax.clip: min \(2.0\) is greater than max \(1.0\)"):
        infer(op.clip(T((2,)), 2, 1))
    with pytest.raises(ShapeError, match="relax.clip: max must be a constant number, got Var"):
        op.clip(T((2,)), 0, T((2,)))


def test_layout_transforms_fused_with_int64_shapes_build():
    """NCHW -> NCHW8c -> relu -> NCHW -> flatten: the transforms' outputs keep the int64 index
    dtype of their inputs, so inlining them into one kernel agrees on index types."""
    imap, back = layout_index_map("NCHW", "NCHW8c"), layout_index_map("NCHW8c", "NCHW")

    def build(x):
        return op.flatten(op.layout_transform(op.nn.relu(op.layout_transform(x, imap)), back))

    mod, _ = make_mod([(1, 24, 1, 1)], build)
    x = randn(1, 24, 1, 1)
    np.testing.assert_array_equal(run_vm(mod, x), np.maximum(x, 0).reshape(-1))


def test_layout_attrs_print_and_parse_back_equal():
    n = tir.Var("n", "int64")

    def build(x, w):
        y = op.nn.conv2d(
            x, w, 1, 1, data_layout="NCHW4c", kernel_layout="OIHW4i8o", out_layout="NCHW8c"
        )
        y = op.nn.max_pool2d(op.clip(y, 0, 6), 2, 2, layout="NCHW8c")
        return op.nn.adaptive_avg_pool2d(y, 1, layout="NCHW8c")

    mod, out = make_mod([(n, 2, 5, 5, 4), (2, 2, 3, 3, 4, 8)], build)
    shape = out.struct_info.shape
    assert shape[0] is n and [int(d) for d in shape[1:]] == [2, 1, 1, 8]
    text = mod.script()
    assert 'out_layout="NCHW8c"' in text and "R.clip(" in text
    tvm.ir.assert_structural_equal(tvm.script.from_source(text), mod)
