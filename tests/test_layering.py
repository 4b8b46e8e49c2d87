"""Imports go down the pipeline only (STYLE.md, docs/architecture.md "Floors").

Every unit of the package (a top-level package or module of minitvm; tir is split into its
core and its analysis / transform / schedule layers) sits on one floor of `FLOORS`. A unit may
import units on lower floors, never a unit on its own floor or above, unless the edge is in
`ALLOWED` with the reason it must exist. The walk sees every import: module level, inside
functions, under `if TYPE_CHECKING:`, relative or absolute, and module paths written as strings
(`importlib.import_module("minitvm.x")`, the lazy tables of `_lazy.module_getattr`, loader
registries), so a cycle cannot hide in a function body or a string.
"""

from __future__ import annotations

import ast
import collections
import pathlib
import re

import pytest

PKG = pathlib.Path(__file__).resolve().parents[1] / "minitvm"

# Lowest floor first. Units on one floor are siblings: they must not import each other.
FLOORS: list[set[str]] = [
    {"error"},
    {"env", "_lazy", "_version", "instrument"},
    {"ir"},
    {"target"},
    {"runtime"},
    {"_ffi", "rpc"},  # rpc: sessions over runtime modules and arrays
    # the IR's nodes: expressions, statements, buffers, functions and their walkers
    {"tir"},
    {"arith"},  # simplifies and bounds tir expressions
    {"tir.packed", "tir.index_map"},  # need arith (offsets, iterator maps)
    {"tir.analysis"},
    {"tir.transform"},
    {"tir.schedule"},
    {"tir.printer", "tir.tensor_intrin"},
    {"tir.<facade>"},
    {"_convert", "container"},
    {"te"},
    {"topi", "codegen"},
    {"dlight", "driver"},
    {"relax"},
    {"script"},
    {"meta_schedule", "autodiff"},
    {"contrib", "autotvm"},
    {"relay"},
    # auto_scheduler: TVM's API over meta_schedule (+ relay); contrib.relay_viz draws relay's IR;
    # contrib.pipeline_executor_build builds each pipeline stage with relay.build
    {"testing", "auto_scheduler", "contrib.relay_viz", "contrib.pipeline_executor_build"},
    {"training"},
    {"cli", "exec"},  # exec: TVM's python -m tvm.exec.* entry points
    {"tirx", "s_tir", "ffi", "driver.tvmc"},  # TVM 0.22-0.24 names; driver.tvmc: over cli
    {"train", "<facade>", "__main__"},
]

# tir's core is everything in tir/ that is not listed here; these modules and subpackages sit
# higher (see FLOORS). A package's __init__ that only re-exports is its facade (its own unit).
TIR_UNITS = {"packed", "index_map", "analysis", "transform", "schedule", "printer", "tensor_intrin"}

# (importer unit, imported unit) -> why the upward edge must exist. Each is loaded on first use.
ALLOWED: dict[tuple[str, str], str] = {
    ("ir", "tir.<facade>"): "tvm.ir.Range is TVM's spelling; the node holds PrimExprs so it "
    "lives in tir and ir's lazy table loads it on first use",
    ("runtime", "_convert"): "tvm.runtime.convert is TVM's spelling; converting Python values "
    "to IR needs ir and tir, loaded on first use",
    ("_lazy", "relax"): "load_module meets a relax.Executable file: the loader of that format "
    "registers itself when its module is imported (LOADER_MODULES)",
    ("_lazy", "contrib"): "load_module meets a relay.GraphExecutorFactory file: as above",
    ("runtime", "relax"): "tvm.runtime.relax_vm.VirtualMachine is TVM's older spelling of the "
    "relax VM; runtime/relax_vm.py's lazy table loads it on first use",
    ("tir", "tir.packed"): "Buffer.access_ptr is TVM's method; the address arithmetic it builds "
    "is simplified by arith, which sits above tir's nodes",
    ("tir.<facade>", "driver"): "tvm.tir.build (tvm.tirx.build in TVM 0.24) is TVM's spelling "
    "of the driver's build of a PrimFunc",
    ("relax", "meta_schedule"): "relax.transform.MetaScheduleApplyDatabase / "
    "MetaScheduleTuneIRMod are TVM's names for passes whose work is meta_schedule's",
}


def _unit(parts: list[str]) -> str:
    """The unit of module path `parts` (relative to minitvm/, '.py' stripped)."""
    if not parts or parts == ["__init__"]:
        return "<facade>"
    if parts[0] == "tir" and len(parts) > 1:
        if parts[1] == "__init__":
            return "tir.<facade>"
        return f"tir.{parts[1]}" if parts[1] in TIR_UNITS else "tir"
    if parts[0] == "tir":
        return "tir.<facade>"
    if parts[:2] == ["driver", "tvmc"]:  # TVM's spelling of a front end onto the cli
        return "driver.tvmc"
    if parts[:2] == ["contrib", "relay_viz"]:  # TVM's spelling of a picture of relay's IR
        return "contrib.relay_viz"
    if parts[:2] == ["contrib", "pipeline_executor_build"]:  # TVM's spelling: stages via relay
        return "contrib.pipeline_executor_build"
    return parts[0]


def _is_module(parts: list[str]) -> bool:
    p = PKG.joinpath(*parts) if parts else PKG
    return bool(parts) and ((p / "__init__.py").exists() or p.with_suffix(".py").exists())


