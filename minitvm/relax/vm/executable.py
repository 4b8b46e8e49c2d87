"""Executable: what `relax.build` returns — the native module of all kernels, the VM program
(JSON) and the constants. `export_library` writes one zip (object code, program.json,
constants as .npy, no pickle) that `tvm.runtime.load_module` / `load_executable` read back."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import numpy as np

from ...error import RuntimeError_
from ...runtime import module as _rt_module
from ...runtime.device_module import _META as _DEVICE_META
from ...runtime.device_module import _SOURCE as _DEVICE_SOURCE
from ...runtime.device_module import DeviceModule, _load_device_module
from ._shape_code import compile_shape_fn

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
        extra = {_PROGRAM: json.dumps(self.program).encode()}
        for i, a in enumerate(self.constants):
            buf = io.BytesIO()
            np.save(buf, a, allow_pickle=False)
            extra[f"{_CONST_DIR}{i}.npy"] = buf.getvalue()
        native = self.mod
        if isinstance(native, DeviceModule):  # GPU kernels travel as their JSON and source
            extra.update(_device_members(native))
            native = None
        _rt_module.write_module_zip(file_name, native, kind=KIND, extra=extra)

    save = export_library

    def __repr__(self) -> str:
        return f"<relax.Executable functions={self.function_names}>"


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
    const_names = sorted((f for f in names if f.startswith(_CONST_DIR)), key=_const_index(path))
    try:
        program = json.loads(_rt_module.read_member(path, zf, _PROGRAM))
        constants = [
            np.load(io.BytesIO(_rt_module.read_member(path, zf, name)), allow_pickle=False)
            for name in const_names
        ]
    except (ValueError, RecursionError, EOFError, OSError) as err:
        raise RuntimeError_(
            f"load_executable('{path}'): the file's VM program or constants are damaged ({err})"
        ) from err
    _check_program(path, program)
    if _DEVICE_META in names:  # a GPU build: its kernels, checked by the GPU module's loader
        return Executable(_load_device_module(path, zf, meta), program, constants)
    return Executable(_rt_module.read_native_module(path, zf, meta), program, constants)


def _const_index(path: str):
    def index(name: str) -> int:
        stem = name[len(_CONST_DIR) :].removesuffix(".npy")
        if not stem.isdigit():
            raise RuntimeError_(f"load_executable('{path}'): unexpected member {name!r}")
        return int(stem)

    return index


# key of a VM function -> the type its value must have (program.json is data: the VM
# interprets it through its rule table, shape code is re-validated by compile_shape_fn)
_FUNCTION_FIELDS = {
    "name": str,
    "params": list,
    "num_regs": int,
    "dims": list,
    "storages": list,
    "stats": dict,
    "code": list,
}


def _check_program(path: str, program: Any) -> None:
    """The VM program's shape: known format, functions of the expected fields and types,
    instructions that name opcodes the VM has."""
    from .vm import _RULES  # the VM sits beside us; its rule table names every opcode

    def fail(what: str) -> RuntimeError_:
        return RuntimeError_(f"load_executable('{path}'): program.json: {what}; export it again")

    if not isinstance(program, dict) or program.get("format") != "minitvm-vm":
        raise fail("unknown VM program format")
    if program.get("version") != 1 or not isinstance(program.get("functions"), dict):
        raise fail("unknown VM program version or no functions")
    for name, func in program["functions"].items():
        if not isinstance(func, dict) or set(func) != set(_FUNCTION_FIELDS):
            raise fail(f"function {name!r} does not have the fields {sorted(_FUNCTION_FIELDS)}")
        for key, kind in _FUNCTION_FIELDS.items():
            if type(func[key]) is not kind:
                raise fail(f"function {name!r}: {key} is not a {kind.__name__}")
        texts = [*func["params"], *func["dims"], *func["storages"]]
        if not all(type(t) is str for t in texts) or not 0 <= func["num_regs"] < 1 << 24:
            raise fail(f"function {name!r}: malformed params, dims, storages or num_regs")
        for pc, ins in enumerate(func["code"]):
            if not isinstance(ins, list) or not ins or ins[0] not in _RULES:
                raise fail(f"function {name!r}: instruction {pc} is not a known VM opcode")
        if not func["code"] or func["code"][-1][0] != "Ret":
            raise fail(f"function {name!r} does not end with Ret")


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
