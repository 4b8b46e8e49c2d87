"""te.create_prim_func: the shape of the PrimFunc it builds, and its errors."""

import numpy as np
import pytest
from minitvm.testing import run_prim_func
from te_workloads import conv2d_nchw, softmax

from minitvm import te, tir
from minitvm.error import TEError
from minitvm.ir import assert_structural_equal
from minitvm.tir import BlockRealize, BufferLoad, BufferStore, For, IfThenElse, IterType


def _blocks(func):
    """Non-root blocks in program order, with the loops around each."""
    out = []

    def walk(s, loops):
        if isinstance(s, tir.SeqStmt):
            for x in s.seq:
                walk(x, loops)
        elif isinstance(s, For):
            walk(s.body, loops + [s])
        elif isinstance(s, BlockRealize):
            out.append((s, loops))
        else:
            raise TypeError(f"unexpected statement {type(s).__name__}")

    root = func.body.block
    walk(root.body, [])
    return out


def _matmul():
    n = te.var("n")
    A = te.placeholder((n, 8), name="A")
    B = te.placeholder((8, 6), name="B")
    k = te.reduce_axis((0, 8), name="k")
    C = te.compute((n, 6), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return n, A, B, C


def test_matmul_prim_func_structure():
    n, A, B, C = _matmul()
    func = te.create_prim_func([A, B, C])
    assert isinstance(func, tir.PrimFunc)
    assert dict(func.attrs) == {"global_symbol": "main", "tir.noalias": True}
    assert [p.name for p in func.params] == ["A", "B", "C"]
    bufs = [func.buffer_map[p] for p in func.params]
    assert [b.name for b in bufs] == ["A", "B", "C"]
    assert all(b.dtype == "float32" for b in bufs)
    assert bufs[0].shape[0] is n and bufs[2].shape[0] is n  # the symbolic dim is shared
    assert n not in func.params

    root = func.body
    assert isinstance(root, BlockRealize) and root.block.name_hint == "root"
    assert root.block.alloc_buffers == ()
    [(realize, loops)] = _blocks(func)
    assert [lp.loop_var.name for lp in loops] == ["i", "j", "k"]
    assert loops[0].extent is n and [int(lp.extent) for lp in loops[1:]] == [6, 8]
    block = realize.block
    assert block.name_hint == "C"
    assert [iv.var.name for iv in block.iter_vars] == ["v_i", "v_j", "v_k"]
    assert [iv.iter_type for iv in block.iter_vars] == [
        IterType.DataPar,
        IterType.DataPar,
        IterType.CommReduce,
    ]
    assert all(v is lp.loop_var for v, lp in zip(realize.iter_values, loops))

    vi, vj, vk = (iv.var for iv in block.iter_vars)
    assert isinstance(block.init, BufferStore) and block.init.buffer is bufs[2]
    assert float(block.init.value.value) == 0.0
    assert block.init.indices[0] is vi and block.init.indices[1] is vj
    body = block.body
    assert isinstance(body, BufferStore) and body.buffer is bufs[2]
    assert isinstance(body.value, tir.Add) and isinstance(body.value.a, BufferLoad)
    assert body.value.a.buffer is bufs[2]

    reads = {r.buffer.name: r for r in block.reads}
    assert set(reads) == {"A", "B"}  # the accumulator is written, not listed as a read
    assert reads["A"].region[0].min is vi and reads["A"].region[1].min is vk
    assert all(int(r.extent) == 1 for r in reads["A"].region)
    [w] = block.writes
    assert w.buffer is bufs[2] and w.region[0].min is vi and w.region[1].min is vj


def test_intermediates_become_root_alloc_buffers_in_topological_order():
    wl = softmax(te.var("n"), 5)
    func = te.create_prim_func(wl.args)
    assert [p.name for p in func.params] == ["X", "softmax"]
    root = func.body.block
    assert [b.name for b in root.alloc_buffers] == ["row_max", "exp", "row_sum"]
    names = [r.block.name_hint for r, _ in _blocks(func)]
    assert names == ["row_max", "exp", "row_sum", "softmax"]
    first = _blocks(func)[0][0].block
    assert first.init is not None and float(first.init.value.value) == float("-inf")


def test_block_names_are_unique():
    A = te.placeholder((3,), name="A")
    B = te.compute((3,), lambda i: A[i] + 1.0, name="C")
    C = te.compute((3,), lambda i: B[i] * 2.0, name="C")
    func = te.create_prim_func([A, C])
    assert [r.block.name_hint for r, _ in _blocks(func)] == ["C", "C_1"]
    assert [func.buffer_map[p].name for p in func.params] == ["A", "C"]
    assert func.body.block.alloc_buffers[0].name == "C_1"


def test_loop_names_are_unique_within_a_nest():
    A = te.placeholder((3, 4), name="A")
    i = te.reduce_axis((0, 4), name="i")
    B = te.compute((3,), lambda i_: te.sum(A[i_, i], axis=i), name="B")
    [(_, loops)] = _blocks(te.create_prim_func([A, B]))
    assert [lp.loop_var.name for lp in loops] == ["i_", "i"]
    C = te.compute((3,), lambda i: te.sum(A[i, i], axis=te.reduce_axis((0, 4), name="i")))
    [(_, loops)] = _blocks(te.create_prim_func([A, C]))
    assert [lp.loop_var.name for lp in loops] == ["i", "i_1"]


def test_where_becomes_a_guard_inside_the_body():
    A = te.placeholder((3, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    B = te.compute((3,), lambda i: te.sum(A[i, k], axis=k, where=k < 2), name="B")
    [(realize, _)] = _blocks(te.create_prim_func([A, B]))
    assert isinstance(realize.block.body, IfThenElse)
    assert realize.block.init is not None and isinstance(realize.predicate, tir.IntImm)


def test_block_annotations_carry_compute_attrs():
    A = te.placeholder((3,), name="A")
    B = te.compute((3,), lambda i: A[i], name="B", attrs={"schedule_rule": "none"})
    [(realize, _)] = _blocks(te.create_prim_func([A, B]))
    assert realize.block.annotations["schedule_rule"] == "none"


def test_scalar_var_argument():
    alpha = te.var("alpha", "float32")
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] * alpha, name="B")
    func = te.create_prim_func([A, alpha, B])
    assert func.params[1] is alpha and alpha not in func.buffer_map
    a, b = np.arange(4, dtype="float32"), np.zeros(4, "float32")
    run_prim_func(func, a, np.float32(2.5), b)
    np.testing.assert_array_equal(b, a * 2.5)


def test_index_dtype_override_int64():
    _, A, B, C = _matmul()
    func = te.create_prim_func([A, B, C], index_dtype_override="int64")
    [(realize, loops)] = _blocks(func)
    assert all(lp.loop_var.dtype == "int64" for lp in loops)
    assert all(iv.var.dtype == "int64" for iv in realize.block.iter_vars)
    bufs = [func.buffer_map[p] for p in func.params]
    assert all(d.dtype == "int64" for b in bufs for d in b.shape)
    assert bufs[0].shape[0] is bufs[2].shape[0]  # one int64 twin of n everywhere
    a = np.random.default_rng(0).standard_normal((3, 8)).astype("float32")
    b = np.random.default_rng(1).standard_normal((8, 6)).astype("float32")
    c = np.zeros((3, 6), "float32")
    run_prim_func(func, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_multi_output_compute_is_one_block_with_two_stores():
    A = te.placeholder((3,), name="A")
    x, y = te.compute((3,), lambda i: (A[i] + 1.0, A[i] * 2.0), name="two")
    func = te.create_prim_func([A, x, y])
    [(realize, _)] = _blocks(func)
    assert isinstance(realize.block.body, tir.SeqStmt) and len(realize.block.body) == 2
    assert [p.name for p in func.params] == ["A", "two_v0", "two_v1"]


def test_missing_placeholder_is_named():
    _, A, _, C = _matmul()
    with pytest.raises(
        TEError,
        match="placeholder 'B' is read by compute 'C' but is not in the "
        "argument list; add B to the list of arguments",
    ):
        te.create_prim_func([A, C])


def test_undefined_scalar_var_is_reported():
    alpha = te.var("alpha", "float32")
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] * alpha, name="B")
    with pytest.raises(
        TEError, match="compute 'B' uses the variable 'alpha'.*add it to the argument list"
    ):
        te.create_prim_func([A, B])


