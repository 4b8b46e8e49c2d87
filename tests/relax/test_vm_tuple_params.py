"""A tuple parameter is checked like a tensor one: its length and each item's dtype and shape
(which bind the symbolic dims later code reads). Before, the items went unchecked, so a shape
read from the annotation could disagree with the array passed (a silent wrong result)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.error import MiniTVMError


def _vm():
    n = tir.Var("n", "int64")
    s = relax.Var(
        "s",
        relax.TupleStructInfo(
            [relax.TensorStructInfo((n, 3), "float32"), relax.TensorStructInfo((2,), "float32")]
        ),
    )
    bb = relax.BlockBuilder()
    with bb.function("main", [s]):
        a = bb.emit(relax.TupleGetItem(s, 0))
        shape = bb.emit(relax.op.shape_to_tensor(relax.op.shape_of(a)))
        bb.emit_func_output(relax.Tuple([bb.emit(relax.op.sum(a, axis=[0])), shape]))
    return relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())


def test_tuple_parameter_binds_its_items_dims_from_the_arrays_passed():
    vm = _vm()
    for rows in (0, 4, 7):
        x = np.arange(rows * 3, dtype="float32").reshape(rows, 3)
        out = vm["main"]((tvm.nd.array(x), tvm.nd.array(np.zeros(2, "float32"))))
        np.testing.assert_allclose(out[0].numpy(), x.sum(axis=0))
        np.testing.assert_array_equal(out[1].numpy(), [rows, 3])


@pytest.mark.parametrize(
    "arg, match",
    [
        (lambda: (np.zeros((4, 5), "float32"), np.zeros(2, "float32")), r"s\[0\]"),
        (lambda: (np.zeros((4, 3), "float32"), np.zeros(3, "float32")), r"s\[1\]"),
        (lambda: (np.zeros((4, 3), "float64"), np.zeros(2, "float32")), r"s\[0\]"),
        (lambda: (np.zeros((4, 3), "float32"),), r"argument 's'.*tuple of 2 items, got 1"),
        (lambda: np.zeros((4, 3), "float32"), r"argument 's'.*tuple of 2 items, got a"),
    ],
)
def test_a_tuple_argument_of_the_wrong_kind_length_or_item_is_refused_by_name(arg, match):
    vm = _vm()
    value = arg()
    value = (
        tvm.nd.array(value)
        if isinstance(value, np.ndarray)
        else tuple(tvm.nd.array(v) for v in value)
    )
    with pytest.raises(MiniTVMError, match=match):
        vm["main"](value)
