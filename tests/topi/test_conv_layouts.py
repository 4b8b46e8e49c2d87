"""Layout strings, topi.layout_transform and the convolution/pooling computes in every layout,
built through the driver and checked against numpy (and torch when it is importable)."""

from __future__ import annotations

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
