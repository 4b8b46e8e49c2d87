"""Executable: what `relax.build` returns — the native module of all kernels, the VM program
(JSON) and the constants. `export_library` writes one zip (object code, program.json,
constants as .npy, no pickle) that `tvm.runtime.load_module` / `load_executable` read back."""

from __future__ import annotations

import io
import json
import math
import tokenize
import zipfile
from typing import Any

import numpy as np

from ...error import RuntimeError_
from ...runtime import module as _rt_module
from ...runtime.device_module import _META as _DEVICE_META
from ...runtime.device_module import _SOURCE as _DEVICE_SOURCE
from ...runtime.device_module import DeviceModule, _load_device_module
from ._shape_code import compile_shape_fn
from .verify import kernel_infos, verify_program

KIND = "relax.Executable"
_PROGRAM = "program.json"
_CONST_DIR = "constants/"


class Executable:
    """A built relax module: run it with `relax.VirtualMachine(ex, tvm.cpu())`."""

    def __init__(self, mod: Any, program: dict, constants: list[np.ndarray]) -> None:
        self._kernels = mod
        self.program = program
        self.constants = list(constants)

    @property
    def mod(self) -> Any:
        """The runtime.Module of the compiled kernels (None when there are none); TVM's
        `ex.mod`, so `ex.mod.time_evaluator(kernel_name, dev)` times one kernel."""
        return self._kernels

    # ------------------------------------------------------------------ inspecting
    @property
    def function_names(self) -> list[str]:
        return list(self.program["functions"])

    def memory_stats(self, func_name: str = "main", **dims: int) -> dict:
        """Bytes of intermediates of `func_name`: `intermediate_bytes` (each one allocated on its
        own, i.e. no planning) and `allocated_bytes` (what the VM allocates with the plan).
        Symbolic dims are given by name (`ex.memory_stats("main", n=64)`)."""
        prog = self._function(func_name)
        st = prog["stats"]
        missing = [d for d in prog["dims"] if d not in dims]
        heap = [dims.get(d, 0) for d in prog["dims"]]
        out = {k: st[k] for k in ("num_intermediates", "num_outputs", "num_storages", "planned")}
        for key in ("intermediate_bytes", "allocated_bytes"):
            text = st[key]
            if missing and "h[" in text:
                out[key] = _named(text, prog["dims"])
            else:
                out[key] = compile_shape_fn([text], f"{func_name} stats")(heap)[0]
        return out

    def stats(self) -> str:
        """A summary: kernels, constants, and per function its instructions and memory."""
        kernels = len(self.mod.func_infos) if self.mod is not None else 0
        head = (
            f"relax Executable: {len(self.program['functions'])} function(s), {kernels} "
            f"kernel(s), {len(self.constants)} constant(s) "
            f"({sum(a.nbytes for a in self.constants)} bytes)"
        )
        lines = [head]
        for name, prog in self.program["functions"].items():
            st = prog["stats"]
            try:
                mem = self.memory_stats(name)
                planned, unplanned = mem["allocated_bytes"], mem["intermediate_bytes"]
            except IndexError:
                planned, unplanned = st["allocated_bytes"], st["intermediate_bytes"]
            lines.append(
                f"  {name}: {len(prog['code'])} instructions, {st['num_intermediates']} "
                f"intermediate tensor(s) in {st['num_storages']} planned storage(s); "
                f"planned bytes {planned}, unplanned bytes {unplanned}"
            )
        return "\n".join(lines)

    def as_text(self) -> str:
        """The VM program, one instruction per line."""
        out = []
        for name, prog in self.program["functions"].items():
            out.append(
                f"function {name}({', '.join(prog['params'])})  "
                f"# regs={prog['num_regs']} dims={prog['dims']}"
            )
            for pc, ins in enumerate(prog["code"]):
                args = ", ".join(json.dumps(a) for a in ins[1:])
                out.append(f"  {pc:>4}: {ins[0]} {args}")
        return "\n".join(out)

    _MODULE_FUNCTIONS = ("stats", "as_text")

    def __getitem__(self, name: str) -> Any:
        """TVM's module-function access to the executable's reports: `ex["stats"]()`,
        `ex["as_text"]()` (what a TVM runtime Module loaded from an exported library offers)."""
        from ...error import MiniTVMError

        if name not in self._MODULE_FUNCTIONS:
            raise MiniTVMError(
                f"the executable has no module function '{name}'; it has "
                f"{list(self._MODULE_FUNCTIONS)} (run relax functions through "
                "relax.VirtualMachine(ex, dev)[name])"
            )
        return getattr(self, name)

    def _function(self, name: str) -> dict:
        from ...error import MiniTVMError

        try:
            return self.program["functions"][name]
        except KeyError:
            raise MiniTVMError(
                f"the executable has no relax function '{name}'; it has {self.function_names}"
            ) from None

    # ------------------------------------------------------------------ export / load
    def export_library(self, file_name: str, fcompile: Any = None, **unused_options: Any) -> None:
        """Write one zip file: object code, meta.json, program.json and constants/<i>.npy."""
        write_executable(self, file_name)

    save = export_library

    def __repr__(self) -> str:
        return f"<relax.Executable functions={self.function_names}>"


