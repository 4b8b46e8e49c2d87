"""`tvm.script.highlight`: print TVMScript with syntax colours (Pygments, when installed) and
optionally reformatted (ruff or black)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import warnings
from typing import Any

# TVM's three style names, as Pygments styles (None: the terminal's 16 ANSI colours)
_STYLES = {"light": "default", "dark": "monokai", "ansi": None}


def cprint(printable: Any, style: str | None = None, black_format: bool = False) -> None:
    """Print `printable` (a string, or an object with a `script()` method) as highlighted
    TVMScript; `style` is "light", "dark", "ansi" or a Pygments style name (None: plain text).

    >>> cprint(mod, style="ansi")
    """
    script = getattr(printable, "script", None)
    if callable(script):
        text = script()
    elif isinstance(printable, str):
        text = printable
    else:
        raise TypeError(
            f"cprint prints strings or objects with a script() method, got {type(printable).__name__}"
        )
    if black_format:
        text = _format(text)
    print(_highlight(text, style))


def _highlight(text: str, style: str | None) -> str:
    if style is None:
        return text
    try:
        from pygments import highlight
        from pygments.formatters import Terminal256Formatter, TerminalFormatter
        from pygments.lexers.python import PythonLexer
    except ImportError:  # colours are optional: the text is the same
        return text
    name = _STYLES.get(style, style)
    formatter = TerminalFormatter() if name is None else Terminal256Formatter(style=name)
    return highlight(text, PythonLexer(), formatter).rstrip("\n")


def _format(code: str, formatter: str = "ruff") -> str:
    """`code` reformatted by `formatter` ("ruff" or "black"); ValueError when it is not Python."""
    if formatter == "black":
        import black

        return black.format_str(code, mode=black.FileMode())
    if formatter != "ruff":
        raise ValueError(f'_format: formatter must be "ruff" or "black", got {formatter!r}')
    if importlib.util.find_spec("ruff") is None:  # as TVM does without black: warn, print as is
        warnings.warn(
            "cprint(black_format=True): ruff is not installed (pip install ruff), so the "
            "script is printed unformatted",
            stacklevel=3,
        )
        return code
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--stdin-filename=TVMScript.py", "-"],
        input=code,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise ValueError(f"ruff cannot format this code: {proc.stderr.strip()}")
    return proc.stdout


__all__ = ["cprint"]
