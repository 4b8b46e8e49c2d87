"""The persistent compile cache: a build's object code kept on disk between processes, so that
building the same kernels again (the same model in a new process) skips lowering and LLVM.

An entry is the object code of one `tvm.build` (all its distinct kernels, linked), stored as an
export zip (`runtime.module.write_module_zip`: meta.json with checksums, object.o, module.ll)
plus `cache_key.json`, the full key it was built for. The key is a canonical JSON text: the
minitvm version and a digest of its source files, LLVM's and llvmlite's versions, the target
(CPU and features), the lowering settings, and every kernel's printed script (which parses back
structurally equal: tests/conftest.py checks it for every built PrimFunc) and float bit
patterns (the script prints floats in decimal; structural hashes differ between processes). The file name is the key's sha256.

An entry is data, never trusted code. A hit is used only when the stored key text equals the
wanted one and the file passes every check of `load_module` (zip members, meta.json schema,
sha256 of every member, ELF architecture, resolvable symbols, embedded signature, CPU
features); anything else is a miss and the build overwrites the entry. Writes go to a temporary
file in the same directory and `os.replace` it, so readers in other processes see a whole
entry or none. Entries are evicted least recently used (a hit refreshes the file's mtime)
when the total size passes `MINITVM_CACHE_SIZE` (default 1 GiB).

    MINITVM_CACHE_DIR=/path   # where (default $XDG_CACHE_HOME/minitvm or ~/.cache/minitvm)
    MINITVM_CACHE_DIR=        # off
    minitvm cache info | minitvm cache clear
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import stat
import tempfile
import threading
import time
import warnings
import zipfile
from dataclasses import dataclass
from typing import Any

from .. import env
from ..error import MiniTVMError

FORMAT = "minitvm-compile-cache"
FORMAT_VERSION = 1
KEY_MEMBER = "cache_key.json"
_SUBDIR = f"objects-v{FORMAT_VERSION}"
_ENTRY = re.compile(r"[0-9a-f]{64}\.mtvm")
_TMP_PREFIX = ".tmp-"
_STALE_TMP_SECONDS = 3600  # a temporary file this old was left by a process that died
_MAX_KEY_BYTES = 1 << 26

STATS = {"hits": 0, "misses": 0, "rejected": 0, "writes": 0, "evicted": 0}
_log = logging.getLogger(__name__)
_lock = threading.Lock()
_source_digest: str | None = None
_warned: set[str] = set()


@dataclass(frozen=True)
class Key:
    """A build's cache key: its canonical text and the entry's file name (the text's sha256)."""

    text: str
    digest: str


# ----------------------------------------------------------------------------- location


def cache_dir() -> str | None:
    """The cache's directory, None when the cache is off (`MINITVM_CACHE_DIR=`)."""
    return env.cache_dir()


def _objects_dir(create: bool) -> str | None:
    """The entries' directory, created private (0700) when `create`; None when the cache is off
    or its directory is unusable (not ours, writable by others: then a warning says why)."""
    root = cache_dir()
    if root is None:
        return None
    path = os.path.join(root, _SUBDIR)
    try:
        if create:
            os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.lstat(path)
    except OSError as err:
        if create:
            _warn_once(path, f"cannot create it ({err.strerror})")
        return None
    if not stat.S_ISDIR(info.st_mode):
        _warn_once(path, "it is not a directory")
        return None
    if hasattr(os, "getuid") and (info.st_uid != os.getuid() or info.st_mode & 0o022):
        # others could place object code there that a later build would load
        _warn_once(path, "it is not owned by this user or is writable by others")
        return None
    return path


def _warn_once(path: str, why: str) -> None:
    if path not in _warned:
        _warned.add(path)
        warnings.warn(
            f"minitvm compile cache '{path}' is not used: {why}. Builds still work, without "
            "the cache; point MINITVM_CACHE_DIR at a private directory (or set it empty to "
            "turn the cache off)",
            RuntimeWarning,
            stacklevel=3,
        )


# ----------------------------------------------------------------------------- keys


def source_digest() -> str:
    """sha256 of minitvm's own Python sources (names and contents): code generation depends
    on them, and a development checkout changes them without changing the version."""
    global _source_digest
    if _source_digest is None:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        skip = len(root) + 1  # os.walk's paths start with root + "/": that prefix is dropped
        h = hashlib.sha256()
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")  # bytecode only
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    h.update(path[skip:].encode() + b"\0")
                    with open(path, "rb", buffering=0) as f:
                        h.update(hashlib.sha256(f.read()).digest())
        _source_digest = h.hexdigest()
    return _source_digest


def _describe(value: Any) -> Any:
    """A JSON form of the lowering settings (steps of functions, flags) without addresses."""
    if isinstance(value, tuple | list):
        return [_describe(v) for v in value]
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{value.__module__}.{value.__qualname__}"
    fields = getattr(value, "__dataclass_fields__", None)
    if fields is not None:
        return {name: _describe(getattr(value, name)) for name in fields}
    return type(value).__qualname__


def _base_doc(target: Any) -> dict:
    """The key parts every entry shares: formats, versions, minitvm's source digest, target."""
    import llvmlite
    import llvmlite.binding as llvm

    from .._version import __version__
    from ..target import host_cpu_name

    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "minitvm": __version__,
        "source": source_digest(),
        "llvm": ".".join(map(str, llvm.llvm_version_info)),
        "llvmlite": llvmlite.__version__,
        "target": str(target),
        "cpu": target.cpu,
        "features": target.features,
        "opt_level": target.opt_level,
        "host_cpu": host_cpu_name(),
    }


