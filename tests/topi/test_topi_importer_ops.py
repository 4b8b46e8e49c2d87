"""topi computes added for the importers: their TEError messages (the relax ops check first,
but topi is public API too) and a direct build of each against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, topi
from minitvm.error import TEError
from minitvm.topi import reference as ref


def _build_run(outs_fn, *arrays: np.ndarray) -> np.ndarray:
    args = [te.placeholder(a.shape, str(a.dtype), name=f"a{k}") for k, a in enumerate(arrays)]
    out = outs_fn(*args)
    func = tvm.build(te.create_prim_func([*args, out]), target="llvm")
    result = tvm.nd.empty(tuple(int(d) for d in out.shape), out.dtype)
    func(*[tvm.nd.array(a) for a in arrays], result)
    return result.numpy()


def _rand(*shape: int) -> np.ndarray:
    return np.random.default_rng(0).standard_normal(shape).astype("float32")


@pytest.mark.parametrize(
    "fn, ref_fn, shapes",
    [
        (lambda x: topi.squeeze(x, [0]), lambda x: np.squeeze(x, 0), [(1, 3)]),
        (lambda x: topi.tile(x, (2, 2)), lambda x: np.tile(x, (2, 2)), [(2, 3)]),
        (lambda x: topi.repeat(x, 3, 0), lambda x: np.repeat(x, 3, 0), [(2, 3)]),
        (lambda x: topi.flip(x, 1), lambda x: np.flip(x, 1), [(2, 3)]),
        (lambda x: topi.cumsum(x, 1), lambda x: np.cumsum(x, 1), [(2, 5)]),
        (lambda x, y: topi.where(topi.less(x, y), x, y), lambda x, y: np.minimum(x, y), [(2, 3), (3,)]),
        (lambda x: topi.nn.mirror_pad(x, (1, 2), (2, 0), "reflect"),
         lambda x: np.pad(x, ((1, 2), (2, 0)), mode="reflect"), [(4, 3)]),
        (lambda x: topi.variance(x, 1), lambda x: np.var(x, 1), [(3, 6)]),
        (lambda x, y: topi.einsum("ij,kj->ik", x, y), lambda x, y: x @ y.T, [(2, 3), (4, 3)]),
        (lambda x: topi.image.resize2d(x, (4, 6)), lambda x: ref.resize2d(x, (4, 6)), [(1, 2, 3, 3)]),
    ],
    ids=["squeeze", "tile", "repeat", "flip", "cumsum", "where", "mirror_pad", "variance",
         "einsum", "resize2d"],
)  # fmt: skip
def test_topi_importer_compute_matches_numpy(fn, ref_fn, shapes) -> None:
    arrays = [_rand(*s) for s in shapes]
    np.testing.assert_allclose(_build_run(fn, *arrays), ref_fn(*arrays), rtol=1e-5, atol=1e-5)


ERRORS = [
    (lambda: topi.squeeze(te.placeholder((2, 3), name="x"), 0), r"topi.squeeze: dim 0 of x \(2, 3\) is 2, not 1"),
    (lambda: topi.nn.mirror_pad(te.placeholder((4,), name="x"), (1,), (1,), "wrap"),
     r"topi.nn.mirror_pad: mode 'wrap' is not one of 'edge', 'reflect'"),
    (lambda: topi.image.resize2d(te.placeholder((1, 2, 3, 3)), (4, 4), layout="HWCN"),
     r"topi.image.resize2d: layout 'HWCN' is not one of 'NCHW', 'NHWC'"),
    (lambda: topi.image.resize2d(te.placeholder((1, 2, 3, 3)), (4, 4), method="bicubic"),
     r"topi.image.resize2d: method 'bicubic' / coordinate_transformation_mode 'half_pixel' unsupported"),
    (lambda: topi.image.resize2d(te.placeholder((1, 2, 3, 3)), (4, 4), "NCHW", "nearest_neighbor",
                                 rounding_method="nearest"),
     r"topi.image.resize2d: rounding_method 'nearest' is not one of"),
    (lambda: topi.nn.conv2d_transpose_nchw(te.placeholder((1, 3, 4, 4)), te.placeholder((3, 2, 3, 3)),
                                           (1, 1), (0, 0, 0, 0), (0, 0), (1, 1), groups=2),
     r"topi.nn.conv2d_transpose_nchw: in_channels of data \(1, 3, 4, 4\) must be static and divisible by groups=2"),
    (lambda: topi.einsum("ij,j", te.placeholder((2, 3))), r"topi.einsum: subscripts 'ij,j' name 2 operands, but 1 were given"),
    (lambda: topi.einsum("i1->i", te.placeholder((2, 3))), r"labels must be letters"),
    (lambda: topi.where(te.placeholder((3,), "bool"), te.placeholder((2,)), te.placeholder((2,))),
     r"topi.where: shapes \(3,\) and \(2,\) do not broadcast"),
]  # fmt: skip


@pytest.mark.parametrize("build, match", ERRORS, ids=[m[:40] for _, m in ERRORS])
def test_topi_importer_errors(build, match) -> None:
    with pytest.raises(TEError, match=match):
        build()
