"""structural_hash agrees with structural_equal on attribute order (found by meta_schedule:
a module parsed back from its script hashed differently, so the database missed it)."""

import minitvm as tvm
from minitvm import te


def test_attr_order_does_not_change_the_hash():
    a = te.placeholder((4,), name="A")
    b = te.compute((4,), lambda i: a[i] + 1, name="B")
    f = te.create_prim_func([a, b])
    f1 = f.with_attr("x", 1).with_attr("y", 2)
    f2 = f.with_attr("y", 2).with_attr("x", 1)
    assert tvm.ir.structural_equal(f1, f2)
    assert tvm.ir.structural_hash(f1) == tvm.ir.structural_hash(f2)
    f3 = f.with_attr("y", 3).with_attr("x", 1)
    assert tvm.ir.structural_hash(f1) != tvm.ir.structural_hash(f3)