def _key(doc: dict) -> Key:
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return Key(text, hashlib.sha256(text.encode()).hexdigest())


def make_key(kernels: list, aliases: list, target: Any, flags: Any) -> Key | None:
    """The key of a build of `kernels` (kernel_cache._Kernel, distinct) and `aliases` ((alias's
    _Kernel, name of its twin) pairs) for `target` (a Target), or None when the cache is off."""
    if cache_dir() is None:
        return None
    doc = _base_doc(target)
    doc["lowering"] = _describe(flags)
    doc["kernels"] = [
        {"name": k.func.name, "floats": list(k.key.floats), "script": k.func.script()}
        for k in kernels
    ]
    doc["aliases"] = [[k.func.name, twin, list(k.names)] for k, twin in aliases]
    return _key(doc)


def make_build_key(kind: str, parts: dict, target: Any, flags: Any) -> Key | None:
    """The key of a whole build of kind `kind` (e.g. "relax.build") whose input is described by
    `parts` (JSON data: printed IR, constants' digests, options) for `target` with lowering
    `flags` (driver._lowering_flags()); None when the cache is off."""
    if cache_dir() is None:
        return None
    doc = _base_doc(target)
    doc.update(kind=kind, lowering=_describe(flags), input=parts)
    return _key(doc)


def _entry_path(objects: str, key: Key) -> str:
    return os.path.join(objects, f"{key.digest}.mtvm")


# ----------------------------------------------------------------------------- read


def get(key: Key, entry_name: str) -> Any:
    """The runtime.Module stored for `key`, loaded through load_module's checks, or None (no
    entry, or one that fails a check: it is ignored and will be rebuilt)."""
    from ..runtime import module as rt

    module = get_entry(key, "module", rt.read_native_module)
    if module is not None and module.entry_name != entry_name:
        module = rt.Module(module._result, entry_name)
    return module


def get_entry(key: Key, kind: str, read: Any) -> Any:
    """What `read(path, zipfile, meta)` (a load_module loader) makes of the entry stored for
    `key`, an export of `kind`; None when there is none or it fails a check (then it is
    ignored and the build that follows overwrites it)."""
    objects = _objects_dir(create=False)
    if objects is None:
        return None
    path = _entry_path(objects, key)
    try:
        info = os.lstat(path)
    except OSError:
        STATS["misses"] += 1
        return None
    try:
        if not stat.S_ISREG(info.st_mode):
            raise _Rejected("not a regular file")
        value = _load_entry(path, key, kind, read)
    except (_Rejected, MiniTVMError, OSError, zipfile.BadZipFile, ValueError) as err:
        STATS["rejected"] += 1
        STATS["misses"] += 1
        _log.info("compile cache: ignoring %s (%s); rebuilding", path, err)
        return None
    STATS["hits"] += 1
    try:
        os.utime(path)  # least recently used goes first
    except OSError:
        pass
    return value


class _Rejected(Exception):
    """An entry that is not what its key says (internal: turned into a cache miss)."""


