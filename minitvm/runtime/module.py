"""Compiled modules: load native code, call it through checked wrappers, time, export and load."""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import re
import stat
import statistics
import struct
import time
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata

import llvmlite.binding as llvm
import numpy as np

from .._lazy import LOADER_MODULES
from ..error import ArgumentError, BuildError, MiniTVMError, RuntimeError_
from ..target import (
    Target,
    emit_assembly,
    enabled_features,
    host_cpu_features,
    host_cpu_name,
    unavailable_reason,
)
from ..target.host import host_arch
from . import compiler_rt, threadpool
from .device import Device
from .elf import SIGNATURE_SYMBOL, read_elf
from .meta import meta_digest, sha256, signature_bytes, validate_meta
from .packed_func import PackedFunc

_FORMAT = "minitvm-module"
_FORMAT_VERSION = 2  # 2: checksums of every member in meta.json; 1 had none
_OBJECT, _META, _LLVM_IR = "object.o", "meta.json", "module.ll"
_MAX_MEMBER_BYTES = 1 << 31  # what a member may claim to inflate to (zip bombs)
_MAX_JSON_BYTES = 1 << 26
_READ_CHUNK = 1 << 20  # members are read and hashed this much at a time (fits in L2)
_PREALLOC_BYTES = 1 << 26  # a member's buffer starts at most this big, then grows
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # a zip member's local file header
_ZIP_SPECIAL_FLAGS = 0x1 | 0x20 | 0x40  # encrypted, patched data, strong encryption
MAX_FILE_BYTES = 1 << 34  # 16 GiB: the largest export load_module opens
_MAX_MEMBERS = 1 << 16
# a member name: relative, up to 4 '/'-separated parts, each starting with a letter, digit or
# '_' (so no '.', '..' or empty part and no leading '/')
_MEMBER_NAME = re.compile(
    r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}(/[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}){0,3}"
)
_LINKER_SYMBOLS = frozenset({"_GLOBAL_OFFSET_TABLE_"})  # MCJIT's linker defines it
_THREADPOOL_SYMBOLS = frozenset({"minitvm_parallel_for", "minitvm_num_threads"})  # contracts §2


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

    def __post_init__(self) -> None:
        object.__setattr__(self, "results", tuple(self.results))  # BenchmarkResult([1, 2])

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


BenchmarkResult = ProfileResult  # TVM's name: tvm.runtime.module.BenchmarkResult(results)


def time_calls(run, number: int, repeat: int, min_repeat_ms: float, preproc=None) -> ProfileResult:
    """Time the no-argument callable `run` as TVM's time_evaluator does: one warm-up call, then
    `repeat` rounds of `number` calls (more when a round is shorter than `min_repeat_ms`).

    With `preproc` (a no-argument callable, e.g. a cache flush) it runs before every call and
    only the calls are timed, so each call starts from what `preproc` left (TVM runs it once
    per round, which lets the round's later calls find the caches warm again)."""
    run()
    if preproc is not None:
        return _time_calls_after(run, preproc, number, repeat, min_repeat_ms)
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


def timing_preproc(
    dev: Device | None, number: int, repeat: int, f_preproc: str | Callable, cache_flush_bytes: int
) -> Callable | None:
    """time_evaluator's argument checks (the device is available, `number` and `repeat` are
    positive); returns the callable to run before each timed call on its arguments, or None."""
    from .cache_flush import preproc_for

    if dev is not None:
        dev.check_available()
    if number < 1 or repeat < 1:
        raise MiniTVMError(
            f"time_evaluator: number and repeat must be >= 1, got {number}, {repeat}"
        )
    return preproc_for(f_preproc, cache_flush_bytes)


# A round with a preproc ends once it has run `number` calls and either their own time reaches
# min_repeat_ms or the round's wall time (the preproc included) reaches this many times it:
# a 0.5 us kernel behind a 10 us flush would otherwise run 40 000 flushes a round (0.7 s per
# tuning measurement, measured), and each call is timed on its own, so more calls add samples,
# not timer resolution.
_PREPROC_WALL_FACTOR = 3.0


