"""Compiled modules: load native code, call it through checked wrappers, time, export and load."""

from __future__ import annotations

import json
import statistics
import time
import zipfile
from dataclasses import dataclass
from importlib import metadata

import llvmlite.binding as llvm

from ..error import BuildError, MiniTVMError, RuntimeError_
from ..target import Target, emit_assembly, enabled_features, host_cpu_features, host_cpu_name
from . import threadpool
from .device import Device
from .packed_func import PackedFunc

_FORMAT = "minitvm-module"
_FORMAT_VERSION = 1
_OBJECT, _META, _LLVM_IR = "object.o", "meta.json", "module.ll"


@dataclass(frozen=True)
class CodegenResult:
    """What code generation hands the runtime (docs/contracts.md §4)."""

    object_code: bytes  # ELF object for the host, already optimised (O3)
    llvm_ir: str  # optimised LLVM IR text (get_source("ll"))
    func_infos: tuple  # FuncInfo dict per function, in definition order
    target: str  # e.g. "llvm -mcpu=sapphirerapids"


@dataclass(frozen=True)
class ProfileResult:
    """Timings from `time_evaluator`: `results` holds one mean per repeat, in seconds."""

    results: tuple[float, ...]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.results)

    @property
    def median(self) -> float:
        return statistics.median(self.results)

    @property
    def min(self) -> float:
        return min(self.results)

    @property
    def max(self) -> float:
        return max(self.results)

    @property
    def std(self) -> float:
        return statistics.pstdev(self.results)

    def __repr__(self) -> str:
        return (
            f"ProfileResult(mean={self.mean * 1e3:.4f} ms, median={self.median * 1e3:.4f} ms, "
            f"min={self.min * 1e3:.4f} ms, max={self.max * 1e3:.4f} ms, std={self.std * 1e3:.4f} ms)"
        )


def time_calls(run, number: int, repeat: int, min_repeat_ms: float) -> ProfileResult:
    """Time the no-argument callable `run` as TVM's time_evaluator does: one warm-up call, then
    `repeat` rounds of `number` calls (more when a round is shorter than `min_repeat_ms`)."""
    run()
    results, count = [], number
    for _ in range(repeat):
        while True:
            start = time.perf_counter()
            for _ in range(count):
                run()
            elapsed = time.perf_counter() - start
            if elapsed * 1e3 >= min_repeat_ms:
                break
            count = max(count * 2, int(count * min_repeat_ms / max(elapsed * 1e3, 1e-3)))
        results.append(elapsed / count)
    return ProfileResult(tuple(results))


class Module:
    """Native functions loaded from a CodegenResult; `mod(*args)` runs the entry function.

    >>> mod = tvm.build(s, [A, B, C], "llvm", name="add"); mod(a, b, c); mod["add"](a, b, c)
    """

    type_key = "llvm"

    def __init__(self, result: CodegenResult, entry_name: str | None = None) -> None:
        if not result.func_infos:
            raise BuildError("cannot make a Module with no functions")
        threadpool.ensure_pool()  # its symbols must exist before the object is linked
        self._result = result
        self.target = Target(result.target)
        self._engine = llvm.create_mcjit_compiler(
            llvm.parse_assembly(""), self.target.new_target_machine()
        )
        self._engine.add_object_file(llvm.ObjectFileRef.from_data(result.object_code))
        self._engine.finalize_object()
        self._functions = {info["name"]: self._load(info) for info in result.func_infos}
        names = list(self._functions)
        if entry_name is not None and entry_name not in self._functions:
            raise BuildError(f"entry function '{entry_name}' is not in the module; it has {names}")
        self.entry_name = entry_name or ("main" if "main" in self._functions else names[0])
        self.imported_modules: list = []

    @classmethod
    def from_codegen(cls, result: CodegenResult, entry_name: str | None = None) -> Module:
        return cls(result, entry_name)

    def _load(self, info: dict) -> PackedFunc:
        address = self._engine.get_function_address(info.get("symbol", info["name"]))
        if not address:
            raise BuildError(f"the object code has no function '{info['name']}'")
        return PackedFunc(info, address, keepalive=self._engine)

    # --- calling -------------------------------------------------------------------------
    def get_function(self, name: str, query_imports: bool = False) -> PackedFunc:
        """The checked callable for `name`."""
        try:
            return self._functions[name]
        except KeyError:
            raise MiniTVMError(
                f"module has no function '{name}'; it has {sorted(self._functions)}"
            ) from None

    __getitem__ = get_function

    def implements_function(self, name: str, query_imports: bool = False) -> bool:
        return name in self._functions

    def __contains__(self, name: str) -> bool:
        return name in self._functions

    def __call__(self, *args) -> None:
        self._functions[self.entry_name](*args)

    @property
    def func_infos(self) -> tuple:
        return self._result.func_infos

    # --- inspecting ----------------------------------------------------------------------
    def get_source(self, fmt: str = "") -> str:
        """Optimised LLVM IR ("ll", "llvm" or "") or assembly ("asm", "s")."""
        if fmt in ("", "ll", "llvm"):
            return self._result.llvm_ir
        if fmt in ("asm", "s"):
            return emit_assembly(self._result.llvm_ir, self.target)
        raise MiniTVMError(f"get_source: unknown format '{fmt}'; use 'll' or 'asm'")

    def time_evaluator(
        self,
        func_name: str,
        dev: Device | None = None,
        number: int = 10,
        repeat: int = 1,
        min_repeat_ms: float = 0,
        **unused_options,
    ):
        """A callable that times `func_name` on given args: one warm-up call, then `repeat`
        rounds of `number` calls (more when a round is shorter than `min_repeat_ms`)."""
        func = self.get_function(func_name)
        if dev is not None:
            dev.check_available()
        if number < 1 or repeat < 1:
            raise MiniTVMError(
                f"time_evaluator: number and repeat must be >= 1, got {number}, {repeat}"
            )

        def evaluator(*args) -> ProfileResult:
            return time_calls(func.bind(*args), number, repeat, min_repeat_ms)

        return evaluator

    # --- export / load -------------------------------------------------------------------
    def export_library(self, file_name: str, fcompile=None, **unused_options) -> None:
        """Write one file (a zip of the object code and meta.json) that `load_module` reads."""
        write_module_zip(file_name, self)

    save = export_library

    def __repr__(self) -> str:
        return f"Module(target='{self.target}', functions={list(self._functions)})"


