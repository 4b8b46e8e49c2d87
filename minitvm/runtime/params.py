"""Parameter dicts as bytes: TVM's `save_param_dict` / `load_param_dict` (also spelled
`relay.save_param_dict`). The format is an .npz archive (no pickle); loading treats the bytes as
untrusted data."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..error import BuildError


def save_param_dict(params: Mapping[str, Any]) -> bytes:
    """Parameters as bytes (an .npz archive, no pickle) for `load_param_dict` / `load_params`."""
    import io

    import numpy as np

    buf = io.BytesIO()
    arrays = {k: (v.numpy() if hasattr(v, "numpy") else np.asarray(v)) for k, v in params.items()}
    np.savez(buf, **arrays)
    return buf.getvalue()


def load_param_dict(param_bytes: bytes | bytearray) -> dict:
    """The dict of NDArrays that `save_param_dict` wrote. The bytes are data from a file:
    anything but such an archive (cut short, not a zip, an array whose header promises more
    data than it holds, ...) is a BuildError, never a Python error or a huge allocation."""
    import io
    import zipfile
    import zlib

    import numpy as np
    from numpy.lib import format as npy

    from . import ndarray as _nd

    def read_npy(member: Any, size: int, name: str) -> np.ndarray:
        # the header must not promise more bytes than the member holds: shape (10**12,)
        # would otherwise be allocated before a byte is read
        readers = {(1, 0): npy.read_array_header_1_0, (2, 0): npy.read_array_header_2_0}
        version = npy.read_magic(member)
        if version not in readers:
            raise ValueError(f"array '{name}' has .npy format version {version}")
        shape, fortran, dtype = readers[version](member)
        if dtype.hasobject:
            raise ValueError(f"array '{name}' holds Python objects; params are numbers")
        nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
        if nbytes > size:
            raise ValueError(
                f"array '{name}' declares shape {shape} of {dtype} ({nbytes} bytes) in a "
                f"member of {size} bytes"
            )
        data = member.read(nbytes)
        if len(data) != nbytes:
            raise ValueError(f"array '{name}' is cut short")
        flat = np.frombuffer(data, dtype=dtype, count=nbytes // max(dtype.itemsize, 1))
        return flat.reshape(shape, order="F" if fortran else "C")

    if not isinstance(param_bytes, bytes | bytearray | memoryview):
        raise BuildError(
            f"load_param_dict takes the bytes of a .params file, got {type(param_bytes).__name__}"
        )
    try:
        with zipfile.ZipFile(io.BytesIO(bytes(param_bytes))) as archive:
            params = {}
            for info in archive.infolist():
                name = info.filename.removesuffix(".npy")
                with archive.open(info) as member:
                    params[name] = _nd.array(read_npy(member, info.file_size, name))
            return params
    except (
        zipfile.BadZipFile,
        zlib.error,
        EOFError,
        OSError,
        ValueError,  # UnicodeDecodeError included
        KeyError,
        TypeError,
        NotImplementedError,  # a compression method zipfile lacks
        OverflowError,
        RecursionError,  # a header dict nested past Python's parser
        MemoryError,
    ) as err:
        raise BuildError(
            f"load_param_dict: the {len(param_bytes)} bytes are not a parameter archive from "
            f"save_param_dict ({type(err).__name__}: {str(err)[:200]}); pass the bytes of the "
            ".params file it wrote"
        ) from err
