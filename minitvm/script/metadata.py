"""Reads the `metadata = \"\"\"<json>\"\"\"` section that the relax printer appends for constants
too large (or not exact) as literals: `metadata["relax.expr.Constant"][i]` in the script names
the i-th entry. The section is JSON with base64 little-endian bytes; nothing in it is executed."""

from __future__ import annotations

import ast
import base64
import binascii
import json
from typing import Any

import numpy as np

from ..error import ParseError
from .tir_types import NUMERIC_DTYPES

META_NAME = "metadata"
META_KEY = "relax.expr.Constant"
_DTYPES = frozenset([*NUMERIC_DTYPES, "bool"])


def find_metadata(tree: ast.Module, filename: str) -> dict[str, Any] | None:
    """The decoded section of a script (a top-level `metadata = "..."`), or None."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [
            META_NAME
        ]:
            if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
                raise ParseError(
                    f"{filename}:{node.lineno}: the metadata section must be a string literal "
                    'holding JSON (metadata = """{...}"""), as script() prints it'
                )
            return decode_metadata(node.value.value, f"{filename}:{node.lineno}")
    return None


def decode_metadata(text: str, where: str) -> dict[str, Any]:
    """{"relax.expr.Constant": [Constant, ...]} from the section's JSON text."""
    try:
        table = json.loads(text)
        rows = table[META_KEY]
    except (ValueError, KeyError, TypeError) as err:
        raise ParseError(
            f"{where}: the metadata section is not JSON with a {META_KEY!r} list ({err}); "
            "re-print the module with script() instead of editing the section"
        ) from err
    return {META_KEY: [_constant(row, f"{where}: {META_KEY}[{i}]") for i, row in enumerate(rows)]}


def _constant(row: Any, where: str) -> Any:
    from ..relax.expr import Constant

    try:
        dtype, shape, data = row["dtype"], tuple(int(d) for d in row["shape"]), row["data"]
        raw = base64.b64decode(data, validate=True)
    except (KeyError, TypeError, ValueError, binascii.Error) as err:
        raise ParseError(f"{where} needs dtype, shape and base64 data ({err})") from err
    if dtype not in _DTYPES:
        raise ParseError(f"{where} has dtype {dtype!r}; expected one of {sorted(_DTYPES)}")
    wire = np.dtype(dtype).newbyteorder("<")
    count = int(np.prod(shape, dtype=np.int64))
    if any(d < 0 for d in shape) or len(raw) != count * wire.itemsize:
        raise ParseError(
            f"{where}: {len(raw)} bytes of data do not fill shape {shape} of {dtype} "
            f"({count * wire.itemsize} bytes)"
        )
    array = np.frombuffer(raw, dtype=wire).astype(dtype).reshape(shape)
    return Constant(array)
