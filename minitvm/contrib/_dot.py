"""Graphviz DOT text for the graph pictures (`relay_viz.dot`, `tedd`), and rendering it.

The DOT source is built here as plain text, so the pictures need nothing installed; only
turning the text into SVG/PDF/PNG needs Graphviz's `dot` program, looked up when asked for.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping

from ..error import ArgumentError, TVMError

_INSTALL_HINT = (
    "install Graphviz (e.g. `apt install graphviz` or `conda install graphviz`) so that `dot` "
    "is on PATH"
)


def quote(text: object) -> str:
    """`text` as a DOT double-quoted string; a newline becomes DOT's centred line break."""
    s = str(text).replace("\\", "\\\\").replace('"', '\\"')
    return '"' + s.replace("\r\n", "\n").replace("\n", "\\n") + '"'


def attr_list(attrs: Mapping[str, object] | None) -> str:
    """` [k="v" ...]` for a node/edge statement ('' when empty); an `<...>` value is HTML-like."""
    if not attrs:
        return ""
    parts = []
    for key, value in attrs.items():
        text = str(value)
        # an HTML-like label is written between angle brackets, unquoted (DOT's own rule)
        rendered = text if text.startswith("<") and text.endswith(">") else quote(text)
        parts.append(f"{key}={rendered}")
    return " [" + " ".join(parts) + "]"


def defaults(kind: str, attrs: Mapping[str, object] | None, indent: str) -> list[str]:
    """`graph [...]`, `node [...]` or `edge [...]` default-attribute lines (none when empty)."""
    return [f"{indent}{kind}{attr_list(attrs)}"] if attrs else []


def find_dot(engine: str = "dot") -> str | None:
    """The path of Graphviz's layout program `engine`, or None when it is not installed."""
    return shutil.which(engine)


def run_dot(source: str, fmt: str, engine: str = "dot", what: str = "rendering") -> bytes:
    """`source` laid out by Graphviz's `engine` into format `fmt` (bytes of the output)."""
    program = find_dot(engine)
    if program is None:
        raise TVMError(
            f"{what} needs Graphviz's `{engine}` program, which is not on PATH; {_INSTALL_HINT}, "
            "or use the DOT text itself (it needs nothing installed)"
        )
    done = subprocess.run(
        [program, f"-T{fmt}"], input=source.encode(), capture_output=True, check=False
    )
    if done.returncode != 0:
        raise TVMError(
            f"{what}: Graphviz `{engine} -T{fmt}` failed (exit {done.returncode}): "
            f"{done.stderr.decode(errors='replace').strip()}"
        )
    return done.stdout


def write_text(path: str | os.PathLike, text: str, what: str) -> str:
    """Write `text` to `path`; an unwritable path raises naming the argument."""
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as err:
        raise ArgumentError(f"{what}: cannot write {os.fspath(path)!r}: {err}") from err
    return os.fspath(path)


__all__ = ["attr_list", "defaults", "find_dot", "quote", "run_dot", "write_text"]
