"""A vectorized loop that VectorizeLoop leaves for LLVM and whose body divides the loop
variable (a gather: `j % 16` inside 32 lanes) must not be forced through LLVM's loop
vectorizer: with `llvm.loop.vectorize.enable` LLVM 20 loaded those lanes as one contiguous
vector and the matmul gave wrong numbers (found by meta_schedule's runner, which checks every
candidate against the unscheduled kernel). Affine vectorized loops keep the hint."""

import numpy as np

import minitvm as tvm

TUNED_MATMUL = """
@T.prim_func
def main(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
    T.func_attr({"tir.noalias": True})
    # with T.block("root"):
    C_global = T.alloc_buffer((128, 128), "float32")
    for i_0 in T.parallel(8):
        for j_0 in range(8):
            for i_1, j_1 in T.grid(2, 1):
                for i_2_init in T.unroll(4):
                    for j_2_init_i_3_init_j_3_init_fused in T.vectorized(32):
                        with T.block("C_init"):
                            v_i = T.axis.spatial(128, i_0 * 16 + i_1 * 8 + i_2_init * 2 + j_2_init_i_3_init_j_3_init_fused // 16)
                            v_j = T.axis.spatial(128, j_0 * 16 + j_2_init_i_3_init_j_3_init_fused % 16)
                            T.block_attr({"meta_schedule.tiling_structure": "SSRSRS"})
                            C_global[v_i, v_j] = T.float32(0)
                for k_0 in range(32):
                    for i_2 in T.unroll(4):
                        for j_2 in range(1):
                            for k_1 in T.unroll(4):
                                for i_3_j_3_fused in T.vectorized(32):
                                    with T.block("C_update"):
                                        v_i = T.axis.spatial(128, i_0 * 16 + i_1 * 8 + i_2 * 2 + i_3_j_3_fused // 16)
                                        v_j = T.axis.spatial(128, j_0 * 16 + i_3_j_3_fused % 16)
                                        v_k = T.axis.reduce(128, k_0 * 4 + k_1)
                                        T.block_attr({"meta_schedule.tiling_structure": "SSRSRS"})
                                        C_global[v_i, v_j] = C_global[v_i, v_j] + A[v_i, v_k] * B[v_k, v_j]
            for ax0 in T.unroll(16):
                for ax1 in T.vectorized(16):
                    with T.block("C_global"):
                        v0 = T.axis.spatial(128, i_0 * 16 + ax0)
                        v1 = T.axis.spatial(128, j_0 * 16 + ax1)
                        C[v0, v1] = C_global[v0, v1]
"""


def test_tuned_matmul_with_gather_vector_loops_matches_numpy():
    f = tvm.script.from_source(TUNED_MATMUL)
    a, b = (np.random.default_rng(s).random((128, 128), dtype=np.float32) for s in (0, 1))
    c = np.zeros((128, 128), "float32")
    tvm.build(f, target="llvm")(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
