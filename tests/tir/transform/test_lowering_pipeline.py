import os

import numpy as np
import pytest
import tir_builders as tb
from hypothesis import given, settings
from hypothesis import strategies as st
from minitvm.testing import run_prim_func

from minitvm import tir
from minitvm.tir import ForKind
from minitvm.tir.transform import PIPELINE, lower_primfunc


def _nodes(func, cls):
    found = []
    tir.post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, cls) else None)
    return found


CASES = {
    "matmul": (tb.matmul, lambda a, b, c: a @ b),
    "split_sum": (tb.split_sum, lambda a, s: a.sum(1)),
    "softmax": (tb.softmax, lambda a, b: np.exp(a) / np.exp(a).sum(1, keepdims=True)),
    "vectorized": (
        lambda: tb.elementwise((4, 8), [ForKind.PARALLEL, ForKind.VECTORIZED]),
        lambda a, b: a * 2 + 1,
    ),
    "unrolled": (
        lambda: tb.elementwise((3, 4), [ForKind.UNROLLED, ForKind.SERIAL]),
        lambda a, b: a * 2 + 1,
    ),
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("flatten", [True, False])
def test_lowered_function_computes_the_same(name, flatten):
    build, ref = CASES[name]
    func = build()
    rng = np.random.default_rng(0)
    args = [rng.random([int(d) for d in b.shape], "float32") for b in func.buffer_params()]
    lowered = lower_primfunc(func, flatten=flatten)
    assert not _nodes(lowered, tir.Block)
    out = run_prim_func(lowered, *[a.copy() for a in args])[-1]
    np.testing.assert_allclose(out, ref(*args), rtol=1e-5)


def test_lowered_form_matches_the_contract():
    lowered = lower_primfunc(tb.softmax())
    assert lowered.attrs["tir.noalias"] is True
    for access in _nodes(lowered, tir.BufferLoad) + _nodes(lowered, tir.BufferStore):
        assert len(access.indices) == 1
    assert all(len(a.extents) == 1 for a in _nodes(lowered, tir.Allocate))
    assert not _nodes(lowered, tir.DeclBuffer)


def test_lower_stage_keeps_multi_dimensional_indices():
    lowered = lower_primfunc(tb.matmul(), flatten=False)
    stores = _nodes(lowered, tir.BufferStore)
    assert stores and all(len(s.indices) == 2 for s in stores)
    assert "for i, j in T.grid(4, 5):" in lowered.script()
    assert "for k in range(3):" in lowered.script()


def test_vectorized_and_unrolled_loops_are_gone():
    lowered = lower_primfunc(tb.elementwise((4, 8), [ForKind.UNROLLED, ForKind.VECTORIZED]))
    assert not _nodes(lowered, tir.For)
    assert len(_nodes(lowered, tir.Ramp)) == 8  # 4 unrolled rows x (load + store)


def test_dump_ir_writes_one_script_per_pass(tmp_path, monkeypatch):
    monkeypatch.setenv("MINITVM_DUMP_IR", str(tmp_path))
    lower_primfunc(tb.matmul())
    files = sorted(os.listdir(tmp_path))
    assert len(files) == len(PIPELINE)
    assert files[0] == "00_lower_init_block.py" and files[6] == "06_flatten_buffer.py"
    assert "T.prim_func" in (tmp_path / files[-1]).read_text()


def test_verification_runs_after_each_pass(monkeypatch):
    from minitvm.error import InternalError
    from minitvm.tir.transform import pipeline

    def broken(func):
        return func.replace(body=tir.SeqStmt((func.body, func.body)))  # loop vars defined twice

    broken.__name__ = "broken_pass"
    steps = (pipeline.Step(broken, blocks_lowered=False, flat=False),)
    monkeypatch.setattr(pipeline, "PIPELINE", steps)
    with pytest.raises(InternalError, match="pass 'broken_pass' produced ill-formed TIR"):
        lower_primfunc(tb.matmul())  # MINITVM_VERIFY_IR=1 from tests/conftest.py
    assert lower_primfunc(tb.matmul(), verify=False) is not None


def _split_elementwise(n, factor, kind):
    """B[i] = A[i] * 2 + 1 with i split by `factor` (guarded tail) and the inner loop of `kind`."""
    A = tir.decl_buffer((n,), "float32", "A")
    B = tir.decl_buffer((n,), "float32", "B")
    outer = -(-n // factor)

    def body(io, ii):
        return tb.block(
            "B",
            [(tb.DP, n, io * factor + ii)],
            lambda v: tir.BufferStore(B, A[v] * 2.0 + 1.0, (v,)),
            predicate=io * factor + ii < n,
        )

    return tb.func_of(
        [A, B], tb.loops([("io", outer), ("ii", factor)], body, [ForKind.SERIAL, kind])
    )


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(1, 40),
    factor=st.integers(1, 12),
    kind=st.sampled_from([ForKind.SERIAL, ForKind.VECTORIZED, ForKind.UNROLLED, ForKind.PARALLEL]),
    reduce_factor=st.integers(1, 12),
)
def test_random_splits_lower_to_the_same_numbers(n, factor, kind, reduce_factor):
    a = np.random.default_rng(n).random(n, "float32")
    out = run_prim_func(lower_primfunc(_split_elementwise(n, factor, kind)), a, np.zeros(n, "float32"))[1]
    np.testing.assert_allclose(out, a * 2 + 1, rtol=1e-6)
    a2 = np.random.default_rng(n).random((2, n), "float32")
    out2 = run_prim_func(lower_primfunc(tb.split_sum(2, n, reduce_factor)), a2, np.zeros(2, "float32"))[1]
    np.testing.assert_allclose(out2, a2.sum(1), rtol=1e-5)