def _time_calls_after(
    run, preproc, number: int, repeat: int, min_repeat_ms: float
) -> ProfileResult:
    """time_calls with `preproc` before every call, untimed; one round keeps calling until it
    has `number` calls and enough time (see _PREPROC_WALL_FACTOR)."""
    results = []
    wall_cap = _PREPROC_WALL_FACTOR * min_repeat_ms / 1e3
    for _ in range(repeat):
        elapsed, calls, round_start = 0.0, 0, time.perf_counter()
        while calls < number or (
            elapsed * 1e3 < min_repeat_ms and time.perf_counter() - round_start < wall_cap
        ):
            preproc()
            start = time.perf_counter()
            run()
            elapsed += time.perf_counter() - start
            calls += 1
        results.append(elapsed / calls)
    return ProfileResult(tuple(results))


class Module:
    """Native functions loaded from a CodegenResult; `mod(*args)` runs the entry function.

    >>> mod = tvm.build(s, [A, B, C], "llvm", name="add"); mod(a, b, c); mod["add"](a, b, c)
    """

    type_key = "llvm"

    def __init__(
        self, result: CodegenResult, entry_name: str | None = None, source: str | None = None
    ) -> None:
        if not result.func_infos:
            raise BuildError("cannot make a Module with no functions")
        self._result = result
        self.target = Target(result.target)
        self._source = source  # the file it was loaded from; None when freshly built
        names = [info["name"] for info in result.func_infos]
        if entry_name is not None and entry_name not in names:
            raise BuildError(f"entry function '{entry_name}' is not in the module; it has {names}")
        self.entry_name = entry_name or ("main" if "main" in names else names[0])
        self.imported_modules: list = []
        self._engine = None
        self._functions: dict[str, PackedFunc] = {}
        # Code for another CPU or architecture is built (export it, read its assembly) but never
        # handed to the JIT here: it would die with SIGILL or worse when called.
        self._unavailable = unavailable_reason(self.target)
        if self._unavailable is None:
            self._link()

    @classmethod
    def from_codegen(cls, result: CodegenResult, entry_name: str | None = None) -> Module:
        return cls(result, entry_name)

    def _where(self) -> str:
        return f"load_module('{self._source}')" if self._source else "building the module"

    def _fail(self, message: str) -> MiniTVMError:
        return (RuntimeError_ if self._source else BuildError)(f"{self._where()}: {message}")

    def _link(self) -> None:
        """Check the object (architecture, symbols), then load it into a fresh MCJIT engine."""
        threadpool.ensure_pool()  # its symbols must exist before the object is linked
        compiler_rt.ensure_helpers()  # also makes the process's libc/libm searchable
        info = read_elf(self._result.object_code, f"{self._where()}: {_OBJECT}")
        if info.machine != host_arch():
            raise self._fail(
                f"the object code was built for {info.machine}, this machine is {host_arch()}; "
                "rebuild it here with target 'llvm'"
            )
        unresolved = sorted(s for s in info.undefined_symbols if not _resolvable(s))
        if unresolved:
            raise self._fail(
                f"the object code calls {', '.join(repr(s) for s in unresolved[:10])}, which "
                "neither minitvm's runtime nor this process (libc, libm) provides; calling it "
                "would jump to address 0. Call only functions that exist (check the names given "
                "to tir.call_extern)"
            )
        for func in self._result.func_infos:
            if _symbol(func) not in info.defined_symbols:
                raise self._fail(f"the object code has no function '{func['name']}'")
        if info.signature is None:
            raise self._fail(
                f"the object code has no embedded '{SIGNATURE_SYMBOL}', so its metadata cannot "
                "be checked against it; it was not written by this minitvm's code generator"
            )
        if info.signature != signature_bytes(self._result.func_infos):
            raise self._fail(
                "the functions' signatures (parameters, dtypes, shapes) in the metadata differ "
                "from those the object code was compiled for; the metadata does not belong to "
                "this object"
            )
        engine = llvm.create_mcjit_compiler(
            llvm.parse_assembly(""), self.target.new_target_machine()
        )
        engine.add_object_file(llvm.ObjectFileRef.from_data(self._result.object_code))
        engine.finalize_object()
        self._engine = engine
        self._functions = {info["name"]: self._load(info) for info in self._result.func_infos}

    def _load(self, info: dict) -> PackedFunc:
        address = self._engine.get_function_address(_symbol(info))
        if not address:
            raise self._fail(f"the object code has no function '{info['name']}'")
        return PackedFunc(info, address, keepalive=self._engine)

    def _check_runnable(self) -> None:
        if self._unavailable is not None:
            raise RuntimeError_(
                f"module built for target '{self.target}' cannot run on this machine: "
                f"{self._unavailable}. Export it to run it on such a machine, or build with "
                "target 'llvm' (this machine's CPU) to run it here"
            )

    # --- calling -------------------------------------------------------------------------
    def get_function(self, name: str, query_imports: bool = False) -> PackedFunc:
        """The checked callable for `name`."""
        if name in self:
            self._check_runnable()
        try:
            return self._functions[name]
        except KeyError:
            names = sorted(info["name"] for info in self._result.func_infos)
            raise MiniTVMError(f"module has no function '{name}'; it has {names}") from None

    __getitem__ = get_function

    def __getattr__(self, name: str) -> PackedFunc:
        """`mod.main`: a function by attribute, as TVM 0.20+'s modules allow."""
        if name.startswith("_") or "_result" not in self.__dict__ or name not in self:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return self.get_function(name)

    def implements_function(self, name: str, query_imports: bool = False) -> bool:
        return name in self

    def __contains__(self, name: str) -> bool:
        return any(info["name"] == name for info in self._result.func_infos)

    def __call__(self, *args):
        return self.get_function(self.entry_name)(*args)

    @property
    def func_infos(self) -> tuple:
        return self._result.func_infos

    @property
    def mod(self) -> Module:
        """This module: TVM 0.20+ returns an Executable from `tvm.compile` of TIR, whose `.mod`
        is the runtime module (`rt_lib.mod.time_evaluator("main", dev)`)."""
        return self

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
        limit_zero_time_iterations: int = 100,
        cooldown_interval_ms: float = 0,
        repeats_to_cooldown: int = 1,
        cache_flush_bytes: int = 0,
        f_preproc: str | Callable = "",
        **unused_options,
    ):
        """A callable that times `func_name` on given args: one warm-up call, then `repeat`
        rounds of `number` calls (more when a round is shorter than `min_repeat_ms`).

        `f_preproc="cache_flush_cpu_non_first_arg"` (TVM's name; or any registered function's
        name, or a callable) runs before each call on its arguments and is not timed: that one
        flushes every argument but the first from the CPU caches, as a layer inside a model
        finds its weights. `cache_flush_bytes` > 0 also streams that many bytes through the
        caches before each call. The cooldown options are accepted and ignored."""
        func = self.get_function(func_name)
        before = timing_preproc(dev, number, repeat, f_preproc, cache_flush_bytes)

        def evaluator(*args) -> ProfileResult:
            preproc = None if before is None else (lambda: before(*args))
            return time_calls(func.bind(*args), number, repeat, min_repeat_ms, preproc)

        return evaluator

    # --- export / load -------------------------------------------------------------------
    def export_library(self, file_name: str, fcompile=None, **unused_options) -> None:
        """Write one file (a zip of the object code and meta.json) that `load_module` reads."""
        write_module_zip(file_name, self)

    save = export_library

    def __repr__(self) -> str:
        names = [info["name"] for info in self._result.func_infos]
        return f"Module(target='{self.target}', functions={names})"


