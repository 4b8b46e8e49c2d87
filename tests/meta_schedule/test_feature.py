"""PerStoreFeature: one fixed-length row per store plus a program row, computed from the
loop-level TIR, and the rows tell schedules apart the way their speed differs."""

import numpy as np
from _space_workloads import matmul, softmax

from minitvm import meta_schedule as ms
from minitvm.tir.schedule import Schedule

fe = ms.feature_extractor
IDX = {name: i for i, name in enumerate(fe.STORE_FEATURES)}


def _feats(sch):
    return fe.PerStoreFeature().extract_from(None, [sch])[0]


def test_rows_per_store_plus_a_program_row():
    f = _feats(Schedule(matmul(16, 16, 16)[0]))
    # init store, update store, program row
    assert f.shape == (3, fe.N_FEATURES)
    update = f[1]
    assert update[IDX["is_reduction"]] == 1
    assert update[IDX["float_ops"]] == 2  # one multiply, one add
    assert update[IDX["log_iterations"]] == np.log2(1 + 16**3)
    assert f[-1][0] == np.log2(1 + 2 * 16**3)  # program row: total flops


def test_vectorized_parallel_and_strides_show_in_the_rows():
    mod = matmul(64, 64, 64)[0]
    plain = Schedule(mod)
    tuned = Schedule(mod)
    i, j, k = tuned.get_loops(tuned.get_block("C"))
    jo, ji = tuned.split(j, [None, 16])
    tuned.reorder(i, jo, k, ji)
    tuned.parallel(i)
    tuned.vectorize(ji)
    a, b = _feats(plain)[1], _feats(tuned)[1]
    assert a[IDX["log_vector_lanes"]] == 0 and b[IDX["log_vector_lanes"]] == 4
    assert b[IDX["log_parallel"]] == 6
    assert b[IDX["inner_vectorized"]] == 1 and b[IDX["vector_aligned"]] == 1
    # k innermost reads B with a stride; j innermost reads it contiguously
    assert a[IDX["loads_strided"]] > 0 and b[IDX["loads_strided"]] == 0


def test_features_are_deterministic_and_finite_for_a_whole_space():
    mod = softmax()[0]
    designs = ms.space_generator.PostOrderApply().generate_design_space(mod)
    ex = fe.PerStoreFeature()
    one, two = ex.extract_from(None, designs), ex.extract_from(None, designs)
    for x, y in zip(one, two):
        assert x.shape[1] == fe.N_FEATURES and np.isfinite(x).all()
        np.testing.assert_array_equal(x, y)


def test_loop_coefficients_of_an_index_in_one_walk():
    """Each loop's coefficient in an index (None where the index is not affine in it), as the
    footprints and strides use them: (i // 4) * 8 + j * 3 - k + 2 over loops i, j, k, m."""
    from minitvm import tir
    from minitvm.meta_schedule.feature_extractor import per_store_feature as psf

    i, j, k, m = (tir.Var(n, "int32") for n in "ijkm")
    loops = [tir.For(v, 0, 8, tir.ForKind.SERIAL, tir.Evaluate(0)) for v in (i, j, k, m)]
    index = tir.floordiv(i, 4) * 8 + j * 3 - k + 2
    assert psf._coeff_rows([index, j * 2 * 5], loops) == [[None, 3, -1, 0], [0, 10, 0, 0]]
    # the box it spans over j, k, m (extents 8): 1 + 3*7 + 1*7 elements, capped by the buffer
    rows = psf._coeff_rows([index], loops)
    assert psf._footprint(rows, 1000.0, [8, 8, 8, 8], 1) == 29.0
    assert psf._footprint(rows, 1000.0, [8, 8, 8, 8], 0) == 36.0  # i not affine: counts once
    assert psf._footprint(rows, 20.0, [8, 8, 8, 8], 0) == 20.0
