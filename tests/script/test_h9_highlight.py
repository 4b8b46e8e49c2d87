"""tvm.script.highlight: cprint prints scripts plainly or in colour; _format reformats."""

import pytest

from minitvm.script import tir as T
from minitvm.script.highlight import _format, cprint


@T.prim_func
def _zero(A: T.Buffer((4,), "float32")):
    A[0] = T.float32(0)


def test_cprint_prints_scripts_and_strings(capsys):
    cprint(_zero)
    assert capsys.readouterr().out == _zero.script() + "\n"
    cprint("a + 1", style="dark")
    out = capsys.readouterr().out
    assert "\x1b[" in out and "a" in out  # ANSI colour codes around the text
    cprint("a + 1", style="ansi")
    assert "\x1b[" in capsys.readouterr().out


def test_cprint_refuses_objects_without_a_script():
    with pytest.raises(TypeError, match="script"):
        cprint(object())


def test_format_with_ruff_and_its_errors():
    pytest.importorskip("ruff", reason="ruff is not installed: cprint(black_format=True) warns")
    assert _format("x=( 1+2 )\n") == "x = 1 + 2\n"
    with pytest.raises(ValueError, match="ruff cannot format"):
        _format("if (a == 1) { a +=1; }")


def test_format_without_ruff_warns_and_keeps_the_text(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ruff" else real(name, *a)
    )
    with pytest.warns(UserWarning, match="ruff is not installed"):
        assert _format("x=( 1+2 )\n") == "x=( 1+2 )\n"
