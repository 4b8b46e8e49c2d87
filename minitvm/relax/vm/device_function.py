"""The relax VM on a GPU: functions whose tensors are device arrays (see DeviceFunction)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...error import ArgumentError
from ...runtime import Device, NDArray
from ...runtime import ndarray as _nd
from ...runtime.ndarray import DeviceNDArray
from ._shape_code import compile_shape_fn
from .vm import _check_fits, _Frame, _Function, _tensor_bytes


def _device_view(base: DeviceNDArray, shape: tuple, dtype: np.dtype) -> DeviceNDArray:
    """A tensor over the start of device buffer `base`, sharing its memory (the handle keeps
    the allocation alive). The memory plan gives tensors of one storage disjoint lifetimes."""
    view = DeviceNDArray.__new__(DeviceNDArray)
    view._npdtype, view._dtype, view._shape = dtype, _nd._dtype_str(dtype), shape
    view._nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    view._api, view._handle, view.device = base._api, base._handle, base.device
    view._data = view._ptr = None
    return view


def _on_device(a: Any, dev: Device, where: str, name: str, position: int) -> Any:
    """An argument of a VM on a GPU: a tensor must already live on `dev` (as TVM requires)."""
    if isinstance(a, DeviceNDArray) and a.device == dev:
        return a
    if isinstance(a, int | float | tuple | list):
        return a
    kind = f"{type(a).__module__.split('.')[0]}.{type(a).__name__}"  # numpy.ndarray, torch.Tensor
    seen = f"on {a.device}" if isinstance(a, NDArray) else f"a {kind} in host memory"
    raise ArgumentError(
        f"{where}: argument '{name}' (position {position}) is {seen}, but the VirtualMachine "
        f"runs on {dev}; copy it there first with tvm.nd.array(x, dev)"
    )


class DeviceFunction(_Function):
    """A relax function run by a VM on a GPU: tensors are DeviceNDArrays on the VM's device and
    every kernel call goes through its checked DevicePackedFunc (no pointer-swapping fast path:
    a device array has no host pointer). Planned storages are device buffers made once per
    signature, the tensors planned at their start share them; outputs are fresh device arrays
    on every call."""

    def __call__(self, args: tuple) -> Any:
        if len(args) != len(self.params):
            return super().__call__(args)  # the count error
        dev = self.vm.device
        args = tuple(_on_device(a, dev, self.where, self.params[i], i) for i, a in enumerate(args))
        try:
            key = tuple([(args[i].shape, args[i]._dtype) for i in self.tensor_params])
        except AttributeError:  # a non-tensor where a tensor belongs: the checks say which
            key = None
        return self._dispatch(args, self._value_key(args, key))

    def _new_frame(self, args: tuple, key: tuple) -> _Frame:
        heap = [0] * len(self.dims)
        for check in self.param_checks:
            check(args, heap)
        regs: list = [None] * self.num_regs
        for dst, index in self.consts:
            regs[dst] = self.vm._constants[index]
        dev, sizes = self.vm.device, self.storage_fn(heap)
        storages: dict = {}
        for dst, sid, offset, shape_fn, dtype in self.planned:
            shape = tuple(shape_fn(heap))
            nbytes = _tensor_bytes(self, shape, dtype)
            _check_fits(self, shape, nbytes, offset, sid, sizes[sid], heap)
            if offset or not nbytes:  # an OpenCL buffer has no views at an offset
                regs[dst] = DeviceNDArray(shape, dtype, dev)
                continue
            if sid not in storages:
                storages[sid] = DeviceNDArray((sizes[sid],), np.uint8, dev)
            regs[dst] = _device_view(storages[sid], shape, dtype)
        return _Frame(heap, regs, list(storages.values()), self.n_calls)

    def alloc_tensor(self, pc, dst, sid, offset, shape, dtype):
        if sid >= 0:
            return super().alloc_tensor(pc, dst, sid, offset, shape, dtype)
        shape_fn = compile_shape_fn(shape, f"{self.name} tensor")
        np_dtype, dev = np.dtype(dtype), self.vm.device

        def alloc(regs, frame):
            regs[dst] = DeviceNDArray(shape_fn(frame.heap), np_dtype, dev)

        return alloc

    def call_tir(self, pc, func, arg_regs, scalars):
        pf = self.vm._kernel(func, self.name)
        scalar_fn = compile_shape_fn(scalars, f"{self.name} call of {func}") if scalars else None

        def run(regs, frame):
            extra = scalar_fn(frame.heap) if scalar_fn else ()
            pf(*[regs[r] for r in arg_regs], *extra)

        return run
