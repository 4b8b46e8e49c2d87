"""docs/compatibility.md cannot drift: every name it marks as working resolves, every alias is the
same object as the name it aliases, every name marked "not yet" is really missing, and every name
marked "refused" exists and raises a minitvm error naming what it cannot do."""

import importlib
import pathlib
import re
import warnings

import pytest

import minitvm

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "compatibility.md"
ROW = re.compile(r"^\| `(?P<name>(?:tvm|topi)[\w.]*)` \| (?P<status>[a-z ]+) \| (?P<notes>.*)\|$")
STATUSES = {"same", "alias", "deprecated alias", "not yet", "refused"}
_MISSING = object()


def _rows() -> list[tuple[str, str, str]]:
    rows = []
    for line in DOC.read_text().splitlines():
        m = ROW.match(line.strip())
        if m:
            rows.append((m["name"], m["status"].strip(), m["notes"].strip()))
    return rows


def resolve(name: str):
    """The object `name` (tvm.x.y / topi.x) names in minitvm, importing submodules as needed."""
    head, *rest = name.split(".")
    obj, path = (minitvm, "minitvm") if head == "tvm" else (minitvm.topi, "minitvm.topi")
    for part in rest:
        path = f"{path}.{part}"
        try:
            obj = getattr(obj, part)
        except AttributeError:
            try:
                obj = importlib.import_module(path)
            except ImportError:
                return _MISSING
    return obj


ROWS = _rows()


def test_the_table_is_read_and_uses_known_statuses():
    assert len(ROWS) > 60
    assert {status for _, status, _ in ROWS} <= STATUSES


@pytest.mark.parametrize("name,status,notes", ROWS, ids=[r[0] for r in ROWS])
def test_each_name_has_the_status_the_table_gives(name, status, notes):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        obj = resolve(name)
    if status == "not yet":
        assert obj is _MISSING, f"{name} now exists: mark it 'same' or 'alias' in {DOC.name}"
        return
    if status == "refused":  # the name exists so that a call says clearly why it cannot run
        from minitvm.error import MiniTVMError

        assert callable(obj), f"{name} is marked 'refused' but is not callable"
        import inspect

        required = [
            p for p in inspect.signature(obj).parameters.values()
            if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]  # fmt: skip
        with pytest.raises(MiniTVMError):
            obj(*[None] * len(required))
        return
    assert obj is not _MISSING, f"{DOC.name} says {name} is {status!r}, but it does not resolve"
    target = re.match(r"`((?:tvm|topi)\.[\w.]+)`", notes)
    if status == "alias" and target:
        assert obj is resolve(target[1]), f"{name} should be the same object as {target[1]}"


def test_deprecated_aliases_warn_naming_the_modern_spelling():
    with pytest.warns(DeprecationWarning, match="TensorStructInfo"):
        minitvm.relax.DynTensorType(2, "float32")