def write_module_zip(
    file_name: str, module: Module | None, kind: str = "module", extra: dict | None = None
) -> None:
    """Write the export zip: meta.json (with `kind`), the module's object code and LLVM IR
    (when there is a module), and `extra` entries (name -> bytes) that a loader of `kind` reads.
    meta.json records the sha256 of every other member and of its own other fields."""
    meta = {
        "format": _FORMAT,
        "format_version": _FORMAT_VERSION,
        "kind": kind,
        "minitvm_version": metadata.version("minitvm"),
        "host_cpu": host_cpu_name(),
        "host_features": host_cpu_features(),
        "required_features": [],
    }
    members = dict(extra or {})
    if module is not None:
        needed = module.target.required_features
        meta.update(
            target=str(module.target),
            required_features=sorted(needed if needed is not None else ()),
            entry_name=module.entry_name,
            func_infos=list(module._result.func_infos),
        )
        members[_OBJECT] = module._result.object_code
        members[_LLVM_IR] = module._result.llvm_ir.encode()
    checksums = {name: sha256(data) for name, data in members.items()}
    checksums[_META] = meta_digest(meta)
    meta["checksums"] = checksums
    with zipfile.ZipFile(file_name, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(_META, json.dumps(meta, indent=1))
        for name, data in members.items():
            # weights and object code hardly compress and deflating them dominated the export
            # of a large model (VGG-16: 26 s); text members still shrink
            stored = not name.endswith((".json", ".ll", ".txt"))
            zf.writestr(name, data, compress_type=zipfile.ZIP_STORED if stored else None)


# kind (meta.json "kind") -> loader(path, zipfile, meta). Higher layers register theirs
# (relax registers "relax.Executable"); the runtime never imports them.
_LOADERS: dict = {}


def register_loader(kind: str, loader) -> None:
    """Make `load_module` hand files whose meta.json says `kind` to `loader(path, zf, meta)`."""
    _LOADERS[kind] = loader


def read_member(path: str, zf: zipfile.ZipFile, name: str) -> bytes:
    """The bytes of member `name`, size-limited; RuntimeError_ naming the file when it is
    missing or damaged. Once meta.json is validated (`zf.minitvm_checksums` set) the bytes are
    hashed while they are read and returned only when they match their sha256."""
    return read_member_buffer(path, zf, name).tobytes()


def read_member_buffer(path: str, zf: zipfile.ZipFile, name: str) -> np.ndarray:
    """`read_member`'s bytes as a fresh, writable uint8 array the caller owns (no copy is made:
    a loader may keep views of it, e.g. constants over their .npy bytes). A member that
    `_check_checksums` already read and verified is handed over, not read again."""
    verified = getattr(zf, "minitvm_verified", None)
    if verified is not None and name in verified:
        return verified.pop(name)
    try:
        entry = zf.getinfo(name)
    except KeyError:
        raise RuntimeError_(
            f"load_module('{path}'): the file has no {name} (members: {zf.namelist()[:10]}); "
            "it is not a complete minitvm export"
        ) from None
    limit = _MAX_JSON_BYTES if name.endswith(".json") else _MAX_MEMBER_BYTES
    if entry.file_size > limit:
        raise RuntimeError_(
            f"load_module('{path}'): {name} claims {entry.file_size} bytes, more than "
            f"{limit}; the file is damaged"
        )
    checksums = getattr(zf, "minitvm_checksums", None)  # set once meta.json is validated
    expected = None if checksums is None or name == _META else checksums.get(name, "")
    try:
        data, digest = _read_hashing(zf, entry, hash_it=expected is not None)
    except (
        zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, OSError, EOFError, ValueError
    ) as err:  # fmt: skip
        raise RuntimeError_(f"load_module('{path}'): {name} is damaged ({err})") from err
    except (NotImplementedError, RuntimeError) as err:  # unknown compression, encryption
        raise RuntimeError_(f"load_module('{path}'): {name} cannot be read ({err})") from err
    if len(data) != entry.file_size:
        raise RuntimeError_(
            f"load_module('{path}'): {name} declares {entry.file_size} bytes but holds "
            f"{'more' if len(data) > entry.file_size else len(data)}; the file is damaged or "
            "was tampered with"
        )
    if expected is not None and digest != expected:
        raise RuntimeError_(
            f"load_module('{path}'): {name} does not match its sha256 in {_META} "
            "(truncated, corrupted or replaced); export the module again"
        )
    return data


def _read_hashing(zf: zipfile.ZipFile, entry: zipfile.ZipInfo, hash_it: bool):
    """(the member's bytes as a uint8 array, their sha256 or None), read in chunks into one
    buffer, each chunk hashed while it is in cache. Never more than the declared size plus one
    byte is read, and the buffer grows with what arrives (a forged size claim costs nothing)."""
    cap = entry.file_size + 1
    raw = _raw_offset(zf, entry)
    if raw is not None:  # a stored member's data ends where its stored size says
        cap = min(cap, entry.compress_size)
    data = np.empty(min(cap, _PREALLOC_BYTES), np.uint8)
    h = hashlib.sha256() if hash_it else None
    pos = 0
    with contextlib.ExitStack() as stack:
        if raw is None:
            f = stack.enter_context(zf.open(entry))
        while True:
            if pos == len(data):
                if pos >= cap:
                    break
                grown = np.empty(min(2 * pos, cap), np.uint8)
                grown[:pos] = data
                data = grown
            with memoryview(data) as view:
                chunk = view[pos : pos + _READ_CHUNK]
                n = f.readinto(chunk) if raw is None else os.preadv(raw[0], [chunk], raw[1] + pos)
                if h is not None and n:
                    h.update(view[pos : pos + n])
                chunk.release()
            if not n:
                break
            pos += n
    return data[:pos], None if h is None else h.hexdigest()


def _raw_offset(zf: zipfile.ZipFile, entry: zipfile.ZipInfo) -> tuple[int, int] | None:
    """(file descriptor, offset of the data) of a stored, unencrypted member of a zip read from
    a real file, so its bytes go straight into the caller's buffer (zipfile would copy them and
    compute their CRC-32, which the sha256 checked after this read subsumes); None otherwise.
    The local header is checked as zipfile.open checks it: signature, and the name agreeing
    with the central directory's."""
    if (
        entry.compress_type != zipfile.ZIP_STORED
        or entry.flag_bits & _ZIP_SPECIAL_FLAGS
        or not entry.orig_filename.isascii()
        or not hasattr(os, "preadv")
    ):
        return None
    try:
        fd = zf.fp.fileno()
    except (AttributeError, OSError, ValueError):  # an in-memory zip, or a closed one
        return None
    head = os.pread(fd, _LOCAL_HEADER.size, entry.header_offset)
    if len(head) != _LOCAL_HEADER.size:
        raise zipfile.BadZipFile("truncated file header")
    fields = _LOCAL_HEADER.unpack(head)
    if fields[0] != b"PK\x03\x04":
        raise zipfile.BadZipFile("bad magic number for file header")
    start = entry.header_offset + _LOCAL_HEADER.size
    name = os.pread(fd, fields[10], start)
    if name != entry.orig_filename.encode():
        raise zipfile.BadZipFile(
            f"file name in directory {entry.orig_filename!r} and header {name!r} differ"
        )
    return fd, start + fields[10] + fields[11]


def read_native_module(path: str, zf: zipfile.ZipFile, meta: dict) -> Module | None:
    """The native Module stored in an export zip (None when the zip holds no object code)."""
    if _OBJECT not in zf.namelist():
        return None
    object_code = read_member(path, zf, _OBJECT)
    machine = read_elf(object_code, f"load_module('{path}'): {_OBJECT}").machine
    if machine != host_arch():
        raise RuntimeError_(
            f"load_module('{path}'): the module was built for {machine}, this machine is "
            f"{host_arch()} (target '{meta['target']}'); load it on a {machine} machine, or "
            "rebuild it here with target 'llvm'"
        )
    _check_host_features(path, meta)
    try:
        llvm_ir = read_member(path, zf, _LLVM_IR).decode()
        target = Target(meta["target"])
    except (UnicodeDecodeError, MiniTVMError) as err:
        raise RuntimeError_(f"load_module('{path}'): {err}") from err
    reason = unavailable_reason(target)
    if reason is not None:
        raise RuntimeError_(
            f"load_module('{path}'): the module cannot run on this machine: {reason}; "
            "rebuild it here with target 'llvm'"
        )
    result = CodegenResult(object_code, llvm_ir, tuple(meta["func_infos"]), meta["target"])
    return Module(result, meta["entry_name"], source=path)


def load_module(path: str, fmt: str = ""):
    """Load a file written by `export_library` (no compiling, no C compiler); a relax
    Executable's file gives back the Executable. Everything is checked first: the zip, every
    field of meta.json, the checksums of every member, the object's architecture and symbols."""
    path = _path_argument(path)
    file = open_regular_file(path, "load_module", MAX_FILE_BYTES)
    try:
        zf = zipfile.ZipFile(file)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, OSError) as err:
        file.close()
        raise RuntimeError_(
            f"load_module('{path}'): not a minitvm module: the file is not a zip archive "
            f"({err}); load files written by export_library"
        ) from err
    with file, zf:
        _check_members(path, zf)
        meta = _read_meta(path, zf)
        _check_checksums(path, zf, meta)
        kind = meta["kind"]
        if kind != "module":
            if kind not in _LOADERS and kind in LOADER_MODULES:
                importlib.import_module(LOADER_MODULES[kind])  # registers its loader
            if kind not in _LOADERS:
                raise RuntimeError_(
                    f"load_module('{path}'): the file holds a {kind!r}, whose loader is not "
                    f"registered; import the package that defines it first (for "
                    f"'relax.Executable': import minitvm.relax)"
                )
            return _LOADERS[kind](path, zf, meta)
        module = read_native_module(path, zf, meta)
    if module is None:
        raise RuntimeError_(f"load_module('{path}'): the file has no {_OBJECT}")
    return module


