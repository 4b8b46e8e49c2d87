"""Reading an ONNX file without trusting it: `load_model(path)`.

The bytes are parsed by protobuf alone (`ModelProto.FromString`). With the `upb` backend
(protobuf >= 4.21, the default) that is a C parser written and fuzzed for untrusted input:
malformed bytes raise DecodeError, nesting is bounded. onnx's own C++ (the checker, shape
inference, and `onnx.load`'s external-data reader) is never run on the file in this process:
a damaged file crashed it with SIGSEGV. `check=True` runs `onnx.checker.check_model` in a
child process, where a crash is reported as an error instead of ending the caller.

External data is read only from regular files inside the model's folder (symlinks resolved),
within the file's size; a location that is absolute, climbs out with "..", or names anything
else is refused before any file is opened.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from typing import Any

from ....error import FrontendError

_MAX_BYTES = 2**31  # protobuf's own limit for one message

_CHECK_CHILD = (
    "import sys, onnx\n"
    "model = onnx.ModelProto.FromString(sys.stdin.buffer.read())\n"
    "try:\n"
    "    onnx.checker.check_model(model)\n"
    "except onnx.checker.ValidationError as err:\n"
    "    print(str(err).strip().splitlines()[0] if str(err).strip() else 'invalid')\n"
    "    sys.exit(3)\n"
)


def load_model(path: str | os.PathLike, check: bool = False) -> Any:
    """The onnx.ModelProto in the file `path`, external data included, parsed without running
    onnx's C++ on it; `check=True` also runs onnx's checker in a child process.
    >>> mod = from_onnx(load_model("model.onnx"), {"x": (1, 3, 224, 224)})
    """
    from .onnx_frontend import _require_onnx

    onnx = _require_onnx()
    path = os.fspath(path)
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO or device would block or never end
            raise FrontendError(f"load_model('{path}'): not a regular file; pass a .onnx file")
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > _MAX_BYTES:
                raise FrontendError(
                    f"load_model('{path}'): the file has {size} bytes, more than protobuf's 2 GiB "
                    "limit; save the weights as external data"
                )
            data = f.read()
    except OSError as err:
        raise FrontendError(f"load_model('{path}'): cannot read the file ({err})") from err
    try:
        model = onnx.ModelProto.FromString(data)
    except Exception as err:  # google.protobuf.message.DecodeError and friends
        raise FrontendError(
            f"load_model('{path}'): the file is not an ONNX model (protobuf could not parse it: "
            f"{err}); re-export it"
        ) from err
    if check:
        _check_in_child(path, data)
    folder = os.path.dirname(os.path.abspath(path))
    for tensor in _external_tensors(onnx, model):
        _load_external(onnx, tensor, folder, path)
    return model


def _check_in_child(path: str, data: bytes) -> None:
    """onnx.checker.check_model on `data` in a child process (its C++ may crash on bad input)."""
    try:
        p = subprocess.run(
            [sys.executable, "-c", _CHECK_CHILD],
            input=data,
            capture_output=True,
            timeout=300,
            check=False,
        )
    except subprocess.TimeoutExpired as err:
        raise FrontendError(f"load_model('{path}'): onnx's checker ran over 300 s") from err
    if p.returncode == 0:
        return
    said = p.stdout.decode(errors="replace").strip() or p.stderr.decode(errors="replace").strip()
    said = said.splitlines()[-1][:300] if said else ""
    how = f"crashed with signal {-p.returncode}" if p.returncode < 0 else f"refused it: {said}"
    raise FrontendError(
        f"load_model('{path}'): onnx's checker {how}; the file is damaged or not a valid model"
    )


def _external_tensors(onnx: Any, model: Any) -> list:
    """Every TensorProto of the graph and its subgraphs that keeps its data in a file."""
    found, graphs = [], [model.graph]
    while graphs:
        graph = graphs.pop()
        tensors = list(graph.initializer)
        for node in graph.node:
            for a in node.attribute:
                tensors += ([a.t] if a.HasField("t") else []) + list(a.tensors)
                graphs += ([a.g] if a.HasField("g") else []) + list(a.graphs)
        found += [t for t in tensors if t.data_location == onnx.TensorProto.EXTERNAL]
    return found


def _load_external(onnx: Any, tensor: Any, folder: str, path: str) -> None:
    """Read the tensor's bytes from its file in `folder` into raw_data."""
    where = f"load_model('{path}'): tensor {tensor.name!r}"
    info = {e.key: e.value for e in tensor.external_data}
    location = info.get("location", "")
    try:
        offset, length = (
            int(info.get("offset", 0)),
            int(info["length"]) if "length" in info else None,
        )
    except ValueError as err:
        raise FrontendError(f"{where}: external data offset/length are not integers") from err
    parts = location.replace("\\", "/").split("/")
    if not location or os.path.isabs(location) or ".." in parts or "\0" in location:
        raise FrontendError(
            f"{where}: external data location {location!r} is not a file name inside the "
            "model's folder; refused (nothing was read)"
        )
    root = os.path.realpath(folder)
    target = os.path.realpath(os.path.join(root, location))
    if os.path.commonpath([root, target]) != root or target == root:
        raise FrontendError(
            f"{where}: external data location {location!r} leads outside the model's folder "
            f"'{root}'; refused (nothing was read)"
        )
    try:
        with open(target, "rb") as f:
            stat = os.fstat(f.fileno())
            if not os.path.stat.S_ISREG(stat.st_mode):
                raise FrontendError(f"{where}: external data {location!r} is not a regular file")
            end = stat.st_size if length is None else offset + length
            if offset < 0 or (length is not None and length < 0) or end > stat.st_size:
                raise FrontendError(
                    f"{where}: external data {location!r} [{offset}, {end}) lies outside the "
                    f"file's {stat.st_size} bytes; the model or its data file is damaged"
                )
            f.seek(offset)
            tensor.raw_data = f.read(end - offset)
    except OSError as err:
        raise FrontendError(f"{where}: cannot read external data {location!r} ({err})") from err
    del tensor.external_data[:]
    tensor.data_location = onnx.TensorProto.DEFAULT
