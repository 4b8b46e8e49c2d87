"""The TIR parser refuses what TVM's refuses: a block axis, a block header (T.reads, T.writes,
T.where, T.block_attr, T.init) or a buffer name given twice in one scope, and a block axis
with a non-integer domain. Each error points at the second definition."""

import textwrap

import pytest

from minitvm.error import ParseError
from minitvm.ir import structural_equal
from minitvm.script import from_source

_HEAD = "from minitvm.script import tir as T\n\n@T.prim_func\ndef f():\n"


def _parse(body: str):
    return from_source(_HEAD + textwrap.indent(textwrap.dedent(body), "    "))


@pytest.mark.parametrize(
    "body,message",
    [
        (
            """
            for i, j in T.grid(16, 16):
                with T.block():
                    vi = T.axis.S(16, i)
                    vi = T.axis.S(16, j)
                    T.evaluate(0)
            """,
            "block axis 'vi' is defined twice",
        ),
        (
            """
            for i, j in T.grid(16, 16):
                with T.block():
                    vi, vi = T.axis.remap("SS", [i, j])
                    T.evaluate(0)
            """,
            "block axis 'vi' is defined twice",
        ),
        (
            """
            A = T.alloc_buffer((8,), "float32")
            for i in range(8):
                with T.block():
                    vi = T.axis.remap("S", [i])
                    T.reads(A[0:4])
                    T.reads(A[0:8])
                    T.evaluate(0)
            """,
            r"T.reads\(...\) is given twice",
        ),
        (
            """
            for i in range(8):
                with T.block():
                    vi = T.axis.remap("S", [i])
                    T.where(i < 4)
                    T.where(i < 2)
                    T.evaluate(0)
            """,
            r"T.where\(...\) is given twice",
        ),
        (
            """
            A = T.alloc_buffer((8,), "float32")
            for i in range(8):
                with T.block():
                    vi = T.axis.remap("S", [i])
                    with T.init():
                        A[vi] = T.float32(0)
                    with T.init():
                        A[vi] = T.float32(1)
                    A[vi] = A[vi] + T.float32(1)
            """,
            r"T.init\(\) is given twice",
        ),
        (
            """
            A = T.alloc_buffer((8,), "float32")
            A = T.alloc_buffer((8,), "float32")
            """,
            "buffer 'A' is defined twice",
        ),
        (
            """
            with T.block():
                i = T.axis.S(0.5, 0.5)
                T.evaluate(0)
            """,
            "block axis 'i' has a float32 domain",
        ),
    ],
)
def test_duplicate_or_ill_typed_definition_is_refused(body, message):
    with pytest.raises(ParseError, match=message):
        _parse(body)


def test_distinct_axes_headers_and_buffers_still_parse():
    func = _parse(
        """
        A = T.alloc_buffer((8, 8), "float32")
        B = T.alloc_buffer((8, 8), "float32")
        for i, j in T.grid(8, 8):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(A[vi, vj])
                T.writes(B[vi, vj])
                T.where(i < 8)
                T.block_attr({"k": 1})
                B[vi, vj] = A[vi, vj]
        """
    )
    text = func.script()
    assert "T.where(i < 8)" in text and 'T.block_attr({"k": 1})' in text
    assert structural_equal(from_source(text), func)  # and it prints back to the same function
