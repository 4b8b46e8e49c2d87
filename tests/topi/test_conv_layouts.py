"""Layout strings, topi.layout_transform and the convolution/pooling computes in every layout,
built through the driver and checked against numpy (and torch when it is importable)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_topi import run  # the topi tests' build-and-run helper (pytest puts this dir on the path)

from minitvm.error import ShapeError, TEError
from minitvm.topi import reference as ref
from minitvm.topi.layout import Layout, layout_index_map, layout_transform, transformed_shape

RNG = np.random.default_rng(7)


def randn(*shape):
    return RNG.standard_normal(shape).astype("float32")


# ----------------------------------------------------------------------------- layout strings


def test_layout_parse_blocks_and_primals():
    lay = Layout.parse("OIHW16i8o")
    assert lay.primals == ("O", "I", "H", "W")
    assert lay.block("I") == 16 and lay.block("O") == 8 and lay.block("H") is None
    assert lay.ndim == 6


@pytest.mark.parametrize(
    "bad, match",
    [
        ("NCHWc", "block 'c' needs a positive size"),
        ("NCH16w", "block 'w' has no primal axis 'W'"),
        ("NCCHW", "axis 'C' appears twice"),
        ("NCHW16C", "primal axis 'C' has a factor 16"),
        ("NC-HW", "cannot read '-HW'"),
        ("", "expected a layout string"),
    ],
)
def test_layout_parse_errors_name_the_bad_part(bad, match):
    with pytest.raises(ShapeError, match=match):
        Layout.parse(bad)


def test_layout_index_map_reads_like_the_layouts():
    m = layout_index_map("NCHW", "NCHW16c")
    assert [str(e) for e in m.final_indices] == [
        "n",
        "c // T.int64(16)",
        "h",
        "w",
        "c % T.int64(16)",
    ]
    assert m.map_shape([2, 32, 5, 7]) == [2, 2, 5, 7, 16]
    back = layout_index_map("NCHW16c", "NCHW")
    assert back.map_shape([2, 2, 5, 7, 16]) == [2, 32, 5, 7]


def test_layout_index_map_of_different_axes_is_refused():
    with pytest.raises(ShapeError, match="have different axes"):
        layout_index_map("NCHW", "OIHW")


def test_transformed_shape_needs_dividing_blocks():
    assert transformed_shape((4, 3, 5, 5), "OIHW", "OIHW1i4o") == (1, 3, 5, 5, 1, 4)
    with pytest.raises(ShapeError, match="axis C has extent 20, which the block 16c"):
        transformed_shape((1, 20, 5, 5), "NCHW", "NCHW16c")
    with pytest.raises(ShapeError, match="the block axis 'c' must have extent 8, got 4"):
        transformed_shape((1, 2, 5, 5, 4), "NCHW8c", "NCHW")


PAIRS = [
    ("NCHW", "NCHW4c", (2, 8, 3, 5)),
    ("NCHW", "NHWC", (1, 3, 2, 5)),
    ("NHWC", "NCHW2c", (2, 3, 5, 6)),
    ("NCHW4c", "NCHW2c", (1, 3, 2, 2, 4)),
    ("OIHW", "OIHW4i2o", (6, 8, 3, 1)),
    ("HWIO", "OIHW3i2o", (3, 3, 3, 4)),
    ("OHWI", "OIHW1i4o", (8, 3, 3, 1)),
    ("OIHW2i4o", "OIHW", (1, 2, 3, 3, 2, 4)),
]


@pytest.mark.parametrize("src, dst, shape", PAIRS)
def test_topi_layout_transform_matches_numpy_and_index_map(src, dst, shape):
    x = randn(*shape)
    got = run(lambda a: layout_transform(a, src, dst), x)
    want = ref.layout_transform(x, src, dst)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(layout_index_map(src, dst).map_ndarray(x), want)


def test_topi_layout_transform_symbolic_batch():
    x = randn(3, 8, 2, 3)
    got = run(lambda a: layout_transform(a, "NCHW", "NCHW4c"), x, symbolic=[(0, 0)])
    np.testing.assert_array_equal(got, ref.layout_transform(x, "NCHW", "NCHW4c"))


def test_topi_layout_transform_pads_with_pad_value():
    x = randn(1, 5, 2, 2)
    got = run(lambda a: layout_transform(a, "NCHW", "NCHW4c", pad_value=-3.0), x)
    assert got.shape == (1, 2, 2, 2, 4)
    np.testing.assert_array_equal(got, ref.layout_transform(x, "NCHW", "NCHW4c", -3.0))
    assert (got[0, 1, :, :, 1:] == -3.0).all()


def test_topi_layout_transform_errors():
    from minitvm import te

    x = te.placeholder((1, 5, 2, 2), "float32", name="act")
    with pytest.raises(TEError, match="'act'.*axes \\['C'\\] are not divisible.*pass pad_value"):
        layout_transform(x, "NCHW", "NCHW4c")
    with pytest.raises(TEError, match="'act'.*cannot be in layout 'NCHW4c'"):
        layout_transform(x, "NCHW4c", "NCHW")


@settings(max_examples=25, deadline=None)
@given(
    cb=st.sampled_from([1, 2, 3, 4]),
    cm=st.integers(1, 3),
    ob=st.sampled_from([1, 2, 4]),
    om=st.integers(1, 2),
)
def test_layout_round_trips(cb, cm, ob, om):
    """NCHW -> NCHW{c}c -> NHWC -> NCHW and OIHW -> OIHW{i}i{o}o -> OIHW give x back."""
    x = RNG.standard_normal((2, cb * cm, 3, 2)).astype("float32")
    blocked = ref.layout_transform(x, "NCHW", f"NCHW{cb}c")
    nhwc = ref.layout_transform(blocked, f"NCHW{cb}c", "NHWC")
    np.testing.assert_array_equal(ref.layout_transform(nhwc, "NHWC", "NCHW"), x)
    np.testing.assert_array_equal(nhwc, x.transpose(0, 2, 3, 1))
    m = layout_index_map("NCHW", f"NCHW{cb}c")
    np.testing.assert_array_equal(m.map_ndarray(x), blocked)
    np.testing.assert_array_equal(m.inverse(list(x.shape)).map_ndarray(blocked), x)
    w = RNG.standard_normal((ob * om, cb * cm, 3, 1)).astype("float32")
    packed = ref.layout_transform(w, "OIHW", f"OIHW{cb}i{ob}o")
    assert packed.shape == (om, cm, 3, 1, cb, ob)
    np.testing.assert_array_equal(ref.layout_transform(packed, f"OIHW{cb}i{ob}o", "OIHW"), w)


# ----------------------------------------------------------------------------- conv2d layouts

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the numpy reference alone still checks every case
    torch = None


def _torch_conv(x, w, strides, padding, dilation, groups):
    """torch.nn.functional.conv2d on NCHW/OIHW with (top, left, bottom, right) padding."""
    pt, pl, pb, pr = padding
    xp = F.pad(torch.from_numpy(x), (pl, pr, pt, pb))
    out = F.conv2d(xp, torch.from_numpy(w), stride=strides, dilation=dilation, groups=groups)
    return out.numpy()


class Conv(NamedTuple):
    dl: str  # data layout
    kl: str  # kernel layout
    ol: str | None  # out layout (None: the compute's own)
    nchw: tuple  # N, C, H, W
    okk: tuple  # O, KH, KW
    groups: int
    strides: tuple
    padding: tuple  # top, left, bottom, right
    dilation: tuple

    def out_layout(self) -> str:
        if self.ol:
            return self.ol
        return (
            self.dl if self.dl in ("NCHW", "NHWC") else f"NCHW{Layout.parse(self.kl).block('O')}c"
        )

    def inputs(self) -> tuple:
        """(x NCHW, w OIHW, x in dl, w in kl)."""
        (n, c, h, w), (o, kh, kw) = self.nchw, self.okk
        x = RNG.standard_normal((n, c, h, w)).astype("float32")
        k = RNG.standard_normal((o, c // self.groups, kh, kw)).astype("float32")
        return (
            x,
            k,
            ref.layout_transform(x, "NCHW", self.dl),
            ref.layout_transform(k, "OIHW", self.kl),
        )

    def topi(self, a, b):
        from minitvm.topi.nn.conv import conv2d_layout

        return conv2d_layout(
            a, b, self.strides, self.padding, self.dilation, self.groups, self.dl, self.kl, self.ol
        )

    def window(self) -> tuple:
        return self.strides, self.padding, self.dilation, self.groups


CONV_CASES = {
    "nchw_prime": Conv(
        "NCHW", "OIHW", None, (2, 3, 7, 5), (5, 3, 3), 1, (2, 1), (1, 0, 2, 1), (1, 2)
    ),
    "nhwc_hwio": Conv(
        "NHWC", "HWIO", None, (1, 3, 11, 7), (4, 3, 2), 1, (2, 2), (0, 1, 1, 2), (2, 1)
    ),
    "nhwc_ohwi_groups": Conv(
        "NHWC", "OHWI", None, (2, 6, 5, 5), (4, 3, 3), 2, (1, 1), (1, 1, 1, 1), (1, 1)
    ),
    "nhwc_depthwise": Conv(
        "NHWC", "HWIO", None, (1, 5, 7, 6), (5, 3, 3), 5, (2, 2), (1, 1, 1, 1), (1, 1)
    ),
    "nhwc_1x1_c1": Conv(
        "NHWC", "HWIO", None, (2, 1, 3, 4), (3, 1, 1), 1, (1, 1), (0, 0, 0, 0), (1, 1)
    ),
    "nchwc": Conv(
        "NCHW4c", "OIHW4i8o", None, (2, 8, 7, 5), (16, 3, 3), 1, (1, 1), (1, 1, 1, 1), (1, 1)
    ),
    "nchwc_stride_dil": Conv(
        "NCHW2c", "OIHW2i3o", "NCHW3c", (1, 6, 11, 9), (9, 3, 2), 1, (2, 1), (0, 1, 2, 0), (2, 2)
    ),
    "nchwc_7x7_s2": Conv(
        "NCHW3c", "OIHW3i4o", None, (1, 3, 13, 13), (8, 7, 7), 1, (2, 2), (3, 3, 3, 3), (1, 1)
    ),
    "nchwc_1x1_block1": Conv(
        "NCHW1c", "OIHW1i1o", None, (2, 3, 5, 3), (2, 1, 1), 1, (1, 1), (0, 0, 0, 0), (1, 1)
    ),
    "nchwc_out_nchw": Conv(
        "NCHW4c", "OIHW4i4o", "NCHW", (1, 4, 6, 5), (8, 3, 3), 1, (2, 2), (1, 1, 1, 1), (1, 1)
    ),
    "depthwise_nchwc": Conv(
        "NCHW4c", "OIHW1i4o", None, (2, 8, 7, 6), (8, 3, 3), 8, (2, 2), (1, 0, 1, 2), (1, 1)
    ),
    "depthwise_nchwc_dil": Conv(
        "NCHW2c", "OIHW1i2o", None, (1, 6, 9, 9), (6, 3, 3), 6, (1, 1), (2, 2, 2, 2), (2, 2)
    ),
}


@pytest.mark.parametrize("name", sorted(CONV_CASES))
def test_conv2d_layouts_match_numpy_and_torch(name):
    case = CONV_CASES[name]
    x, k, xd, kd = case.inputs()
    want = ref.conv2d_nchw(x, k, *case.window())
    if torch is not None:
        np.testing.assert_allclose(_torch_conv(x, k, *case.window()), want, rtol=1e-4, atol=1e-4)
    got = run(case.topi, xd, kd)
    ol = case.out_layout()
    np.testing.assert_allclose(got, ref.layout_transform(want, "NCHW", ol), rtol=1e-4, atol=1e-4)
    by_ref = ref.conv2d(xd, kd, *case.window(), case.dl, case.kl, ol)
    np.testing.assert_allclose(by_ref, got, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["nchwc", "depthwise_nchwc", "nhwc_hwio"])
def test_conv2d_layouts_symbolic_batch(name):
    case = CONV_CASES[name]
    _, _, xd, kd = case.inputs()
    got = run(case.topi, xd, kd, symbolic=[(0, 0)])
    want = ref.conv2d(xd, kd, *case.window(), case.dl, case.kl, case.out_layout())
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _blocks(out):
    """{stage name: (its te op, reduce axis names)} of a compute and its producers."""
    seen, todo = {}, [out]
    while todo:
        t = todo.pop()
        if t.op.name in seen or not hasattr(t.op, "body"):
            continue
        seen[t.op.name] = (t.op, [r.var.name for r in t.op.reduce_axis])
        todo += list(t.op.input_tensors)
    return seen


def test_blocked_conv_shape_for_the_schedule():
    """Reduction (ic_outer, kh, kw, ic_inner); padding its own 'data_pad' stage; no select in
    the conv's body (the schedule's matmul rule and the inner loop depend on it)."""
    from minitvm import te
    from minitvm.topi.nn import conv as conv_mod

    x = te.placeholder((1, 2, 8, 8, 4), "float32", name="x")
    w = te.placeholder((3, 2, 3, 3, 4, 16), "float32", name="w")
    out = conv_mod.conv2d_NCHWc(x, w, 1, 1, 1, "NCHW4c", "NCHW16c")
    stages = _blocks(out)
    assert stages["conv2d_NCHWc"][1] == ["ic_outer", "kh", "kw", "ic_inner"]
    assert "pad" in stages["data_pad"][0].tag
    assert "if_then_else" not in str(out.op.body)
    assert [int(v) for v in out.shape] == [1, 3, 8, 8, 16]
    dw = te.placeholder((2, 1, 3, 3, 1, 4), "float32", name="dw")
    dout = conv_mod.depthwise_conv2d_NCHWc(x, dw, 2, 1, 1, "NCHW4c", "NCHW4c")
    assert "data_pad" in _blocks(dout) and "if_then_else" not in str(dout.op.body)
    # no padding, no pad stage
    assert "data_pad" not in _blocks(conv_mod.conv2d_NCHWc(x, w, 1, 0, 1, "NCHW4c", "NCHW16c"))


def test_conv2d_layout_errors():
    from minitvm import te
    from minitvm.topi.nn import conv as conv_mod

    x = te.placeholder((1, 2, 8, 8, 4), "float32", name="x")
    w = te.placeholder((3, 4, 3, 3, 2, 16), "float32", name="w")
    with pytest.raises(
        ShapeError, match="blocks input channels by 2 but data layout 'NCHW4c' by 4"
    ):
        conv_mod.conv2d_layout(x, w, 1, 1, 1, 1, "NCHW4c", "OIHW2i16o")
    with pytest.raises(TEError, match="disagree on input channels"):
        conv_mod.conv2d_NCHWc(x, w, 1, 1, 1, "NCHW4c", "NCHW16c")
    w4 = te.placeholder((3, 2, 3, 3, 4, 16), "float32", name="w4")
    with pytest.raises(TEError, match="'NCHW8c' has block 8 but the kernel's output block is 16"):
        conv_mod.conv2d_NCHWc(x, w4, 1, 1, 1, "NCHW4c", "NCHW8c")
    with pytest.raises(
        ShapeError, match="layouts NCHW4c/OIHW4i16o are not supported with groups=2"
    ):
        conv_mod.conv2d_layout(x, w4, 1, 1, 1, 2, "NCHW4c", "OIHW4i16o")
    with pytest.raises(ShapeError, match="layouts NHWC/OIHW are not supported"):
        conv_mod.conv2d_kind("NHWC", "OIHW", 1)
    dw = te.placeholder((2, 1, 3, 3, 1, 4), "float32", name="dw")
    with pytest.raises(TEError, match=r"must be \[C/c, 1, KH, KW, 1, c\]"):
        conv_mod.depthwise_conv2d_NCHWc(x, w4, 1, 1, 1, "NCHW4c", "NCHW4c")
    with pytest.raises(TEError, match="topi.nn.conv2d_nhwc: kernel_layout 'OIHW'"):
        conv_mod.conv2d_nhwc(
            te.placeholder((1, 4, 4, 3)), te.placeholder((3, 3, 3, 3)), 1, 0, 1, None, "OIHW"
        )
    assert conv_mod.conv2d_layout(x, dw, 1, 1, 1, 8, "NCHW4c", "OIHW1i4o").op.name == (
        "depthwise_conv2d_NCHWc"
    )


def test_topi_conv2d_entry_dispatches_on_data_layout():
    from minitvm import topi

    x = randn(1, 5, 6, 3)
    k = randn(3, 3, 3, 4)
    got = run(lambda a, b: topi.nn.conv.conv2d(a, b, 1, 1, 1, "NHWC"), x, k)
    want = ref.conv2d(x, k, 1, 1, 1, 1, "NHWC", "HWIO", "NHWC")
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    with pytest.raises(TEError, match="topi.nn.conv2d: .*layouts NHWC/OIHW are not supported"):
        from minitvm import te

        topi.nn.conv.conv2d(
            te.placeholder((1, 4, 4, 3)), te.placeholder((3, 3, 3, 3)), 1, 0, 1, "NHWC", "OIHW"
        )


# ----------------------------------------------------------------------------- pooling layouts


def _torch_pool(x, pool_type, k, s, p, ceil_mode=False, count_include_pad=False):
    """torch pooling on NCHW with symmetric (ph, pw) padding."""
    t = torch.from_numpy(x)
    if pool_type == "max":
        return F.max_pool2d(t, k, s, p, ceil_mode=ceil_mode).numpy()
    return F.avg_pool2d(
        t, k, s, p, ceil_mode=ceil_mode, count_include_pad=count_include_pad
    ).numpy()


POOL_LAYOUTS = ["NHWC", "NCHW4c", "NCHW1c"]


@pytest.mark.parametrize("layout", POOL_LAYOUTS)
@pytest.mark.parametrize(
    "pool_type, k, s, p, ceil_mode, incl",
    [
        ("max", 3, 2, 1, False, False),
        ("avg", 3, 2, 1, False, False),
        ("avg", 2, 1, 1, False, True),
        ("max", 2, 2, 0, True, False),
    ],
)
def test_pool2d_layouts_match_numpy_and_torch(layout, pool_type, k, s, p, ceil_mode, incl):
    from minitvm.topi.nn import pool2d

    x = randn(2, 8, 7, 5)
    want = ref.pool2d(x, k, s, 1, p, pool_type, ceil_mode, incl)
    if torch is not None:
        np.testing.assert_allclose(
            _torch_pool(x, pool_type, k, s, p, ceil_mode, incl), want, rtol=1e-5, atol=1e-6
        )
    xl = ref.layout_transform(x, "NCHW", layout)
    got = run(lambda a: pool2d(a, k, s, 1, p, pool_type, ceil_mode, incl, layout), xl)
    np.testing.assert_allclose(
        got, ref.layout_transform(want, "NCHW", layout), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        ref.pool2d(xl, k, s, 1, p, pool_type, ceil_mode, incl, layout), got, rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize("layout", POOL_LAYOUTS)
@pytest.mark.parametrize("size", [(1, 1), (3, 2), None])
def test_adaptive_pool_layouts_match_numpy_and_torch(layout, size):
    from minitvm.topi.nn import adaptive_pool2d

    x = randn(1, 4, 7, 6)
    want = ref.adaptive_avg_pool2d(x, size)
    if torch is not None:
        np.testing.assert_allclose(
            F.adaptive_avg_pool2d(torch.from_numpy(x), size or (7, 6)).numpy(),
            want,
            rtol=1e-5,
            atol=1e-6,
        )
    xl = ref.layout_transform(x, "NCHW", layout)
    got = run(lambda a: adaptive_pool2d(a, size, "avg", layout), xl, symbolic=[(0, 0)])
    np.testing.assert_allclose(
        got, ref.layout_transform(want, "NCHW", layout), rtol=1e-5, atol=1e-6
    )


def test_pool_layout_errors():
    from minitvm import te
    from minitvm.topi.nn import adaptive_pool2d, pool2d

    x = te.placeholder((1, 4, 4, 4, 2), "float32", name="x")
    with pytest.raises(TEError, match="layout 'NCHW2h' needs unblocked H and W axes"):
        pool2d(x, 2, 2, 1, 0, "max", layout="NCHW2h")
    with pytest.raises(TEError, match="layout 'NCW' needs unblocked H and W axes"):
        adaptive_pool2d(te.placeholder((1, 4, 4)), 1, layout="NCW")


@settings(max_examples=12, deadline=None)
@given(
    cb=st.sampled_from([1, 2, 3]),
    cm=st.integers(1, 2),
    ob=st.sampled_from([1, 2, 4]),
    om=st.integers(1, 2),
    hw=st.tuples(st.integers(3, 8), st.integers(3, 8)),
    k=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    stride=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    dil=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    pad=st.tuples(*[st.integers(0, 2)] * 4),
    depthwise=st.booleans(),
)
def test_blocked_conv_random_shapes_match_numpy(cb, cm, ob, om, hw, k, stride, dil, pad, depthwise):
    """conv2d_NCHWc / depthwise_conv2d_NCHWc over random blocks and windows that fit."""
    c = cb * cm
    span = [d * (kk - 1) + 1 for d, kk in zip(dil, k)]
    if any(size + pad[a] + pad[a + 2] < s for a, (size, s) in enumerate(zip(hw, span))):
        return  # the window does not fit the padded input
    if depthwise:
        case = Conv(f"NCHW{cb}c", f"OIHW1i{cb}o", None, (1, c) + hw, (c,) + k, c, stride, pad, dil)
    else:
        o = ob * om
        case = Conv(
            f"NCHW{cb}c", f"OIHW{cb}i{ob}o", None, (2, c) + hw, (o,) + k, 1, stride, pad, dil
        )
    x, w, xd, kd = case.inputs()
    got = run(case.topi, xd, kd)
    want = ref.layout_transform(ref.conv2d_nchw(x, w, *case.window()), "NCHW", case.out_layout())
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
