"""tvm.runtime.container (ADT, tuple_object, String) and tvm.runtime.module.BenchmarkResult."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm.error import ArgumentError
from minitvm.runtime import container
from minitvm.runtime.module import BenchmarkResult


def test_adt_holds_its_tag_and_fields():
    arr = tvm.nd.array(np.arange(3, dtype="float32"))
    adt = container.ADT(1, [arr, arr])
    assert adt.tag == 1 and len(adt) == 2 and adt[1] is arr
    pair = container.tuple_object([arr])
    assert isinstance(pair, container.ADT) and pair.tag == 0


def test_adt_refuses_fields_that_are_not_runtime_objects():
    with pytest.raises(ArgumentError, match="field 1 is a int"):
        container.ADT(0, [tvm.nd.array(np.zeros(1)), 3])


def test_string_is_a_str():
    s = tvm.runtime.String("xyz")
    assert isinstance(s, str) and s + "1" == "xyz1"


def test_benchmark_result_statistics():
    r = BenchmarkResult([1, 2, 2, 5])
    assert (r.mean, r.median, r.min, r.max, r.std) == (2.5, 2.0, 1, 5, 1.5)
    assert r.results == (1, 2, 2, 5)
