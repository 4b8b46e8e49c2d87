"""What several verbs share: the usage error, file checks, --input-shapes and --input parsing."""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import zipfile

import numpy as np

from ..error import ArgumentError


class UsageError(ArgumentError):
    """A wrong command line (missing file, bad option value, unknown input): exit code 2."""


def example_parser(
    sub: argparse._SubParsersAction, verb: str, help_: str, description: str, epilog: str
) -> argparse.ArgumentParser:
    """A verb's parser whose --help ends with its examples, kept as written."""
    return sub.add_parser(
        verb,
        help=help_,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def existing_file(path: str, what: str) -> str:
    """`path` when it is a readable file, else a UsageError naming it."""
    if not os.path.exists(path):
        raise UsageError(f"{what} '{path}' does not exist; check the path")
    if not os.path.isfile(path):
        raise UsageError(f"{what} '{path}' is not a file")
    return path


def writable_path(path: str, option: str) -> str:
    """`path` when a file can be written there (checked before a long compile), else a
    UsageError naming the option."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise UsageError(f"{option} '{path}' is a folder; give a file name")
    if not os.path.isdir(folder):
        raise UsageError(
            f"{option} '{path}': the folder '{folder}' does not exist; create it first"
        )
    if not os.access(folder, os.W_OK):
        raise UsageError(f"{option} '{path}': the folder '{folder}' is not writable")
    return path


def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


_SHAPE_ITEM = re.compile(r"^(?P<name>.+):\[?(?P<dims>[0-9, ]*)\]?$")
SHAPES_SYNTAX = "use NAME:D1,D2,... (e.g. data:1,3,224,224), one per input"


def add_model_arguments(p: argparse.ArgumentParser) -> None:
    """MODEL.onnx and --input-shapes (read by parse_input_shapes), for verbs that import a model."""
    p.add_argument("model", metavar="MODEL.onnx", help="the ONNX model file")
    p.add_argument(
        "--input-shapes", action="append", metavar="NAME:SHAPE", help="e.g. data:1,3,224,224"
    )


def parse_input_shapes(items: list[str] | None) -> dict[str, tuple[int, ...]]:
    """`["data:1,3,224,224", "mask:[1,128]"]` (or several in one item, space separated) ->
    {name: shape}; the last ':' splits, so names such as 'input:0' work."""
    shapes: dict[str, tuple[int, ...]] = {}
    for item in [part for text in items or () for part in text.split()]:
        m = _SHAPE_ITEM.match(item)
        dims = [d.strip() for d in m["dims"].split(",")] if m else []
        if not dims or not all(d.isdigit() and int(d) > 0 for d in dims):
            raise UsageError(f"--input-shapes {item!r}: {SHAPES_SYNTAX}, dims positive integers")
        if m["name"] in shapes:
            raise UsageError(f"--input-shapes: input '{m['name']}' is given twice")
        shapes[m["name"]] = tuple(int(d) for d in dims)
    return shapes


def _load_array_file(path: str, option: str) -> dict[str, np.ndarray] | np.ndarray:
    """One .npy array, or the arrays of an .npz by name; never unpickles."""
    existing_file(path, f"{option} file")
    with open(path, "rb") as f:
        magic = f.read(6)
    if not magic.startswith((b"\x93NUMPY", b"PK")):  # .npy magic, or a zip (.npz)
        raise UsageError(
            f"{option} '{path}' is not a .npy/.npz file; write arrays with numpy.save / savez"
        )
    try:
        data = np.load(path, allow_pickle=False)
        if isinstance(data, np.lib.npyio.NpzFile):
            with data:
                return {k: data[k] for k in data.files}
        return data
    except ValueError as err:
        if "pickle" in str(err):
            raise UsageError(
                f"{option} '{path}' holds Python objects (pickled); save a numeric array "
                "with numpy.save"
            ) from err
        raise UsageError(f"{option} '{path}' is not a readable .npy/.npz file ({err})") from err
    except (OSError, EOFError, zipfile.BadZipFile) as err:
        raise UsageError(f"{option} '{path}' is not a readable .npy/.npz file ({err})") from err


def parse_inputs(items: list[str] | None, known: list[str]) -> dict[str, np.ndarray]:
    """`--input NAME=FILE.npy` or `--input FILE.npz` (arrays by input name) -> {name: array}."""
    arrays: dict[str, np.ndarray] = {}
    for item in items or ():
        name, eq, path = item.rpartition("=")
        if not eq and path.endswith(".npz"):
            found = _load_array_file(path, "--input")
            arrays.update(found)
            continue
        if not eq or not name:
            raise UsageError(
                f"--input {item!r}: use NAME=FILE.npy (inputs: {', '.join(known)}) or FILE.npz"
            )
        found = _load_array_file(path, "--input")
        if isinstance(found, dict):
            raise UsageError(
                f"--input {item!r}: an .npz holds several arrays; pass it as --input {path}"
            )
        arrays[name] = found
    return arrays


def shape_text(shape: list | tuple) -> str:
    """`(B, 3, 224, 224)`: a shape with symbolic dims by name, unquoted."""
    return "(" + ", ".join(str(d) for d in shape) + ")"


def _check_array(inp: dict, a: np.ndarray, source: str) -> None:
    """`a` has the input's dtype and rank, its fixed dims, and symbolic dims that agree."""
    want = inp["shape"]
    static_ok = len(want) == a.ndim and all(
        type(w) is not int or w == s for w, s in zip(want, a.shape)
    )
    if not static_ok:
        raise UsageError(
            f"{source}: input '{inp['name']}' must have shape {shape_text(want)}, "
            f"got {shape_text(list(a.shape))}; pass an array of that shape"
        )
    if str(a.dtype) != inp["dtype"]:
        raise UsageError(
            f"{source}: input '{inp['name']}' must be {inp['dtype']}, got {a.dtype}; "
            f"save it with numpy as a.astype('{inp['dtype']}')"
        )


def model_inputs(
    inputs: list[dict], given: dict[str, np.ndarray], random: bool, seed: int = 0
) -> list[np.ndarray]:
    """The entry's arguments in order: `given` by input name (or its name in the source
    model), random arrays of the recorded shapes for the rest when `random`."""
    names = {i["name"] for i in inputs} | {i["source_name"] for i in inputs}
    unknown = sorted(set(given) - names)
    if unknown:
        raise UsageError(
            f"--input: the model has no input {', '.join(repr(u) for u in unknown)}; its inputs "
            f"are {', '.join(repr(i['name']) for i in inputs)}"
        )
    rng = np.random.default_rng(seed)
    args, bound = [], {}
    for inp in inputs:
        a = given.get(inp["name"], given.get(inp["source_name"]))
        if a is None and not random:
            raise UsageError(
                f"input '{inp['name']}' {shape_text(inp['shape'])} {inp['dtype']} is not given; "
                f"pass --input {inp['name']}=FILE.npy, or --random for random data"
            )
        if a is None:
            a = _random_array(inp, rng)
        _check_array(inp, a, f"--input {inp['name']}")
        for w, s in zip(inp["shape"], a.shape):
            if type(w) is str and bound.setdefault(w, s) != s:
                raise UsageError(
                    f"--input {inp['name']}: dim '{w}' is {s} here but {bound[w]} in an "
                    "earlier input; symbolic dims of one name must agree"
                )
        args.append(np.ascontiguousarray(a))
    return args


def _random_array(inp: dict, rng: np.random.Generator) -> np.ndarray:
    """Random data of the recorded shape: normal floats, small non-negative integers."""
    if not all(type(d) is int for d in inp["shape"]):
        raise UsageError(
            f"input '{inp['name']}' has the symbolic shape {shape_text(inp['shape'])}; --random "
            f"needs fixed dims: pass --input {inp['name']}=FILE.npy, or compile with "
            "--input-shapes"
        )
    shape, dtype = tuple(inp["shape"]), np.dtype(inp["dtype"])
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(dtype)
    return rng.integers(0, 10, shape).astype(dtype)
