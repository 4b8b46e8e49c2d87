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