def write_executable(ex: Executable, file_name: str, extra: dict | None = None) -> None:
    """`ex.export_library(file_name)`, with `extra` members (name -> bytes) added to the zip
    (the compile cache stores its key so)."""
    members = {_PROGRAM: json.dumps(ex.program).encode()}
    for i, a in enumerate(ex.constants):
        buf = io.BytesIO()
        np.save(buf, a, allow_pickle=False)
        members[f"{_CONST_DIR}{i}.npy"] = buf.getvalue()
    native = ex.mod
    if isinstance(native, DeviceModule):  # GPU kernels travel as their JSON and source
        members.update(_device_members(native))
        native = None
    clash = set(members) & set(extra or {})
    assert not clash, clash
    members.update(extra or {})
    _rt_module.write_module_zip(file_name, native, kind=KIND, extra=members)


def _device_members(mod: DeviceModule) -> dict[str, bytes]:
    """The members of a GPU module's own export, written inside the executable's zip."""
    meta = {"kind": mod.kind, "target": mod.target, "entry": mod.entry_name,
            "kernels": mod._kernel_infos, "programs": mod._programs}  # fmt: skip
    return {
        _DEVICE_META: json.dumps(meta, sort_keys=True).encode(),
        _DEVICE_SOURCE: mod._source.encode(),
    }


def _named(text: str, names: list[str]) -> str:
    for k, n in enumerate(names):
        text = text.replace(f"h[{k}]", n)
    return text


def _load(path: str, zf: zipfile.ZipFile, meta: dict) -> Executable:
    """The Executable of an export zip whose meta.json and checksums load_module has checked."""
    names = zf.namelist()
    where = f"load_executable('{path}')"
    const_names = sorted((f for f in names if f.startswith(_CONST_DIR)), key=_const_index(path))
    if [_const_index(path)(n) for n in const_names] != list(range(len(const_names))):
        raise RuntimeError_(f"{where}: the constants are not numbered 0 to {len(const_names) - 1}")
    try:
        program = json.loads(_rt_module.read_member(path, zf, _PROGRAM))
    except (ValueError, RecursionError) as err:
        raise RuntimeError_(f"{where}: the file's VM program is damaged ({err})") from err
    constants = [
        _read_npy(where, name, _rt_module.read_member_buffer(path, zf, name))
        for name in const_names
    ]
    verify_program(program, None, len(constants), where)  # before any kernel is loaded
    if _DEVICE_META in names:  # a GPU build: its kernels, checked by the GPU module's loader
        native = _load_device_module(path, zf, meta)
    else:
        native = _rt_module.read_native_module(path, zf, meta)
    verify_program(program, kernel_infos(native), len(constants), where)
    return Executable(native, program, constants)


# what numpy's .npy reader raises on a damaged header (it parses it with ast.literal_eval)
_NPY_ERRORS = (ValueError, TypeError, KeyError, SyntaxError, tokenize.TokenError, RecursionError,
               EOFError, OSError, MemoryError, UnicodeDecodeError)  # fmt: skip


_NPY_HEADER_BYTES = 1 << 16  # numpy refuses headers over 10000 bytes
_NPY_HEADERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}


def _read_npy(where: str, name: str, data: bytearray) -> np.ndarray:
    """A constant from its .npy bytes: a numeric dtype, and exactly the bytes its header
    declares (checked before the array is made). The array is a view of `data` (no copy)."""
    f = io.BytesIO(bytes(memoryview(data)[:_NPY_HEADER_BYTES]))
    try:
        version = np.lib.format.read_magic(f)
        read_header = _NPY_HEADERS.get(version)
        if read_header is None:
            raise ValueError(f".npy format version {version}")
        shape, fortran_order, dtype = read_header(f)
        count = math.prod(shape)
        if dtype.kind not in "biuf" or dtype.fields is not None or dtype.subdtype is not None:
            raise ValueError(f"dtype {dtype} is not a tensor dtype")
        if dtype.itemsize * count != len(data) - f.tell():
            raise ValueError(
                f"its header declares {dtype.itemsize * count} bytes, it holds "
                f"{len(data) - f.tell()}"
            )
        flat = np.frombuffer(data, dtype=dtype, count=count, offset=f.tell())
        return flat.reshape(shape, order="F" if fortran_order else "C")
    except _NPY_ERRORS as err:
        raise RuntimeError_(f"{where}: constant {name} is damaged ({err})") from err


def _const_index(path: str):
    def index(name: str) -> int:
        stem = name[len(_CONST_DIR) :].removesuffix(".npy")
        if not stem.isdigit():
            raise RuntimeError_(f"load_executable('{path}'): unexpected member {name!r}")
        return int(stem)

    return index


def load_executable(path: str) -> Executable:
    """Load a file written by `Executable.export_library`."""
    exe = _rt_module.load_module(path)
    if not isinstance(exe, Executable):
        raise RuntimeError_(
            f"load_executable('{path}'): the file holds a plain runtime Module, "
            "not a relax Executable; load it with tvm.runtime.load_module"
        )
    return exe


_rt_module.register_loader(KIND, _load)