def test_bad_arguments():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i], name="B")
    with pytest.raises(TEError, match="argument 1 is 3; arguments must be te tensors"):
        te.create_prim_func([A, 3, B])
    with pytest.raises(
        TEError,
        match="tensor 'A' appears twice in the argument list "
        r"\(positions 0 and 2\)",
    ):
        te.create_prim_func([A, B, A])


def test_compute_in_args_is_also_computed():
    A = te.placeholder((3,), name="A")
    B = te.compute((3,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((3,), lambda i: B[i] * 2.0, name="C")
    func = te.create_prim_func([A, B, C])
    assert func.body.block.alloc_buffers == ()
    a, b, c = np.arange(3, dtype="float32"), np.zeros(3, "float32"), np.zeros(3, "float32")
    run_prim_func(func, a, b, c)
    np.testing.assert_array_equal(b, a + 1)
    np.testing.assert_array_equal(c, (a + 1) * 2)


def test_block_map_names_each_compute():
    from minitvm.te.to_tir import create_prim_func_with_blocks

    A = te.placeholder((3,), name="A")
    B = te.compute((3,), lambda i: A[i] + 1.0, name="C")
    C = te.compute((3,), lambda i: B[i] * 2.0, name="C")
    func, blocks = create_prim_func_with_blocks([A, C])
    assert blocks == {B.op: "C", C.op: "C_1"}
    assert [r.block.name_hint for r, _ in _blocks(func)] == ["C", "C_1"]


def test_index_dtype_override_maps_shape_vars_used_in_bodies():
    from te_workloads import softmax_cross_entropy

    wl = softmax_cross_entropy(te.var("n"), 4)
    func = te.create_prim_func(wl.args, index_dtype_override="int64")
    inputs = wl.inputs({"n": 3})
    out = np.zeros(1, "float32")
    run_prim_func(func, *inputs, out)
    np.testing.assert_allclose(out, wl.reference(*inputs), rtol=1e-5)


def test_data_dependent_index_reads_the_whole_dimension():
    A = te.placeholder((5, 3), name="A")
    idx = te.placeholder((4,), "int32", name="idx")
    G = te.compute((4, 3), lambda i, j: A[idx[i], j], name="G")
    func = te.create_prim_func([A, idx, G])
    [(realize, _)] = _blocks(func)
    reads = {r.buffer.name: r.region for r in realize.block.reads}
    assert int(reads["A"][0].min) == 0 and int(reads["A"][0].extent) == 5
    assert reads["A"][1].min is realize.block.iter_vars[1].var
    assert reads["idx"][0].min is realize.block.iter_vars[0].var
    a = np.arange(15, dtype="float32").reshape(5, 3)
    ix = np.array([4, 0, 2, 2], "int32")
    g = np.zeros((4, 3), "float32")
    run_prim_func(func, a, ix, g)
    np.testing.assert_array_equal(g, a[ix])


@pytest.mark.parametrize("which", ["matmul", "softmax", "conv2d"])
def test_printed_prim_func_parses_back_equal(which):
    script = pytest.importorskip("minitvm.script")
    from_source = getattr(script, "from_source", None)
    if from_source is None:
        pytest.skip("the TVMScript parser (minitvm.script.from_source) is not available yet")
    args = {
        "matmul": lambda: list(_matmul()[1:]),
        "softmax": lambda: softmax(te.var("n"), 5).args,
        "conv2d": lambda: conv2d_nchw(te.var("n"), 2, 5, 3, kernel=3, pad=1).args,
    }[which]()
    func = te.create_prim_func(args)
    parsed = from_source(func.script())
    if not isinstance(parsed, tir.PrimFunc):
        parsed = parsed["main"]
    assert_structural_equal(parsed.body, func.body, map_free_vars=True)
    names = [[f.buffer_map[p].name for p in f.params] for f in (parsed, func)]
    assert names[0] == names[1]
