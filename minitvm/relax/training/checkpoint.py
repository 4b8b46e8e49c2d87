"""Checkpoints without pickle: named arrays plus JSON metadata, in `.npz` (always) or
`.safetensors` (when the `safetensors` package is installed).

    save_checkpoint("run.npz", {"w": w, "optim.0": s}, {"epoch": 3})
    arrays, meta = load_checkpoint("run.npz")

A loaded file is data: arrays are read with `allow_pickle=False`, names are checked against one
pattern, the metadata must parse as a JSON object, and callers compare names, shapes and dtypes
with what they expect before using any of it.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ...error import TVMError

META_KEY = "__minitvm_meta__"  # the npz entry holding the metadata (UTF-8 JSON bytes)
_NAME = re.compile(r"^[A-Za-z0-9_.:/\-]{1,200}$")
_DTYPES = {"float16", "float32", "float64", "int8", "int32", "int64", "uint8", "bool"}


class CheckpointError(TVMError, ValueError):
    """A checkpoint cannot be written, read, or does not match the model it is loaded into."""


def _format_of(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in (".npz", ".safetensors"):
        return suffix[1:]
    raise CheckpointError(
        f"checkpoint '{path}': unknown file kind {suffix or '(no suffix)'!r}; name it *.npz "
        "(or *.safetensors when the safetensors package is installed)"
    )


def check_path(path: str | os.PathLike) -> Path:
    """Refuse, before any work, a checkpoint path that `save_checkpoint` could not write."""
    path = Path(path)
    kind = _format_of(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise CheckpointError(f"checkpoint '{path}': folder '{folder}' does not exist; create it")
    if kind == "safetensors":
        _safetensors_numpy(path)
    return path


def _safetensors_numpy(path: Path) -> Any:
    try:
        import safetensors.numpy as st
    except ImportError as err:
        raise CheckpointError(
            f"checkpoint '{path}': .safetensors needs the safetensors package "
            "(`pip install safetensors`); or use a .npz path"
        ) from err
    return st


def _check_arrays(path: Path, arrays: Mapping[str, Any]) -> dict[str, np.ndarray]:
    out = {}
    for name, value in arrays.items():
        if not isinstance(name, str) or not _NAME.match(name) or name == META_KEY:
            raise CheckpointError(
                f"checkpoint '{path}': array name {name!r} is not allowed; use letters, digits "
                "and . _ : / - (at most 200 characters)"
            )
        arr = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
        if not arr.flags.c_contiguous:  # (np.ascontiguousarray would make 0-d arrays 1-d)
            arr = arr.copy(order="C")
        if arr.dtype.name not in _DTYPES:
            raise CheckpointError(
                f"checkpoint '{path}': array {name!r} has dtype {arr.dtype}; "
                f"only {sorted(_DTYPES)} are stored"
            )
        out[name] = arr
    return out


def save_checkpoint(path: str | os.PathLike, arrays: Mapping[str, Any], meta: Mapping) -> Path:
    """Write `arrays` (numpy arrays or NDArrays by name) and JSON-serialisable `meta` to `path`
    atomically (a temporary file in the same folder, then a rename)."""
    path = check_path(path)
    kind = _format_of(path)
    checked = _check_arrays(path, arrays)
    try:
        meta_text = json.dumps(dict(meta), sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise CheckpointError(f"checkpoint '{path}': metadata is not plain JSON: {err}") from err
    fd, tmp = tempfile.mkstemp(prefix=".ckpt-", suffix=path.suffix, dir=path.parent or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            if kind == "npz":
                meta_bytes = np.frombuffer(meta_text.encode("utf-8"), dtype=np.uint8)
                np.savez(f, **checked, **{META_KEY: meta_bytes})
        if kind == "safetensors":
            st = _safetensors_numpy(path)
            st.save_file(checked, tmp, metadata={"minitvm": meta_text})
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def _parse_meta(path: Path, text: str) -> dict:
    try:
        meta = json.loads(text)
    except ValueError as err:
        raise CheckpointError(f"checkpoint '{path}': its metadata is not JSON ({err})") from err
    if not isinstance(meta, dict):
        raise CheckpointError(f"checkpoint '{path}': its metadata is not a JSON object")
    return meta


def load_checkpoint(path: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict]:
    """(arrays by name, metadata) of a checkpoint written by `save_checkpoint`."""
    path = Path(path)
    kind = _format_of(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint '{path}' does not exist; check the path or train first")
    if kind == "safetensors":
        st = _safetensors_numpy(path)
        try:
            from safetensors import safe_open

            with safe_open(str(path), framework="numpy") as f:
                text = (f.metadata() or {}).get("minitvm")
            arrays = dict(st.load_file(str(path)))
        except Exception as err:  # the reader's own error types vary by version
            raise CheckpointError(
                f"checkpoint '{path}' is not a readable safetensors file: {err}"
            ) from err
        if text is None:
            raise CheckpointError(
                f"checkpoint '{path}' has no minitvm metadata; it was not written by minitvm"
            )
        return _check_arrays(path, arrays), _parse_meta(path, text)
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {name: z[name] for name in z.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as err:
        raise CheckpointError(
            f"checkpoint '{path}' is not a readable .npz of plain arrays ({err}); "
            "object (pickled) arrays are refused"
        ) from err
    meta_arr = arrays.pop(META_KEY, None)
    if meta_arr is None or meta_arr.dtype != np.uint8 or meta_arr.ndim != 1:
        raise CheckpointError(
            f"checkpoint '{path}' has no minitvm metadata; it was not written by minitvm"
        )
    try:
        text = meta_arr.tobytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise CheckpointError(f"checkpoint '{path}': its metadata is not UTF-8") from err
    return _check_arrays(path, arrays), _parse_meta(path, text)


def check_arrays_match(
    path: str | os.PathLike, arrays: Mapping[str, np.ndarray], expected: Mapping[str, Any]
) -> None:
    """Raise CheckpointError unless `arrays` has exactly the names of `expected` with the same
    shapes and dtypes (`expected` values: arrays, NDArrays or (shape, dtype) pairs)."""
    missing = [n for n in expected if n not in arrays]
    extra = [n for n in arrays if n not in expected]
    if missing or extra:
        raise CheckpointError(
            f"checkpoint '{path}' does not fit this model: missing {missing}, unexpected {extra}; "
            "resume with the same model and optimizer options it was saved with"
        )
    for name, want in expected.items():
        shape, dtype = (
            (tuple(want.shape), str(want.dtype))
            if hasattr(want, "shape")
            else (tuple(want[0]), str(want[1]))
        )
        got = arrays[name]
        if tuple(got.shape) != shape or str(got.dtype) != dtype:
            raise CheckpointError(
                f"checkpoint '{path}': array {name!r} is {got.dtype}{list(got.shape)}, this model "
                f"needs {dtype}{list(shape)}; resume with the options it was saved with"
            )


__all__ = [
    "CheckpointError",
    "check_arrays_match",
    "check_path",
    "load_checkpoint",
    "save_checkpoint",
]
