"""`tvm.ir.Range(begin, end)` means [begin, end) as in TVM (python/tvm/ir/expr.py documents
`Range(begin, end=None)`: one argument is [0, begin)); the fields stay min and extent."""

from __future__ import annotations

import pytest

import minitvm as tvm
from minitvm import tir
from minitvm.error import MiniTVMError


def test_begin_end_and_single_argument():
    r = tvm.ir.Range(2, 5)
    assert (r.min.value, r.extent.value) == (2, 3)
    r = tvm.ir.Range(8)
    assert (r.min.value, r.extent.value) == (0, 8)
    n = tir.Var("n", "int32")
    assert tvm.ir.Range(0, n).extent is n
    r = tir.Range(1, n)
    ana = tvm.arith.Analyzer()
    assert ana.can_prove_equal(r.extent, n - 1)


def test_min_extent_spellings_and_replace():
    r = tir.Range.from_min_extent(2, 5)
    assert (r.min.value, r.extent.value) == (2, 5)
    r2 = r.replace(min=tir.IntImm("int32", 3))
    assert (r2.min.value, r2.extent.value) == (3, 5)  # replace sets fields, not (begin, end)
    r3 = tir.Range.by_begin_end(2, 5)
    assert (r3.min.value, r3.extent.value) == (2, 3)
    assert tvm.ir.structural_equal(tvm.ir.Range(2, 5), r3)


def test_analyzer_binds_the_half_open_interval():
    x = tir.Var("x", "int32")
    ana = tvm.arith.Analyzer()
    ana.bind(x, tvm.ir.Range(2, 5))  # x in {2, 3, 4}
    assert ana.can_prove(x < 5) and ana.can_prove(x >= 2) and not ana.can_prove(x < 4)


def test_json_round_trip_keeps_fields():
    r = tvm.ir.Range(2, 7)
    back = tvm.ir.load_json(tvm.ir.save_json(r))
    assert (back.min.value, back.extent.value) == (2, 5)


def test_mixed_forms_are_refused():
    with pytest.raises(MiniTVMError, match="either"):
        tir.Range(1, min=2, extent=3)
    with pytest.raises(MiniTVMError, match="begin, end"):
        tir.Range()