def _load_entry(path: str, key: Key, kind: str, read: Any) -> Any:
    """load_module's sequence on one open file, plus the key check before any code is read."""
    from ..runtime import module as rt

    file = rt.open_regular_file(path, "compile cache", rt.MAX_FILE_BYTES)
    with file, zipfile.ZipFile(file) as zf:
        rt._check_members(path, zf)
        meta = rt._read_meta(path, zf)
        rt._check_checksums(path, zf, meta)
        zf.minitvm_checksums = meta["checksums"]
        if meta["kind"] != kind or KEY_MEMBER not in meta["checksums"]:
            raise _Rejected(f"kind {meta['kind']!r}, not a compile-cache entry of {kind!r}")
        stored = rt.read_member(path, zf, KEY_MEMBER)
        if len(stored) > _MAX_KEY_BYTES or stored != key.text.encode():
            raise _Rejected("its key differs from the build's (another version or input)")
        value = read(path, zf, meta)
    if value is None:
        raise _Rejected("it holds no object code")
    return value


# ----------------------------------------------------------------------------- write


def put(key: Key, module: Any) -> None:
    """Store `module` (just built for `key`) atomically; never fails the build (an unwritable
    cache is logged and skipped)."""
    from ..runtime.module import write_module_zip

    put_entry(key, lambda path, extra: write_module_zip(path, module, extra=extra))


def put_entry(key: Key, write: Any) -> None:
    """Store an entry for `key`: `write(path, extra)` writes an export zip to `path` holding the
    `extra` members (the key) too. Atomic; never fails the build (an unwritable cache is logged
    and skipped)."""
    objects = _objects_dir(create=True)
    if objects is None:
        return
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, suffix=".mtvm", dir=objects)
        os.close(fd)
        write(tmp, {KEY_MEMBER: key.text.encode()})
        os.replace(tmp, _entry_path(objects, key))
        tmp = None
        STATS["writes"] += 1
    except OSError as err:
        _log.info("compile cache: cannot write to %s (%s)", objects, err)
        return
    finally:
        if tmp is not None:
            _unlink(tmp)
    evict(objects)


def _unlink(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except OSError:  # gone already (another process evicted it)
        return False


def _entries(objects: str) -> list[tuple[float, int, str]]:
    """(mtime, size, path) of every entry, oldest first; stale temporary files are removed."""
    out = []
    now = time.time()
    try:
        names = os.listdir(objects)
    except OSError:
        return []
    for name in names:
        path = os.path.join(objects, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if name.startswith(_TMP_PREFIX):
            if now - info.st_mtime > _STALE_TMP_SECONDS:
                _unlink(path)
        elif _ENTRY.fullmatch(name) and stat.S_ISREG(info.st_mode):
            out.append((info.st_mtime, info.st_size, path))
    return sorted(out)


def evict(objects: str | None = None, limit: int | None = None) -> int:
    """Remove least recently used entries until the cache holds at most `limit` bytes
    (default MINITVM_CACHE_SIZE); returns how many were removed."""
    objects = objects or _objects_dir(create=False)
    if objects is None:
        return 0
    limit = env.cache_size() if limit is None else limit
    removed = 0
    with _lock:
        entries = _entries(objects)
        total = sum(size for _, size, _ in entries)
        for _, size, path in entries:
            if total <= limit:
                break
            if _unlink(path):
                removed += 1
            total -= size
    STATS["evicted"] += removed
    return removed


# ----------------------------------------------------------------------------- CLI helpers


def info() -> dict:
    """What `minitvm cache info` prints: directory, entries, bytes, limit."""
    root = cache_dir()
    objects = _objects_dir(create=False) if root else None
    entries = _entries(objects) if objects else []
    return {
        "directory": root,
        "enabled": root is not None,
        "entries": len(entries),
        "bytes": sum(size for _, size, _ in entries),
        "limit": env.cache_size(),
    }


def clear() -> int:
    """Remove every entry (and temporary file) of the cache; returns the entries removed."""
    root = cache_dir()
    objects = os.path.join(root, _SUBDIR) if root else None
    if objects is None or not os.path.isdir(objects):
        return 0
    removed = 0
    for name in os.listdir(objects):
        path = os.path.join(objects, name)
        if _ENTRY.fullmatch(name) or name.startswith(_TMP_PREFIX):
            removed += _unlink(path) and not name.startswith(_TMP_PREFIX)
    return removed
