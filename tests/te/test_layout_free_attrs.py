"""`layout_free_placeholders` in a compute's attrs (TVM's auto-scheduler tutorials): the tensors
become the function's `layout_free_buffers` parameter indices and leave the block annotations,
so the function prints as TVMScript that parses back (a tuning log stores that text)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import auto_scheduler, te
from minitvm.error import TEError


def _matmul_add(n, attrs):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    C = te.placeholder((n, n), name="C")
    k = te.reduce_axis((0, n), name="k")
    mm = te.compute(
        (n, n),
        lambda i, j: te.sum(A[i, k] * B[k, j], axis=k),
        name="matmul",
        attrs=attrs(B) if callable(attrs) else attrs,
    )
    out = te.compute((n, n), lambda i, j: mm[i, j] + C[i, j], name="out")
    return [A, B, C, out]


def test_layout_free_placeholders_become_buffer_indices_and_round_trip():
    func = te.create_prim_func(_matmul_add(16, lambda b: {"layout_free_placeholders": [b], "k": 3}))
    assert list(func.attrs["layout_free_buffers"]) == [1]
    text = func.script()
    assert "Tensor(" not in text and '"k": 3' in text
    tvm.ir.assert_structural_equal(tvm.script.from_source(text), func)


def test_layout_free_placeholder_not_an_argument_is_refused():
    A = te.placeholder((4, 4), name="A")
    W = te.placeholder((4, 4), name="W")
    out = te.compute(
        (4, 4), lambda i, j: A[i, j] * 2, name="out", attrs={"layout_free_placeholders": [W]}
    )
    with pytest.raises(TEError, match="'W' is not an argument"):
        te.create_prim_func([A, out])


@auto_scheduler.register_workload
def layout_free_matmul_add(n):
    return _matmul_add(n, lambda b: {"layout_free_placeholders": [b]})


def test_auto_scheduler_log_of_a_layout_free_workload_reads_back(tmp_path):
    log = str(tmp_path / "mm.json")
    task = auto_scheduler.SearchTask(func=layout_free_matmul_add, args=(32,), target="llvm")
    task.tune(
        auto_scheduler.TuningOptions(
            num_measure_trials=2,
            measure_callbacks=[auto_scheduler.RecordToFile(log)],
            runner=auto_scheduler.LocalRunner(number=1, repeat=1, min_repeat_ms=0),
            verbose=0,
        )
    )
    sch, args = task.apply_best(log)
    f = tvm.build(sch, args, "llvm")
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal((32, 32)).astype("float32") for _ in range(3))
    out = tvm.nd.empty((32, 32))
    f(tvm.nd.array(a), tvm.nd.array(b), tvm.nd.array(c), out)
    np.testing.assert_allclose(out.numpy(), a @ b + c, rtol=1e-5, atol=1e-5)
