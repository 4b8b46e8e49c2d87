"""OpenCL device API over pyopencl (imported on first use): memory, copies, programs, launches.

Device `opencl(k)` is the k-th OpenCL device of all platforms, in platform order (on CPU
machines that is PoCL's `pthread` device). Every failure is a DeviceError that says what to
install or change; nothing falls back to the CPU.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..error import DeviceError
from .device import device_state, missing_device

_INSTALL = (
    "install the Python package pyopencl and an OpenCL driver (on CPU machines: "
    "`pip install pyopencl` and `apt-get install -y pocl-opencl-icd`)"
)


def _cl():
    try:
        import pyopencl
    except ImportError as err:
        raise DeviceError(
            f"OpenCL is not available: pyopencl is not installed; {_INSTALL}"
        ) from err
    return pyopencl


@lru_cache(maxsize=1)
def _devices() -> tuple:
    cl = _cl()
    try:
        platforms = cl.get_platforms()
    except cl.Error as err:  # no ICD loader entry: pyopencl without a driver
        raise DeviceError(
            f"OpenCL is not available: no OpenCL platform ({err}); {_INSTALL}"
        ) from err
    devices = tuple(d for p in platforms for d in p.get_devices())
    if not devices:
        raise DeviceError(f"OpenCL is not available: the platforms list no device; {_INSTALL}")
    return devices


def unavailable_reason(device_id: int) -> str | None:
    """Why opencl(device_id) cannot be used here; None when it can."""
    return missing_device("opencl", "OpenCL", device_id, lambda: len(_devices()))


@dataclass
class _Context:
    device: object  # pyopencl.Device
    context: object
    queue: object


_contexts: dict[int, _Context] = {}


def context(device_id: int) -> _Context:
    """The context and in-order queue of opencl(device_id), made once per process."""
    return device_state(_contexts, device_id, unavailable_reason, _new_context)


def _new_context(device_id: int) -> _Context:
    cl = _cl()
    dev = _devices()[device_id]
    c = cl.Context([dev])
    return _Context(dev, c, cl.CommandQueue(c, dev))


@lru_cache(maxsize=128)  # device properties do not change while the process runs
def attribute(device_id: int, name: str):
    """A device property: max_threads_per_block, max_shared_memory_per_block, warp_size,
    device_name, has_fp64, has_fp16, compute_version."""
    dev = context(device_id).device
    table = {
        "max_threads_per_block": lambda: int(dev.max_work_group_size),
        "max_shared_memory_per_block": lambda: int(dev.local_mem_size),
        "warp_size": lambda: 1,  # OpenCL promises no lockstep sub-group size
        "device_name": lambda: dev.name.strip(),
        "has_fp64": lambda: "cl_khr_fp64" in dev.extensions or dev.double_fp_config != 0,
        "has_fp16": lambda: "cl_khr_fp16" in dev.extensions,
        "compute_version": lambda: dev.version.strip(),
        "max_block_dims": lambda: tuple(int(s) for s in dev.max_work_item_sizes)[:3],
    }
    return table[name]()


# --- memory -------------------------------------------------------------------------------
def alloc(device_id: int, nbytes: int):
    """A read-write buffer of `nbytes` (at least one byte: OpenCL refuses empty buffers)."""
    cl = _cl()
    try:
        return cl.Buffer(context(device_id).context, cl.mem_flags.READ_WRITE, size=max(nbytes, 1))
    except cl.Error as err:
        raise DeviceError(f"opencl({device_id}): cannot allocate {nbytes} bytes ({err})") from err


def copy_from_host(device_id: int, buf, host: np.ndarray) -> None:
    if host.nbytes:
        _cl().enqueue_copy(context(device_id).queue, buf, host, is_blocking=True)


def copy_to_host(device_id: int, host: np.ndarray, buf) -> None:
    if host.nbytes:
        _cl().enqueue_copy(context(device_id).queue, host, buf, is_blocking=True)


def copy_device(device_id: int, dst, src, nbytes: int) -> None:
    if nbytes:
        queue = context(device_id).queue
        _cl().enqueue_copy(queue, dst, src, byte_count=nbytes)
        queue.finish()


def sync(device_id: int) -> None:
    context(device_id).queue.finish()


# --- programs ------------------------------------------------------------------------------
def load_program(device_id: int, source: str, names: list[str]) -> dict:
    """Compile OpenCL C `source` for the device; return its kernels by name."""
    cl = _cl()
    ctx = context(device_id)
    try:
        with warnings.catch_warnings():  # the driver's remarks on generated code are not the user's
            warnings.simplefilter("ignore", cl.CompilerWarning)
            program = cl.Program(ctx.context, source).build()
    except cl.Error as err:
        raise DeviceError(
            f"opencl({device_id}) ({attribute(device_id, 'device_name')}) could not compile the "
            f"generated kernels: {err}"
        ) from err
    return {name: cl.Kernel(program, name) for name in names}


def launch(device_id: int, kernel, grid: tuple, block: tuple, args: list) -> None:
    """Run `kernel` on grid x block work-items (CUDA's grid/block; x is OpenCL dim 0)."""
    cl = _cl()
    queue = context(device_id).queue
    global_size = tuple(g * b for g, b in zip(grid, block))
    try:
        kernel.set_args(*args)
        cl.enqueue_nd_range_kernel(queue, kernel, global_size, tuple(block))
    except cl.Error as err:
        raise DeviceError(
            f"opencl({device_id}): launching kernel '{kernel.function_name}' with grid {grid} and "
            f"block {block} failed ({err})"
        ) from err


# work-groups one launch may have, per dimension and in all: 32-bit work-group counters (PoCL's
# scheduler aborts the process at 2**32) and CUDA's grid limit agree on this bound
MAX_WORK_GROUPS = 2**31 - 1


def check_launch(device_id: int, kernel, func: str, grid: tuple, block: tuple) -> None:
    """Refuse a launch beyond the device's limits for this compiled kernel (its work-group size,
    its local memory) or beyond what work-group counters and size_t can index."""
    cl = _cl()
    dev = context(device_id).device
    name = kernel.function_name
    where = f"calling '{func}': kernel '{name}'"
    info = cl.kernel_work_group_info
    most = int(kernel.get_work_group_info(info.WORK_GROUP_SIZE, dev))
    threads = math.prod(block)
    if threads > most:
        raise DeviceError(
            f"{where} needs {threads} work-items per work-group (block {block}), more than the "
            f"{most} this device allows for this kernel (CL_KERNEL_WORK_GROUP_SIZE); bind a "
            "shorter loop to the threads"
        )
    local, limit = (
        int(kernel.get_work_group_info(info.LOCAL_MEM_SIZE, dev)),
        int(dev.local_mem_size),
    )
    if local > limit:
        raise DeviceError(
            f"{where} uses {local} bytes of local (shared) memory, more than the device's "
            f"{limit} (CL_DEVICE_LOCAL_MEM_SIZE); use smaller shared-memory tiles"
        )
    size_limit = 2 ** int(dev.address_bits) - 1
    for axis, g, b in zip("xyz", grid, block):
        if g > MAX_WORK_GROUPS or g * b > size_limit:
            raise DeviceError(
                f"{where} has {g} work-groups along blockIdx.{axis} (grid {grid}), more than the "
                f"{MAX_WORK_GROUPS} a launch may have; split the work over several launches"
            )
    if math.prod(grid) > MAX_WORK_GROUPS:
        raise DeviceError(
            f"{where} has {math.prod(grid)} work-groups in all (grid {grid}), more than the "
            f"{MAX_WORK_GROUPS} a launch may have; split the work over several launches"
        )


def buffer_arg(buf):
    """The kernel argument for a buffer handle."""
    return buf


def scalar_arg(value, dtype: np.dtype):
    return np.asarray(value, dtype=dtype)[()]
