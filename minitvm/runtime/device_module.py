"""GPU modules: kernels (OpenCL C or PTX) plus host programs that check arguments and launch.

A host program is data (JSON-safe): the function's FuncInfo and a list of steps —
`["assert", [[lhs, cmp, rhs], ...], message]`, `["let", name, expr]` and
`["alloc", slot, nbytes]` (device memory for a stage between kernels, for one call) and
`["launch", kernel, args, grid, block]` — whose expressions are strings in the FuncInfo
shape grammar (docs/contracts.md §3) over "v<i>" (symbolic dims), "a<k>" (int scalar params)
and "l<j>" (lets), parsed by packed_plan.parse_shape_expr and evaluated without eval().
Kernel arguments are `["buffer", position]`, `["scalar", position]`, `["workspace", slot]`
or `["expr", text, dtype]`.
"""

from __future__ import annotations

import json
import operator
import threading
import time
import zipfile

import numpy as np

from ..error import DeviceError, MiniTVMError, RuntimeError_
from ..ir.dtype import DataType
from . import opencl_signature
from .device import Device, device_api
from .module import ProfileResult, read_member, register_loader, write_module_zip
from .ndarray import NDArray
from .packed_func import DevicePackedFunc
from .packed_plan import _eval, parse_shape_expr

_CHECK_PARAMS = ("extent", "error_flag")  # params the OpenCL run-time checks add (opencl_checks)

_FORMAT = "device_module"  # meta.json "kind" of an exported GPU module
_META, _SOURCE = "device.json", "kernels.src"
_SOURCE_NAMES = {"opencl": ("cl", "opencl", ""), "cuda": ("ptx", "cuda", "")}
_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
            "==": operator.eq, "!=": operator.ne}  # fmt: skip
_AXES = "xyz"


class _HostProgram:
    """One host function's steps, validated and parsed once."""

    def __init__(self, program: dict, kernels: dict[str, dict] | set[str]) -> None:
        info = program["info"]
        self.name = info["name"]
        names = {f"v{i}": f"v{i}" for i in range(len(info.get("sym_vars", [])))}
        names |= {f"a{k}": f"a{k}" for k, p in enumerate(info["params"]) if p["kind"] == "scalar"}
        n_params = len(info["params"])
        self.steps = []
        self.workspaces = 0  # slots allocated so far
        for step in program["steps"]:
            kind = step[0]
            if kind == "alloc":
                if step[1] != self.workspaces:
                    raise RuntimeError_(f"function '{self.name}': bad workspace {step!r:.60}")
                self.workspaces += 1
                self.steps.append(("alloc", step[1], self._parse(step[2], names)))
            elif kind == "let":
                names[step[1]] = step[1]
                self.steps.append(("let", step[1], self._parse(step[2], names)))
            elif kind == "assert":
                conds = [(self._parse(a, names), _COMPARE[op], self._parse(b, names), f"{a} {op} {b}")
                         for a, op, b in step[1]]  # fmt: skip
                self.steps.append(("assert", conds, str(step[2])))
            elif kind == "launch":
                _, kernel, args, grid, block = step
                if kernel not in kernels:
                    raise RuntimeError_(
                        f"function '{self.name}' launches unknown kernel '{kernel}'"
                    )
                parsed = []
                for a in args:
                    if a[0] == "workspace":
                        if not (type(a[1]) is int and 0 <= a[1] < self.workspaces):
                            raise RuntimeError_(
                                f"function '{self.name}': bad kernel argument {a!r:.60}"
                            )
                        parsed.append(("workspace", a[1], None))
                    elif a[0] in ("buffer", "scalar"):
                        if not (type(a[1]) is int and 0 <= a[1] < n_params):
                            raise RuntimeError_(
                                f"function '{self.name}': bad kernel argument {a!r:.60}"
                            )
                        dtype = DataType(a[2]).numpy_dtype() if a[0] == "scalar" else None
                        parsed.append((a[0], a[1], dtype))
                    else:
                        parsed.append(
                            ("expr", self._parse(a[1], names), DataType(a[2]).numpy_dtype())
                        )
                dims = [tuple(self._parse(t, names) for t in d) for d in (grid, block)]
                # a set of names (no kernel metadata): kernels without run-time checks
                info = kernels.get(kernel) if isinstance(kernels, dict) else None
                checks = _check_params(self.name, info, parsed) if info else ()
                self.steps.append(("launch", kernel, parsed, dims[0], dims[1], checks))
            else:
                raise RuntimeError_(f"function '{self.name}': unknown host step {kind!r:.40}")

    def _parse(self, text: str, names: dict) -> tuple:
        return parse_shape_expr(self.name, text, names)