def _path_argument(path) -> str:
    """load_module's `path` as a str (a file name: never the file's bytes)."""
    if isinstance(path, bytes | bytearray | memoryview):
        raise ArgumentError(
            f"load_module: expected a file name (str or os.PathLike), got {type(path).__name__} "
            "(the file's contents?); write the bytes to a file and pass its name"
        )
    try:
        return os.fspath(path)
    except TypeError:
        raise ArgumentError(
            f"load_module: expected a file name (str or os.PathLike), got {type(path).__name__}"
        ) from None


def open_regular_file(path: str, what: str, limit: int):
    """A binary file object of `path`, which must be a regular file of at most `limit` bytes:
    a FIFO, a device (/dev/zero) or a directory is refused before it is opened, and the open
    itself never blocks (O_NONBLOCK), so a file swapped for a FIFO in between cannot hang."""
    where = f"{what}('{path}')"
    try:
        before = os.stat(path)
        if not stat.S_ISREG(before.st_mode):
            raise RuntimeError_(
                f"{where}: not a regular file ({_file_kind(before.st_mode)}); load a file "
                "written by export_library"
            )
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise RuntimeError_(f"{where}: cannot open the file ({err.strerror})") from err
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) != (
        before.st_dev,
        before.st_ino,
    ):
        os.close(fd)
        raise RuntimeError_(f"{where}: the file was replaced while it was opened; load it again")
    if info.st_size > limit:
        os.close(fd)
        raise RuntimeError_(
            f"{where}: the file has {info.st_size} bytes, more than the limit of {limit} "
            f"bytes ({limit >> 30} GiB); it is not an export of minitvm"
        )
    return os.fdopen(fd, "rb")


