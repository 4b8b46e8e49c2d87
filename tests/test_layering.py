"""Imports go down the pipeline only (STYLE.md): a lower stage never imports a higher one."""

import ast
import pathlib

import pytest

PKG = pathlib.Path(__file__).resolve().parents[1] / "minitvm"

# Stage → the stages it must not import (higher ones). Top-level modules (driver, __init__,
# __main__) are the public surface and may import anything.
ORDER = ["ir", "arith", "tir", "te", "script", "target", "codegen", "runtime"]
# the graph level and the tuners sit above every stage checked here
_TOP = {"relax", "topi", "autodiff", "frontend", "tune", "meta_schedule", "autotvm", "dlight"}
FORBIDDEN = {
    "ir": {"arith", "tir", "te", "script", "codegen", "driver"} | _TOP,
    "arith": {"te", "script", "codegen", "runtime", "driver"} | _TOP,
    "tir": {"te", "script", "codegen", "driver"} | _TOP,
    "te": {"script", "codegen"} | _TOP,
    "codegen": {"te", "script", "driver"} | _TOP,
    "runtime": {"arith", "tir", "te", "script", "codegen", "driver"} | _TOP,
    "target": {"arith", "tir", "te", "script", "codegen", "driver"} | _TOP,
    # the default schedules sit above tir/te/topi and below relax (relax imports dlight)
    "dlight": {"script", "codegen", "driver", "relay", "cli"} | (_TOP - {"dlight", "topi"}),
}


def _imported_stages(path: pathlib.Path) -> set[tuple[str, int]]:
    tree = ast.parse(path.read_text())
    rel_pkg = path.relative_to(PKG).parts[:-1]
    found = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom):
            if n.level:  # relative import: resolve against the package path
                base = list(rel_pkg[: len(rel_pkg) - (n.level - 1)]) if n.level > 1 else list(rel_pkg)
                parts = base + (n.module.split(".") if n.module else [])
                if not n.module:
                    parts += [a.name for a in n.names][:1]
            elif n.module and n.module.startswith("minitvm."):
                parts = n.module.split(".")[1:]
            else:
                continue
            if parts:
                found.add((parts[0], n.lineno))
        elif isinstance(n, ast.Import):
            for a in n.names:
                if a.name.startswith("minitvm."):
                    found.add((a.name.split(".")[1], n.lineno))
    return found


@pytest.mark.parametrize("stage", sorted(FORBIDDEN))
def test_stage_does_not_import_higher_stage(stage):
    folder = PKG / stage
    if not folder.exists():
        pytest.skip(f"minitvm/{stage} not present")
    bad = []
    for path in folder.rglob("*.py"):
        for target, line in _imported_stages(path):
            if target in FORBIDDEN[stage]:
                bad.append(f"{path.relative_to(PKG)}:{line} imports minitvm.{target}")
    assert not bad, "imports against the pipeline direction:\n" + "\n".join(bad)
