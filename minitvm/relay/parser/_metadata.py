"""The `#[metadata]` section minitvm's printer writes: one comment line per constant,

    # relay.Constant[0]: Tensor[(2, 3), float32] = [[1, 2, 3], [4, 5, 6]]

read back without eval: the array text is split into brackets, commas and scalars, and the
nesting is rebuilt with an explicit stack. TVM's JSON metadata is not read (pass the constants
as `init_meta_table` instead).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from ..expr import Constant
from ..ty import TensorType

_LINE = re.compile(r"#\s*relay\.Constant\[(\d+)\]\s*:\s*(.*?)\s*=\s*(\[.*\]|[^\[\]]+)\s*$")
_PIECE = re.compile(r"\[|\]|,|[^\s\[\],]+")
_WORDS = {"True": True, "False": False}


def read_metadata(text: str, parse_type: Callable[[str], object], fail: Callable) -> dict:
    """{"relay.Constant": [Constant, ...]} from the section's text (after `#[metadata]`).

    `parse_type(text)` parses a type; `fail(line_offset, message)` makes the error to raise.
    """
    constants: list[Constant] = []
    for offset, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        m = _LINE.match(line.strip())
        if m is None:
            hint = " (TVM's JSON metadata is not read; pass init_meta_table)" if "{" in line else ""
            raise fail(offset, f"cannot read this metadata line{hint}")
        index, type_text, array_text = int(m.group(1)), m.group(2), m.group(3)
        if index != len(constants):
            raise fail(
                offset, f"metadata constant {index} is out of order (expected {len(constants)})"
            )
        ty = parse_type(type_text)
        if not isinstance(ty, TensorType) or not all(isinstance(d, int) for d in ty.shape):
            raise fail(offset, "a metadata constant needs a static Tensor[...] type")
        values = _read_array(array_text, offset, fail)
        try:
            array = np.array(values, dtype=ty.dtype)
        except (ValueError, TypeError, OverflowError) as err:
            raise fail(offset, f"metadata values do not fit {ty.dtype}: {err}") from err
        if array.shape != tuple(ty.shape):
            raise fail(
                offset, f"metadata values have shape {array.shape}, the type says {ty.shape}"
            )
        constants.append(Constant(array))
    return {"relay.Constant": constants} if constants else {}


def _read_array(text: str, offset: int, fail: Callable) -> object:
    """Nested lists of Python scalars from numpy's printed form (no eval, no recursion)."""
    stack: list[list] = [[]]
    for piece in _PIECE.findall(text):
        if piece == "[":
            stack.append([])
        elif piece == "]":
            if len(stack) < 2:
                raise fail(offset, "unbalanced ] in metadata values")
            done = stack.pop()
            stack[-1].append(done)
        elif piece == ",":
            continue
        elif piece == "...":
            raise fail(
                offset,
                "the metadata elides values (...); pass the constant in init_meta_table instead",
            )
        else:
            stack[-1].append(_scalar(piece, offset, fail))
    if len(stack) != 1 or len(stack[0]) != 1:
        raise fail(offset, "malformed metadata values")
    return stack[0][0]


def _scalar(piece: str, offset: int, fail: Callable) -> object:
    if piece in _WORDS:
        return _WORDS[piece]
    try:
        return int(piece)
    except ValueError:
        pass
    try:
        return float(piece)
    except ValueError:
        raise fail(offset, f"`{piece}` is not a number") from None
