"""The file `minitvm compile` writes: a tar of two members, no pickle anywhere.

- `executable.zip`: the relax Executable as `Executable.export_library` writes it (object code,
  VM program, the model's weights as constants .npy; checksummed, loaded by
  `relax.vm.load_executable`, which checks it before anything runs);
- `metadata.json`: format and version, the target, the entry function, its inputs (name, the
  name in the source model, shape, dtype), the names of its outputs in the source model
  (optional: artifacts written before it have none), the source model's path and sha256, and
  the sha256 of `executable.zip` (so a member swapped from another artifact is refused).
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from ..error import MiniTVMError
from ._common import UsageError, existing_file, sha256_file

FORMAT = "minitvm-artifact"
VERSION = 1
_EXE = "executable.zip"
_META = "metadata.json"
_MAX_META_BYTES = 1 << 20

# metadata key -> the type its value must have (the file is data; it is checked, never run)
_META_FIELDS = {
    "format": str,
    "version": int,
    "minitvm_version": str,
    "target": str,
    "entry": str,
    "inputs": list,
    "source": dict,
    "executable_sha256": str,
}
_INPUT_FIELDS = {"name": str, "source_name": str, "shape": list, "dtype": str}


@dataclass
class Artifact:
    """A loaded artifact: the Executable and its metadata."""

    path: str
    exe: Any
    meta: dict

    @property
    def inputs(self) -> list[dict]:
        return self.meta["inputs"]

    @property
    def output_names(self) -> list[str]:
        """The outputs' names in the source model ([] when not recorded)."""
        return self.meta.get("outputs", [])


def save(path: str, exe: Any, meta: dict) -> int:
    """Write `exe` and `meta` (without the checksum field, which is added) to `path`; returns
    the file size in bytes."""
    with tempfile.TemporaryDirectory(prefix="minitvm-artifact-") as tmp:
        exe_path = os.path.join(tmp, _EXE)
        exe.export_library(exe_path)
        meta = {"format": FORMAT, "version": VERSION, **meta}
        meta["executable_sha256"] = sha256_file(exe_path)
        meta_bytes = json.dumps(meta, indent=1).encode()
        try:
            with tarfile.open(path, "w") as tar:
                tar.add(exe_path, arcname=_EXE)
                info = tarfile.TarInfo(_META)
                info.size, info.mtime = len(meta_bytes), int(time.time())
                tar.addfile(info, io.BytesIO(meta_bytes))
        except OSError as err:
            raise UsageError(f"cannot write '{path}' ({err.strerror}); check -o") from err
    return os.path.getsize(path)


def load(path: str) -> Artifact:
    """Read and check an artifact written by `save`."""
    from ..relax.vm.executable import load_executable

    existing_file(path, "artifact")
    try:
        with tarfile.open(path, "r:") as tar:
            listed = tar.getmembers()
            members = {m.name: m for m in listed}
            if set(members) != {_EXE, _META}:
                raise _damaged(path, f"members {sorted(members)}, expected {[_EXE, _META]}")
            if len(listed) != len(members):  # a second metadata.json must not win silently
                raise _damaged(path, f"a member appears twice ({[m.name for m in listed]})")
            for m in listed:
                if not m.isfile():  # a link or device member is never followed
                    raise _damaged(path, f"member {m.name} is a link or special file, not data")
            if members[_META].size > _MAX_META_BYTES:
                raise _damaged(path, f"{_META} is {members[_META].size} bytes")
            meta = _check_meta(path, json.loads(tar.extractfile(members[_META]).read()))
            with tempfile.TemporaryDirectory(prefix="minitvm-artifact-") as tmp:
                exe_path = os.path.join(tmp, _EXE)
                with open(exe_path, "wb") as out:
                    out.write(tar.extractfile(members[_EXE]).read())
                if sha256_file(exe_path) != meta["executable_sha256"]:
                    raise _damaged(path, f"{_EXE} does not match the sha256 in {_META}")
                exe = load_executable(exe_path)
    except (tarfile.TarError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise _damaged(path, str(err)) from err
    return Artifact(path, exe, meta)


def _damaged(path: str, what: str) -> MiniTVMError:
    return MiniTVMError(
        f"'{path}' is not a minitvm artifact or is damaged ({what}); "
        "compile it again with `minitvm compile`"
    )


def _check_meta(path: str, meta: Any) -> dict:
    """The metadata's fields and their types, else an error naming the first wrong one."""
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise _damaged(path, f"{_META} is not of format {FORMAT!r}")
    if meta.get("version") != VERSION:
        raise _damaged(
            path, f"{_META} version {meta.get('version')!r}, this minitvm reads {VERSION}"
        )
    for key, kind in _META_FIELDS.items():
        if type(meta.get(key)) is not kind:
            raise _damaged(path, f"{_META}: {key!r} is missing or not a {kind.__name__}")
    for inp in meta["inputs"]:
        if not isinstance(inp, dict) or any(
            type(inp.get(k)) is not t for k, t in _INPUT_FIELDS.items()
        ):
            raise _damaged(path, f"{_META}: malformed input {inp!r}")
        if not all(type(d) in (int, str) for d in inp["shape"]):
            raise _damaged(path, f"{_META}: input {inp['name']!r} has a malformed shape")
    outputs = meta.get("outputs", [])
    if not isinstance(outputs, list) or not all(type(n) is str for n in outputs):
        raise _damaged(path, f"{_META}: 'outputs' is not a list of names")
    if len(set(outputs)) != len(outputs):
        raise _damaged(path, f"{_META}: 'outputs' names one output twice")
    return meta