def write_module_zip(
    file_name: str, module: Module | None, kind: str = "module", extra: dict | None = None
) -> None:
    """Write the export zip: meta.json (with `kind`), the module's object code and LLVM IR
    (when there is a module), and `extra` entries (name -> bytes) that a loader of `kind` reads."""
    meta = {
        "format": _FORMAT,
        "format_version": _FORMAT_VERSION,
        "kind": kind,
        "minitvm_version": metadata.version("minitvm"),
        "host_cpu": host_cpu_name(),
        "host_features": host_cpu_features(),
        "required_features": [],
    }
    if module is not None:
        meta.update(
            target=str(module.target),
            required_features=sorted(enabled_features(module.target.features)),
            entry_name=module.entry_name,
            func_infos=list(module._result.func_infos),
        )
    with zipfile.ZipFile(file_name, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(_META, json.dumps(meta, indent=1))
        if module is not None:
            zf.writestr(_OBJECT, module._result.object_code)
            zf.writestr(_LLVM_IR, module._result.llvm_ir)
        for name, data in (extra or {}).items():
            zf.writestr(name, data)


# kind (meta.json "kind") -> loader(path, zipfile, meta). Higher layers register theirs
# (relax registers "relax.Executable"); the runtime never imports them.
_LOADERS: dict = {}


def register_loader(kind: str, loader) -> None:
    """Make `load_module` hand files whose meta.json says `kind` to `loader(path, zf, meta)`."""
    _LOADERS[kind] = loader


def read_native_module(path: str, zf: zipfile.ZipFile, meta: dict) -> Module | None:
    """The native Module stored in an export zip (None when the zip holds no object code)."""
    if _OBJECT not in zf.namelist():
        return None
    _check_host_features(path, meta)
    result = CodegenResult(
        zf.read(_OBJECT), zf.read(_LLVM_IR).decode(), tuple(meta["func_infos"]), meta["target"]
    )
    return Module(result, meta["entry_name"])


def load_module(path: str, fmt: str = ""):
    """Load a file written by `export_library` (no compiling, no C compiler); a relax
    Executable's file gives back the Executable."""
    try:
        with zipfile.ZipFile(path) as zf:
            meta = json.loads(zf.read(_META))
            if meta.get("format") != _FORMAT or meta.get("format_version") != _FORMAT_VERSION:
                raise RuntimeError_(
                    f"load_module('{path}'): format {meta.get('format')!r} version "
                    f"{meta.get('format_version')!r}; this minitvm reads {_FORMAT!r} version "
                    f"{_FORMAT_VERSION}"
                )
            kind = meta.get("kind", "module")
            if kind != "module":
                if kind not in _LOADERS:
                    raise RuntimeError_(
                        f"load_module('{path}'): the file holds a {kind!r}, whose loader is not "
                        f"registered; import the package that defines it first (for "
                        f"'relax.Executable': import minitvm.relax)"
                    )
                return _LOADERS[kind](path, zf, meta)
            module = read_native_module(path, zf, meta)
    except (zipfile.BadZipFile, KeyError, ValueError) as err:
        raise RuntimeError_(
            f"load_module('{path}'): not a minitvm module (a zip with {_META} and {_OBJECT} "
            "written by export_library)"
        ) from err
    if module is None:
        raise RuntimeError_(f"load_module('{path}'): the file has no {_OBJECT}")
    return module


def _check_host_features(path: str, meta: dict) -> None:
    missing = set(meta["required_features"]) - enabled_features(host_cpu_features())
    if missing:
        raise RuntimeError_(
            f"load_module('{path}'): the code was compiled for '{meta['target']}' on a "
            f"{meta['host_cpu']} CPU and needs CPU features this machine lacks: "
            f"{', '.join(sorted(missing))}. Rebuild it here (target 'llvm')."
        )
