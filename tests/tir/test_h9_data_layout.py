"""tir.layout / tir.bijective_layout: parsing, axis queries, and index/shape conversion that
agrees with numpy's reshape-and-transpose of the same data."""

import numpy as np
import pytest

from minitvm import tir
from minitvm.error import DTypeError, TVMError


def test_layout_queries():
    lay = tir.layout("NCHW16c")
    assert isinstance(lay, tir.Layout) and len(lay) == 5 and str(lay) == "NCHW16c"
    assert (lay.factor_of("c"), lay.factor_of("C"), lay.factor_of("N")) == (16, 16, -1)
    assert [lay.index_of(a) for a in "NCHWcO"] == [0, 1, 2, 3, 4, -1]
    assert "c" in lay and "O" not in lay and lay[-1] == "c"
    assert tir.layout("NCHW", dtype="int64").axes[2].var.dtype == "int64"
    assert tir.layout("__undef__") is None
    with pytest.raises(DTypeError):
        tir.layout("NCHW", dtype="float32")
    with pytest.raises(TVMError, match="block c has no primal axis C"):
        tir.layout("NHW4c")


def test_convertibility():
    assert tir.bijective_layout("NCHW", "ABCD") is None
    assert tir.bijective_layout("", "NCHW") is None
    assert tir.bijective_layout("__undef__", "NCHW") is None
    assert isinstance(tir.bijective_layout("NCHW", "NHWC4c"), tir.BijectiveLayout)


def _ints(xs):
    return tuple(int(x) for x in xs)


@pytest.mark.parametrize("src, dst", [("NCHW", "NCHW4c"), ("NCHW4c", "NHWC"), ("NCHW2c", "NCHW4c")])
def test_conversion_matches_numpy_relayout(src, dst):
    logical = np.random.default_rng(0).standard_normal((2, 8, 3, 5)).astype("float32")

    def store(name):  # the data of `logical` (NCHW) stored in layout `name`
        c = tir.layout(name).factor_of("C")
        x = logical if c < 0 else logical.reshape(2, 8 // c, c, 3, 5).transpose(0, 1, 3, 4, 2)
        order = [tir.layout(name).index_of(a) for a in "NCHW"]
        return x if name.startswith("NCHW") else np.moveaxis(x, [0, 1, 2, 3], order)

    a, b = store(src), store(dst)
    bij = tir.bijective_layout(src, dst)
    assert _ints(bij.forward_shape(a.shape)) == b.shape
    assert _ints(bij.backward_shape(b.shape)) == a.shape
    for idx in np.ndindex(*a.shape):
        out = _ints(bij.forward_index(list(idx)))
        assert b[out] == a[idx]
        assert _ints(bij.backward_index(list(out))) == idx


def test_symbolic_index_stays_an_expression():
    n = tir.Var("n", "int32")
    fwd = tir.bijective_layout("NCHW", "NCHW16c").forward_index([0, n, 1, 2])
    assert isinstance(fwd[1], tir.PrimExpr) and not isinstance(fwd[1], tir.IntImm)
    assert int(fwd[2]) == 1
