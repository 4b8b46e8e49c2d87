"""Schedule.unsafe_hide_buffer_access: the chosen read/write regions leave the block's
signature (the body is untouched, so it computes the same), the trace replays, and bad
arguments raise ScheduleError."""

import numpy as np
import pytest

from minitvm import tir
from minitvm.error import ScheduleError
from minitvm.script import tir as T
from minitvm.testing import run_prim_func


@T.prim_func
def _gather(
    A: T.Buffer((16,), "float32"), IA: T.Buffer((4,), "int32"), B: T.Buffer((4,), "float32")
):
    for i in range(4):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            T.reads(A[IA[vi]], IA[vi])
            T.writes(B[vi])
            B[vi] = A[IA[vi]] * 2.0


def _block(func, name):
    out = []
    tir.post_order_visit(
        func.body,
        lambda n: out.append(n) if isinstance(n, tir.Block) and n.name_hint == name else None,
    )
    return out[0]


def test_hidden_read_region_leaves_signature_only():
    sch = tir.Schedule(_gather)
    sch.unsafe_hide_buffer_access(sch.get_block("B"), "read", [1])
    after = sch.mod["main"]
    block = _block(after, "B")
    assert [r.buffer.name for r in block.reads] == ["A"]
    assert [w.buffer.name for w in block.writes] == ["B"]
    assert "unsafe_hide_buffer_access" in str(sch.trace)
    replay = tir.Schedule(_gather)
    sch.trace.apply_to_schedule(replay, remove_postproc=False)
    assert [r.buffer.name for r in _block(replay.mod["main"], "B").reads] == ["A"]
    rng = np.random.default_rng(0)
    a = rng.standard_normal(16).astype("float32")
    ia = rng.integers(0, 16, 4).astype("int32")
    want = a[ia] * 2.0
    for func in (_gather, after):
        out = run_prim_func(func, a, ia, np.zeros(4, "float32"))[2]
        np.testing.assert_allclose(out, want, rtol=1e-6)


def test_bad_type_or_index_is_a_schedule_error():
    sch = tir.Schedule(_gather)
    block = sch.get_block("B")
    with pytest.raises(ScheduleError, match="buf_type must be 'read' or 'write', got 'opaque'"):
        sch.unsafe_hide_buffer_access(block, "opaque", [0])
    with pytest.raises(ScheduleError, match="has 1 writes regions; buffer index 1 is out of range"):
        sch.unsafe_hide_buffer_access(block, "write", [1])
