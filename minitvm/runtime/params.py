"""Parameter dicts as bytes: TVM's `save_param_dict` / `load_param_dict` (also spelled
`relay.save_param_dict`). The format is an .npz archive (no pickle); loading treats the bytes as
untrusted data."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..error import BuildError, DTypeError


def save_param_dict(params: Mapping[str, Any]) -> bytes:
    """Parameters as bytes (an .npz archive, no pickle) for `load_param_dict` / `load_params`."""
    import io

    import numpy as np

    buf = io.BytesIO()
    arrays = {}
    for k, v in params.items():
        arr = v.numpy() if hasattr(v, "numpy") else np.asarray(v)
        if arr.dtype.type.__module__ == "ml_dtypes":
            # .npy has no name for bfloat16/float8/int4 (it would load back as raw "|V2"):
            # store the bits as unsigned ints, with the dtype in the member's name
            k, arr = f"{k}{_BITS_OF}{arr.dtype.name}", arr.view(f"uint{8 * arr.dtype.itemsize}")
        arrays[k] = arr
    np.savez(buf, **arrays)
    return buf.getvalue()


_BITS_OF = "::bits-of::"  # "<param>::bits-of::<dtype>" holds that dtype's bit patterns


def _typed(name: str, arr: Any) -> tuple[str, Any]:
    """A member `save_param_dict` wrote as bits, viewed as its dtype again (ml_dtypes types
    only, with the matching width); any other member unchanged."""
    from ..ir.dtype import DataType

    param, sep, dtype_name = name.rpartition(_BITS_OF)
    if not sep:
        return name, arr
    dtype = DataType(dtype_name).numpy_dtype()
    if dtype.type.__module__ != "ml_dtypes" or arr.dtype != f"uint{8 * dtype.itemsize}":
        raise ValueError(f"member '{name}' of {arr.dtype} is not {dtype_name} bits")
    return param, arr.view(dtype)


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
                    name, arr = _typed(name, read_npy(member, info.file_size, name))
                    params[name] = _nd.array(arr)
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
        DTypeError,  # a bits member naming an unknown dtype
    ) as err:
        raise BuildError(
            f"load_param_dict: the {len(param_bytes)} bytes are not a parameter archive from "
            f"save_param_dict ({type(err).__name__}: {str(err)[:200]}); pass the bytes of the "
            ".params file it wrote"
        ) from err


def save_param_dict_to_file(params: Mapping[str, Any], path: str) -> None:
    """Write `save_param_dict(params)` to the file `path` (TVM's name)."""
    with open(path, "wb") as f:
        f.write(save_param_dict(params))


def load_param_dict_from_file(path: str) -> dict:
    """The dict of NDArrays in the file `path` written by `save_param_dict_to_file`."""
    with open(path, "rb") as f:
        return load_param_dict(f.read())