def _file_kind(mode: int) -> str:
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket"))  # fmt: skip
    return next((text for test, text in kinds if test(mode)), "not a regular file")


def _check_members(path: str, zf: zipfile.ZipFile) -> None:
    """The zip's members before any is read: few enough, unique safe names (no path is ever
    built from them, but a name like '../x' or a second meta.json says the file was forged),
    plain files (no symlink, directory or device entry), stored or deflated, not encrypted."""
    where = f"load_module('{path}')"
    infos = zf.infolist()
    if len(infos) > _MAX_MEMBERS:
        raise RuntimeError_(f"{where}: the zip has {len(infos)} members, more than {_MAX_MEMBERS}")
    seen: set = set()
    for info in infos:
        name = info.filename
        if name in seen:
            raise RuntimeError_(
                f"{where}: the zip holds two members named {name!r}; it was forged or damaged "
                "(export_library writes each once)"
            )
        seen.add(name)
        if not _MEMBER_NAME.fullmatch(name) or len(name) > 200:
            raise RuntimeError_(
                f"{where}: member name {name[:80]!r} is not a plain relative name (no '..', "
                "no leading '/', letters, digits, '_', '.', '-'); the file was not written by "
                "export_library"
            )
        mode = info.external_attr >> 16
        # 3: Unix attributes; a file type of 0 (writestr's default) is a plain file too
        if info.create_system == 3 and stat.S_IFMT(mode) not in (0, stat.S_IFREG):
            kind = "a symbolic link" if stat.S_ISLNK(mode) else _file_kind(mode)
            raise RuntimeError_(
                f"{where}: member {name!r} is {kind}, not a plain file; exports hold only plain "
                "files (nothing in an export is followed as a path)"
            )
        if info.is_dir():
            raise RuntimeError_(f"{where}: member {name!r} is a directory; exports hold files")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise RuntimeError_(
                f"{where}: member {name!r} uses compression method {info.compress_type}; "
                "exports are stored or deflated"
            )
        if info.flag_bits & 0x1:
            raise RuntimeError_(f"{where}: member {name!r} is encrypted; exports are not")


