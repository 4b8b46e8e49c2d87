"""Issue 27, round 2: relax.analysis symbolic-variable queries (TVM's documented behaviour)."""

import pytest

from minitvm import relax as rx
from minitvm import tir
from minitvm.error import MiniTVMError

n, m = tir.Var("n", "int64"), tir.Var("m", "int64")


@pytest.mark.parametrize(
    ("sinfo", "definable", "used"),
    [
        (rx.ShapeStructInfo([1, n, 3]), [n], [n]),
        (rx.ShapeStructInfo([1, 2 * n, m]), [m], [n, m]),  # 2*n cannot be matched to define n
        (rx.TensorStructInfo([m, n * m, n], "int32"), [m, n], [m, n]),  # order of first use
        (rx.TupleStructInfo([rx.PrimStructInfo("int64", m), rx.ShapeStructInfo([n + 1])]), [m], [m, n]),
        (rx.FuncStructInfo([rx.TensorStructInfo([2 * n], "int32")], rx.TensorStructInfo([m], "int32")), [m], [n, m]),
        (rx.TensorStructInfo([4, 5], "float32"), [], []),
    ],
)
def test_tir_vars_in_struct_info(sinfo, definable, used):
    got_used = rx.analysis.tir_vars_in_struct_info(sinfo)
    got_def = rx.analysis.definable_tir_vars_in_struct_info(sinfo)
    assert [id(v) for v in got_used] == [id(v) for v in used]  # the same Var objects, deduplicated
    assert [id(v) for v in got_def] == [id(v) for v in definable]


def test_tir_vars_in_struct_info_rejects_non_struct_info():
    with pytest.raises(MiniTVMError, match="expected a relax StructInfo"):
        rx.analysis.tir_vars_in_struct_info([n])
