"""dl.cpu GEMV: `x @ W.T` under few rows reads W in place (the transpose LegalizeOps puts before
the matmul is inlined, not copied each call) as row tiles of dot products, parallel over the
rows; checked against numpy, with the transposed copy kept where it still pays."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, te, tir
from minitvm.dlight.cpu import default as _ds
from minitvm.relax.frontend import nn
from minitvm.tir.functor import post_order_visit
from minitvm.tir.stmt import For, ForKind


def linear_te(rows, k, n, bias=False):
    """x [1, rows, k] @ transpose(W [n, k]) as LegalizeOps and FuseTIR give it: a transpose
    stage `T_transpose` then the matmul (optionally + bias, the fused epilogue)."""
    x = te.placeholder((1, rows, k), name="x")
    w = te.placeholder((n, k), name="W")
    wt = te.compute((k, n), lambda a, b: w[b, a], name="T_transpose")
    r = te.reduce_axis((0, k), name="k")
    y = te.compute((1, rows, n), lambda b, i, j: te.sum(x[b, i, r] * wt[r, j], axis=r), name="Y")
    if not bias:
        return [x, w, y]
    bvec = te.placeholder((n,), name="bias")
    out = te.compute((1, rows, n), lambda b, i, j: y[b, i, j] + bvec[j], name="out")
    return [x, w, bvec, out]


def allocs(func) -> set[str]:
    found: set[str] = set()

    def visit(node):
        for buf in getattr(node, "alloc_buffers", ()):
            found.add(buf.name)

    post_order_visit(func.body, visit)
    return found


def loop_kinds(func) -> list:
    kinds: list = []
    post_order_visit(func.body, lambda n: kinds.append(n.kind) if isinstance(n, For) else None)
    return kinds


def run(tensors, func, seed=0) -> None:
    rng = np.random.default_rng(seed)
    shape = lambda t: [int(d) for d in t.shape]
    args = [rng.standard_normal(shape(t)).astype("float32") for t in tensors[:-1]]
    out = tvm.nd.array(np.zeros(shape(tensors[-1]), "float32"))
    tvm.build(func, target="llvm")(*(tvm.nd.array(a) for a in args), out)
    ref = args[0] @ args[1].T
    if len(args) == 3:
        ref = ref + args[2]
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "rows, k, n",
    [(1, 1024, 4096), (1, 64, 6), (1, 48, 7), (1, 20, 33), (3, 128, 64), (8, 64, 256)],
)
def test_few_rows_read_the_weight_in_place_as_dot_product_row_tiles(rows, k, n) -> None:
    tensors = linear_te(rows, k, n)
    func = _ds.default_schedule_func(te.create_prim_func(tensors))
    names = allocs(func)
    # no copy of W per call: only the vector partial sums of the dot products
    assert "T_transpose" not in names and names == {"Y_rf"}, func.script()
    run(tensors, func)


def test_big_gemv_runs_parallel_over_row_tiles_with_unrolled_rows() -> None:
    func = _ds.default_schedule_func(te.create_prim_func(linear_te(1, 1024, 4096)))
    kinds = loop_kinds(func)
    assert ForKind.PARALLEL in kinds and ForKind.VECTORIZED in kinds
    assert ForKind.UNROLLED in kinds, func.script()  # the rows of a tile: independent chains
    text = func.script()
    # the lanes are added up under the parallel row-tile loop, not in a serial pass after it
    assert text.index('T.block("Y")') > text.index("T.parallel"), text


def test_gemv_with_bias_epilogue_matches_numpy() -> None:
    tensors = linear_te(1, 256, 96, bias=True)
    func = _ds.default_schedule_func(te.create_prim_func(tensors))
    assert "T_transpose" not in allocs(func), func.script()
    run(tensors, func, seed=1)


@pytest.mark.parametrize("k", [18, 30])
def test_reduction_without_a_vector_width_keeps_the_transposed_copy(k) -> None:
    # k not a multiple of 4: the dot-product rule cannot split k, the copy stays a stage
    tensors = linear_te(1, k, 64)
    func = _ds.default_schedule_func(te.create_prim_func(tensors))
    assert "T_transpose" in allocs(func), func.script()
    run(tensors, func)


def test_many_rows_keep_the_copy_for_the_register_tile() -> None:
    tensors = linear_te(64, 64, 128)
    func = _ds.default_schedule_func(te.create_prim_func(tensors))
    assert "Y_rf" not in allocs(func), func.script()
    run(tensors, func)


class _Proj(nn.Module):
    def __init__(self, k, n) -> None:
        self.proj = nn.Linear(k, n, bias=True)

    def forward(self, x):
        return nn.op.silu(self.proj(x))


@pytest.mark.parametrize("rows", [1, "n"])
def test_nn_linear_decode_and_prefill_match_numpy(rows) -> None:
    k, n = 128, 200
    model = _Proj(k, n)
    mod, _ = model.export_tvm({"forward": {"x": nn.spec.Tensor((1, rows, k), "float32")}})
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    rng = np.random.default_rng(3)
    w = rng.standard_normal((n, k)).astype("float32")
    b = rng.standard_normal(n).astype("float32")
    for length in (1,) if rows == 1 else (1, 5, 40):
        x = rng.standard_normal((1, length, k)).astype("float32")
        out = vm["forward"](tvm.nd.array(x), tvm.nd.array(w), tvm.nd.array(b)).numpy()
        z = x @ w.T + b
        np.testing.assert_allclose(out, z / (1 + np.exp(-z)), rtol=1e-4, atol=1e-4)


def test_decode_linear_kernel_has_no_transposed_weight_buffer() -> None:
    from minitvm.relax.pipeline import run_default_pipeline

    model = _Proj(256, 512)
    mod, _ = model.export_tvm({"forward": {"x": nn.spec.Tensor((1, 1, 256), "float32")}})
    lowered = run_default_pipeline(mod, "llvm")
    prims = [f for _, f in lowered.functions_items() if isinstance(f, tir.PrimFunc)]
    assert prims and not any("T_transpose" in allocs(f) for f in prims)


def test_flattening_reshape_of_x_stays_a_stage_and_w_is_still_read_in_place() -> None:
    # attention's (1, 1, heads, dim) output flattened for o_proj: inlined, each vector of x
    # along k would be a gather; staged it is a 4 KB copy, and W is streamed untransposed
    a = te.placeholder((1, 1, 16, 64), name="a")
    w = te.placeholder((512, 1024), name="W")
    x = te.compute((1, 1, 1024), lambda b, i, k: a[b, i, k // 64, k % 64], name="T_reshape")
    wt = te.compute((1024, 512), lambda p, q: w[q, p], name="T_transpose")
    r = te.reduce_axis((0, 1024), name="k")
    y = te.compute((1, 1, 512), lambda b, i, j: te.sum(x[b, i, r] * wt[r, j], axis=r), name="Y")
    func = _ds.default_schedule_func(te.create_prim_func([a, w, y]))
    names = allocs(func)
    assert "T_transpose" not in names and {"T_reshape", "Y_rf"} <= names, func.script()
    assert ForKind.PARALLEL in loop_kinds(func)
    rng = np.random.default_rng(5)
    av = rng.standard_normal((1, 1, 16, 64)).astype("float32")
    wv = rng.standard_normal((512, 1024)).astype("float32")
    out = tvm.nd.array(np.zeros((1, 1, 512), "float32"))
    tvm.build(func, target="llvm")(tvm.nd.array(av), tvm.nd.array(wv), out)
    np.testing.assert_allclose(out.numpy(), av.reshape(1, 1, 1024) @ wv.T, rtol=1e-4, atol=1e-4)