def _read_meta(path: str, zf: zipfile.ZipFile) -> dict:
    """meta.json, parsed and validated field by field (runtime/meta.py) before any use."""
    raw = read_member(path, zf, _META)
    try:
        meta = json.loads(raw)
    except (ValueError, RecursionError) as err:
        raise RuntimeError_(f"load_module('{path}'): {_META} is not valid JSON ({err})") from err
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
        raise RuntimeError_(
            f"load_module('{path}'): not a minitvm module ({_META} does not say format "
            f"{_FORMAT!r}); load files written by export_library"
        )
    version = meta.get("format_version")
    if version != _FORMAT_VERSION:
        hint = (
            "it was written by an older minitvm, before exports carried checksums; export it "
            "again with this version"
            if version == 1
            else f"this minitvm reads version {_FORMAT_VERSION}"
        )
        raise RuntimeError_(
            f"load_module('{path}'): format {_FORMAT!r} version {version!r}: {hint}"
        )
    return validate_meta(meta, f"load_module('{path}')", has_object=_OBJECT in zf.namelist())


def _check_checksums(path: str, zf: zipfile.ZipFile, meta: dict) -> None:
    """Every member is listed in meta.json's checksums and matches it, and so does meta.json.
    The verified bytes stay on `zf` for `read_member`, which hands each over once."""
    checksums = meta["checksums"]
    names = [n for n in zf.namelist() if n != _META]
    unlisted = sorted(set(names) - set(checksums)) + (["meta.json"] * (_META not in checksums))
    missing = sorted(set(checksums) - set(names) - {_META})
    if unlisted or missing or len(set(zf.namelist())) != len(zf.namelist()):
        raise RuntimeError_(
            f"load_module('{path}'): the file's members do not match its {_META} (not listed: "
            f"{unlisted[:5]}, missing: {missing[:5]}); it is damaged or was tampered with"
        )
    if meta_digest(meta) != checksums[_META]:
        raise RuntimeError_(
            f"load_module('{path}'): {_META} does not match its checksum (fields were edited "
            "after export); it is damaged or was tampered with"
        )
    # each member is read once, hashed while it is read, and kept for the loader
    zf.minitvm_checksums = checksums
    zf.minitvm_verified = {name: read_member_buffer(path, zf, name) for name in names}


def _symbol(info: dict) -> str:
    """The entry's object-file symbol (hand-written test kernels may use the bare name)."""
    return info.get("symbol", info["name"])


def _resolvable(symbol: str) -> bool:
    """An undefined symbol of an object that the JIT can bind (see docs/contracts.md)."""
    return (
        symbol in compiler_rt.PROVIDED_SYMBOLS
        or symbol in _THREADPOOL_SYMBOLS
        or symbol in _LINKER_SYMBOLS
        or bool(llvm.address_of_symbol(symbol))
    )


def _check_host_features(path: str, meta: dict) -> None:
    missing = set(meta["required_features"]) - enabled_features(host_cpu_features())
    if missing:
        raise RuntimeError_(
            f"load_module('{path}'): the code was compiled for '{meta['target']}' on a "
            f"{meta['host_cpu']} CPU and needs CPU features this machine lacks: "
            f"{', '.join(sorted(missing))}. Rebuild it here (target 'llvm')."
        )