class DeviceModule:
    """Compiled GPU functions; `mod["f"](*device_arrays)` checks arguments and launches kernels.

    `get_source()` is the kernel source (OpenCL C, or PTX for CUDA), `imported_modules[0]`
    the kernel module (TVM's layout: a host module importing the device module)."""

    def __init__(self, kind: str, target: str, source: str, kernels: list[dict],
                 programs: list[dict], entry_name: str | None = None) -> None:  # fmt: skip
        if not programs:
            raise MiniTVMError("cannot make a GPU module with no functions")
        self.kind, self.target, self.type_key = kind, target, kind
        self._source, self._kernel_infos, self._programs = source, kernels, programs
        if kind == "opencl" and not opencl_signature.is_signed(source):  # fresh codegen output
            source, kernels = opencl_signature.sign(source, kernels, programs)
        self._source, self._kernel_infos = source, kernels
        by_name = {k["name"]: k for k in kernels}
        self._hosts = {p["info"]["name"]: _HostProgram(p, by_name) for p in programs}
        self._flags: dict[int, object] = {}  # device id -> the error flag of checking kernels
        self._functions = {
            name: DevicePackedFunc(p["info"], kind, self._launcher(self._hosts[name]))
            for name, p in zip(self._hosts, programs)
        }
        self.entry_name = entry_name or (
            "main" if "main" in self._hosts else next(iter(self._hosts))
        )
        self._loaded: dict[int, dict] = {}  # device id -> kernels
        # a kernel object holds its arguments between set_args and the launch: one launch at a time
        self._lock = threading.Lock()
        self.imported_modules = [_KernelModule(self)]

    # --- running ---------------------------------------------------------------------------
    def _kernels(self, device_id: int) -> dict:
        kernels = self._loaded.get(device_id)
        if kernels is None:
            api = device_api(self.kind)
            for ext in sorted({e for k in self._kernel_infos for e in k.get("extensions", [])}):
                flag = {"cl_khr_fp64": "has_fp64", "cl_khr_fp16": "has_fp16"}.get(ext)
                if flag and not api.attribute(device_id, flag):
                    raise DeviceError(
                        f"{self.kind}({device_id}) ({api.attribute(device_id, 'device_name')}) "
                        f"lacks {ext}, which these kernels need ({'float64' if 'fp64' in ext else 'float16'} "
                        "arithmetic); build them with float32"
                    )
            names = [k["name"] for k in self._kernel_infos]
            kernels = self._loaded[device_id] = api.load_program(device_id, self._source, names)
        return kernels

    def _launcher(self, host: _HostProgram):
        kind = self.kind

        def launch(dev: Device | None, args: tuple, values: dict) -> None:
            with self._lock:
                run(0 if dev is None else dev.device_id, args, values)

        def run(device_id: int, args: tuple, values: dict) -> None:
            api = device_api(kind)
            kernels = self._kernels(device_id)
            values = dict(values)
            workspaces: list = []
            sizes: list[int] = []  # bytes of each workspace
            for step in host.steps:
                if step[0] == "alloc":
                    nbytes = _eval(step[2], values)
                    if nbytes < 0:
                        raise RuntimeError_(
                            f"calling '{host.name}': a buffer between kernels has {nbytes} bytes"
                        )
                    workspaces.append(api.alloc(device_id, nbytes))
                    sizes.append(nbytes)
                elif step[0] == "let":
                    values[step[1]] = _eval(step[2], values)
                elif step[0] == "assert":
                    for lhs, cmp, rhs, text in step[1]:
                        if not cmp(_eval(lhs, values), _eval(rhs, values)):
                            raise RuntimeError_(f"calling '{host.name}': {step[2]}")
                else:
                    _, kernel, kargs, grid, block, checks = step
                    grid = tuple(_eval(t, values) for t in grid)
                    block = tuple(_eval(t, values) for t in block)
                    if 0 in grid or 0 in block:
                        continue  # an empty launch: no work-item runs
                    _check_launch(host.name, kernel, api, device_id, grid, block)
                    if hasattr(api, "check_launch"):  # the device's own limits on this kernel
                        api.check_launch(device_id, kernels[kernel], host.name, grid, block)
                    launch_args = [_kernel_arg(api, a, args, values, workspaces) for a in kargs]
                    for check in checks:
                        launch_args.append(self._check_arg(api, device_id, check, kargs, args,
                                                           sizes))  # fmt: skip
                    api.launch(device_id, kernels[kernel], grid, block, launch_args)
                    if checks and checks[-1][0] == "error_flag":
                        self._raise_flagged(api, device_id, host.name, checks[-1][1])
            if workspaces:
                api.sync(device_id)  # the kernels that use them finish before they are freed

        return launch

    def _check_arg(self, api, device_id: int, check: tuple, kargs: list, args: tuple,
                   sizes: list):  # fmt: skip
        """The value of a parameter the kernel's run-time checks added."""
        if check[0] == "error_flag":
            flag = self._flags.get(device_id)
            if flag is None:
                flag = self._flags[device_id] = api.alloc(device_id, 4)
                api.copy_from_host(device_id, flag, np.zeros(1, np.int32))
            return api.buffer_arg(flag)
        _, position, elem_bytes = check
        source, index, _ = kargs[position]
        nbytes = args[index].nbytes if source == "buffer" else sizes[index]
        return api.scalar_arg(nbytes // elem_bytes, np.dtype("int64"))

    def _raise_flagged(self, api, device_id: int, func: str, errors: tuple) -> None:
        """Read the error flag after a checking kernel; raise (and clear) the error it holds."""
        code = np.zeros(1, np.int32)
        api.copy_to_host(device_id, code, self._flags[device_id])
        if code[0] == 0:
            return
        api.copy_from_host(device_id, self._flags[device_id], np.zeros(1, np.int32))
        k = int(code[0])
        message = errors[k - 1] if 1 <= k <= len(errors) else f"a kernel failed with code {k}"
        raise RuntimeError_(f"calling '{func}': {message}")

    def get_function(self, name: str, query_imports: bool = False) -> DevicePackedFunc:
        try:
            return self._functions[name]
        except KeyError:
            raise MiniTVMError(
                f"module has no function '{name}'; it has {sorted(self._functions)}"
            ) from None

    __getitem__ = get_function

    def __contains__(self, name: str) -> bool:
        return name in self._functions

    def implements_function(self, name: str, query_imports: bool = False) -> bool:
        return name in self

    def __call__(self, *args) -> None:
        self.get_function(self.entry_name)(*args)

    @property
    def func_infos(self) -> tuple:
        return tuple(p["info"] for p in self._programs)

    @property
    def mod(self) -> DeviceModule:
        return self

    def time_evaluator(self, func_name: str, dev: Device | None = None, number: int = 10,
                       repeat: int = 1, min_repeat_ms: float = 0, **unused_options):  # fmt: skip
        """A callable timing `func_name` on given args: a warm-up call, then `repeat` rounds of
        `number` launches followed by one wait for the device (as TVM times GPU kernels), more
        launches when a round is shorter than `min_repeat_ms`."""
        func = self.get_function(func_name)
        if number < 1 or repeat < 1:
            raise MiniTVMError(
                f"time_evaluator: number and repeat must be >= 1, got {number}, {repeat}"
            )

        def evaluator(*args) -> ProfileResult:
            device = dev or next((a.device for a in args if isinstance(a, NDArray)), None)
            sync = device.sync if device is not None else (lambda: None)
            func(*args)
            sync()
            results, count = [], number
            for _ in range(repeat):
                while True:
                    start = time.perf_counter()
                    for _ in range(count):
                        func(*args)
                    sync()
                    elapsed = time.perf_counter() - start
                    if elapsed * 1e3 >= min_repeat_ms:
                        break
                    count *= 2
                results.append(elapsed / count)
            return ProfileResult(tuple(results))

        return evaluator

    # --- inspecting and saving ------------------------------------------------------------
    def get_source(self, fmt: str = "") -> str:
        """The kernels' source: OpenCL C ("", "cl") or PTX ("", "ptx") by the module's kind."""
        if fmt not in _SOURCE_NAMES[self.kind]:
            raise MiniTVMError(
                f"get_source: a {self.kind} module has source formats "
                f"{[f for f in _SOURCE_NAMES[self.kind] if f]}, not '{fmt}'"
            )
        return self._source

    def export_library(self, file_name: str, fcompile=None, **unused_options) -> None:
        """One zip of the kernel source and JSON metadata (no pickle, checksummed) that
        `tvm.runtime.load_module` reads back."""
        meta = {"kind": self.kind, "target": self.target, "entry": self.entry_name,
                "kernels": self._kernel_infos, "programs": self._programs}  # fmt: skip
        extra = {_META: json.dumps(meta, sort_keys=True).encode(), _SOURCE: self._source.encode()}
        write_module_zip(file_name, None, kind=_FORMAT, extra=extra)

    save = export_library

    def __repr__(self) -> str:
        return f"Module(target='{self.target}', functions={sorted(self._functions)})"


class _KernelModule:
    """The device half of a GPU module, as TVM lists it in `imported_modules`."""

    def __init__(self, owner: DeviceModule) -> None:
        self.type_key = owner.kind
        self.imported_modules: list = []
        self._owner = owner

    def get_source(self, fmt: str = "") -> str:
        return self._owner.get_source(fmt)

    def __repr__(self) -> str:
        return f"Module(type_key='{self.type_key}')"


def _check_launch(func: str, kernel: str, api, device_id: int, grid: tuple, block: tuple) -> None:
    """Refuse a launch the device cannot run (the build checked static limits; sizes known only
    at run time are checked here)."""
    threads = int(np.prod(block))
    limit = api.attribute(device_id, "max_threads_per_block")
    if threads > limit:
        raise DeviceError(
            f"calling '{func}': kernel '{kernel}' needs {threads} threads per block (block "
            f"{block}), more than the device's {limit}; split the bound loop with a smaller factor"
        )
    for axis, b, most in zip("xyz", block, api.attribute(device_id, "max_block_dims")):
        if b > most:
            raise DeviceError(
                f"calling '{func}': kernel '{kernel}' has {b} threads along threadIdx.{axis}, "
                f"more than the device's {most}; bind a shorter loop to threadIdx.{axis}"
            )
    if any(g < 0 for g in grid) or any(b < 0 for b in block):
        raise DeviceError(
            f"calling '{func}': kernel '{kernel}' got a negative launch size {grid} x {block}"
        )


def _check_params(func: str, info: dict, args: list) -> tuple:
    """The parameters the kernel's run-time checks add after its own (validated: loaded
    metadata is data): ("extent", position, elem_bytes) and ("error_flag", messages)."""
    params = info.get("params")
    errors = info.get("errors", [])
    if (
        type(params) is not list
        or type(errors) is not list
        or not all(type(e) is str for e in errors)
    ):
        raise RuntimeError_(f"function '{func}': kernel '{info.get('name')}' has bad metadata")
    extra = [p for p in params if type(p) is dict and p.get("kind") in _CHECK_PARAMS]
    own = len(params) - len(extra)
    bad = RuntimeError_(
        f"function '{func}': the run-time check parameters of kernel '{info['name']}' do not "
        f"fit its launch ({len(args)} arguments)"
    )
    if own != len(args) or params[own:] != extra:
        raise bad
    checks = []
    for p in extra:
        if p["kind"] == "error_flag":
            if p is not extra[-1]:
                raise bad
            checks.append(("error_flag", tuple(errors)))
            continue
        k, size = p.get("of"), p.get("elem_bytes")
        if not (type(k) is int and 0 <= k < own and args[k][0] in ("buffer", "workspace")
                and size in (1, 2, 4, 8)):  # fmt: skip
            raise bad
        checks.append(("extent", k, size))
    if errors and (not checks or checks[-1][0] != "error_flag"):
        raise bad
    return tuple(checks)


def _kernel_arg(api, a: tuple, args: tuple, values: dict, workspaces: list):
    if a[0] == "buffer":
        return api.buffer_arg(args[a[1]]._handle)
    if a[0] == "workspace":
        return api.buffer_arg(workspaces[a[1]])
    if a[0] == "scalar":
        return api.scalar_arg(args[a[1]], a[2])
    return api.scalar_arg(_eval(a[1], values), a[2])


def _load_device_module(path: str, zf: zipfile.ZipFile, unused_meta: dict) -> DeviceModule:
    """The loader of exported GPU modules: JSON and kernel source only, every field checked."""
    try:
        meta = json.loads(read_member(path, zf, _META))
        source = read_member(path, zf, _SOURCE).decode()
        if meta["kind"] not in _SOURCE_NAMES:
            raise ValueError(f"unknown kind {meta['kind']!r:.40}")
        if meta["kind"] == "opencl":  # before anything of it runs
            opencl_signature.verify(f"load_module('{path}'): {_SOURCE}", source,
                                    meta["kernels"], meta["programs"])  # fmt: skip
        return DeviceModule(meta["kind"], str(meta["target"]), source, meta["kernels"],
                            meta["programs"], meta.get("entry"))  # fmt: skip
    except opencl_signature.SignatureError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, MiniTVMError) as err:
        raise RuntimeError_(
            f"load_module('{path}'): the GPU module's metadata is invalid ({err}); export it again"
        ) from err


register_loader(_FORMAT, _load_device_module)