def _module_of(parts: list[str]) -> list[str]:
    """The longest prefix of `parts` that is a module (the rest are attribute names); a package
    path stands for its __init__."""
    out: list[str] = []
    for x in parts:
        if _is_module([*out, x]):
            out.append(x)
        else:
            break
    if not out or (PKG.joinpath(*out) / "__init__.py").exists():
        return [*out, "__init__"]
    return out


_MODULE_STRING = re.compile(r"^minitvm(\.[A-Za-z_]\w*)+(:[A-Za-z_]\w*)?$")


def _targets(rel: list[str], text: str) -> list[tuple[list[str], int]]:
    """The modules that the module at `rel` (path parts under minitvm/) with source `text`
    imports, with line numbers."""
    pkg = rel[:-1]
    found = []
    for n in ast.walk(ast.parse(text)):
        if isinstance(n, ast.ImportFrom):
            if n.level:
                assert n.level - 1 <= len(pkg), f"{rel}:{n.lineno} imports above the package"
                base = pkg[: len(pkg) - (n.level - 1)]
            elif n.module == "minitvm" or (n.module or "").startswith("minitvm."):
                base = []
                n_module = n.module.split(".", 1)[1] if "." in n.module else None
                mod = n_module.split(".") if n_module else []
                found += [(_module_of([*mod, a.name]), n.lineno) for a in n.names]
                continue
            else:
                continue
            mod = [*base, *(n.module.split(".") if n.module else [])]
            found += [(_module_of([*mod, a.name]), n.lineno) for a in n.names]
        elif isinstance(n, ast.Import):
            for a in n.names:
                if a.name == "minitvm" or a.name.startswith("minitvm."):
                    found.append((_module_of(a.name.split(".")[1:]), n.lineno))
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and _MODULE_STRING.match(n.value):
            parts = n.value.partition(":")[0].split(".")[1:]
            if _is_module(parts):  # "minitvm.json" (a format tag) is no module path
                found.append((_module_of(parts), n.lineno))
    return found


def _edges() -> dict[tuple[str, str], list[str]]:
    edges: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
    for path in sorted(PKG.rglob("*.py")):
        rel = list(path.relative_to(PKG).with_suffix("").parts)
        src = _unit(rel)
        for target, line in _targets(rel, path.read_text()):
            dst = _unit(target)
            if dst != src:
                edges[(src, dst)].append(f"{path.relative_to(PKG)}:{line}")
    return edges


def _floor() -> dict[str, int]:
    floor = {}
    for level, units in enumerate(FLOORS):
        for u in units:
            assert u not in floor, f"{u} is on two floors"
            floor[u] = level
    return floor


def test_every_unit_has_a_floor():
    floor = _floor()
    units = {_unit(list(p.relative_to(PKG).with_suffix("").parts)) for p in PKG.rglob("*.py")}
    missing = sorted(units - set(floor))
    assert not missing, f"add these units of minitvm/ to FLOORS in {__file__}: {missing}"


def test_imports_go_down():
    floor = _floor()
    bad = []
    for (src, dst), where in sorted(_edges().items()):
        if src not in floor or dst not in floor:
            continue  # test_every_unit_has_a_floor names it
        if floor[dst] < floor[src] or (src, dst) in ALLOWED:
            continue
        bad.append(f"{src} (floor {floor[src]}) -> {dst} (floor {floor[dst]}): {', '.join(where[:4])}")
    assert not bad, "imports against the floors (move the shared piece down, or pass a callback up):\n" + "\n".join(bad)


def test_allowed_edges_exist():
    """An exception that no longer happens is removed from ALLOWED, so the list stays honest."""
    edges = _edges()
    stale = sorted(k for k in ALLOWED if k not in edges)
    assert not stale, f"remove from ALLOWED (no such import any more): {stale}"


@pytest.mark.parametrize(
    "source, expected",
    [
        ("def f():\n    from ..relax import op\n", ("relax", "op", "__init__")),
        ("if TYPE_CHECKING:\n    from minitvm.relay.expr import Var\n", ("relay", "expr")),
        ("import importlib\nimportlib.import_module('minitvm.relax.vm')\n", ("relax", "vm", "__init__")),
        ("T = {'x': 'minitvm.autotvm.record:load_from_file'}\n", ("autotvm", "record")),
    ],
)
def test_walk_sees_hidden_imports(source, expected):
    """The walker finds imports in function bodies, under TYPE_CHECKING and in strings."""
    got = [tuple(t) for t, _ in _targets(["ir", "probe"], source)]
    assert expected in got, got


def test_architecture_doc_shows_the_floors():
    """docs/architecture.md's floor block is this file's FLOORS, so the picture cannot drift."""
    doc = (PKG.parent / "docs" / "architecture.md").read_text()
    marker = "<!-- floors: generated from tests/test_layering.py FLOORS -->\n```\n"
    assert marker in doc, "docs/architecture.md lost its floors block"
    block = doc.split(marker, 1)[1].split("```", 1)[0].strip().splitlines()
    expected = [
        f"{i:>2}  " + ", ".join(sorted(units)) for i, units in reversed(list(enumerate(FLOORS)))
    ]
    assert [line.rstrip() for line in block] == expected, (
        "update the floors block in docs/architecture.md to:\n" + "\n".join(expected)
    )
