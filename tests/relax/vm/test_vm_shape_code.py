"""Shape expressions of a VM program may come from a loaded file: only integer arithmetic over
heap slots compiles; anything else is a RuntimeError_ before it is compiled."""

import pytest

from minitvm.error import RuntimeError_
from minitvm.relax.vm._shape_code import compile_shape_fn


def test_integer_arithmetic_over_heap_slots_compiles_and_evaluates():
    fn = compile_shape_fn(["h[0] * 2", "max(h[1], 3) // 2", "7", "-h[0] % 5"], "f")
    assert fn([4, 10]) == (8, 5, 7, (-4) % 5)


@pytest.mark.parametrize(
    "text",
    [
        "(0,) * 99999999999999",  # a memory bomb built from allowed-looking pieces
        "h[0:5]",
        "(lambda h: 1)(0)",
        "h[0] ** 99",
        "__import__('os')",
        "h.__class__",
        "min(h[0])",
        "'a' * 3",
        "2 ** 64",
        "h[-1]",
    ],
)
def test_anything_else_is_refused(text):
    with pytest.raises(RuntimeError_, match="not plain integer arithmetic|malformed"):
        compile_shape_fn([text], "f")
