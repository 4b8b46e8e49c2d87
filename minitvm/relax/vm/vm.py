"""The relax VirtualMachine: runs an Executable's program on NDArrays.

At construction every instruction becomes a Python closure `f(regs, frame)` (names resolved,
shape expressions compiled), so a call is a loop over closures. A *frame* holds what depends
only on the input-shape signature (the shapes and dtypes of the tensor arguments): the bound
dims, the planned storages and the tensors carved from them, the constants, and for each
kernel call its argument arrays. It is made (and the parameters fully checked) the first time
a signature is seen, then reused; a few signatures are kept per function.

Kernel calls go through `PackedFunc.prepare`: the first call under a frame runs the checked
path, later calls only swap the data pointers of per-call tensors (inputs, outputs) and call
the native entry: their shapes are those already checked, because every register they read
has a shape fixed by the signature. Calls whose arguments could change shape within a
signature (values from `If`, function calls, tuples) always take the checked path.

A VirtualMachine may be called from several threads at once: a frame's planned storages and
prepared argument arrays belong to one call at a time (each frame has a lock), so a call that
finds its signature's frame busy runs on a spare frame of the same signature (kept for reuse).
"""

from __future__ import annotations

import ctypes
import inspect
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from ...error import ArgumentError, DTypeError, MiniTVMError, RuntimeError_, ShapeError
from ...ir.container import Array
from ...runtime import Device, NDArray, ProfileResult, cpu
from ...runtime import ndarray as _nd
from ...runtime.module import time_calls, timing_preproc
from ...runtime.packed_func import import_dlpack
from ...runtime.registry import get_global_func
from ...runtime.vm_builtin import VMObject
from ...target.kinds import gpu_kinds
from ._fast_call import _unchecked_call
from ._shape_code import compile_shape_fn
from ._stateful import StatefulCalls
from .profile import Report, _profiled_copy
from .verify import kernel_infos, verify_program

_MAX_FRAMES = 8  # input-shape signatures remembered per function
_MAX_SPARES = 8  # idle spare frames kept per signature (for concurrent calls)
_MAX_TENSOR_BYTES = 1 << 48  # beyond any machine: a shape this big is a damaged program


class _Frame:
    """Everything fixed by one input-shape signature."""

    __slots__ = ("heap", "lock", "prep", "regs", "spares", "storages")

    def __init__(self, heap: list, regs: list, storages: list, n_calls: int) -> None:
        self.heap, self.regs, self.storages = heap, regs, storages
        self.prep: list = [None] * n_calls
        self.lock = threading.Lock()  # held by the call running on this frame
        self.spares: list[_Frame] = []  # idle frames of the same signature


_CPU = cpu(0)
_DTYPE_NAMES: dict = {}  # numpy dtype -> dtype string (a handful of entries)
_addr = ctypes.addressof
_char_at = ctypes.c_char.from_buffer


def _as_nd(data: np.ndarray, ptr: int) -> NDArray:
    """Wrap C-contiguous `data` at address `ptr` as an NDArray without re-validating it (the
    VM's hot path: NDArray(data) parses the dtype on every call)."""
    name = _DTYPE_NAMES.get(data.dtype)
    if name is None:
        name = _DTYPE_NAMES[data.dtype] = NDArray(data)._dtype
    out = NDArray.__new__(NDArray)
    out._data, out._ptr, out._dtype, out.device = data, ptr, name, _CPU
    return out


def _new_tensor(shape: tuple, nbytes: int, dtype: np.dtype) -> NDArray:
    """A fresh 64-byte-aligned tensor."""
    raw = np.empty(nbytes + _nd.ALIGNMENT, np.uint8)
    ptr = _addr(_char_at(raw))  # 4x faster than raw.ctypes.data
    off = -ptr % _nd.ALIGNMENT
    return _as_nd(raw[off : off + nbytes].view(dtype).reshape(shape), ptr + off)


def _wrap(a: Any, where: str, name: str, position: int) -> Any:
    """An argument as an NDArray (numpy / DLPack tensors wrapped without copying when possible)."""
    if type(a) is NDArray:
        return a
    if isinstance(a, np.ndarray):
        a = a if a.flags.c_contiguous else np.ascontiguousarray(a)
        return _as_nd(a, a.ctypes.data)
    if hasattr(a, "__dlpack__"):
        data = import_dlpack(a, f"{where}: argument '{name}' (position {position})")
        return _wrap(data, where, name, position)
    if a is None or isinstance(a, int | float | tuple | list | VMObject | Device):
        return a  # VMObject: a builtin's state passed back in; Device: for a packed function
    raise ArgumentError(
        f"{where}: argument '{name}' (position {position}) is a {type(a).__name__}; pass a "
        "tvm.nd.NDArray, a numpy array or a DLPack tensor"
    )


class _Function:
    """One relax function of the program, with its closures and its frames."""

    def __init__(self, vm: VirtualMachine, prog: dict) -> None:
        self.vm, self.name = vm, prog["name"]
        self.where = f"calling relax function '{self.name}'"
        self.params = prog["params"]
        self.num_regs = prog["num_regs"]
        self.dims = prog["dims"]
        self.code = prog["code"]
        self.frames: OrderedDict = OrderedDict()
        self.stable = set(range(len(self.params)))  # regs whose shape the signature fixes
        self.multi_written = vm._multi_written.get(self.name, set())  # an If's results
        self.param_checks: list = []
        self.storage_fn = compile_shape_fn(prog["storages"], f"{self.name} storages")
        self.planned: list = []  # (dst, sid, offset, shape_fn, dtype)
        self.consts: list = []  # (dst, index)
        self.n_calls = 0
        self.tensor_params: list[int] = []
        self.value_params: list[int] = []  # shape / int params: their values key the frame too
        self.param_dims = _param_dim_slots(prog)
        self.frame_static = {ins[1] for ins in self.code if ins[0] == "LoadConst"}
        self.frame_static |= {
            ins[1] for ins in self.code if ins[0] == "AllocTensor" and ins[2] >= 0
        }
        self.has_jumps = any(ins[0] in ("If", "Goto") for ins in self.code)
        # looked up on self, so that DeviceFunction's rules replace the CPU ones
        per_pc = [
            getattr(self, _RULES[ins[0]].__name__)(pc, *ins[1:]) for pc, ins in enumerate(self.code)
        ]
        self.ret = self.code[-1][1]
        if self.has_jumps:  # one closure per pc so that jump targets stay valid
            self.run_list = tuple(f if f is not None else _nop for f in per_pc)
            self.names = [_display(ins) for ins in self.code]
        else:
            self.run_list = tuple(f for f in per_pc if f is not None)
            self.names = [_display(ins) for ins, f in zip(self.code, per_pc) if f is not None]

    # ------------------------------------------------------------------ calling
    def __call__(self, args: tuple) -> Any:
        if len(args) != len(self.params):
            raise ArgumentError(
                f"{self.where}: expected {len(self.params)} arguments ({', '.join(self.params)}), "
                f"got {len(args)}"
            )
        args = tuple(_wrap(a, self.where, self.params[i], i) for i, a in enumerate(args))
        try:
            key = tuple([(args[i]._data.shape, args[i]._dtype) for i in self.tensor_params])
        except AttributeError:  # a non-tensor where a tensor belongs: the checks say which
            key = None
        return self._dispatch(args, self._value_key(args, key))

    def _value_key(self, args: tuple, key: Any) -> Any:
        """The signature plus the values of shape / int params (None: an invalid argument)."""
        if not self.value_params or key is None:
            return key
        try:
            return key + tuple([_hashable(args[i]) for i in self.value_params])
        except TypeError:  # not a shape or an int: the checks say which
            return None

    def _dispatch(self, args: tuple, key: Any) -> Any:
        """Run on the frame of signature `key` (made on first use; a spare one when busy)."""
        frame = self.frames.get(key)
        if frame is None:
            frame = self._new_frame(args, key)
            self.frames[key] = frame
            if len(self.frames) > _MAX_FRAMES:
                self.frames.popitem(last=False)
        if frame.lock.acquire(False):
            try:
                return self._run(args, frame)
            finally:
                frame.lock.release()
        try:  # another thread runs on this frame: never share its storages
            spare = frame.spares.pop()  # atomic
        except IndexError:
            spare = self._new_frame(args, key)
        try:
            return self._run(args, spare)
        finally:
            if len(frame.spares) < _MAX_SPARES:
                frame.spares.append(spare)

    def _run(self, args: tuple, frame: _Frame) -> Any:
        regs = frame.regs.copy()
        regs[: len(args)] = args
        if self.has_jumps:
            pc, code, n = 0, self.run_list, len(self.run_list)
            while pc < n:
                nxt = code[pc](regs, frame)
                pc = pc + 1 if nxt is None else nxt
        else:
            for f in self.run_list:
                f(regs, frame)
        return regs[self.ret]

    def _new_frame(self, args: tuple, key: tuple) -> _Frame:
        heap = [0] * len(self.dims)
        for check in self.param_checks:
            check(args, heap)
        sizes = self.storage_fn(heap)
        storages = [_nd._aligned_empty((n,), np.uint8) for n in sizes]
        regs: list = [None] * self.num_regs
        for dst, index in self.consts:
            regs[dst] = self.vm._constants[index]
        for dst, sid, offset, shape_fn, dtype in self.planned:
            shape = shape_fn(heap)
            nbytes = _tensor_bytes(self, shape, dtype)
            storage = storages[sid]
            _check_fits(self, shape, nbytes, offset, sid, storage.size, heap)
            regs[dst] = NDArray(storage[offset : offset + nbytes].view(dtype).reshape(shape))
        return _Frame(heap, regs, storages, self.n_calls)

    # ------------------------------------------------------------------ instruction rules
    def match_tensor(self, pc, reg, name, dtype, ndim, dims, at):
        want_dtype = dtype
        where = self.where
        name = f"argument '{name}' (position {reg})" if at == "param" else f"match_cast '{name}'"

        def check(value: Any, heap: list) -> None:
            if not isinstance(value, NDArray):
                raise ArgumentError(f"{where}: {name} must be a tensor, got {type(value).__name__}")
            if want_dtype is not None and value._dtype != want_dtype:
                raise DTypeError(
                    f"{where}: {name} has dtype {value._dtype}, expected {want_dtype}; "
                    f"convert with .astype('{want_dtype}')"
                )
            shape = value._data.shape if value._data is not None else value.shape  # a device array
            if ndim >= 0 and len(shape) != ndim:
                raise ShapeError(f"{where}: {name} has shape {shape}, expected {ndim} dimensions")
            match_dims(shape, heap)

        match_dims = self._dims_matcher(name, dims, "has shape", "dim")
        if at == "param":
            self.tensor_params.append(reg)
        return self._match_at(reg, at, check)

    def match_shape(self, pc, reg, name, ndim, dims, at):
        where = self.where
        name = f"argument '{name}' (position {reg})" if at == "param" else f"match_cast '{name}'"

        def check(value: Any, heap: list) -> None:
            if not isinstance(value, tuple | list) or not all(_is_int(v) for v in value):
                raise ArgumentError(
                    f"{where}: {name} must be a shape (a tuple of ints), got {value!r:.80}"
                )
            value = tuple(int(v) for v in value)
            if ndim >= 0 and len(value) != ndim:
                raise ShapeError(f"{where}: {name} is the shape {value}, expected {ndim} values")
            if any(v < 0 for v in value):
                raise ShapeError(f"{where}: {name} is the shape {value}; dims must be >= 0")
            match_dims(value, heap)

        match_dims = self._dims_matcher(name, dims, "is the shape", "value")
        if at == "param":  # keyed even without dims: a frame's params are checked only once
            self.value_params.append(reg)
        return self._match_at(reg, at, check)

    def match_tuple(self, pc, reg, name, length, at):
        where = self.where
        name = f"argument '{name}' (position {reg})" if at == "param" else f"'{name}'"
        if at == "body" and reg < len(self.params):
            name = f"argument '{name[1:-1]}' (position {reg})"

        def check(value: Any, heap: list) -> None:
            if not isinstance(value, tuple | list):
                raise ArgumentError(
                    f"{where}: {name} must be a tuple of {length} items, got a "
                    f"{type(value).__name__}"
                )
            if len(value) != length:
                raise ArgumentError(
                    f"{where}: {name} must be a tuple of {length} items, got {len(value)}"
                )

        return self._match_at(reg, at, check)

    def match_prim(self, pc, reg, name, dim, at):
        where = self.where
        name = f"argument '{name}' (position {reg})" if at == "param" else f"match_cast '{name}'"

        def check(value: Any, heap: list) -> None:
            if not _is_int(value):
                raise ArgumentError(f"{where}: {name} must be an int, got {value!r:.80}")
            match_dims((int(value),), heap)

        match_dims = self._dims_matcher(name, [dim], "is", "value")
        if at == "param":
            self.value_params.append(reg)
        return self._match_at(reg, at, check)

    def _match_at(self, reg: int, at: str, check: Callable) -> Callable | None:
        """A param is checked once per signature (with the frame), a match_cast on every call."""
        if at == "param":
            self.param_checks.append(lambda args, heap: check(args[reg], heap))
            return None
        return lambda regs, frame: check(regs[reg], frame.heap)

    def _dims_matcher(self, name: str, dims: Any, seen: str, what: str) -> Callable:
        """`match(values, heap)`: binds each ["bind", slot] dim, checks the others."""
        where, names = self.where, self.dims
        checks = {
            k: compile_shape_fn([d[1]], f"{self.name} {name}")
            for k, d in enumerate(dims or ())
            if type(d) is not int and d[0] == "check"
        }

        def match(values: Any, heap: list) -> None:
            for k, d in enumerate(dims or ()):
                if type(d) is int:
                    want = d
                elif d[0] == "bind":
                    heap[d[1]] = values[k]
                    continue
                else:
                    want = checks[k](heap)[0]
                if values[k] != want:
                    shown = tuple(values) if seen != "is" else values[0]
                    raise ShapeError(
                        f"{where}: {name} {seen} {shown}: {what} {k} must be {want}"
                        f"{_dim_origin(d, names)}"
                    )

        return match

    def alloc_storage(self, pc, sid, size):
        return None  # made with the frame

    def load_const(self, pc, dst, index):
        self.consts.append((dst, index))
        self.stable.add(dst)

    def load_imm(self, pc, dst, value):
        def run(regs, frame):
            regs[dst] = value

        return run

    def alloc_tensor(self, pc, dst, sid, offset, shape, dtype):
        shape_fn = compile_shape_fn(shape, f"{self.name} tensor")
        np_dtype = np.dtype(dtype)
        if sid >= 0:
            self.planned.append((dst, sid, offset, shape_fn, np_dtype))
            self.stable.add(dst)
            return None
        if all(_only_param_dims(s, self.param_dims) for s in shape):
            self.stable.add(dst)
        try:
            static = shape_fn([])
        except IndexError:
            static = None
        if static is not None:
            nbytes = _tensor_bytes(self, static, np_dtype)

            def alloc(regs, frame):
                regs[dst] = _new_tensor(static, nbytes, np_dtype)

        else:
            size = np_dtype.itemsize

            def alloc(regs, frame):
                shape = shape_fn(frame.heap)
                n = size
                for d in shape:
                    n *= d
                try:
                    regs[dst] = _new_tensor(shape, n, np_dtype)
                except (ValueError, MemoryError):
                    _tensor_bytes(self, shape, np_dtype)  # says why
                    raise

        return alloc

    def call_tir(self, pc, func, arg_regs, scalars):
        pf = self.vm._kernel(func, self.name)
        scalar_fn = compile_shape_fn(scalars, f"{self.name} call of {func}") if scalars else None
        # the fast path reuses the first call's scalars: only those fixed by the signature qualify
        fixed = all(_only_param_dims(src, self.param_dims) for src in scalars)
        slots = _buffer_slots(pf)  # an R.Prim input (a scalar position) qualifies if it keys frames
        fixed = fixed and all(j in slots or r in self.value_params for j, r in enumerate(arg_regs))
        if not fixed or not all(r in self.stable for r in arg_regs):

            def checked(regs, frame):
                extra = scalar_fn(frame.heap) if scalar_fn else ()
                pf(*[regs[r] for r in arg_regs], *extra)

            return checked
        k = self.n_calls
        self.n_calls += 1
        dyn = tuple((slots[j], r) for j, r in enumerate(arg_regs) if j in slots)
        dyn = tuple((s, r) for s, r in dyn if r not in self.frame_static)
        return _unchecked_call(k, pf, arg_regs, scalar_fn, dyn)

    def call_packed(self, pc, func, arg_regs):
        resolved: list = [None]  # resolved (and its arity checked) at the first call
        where = self.where

        def run(regs, frame):
            fn = resolved[0]
            if fn is None:
                fn = get_global_func(func, allow_missing=True)
                if fn is None:
                    raise MiniTVMError(
                        f"{where}: no global function named '{func}' for call_dps_packed; register "
                        f"it with @tvm.register_func('{func}')"
                    )
                _check_packed_arity(where, func, fn, len(arg_regs))
                resolved[0] = fn
            fn(*[regs[r] for r in arg_regs])

        return run

    def call_builtin(self, pc, dst, func, arg_regs):
        resolved: list = []  # looked up at the first call
        where = self.where

        def run(regs, frame):
            if not resolved:
                fn = get_global_func(func, allow_missing=True)
                if fn is None:
                    raise MiniTVMError(
                        f"{where}: no global function named '{func}'; register it with "
                        f"@tvm.register_func('{func}')"
                    )
                _check_packed_arity(where, func, fn, len(arg_regs))
                resolved.append(fn)
            regs[dst] = resolved[0](*[regs[r] for r in arg_regs])

        return run

    def call(self, pc, dst, func, arg_regs):
        functions = self.vm._functions  # the callee may be made after this function
        callee: list = []

        def run(regs, frame):
            if not callee:
                callee.append(functions[func])
            regs[dst] = callee[0]([regs[r] for r in arg_regs])

        return run

    def make_tuple(self, pc, dst, regs_):
        def run(regs, frame):
            # TVM's runtime Array (a tuple): `isinstance(out, tvm_ffi.Array)` holds as in TVM
            regs[dst] = Array([regs[r] for r in regs_])

        return run

    def get_item(self, pc, dst, src, index):
        where = self.where

        def run(regs, frame):
            try:
                regs[dst] = regs[src][index]
            except (IndexError, TypeError, KeyError):
                raise RuntimeError_(
                    f"{where}: instruction {pc} takes item {index} of a "
                    f"{type(regs[src]).__name__}, which has no such item; the VM program is "
                    "damaged"
                ) from None

        return run

    def move(self, pc, dst, src):
        if src in self.stable and not self.has_jumps and dst not in self.multi_written:
            self.stable.add(dst)

        def run(regs, frame):
            regs[dst] = regs[src]

        return run

    def make_shape(self, pc, dst, srcs):
        fn = compile_shape_fn(srcs, f"{self.name} shape")

        def run(regs, frame):
            regs[dst] = fn(frame.heap)

        return run

    def make_scalar(self, pc, dst, src):
        fn = compile_shape_fn([src], f"{self.name} scalar")

        def run(regs, frame):
            regs[dst] = fn(frame.heap)[0]

        return run

    def if_(self, pc, cond, else_pc):
        where = self.where

        def run(regs, frame):
            value = regs[cond]
            value = value.numpy() if isinstance(value, NDArray) else np.asarray(value)
            if value.size != 1 or value.dtype.kind not in "biuf":
                raise ArgumentError(
                    f"{where}: the condition of an If is a {value.dtype} value of shape "
                    f"{value.shape}; it must be one bool or number"
                )
            return None if bool(value) else else_pc

        return run

    def goto(self, pc, target):
        return lambda regs, frame: target

    def ret(self, pc, reg):
        return None


def _tensor_bytes(fn: _Function, shape: tuple, dtype: np.dtype) -> int:
    """The bytes of a tensor the VM allocates; a ShapeError for a negative or absurd shape."""
    nbytes = dtype.itemsize
    for d in shape:
        nbytes *= d
    if any(d < 0 for d in shape) or nbytes >= _MAX_TENSOR_BYTES:
        raise ShapeError(
            f"{fn.where}: the VM program allocates a tensor of shape {tuple(shape)} {dtype}; dims "
            f"must be >= 0 and a tensor under {_MAX_TENSOR_BYTES} bytes"
        )
    return nbytes


def _check_packed_arity(where: str, name: str, fn: Callable, n: int) -> None:
    """A registered Python function must accept the number of arguments the program passes."""
    try:
        inspect.signature(fn).bind(*range(n))
    except TypeError as err:
        raise ArgumentError(
            f"{where}: the program passes {n} arguments to global function '{name}', which "
            f"does not take them ({err})"
        ) from None
    except ValueError:  # no signature to read (a builtin): the call itself will say
        pass


def _check_fits(fn: _Function, shape, nbytes: int, offset: int, sid: int, size: int, heap) -> None:
    """A planned tensor must lie inside its storage (sized from the dims' upper bounds)."""
    _tensor_bytes(fn, shape, np.dtype(np.uint8))
    if offset + nbytes > size:
        raise ShapeError(
            f"{fn.where}: a tensor of shape {shape} needs {nbytes} bytes but its planned "
            f"storage {sid} has {size}: a dim exceeds its tir_var_upper_bound "
            f"(bound dims: {dict(zip(fn.dims, heap))})"
        )


def _nop(regs, frame):
    return None


def _is_int(v: Any) -> bool:
    return isinstance(v, int | np.integer) and not isinstance(v, bool)


def _hashable(v: Any) -> Any:
    """A shape or int argument as a frame-key entry (TypeError for anything else: 2.0 must
    not find the frame of 2, whose checks were passed by another value)."""
    if isinstance(v, tuple | list) and all(_is_int(x) for x in v):
        return ("shape", *[int(x) for x in v])
    if _is_int(v):
        return ("int", int(v))
    raise TypeError("not a shape or an int")


def _buffer_slots(pf) -> dict:
    """Argument position -> pointer slot of the kernel's buffer params."""
    slots, k = {}, 0
    for position, p in enumerate(pf.info["params"]):
        if p["kind"] == "buffer":
            slots[position] = k
            k += 1
    return slots


def _only_param_dims(src: str, param_dims: set) -> bool:
    return all(int(m) in param_dims for m in re.findall(r"h\[(\d+)\]", src))


def _dim_origin(d: Any, names: list) -> str:
    """For a dim checked against an expression of bound dims: the expression in their names."""
    if type(d) is int or d[0] != "check":
        return ""
    return " (= " + re.sub(r"h\[(\d+)\]", lambda m: names[int(m.group(1))], d[1]) + ")"


def _display(ins: list) -> str:
    if ins[0] in ("CallTIR", "CallPacked"):
        return ins[1]
    if ins[0] == "CallBuiltin":
        return ins[2]
    if ins[0] == "Call":
        return f"call {ins[2]}"
    return ins[0]


_RULES: dict[str, Callable] = {
    "MatchTensor": _Function.match_tensor,
    "MatchShape": _Function.match_shape,
    "MatchPrim": _Function.match_prim,
    "MatchTuple": _Function.match_tuple,
    "AllocStorage": _Function.alloc_storage,
    "AllocTensor": _Function.alloc_tensor,
    "LoadConst": _Function.load_const,
    "LoadImm": _Function.load_imm,
    "CallTIR": _Function.call_tir,
    "CallPacked": _Function.call_packed,
    "CallBuiltin": _Function.call_builtin,
    "Call": _Function.call,
    "MakeTuple": _Function.make_tuple,
    "GetItem": _Function.get_item,
    "Move": _Function.move,
    "MakeShape": _Function.make_shape,
    "MakeScalar": _Function.make_scalar,
    "If": _Function.if_,
    "Goto": _Function.goto,
    "Ret": _Function.ret,
}


class VirtualMachine(StatefulCalls):
    """Runs a built Executable: `vm = relax.VirtualMachine(ex, tvm.cpu()); vm["main"](x, w)`.

    Arguments may be NDArrays, numpy arrays or DLPack tensors; results are NDArrays (tuples for
    tuple results)."""

    def __init__(self, exe: Any, device: Device | None = None, profile: bool = False) -> None:
        (device or cpu(0)).check_available()
        self.exe = exe
        self.device = device or cpu(0)
        self._module = exe.mod
        _check_kernels_for(exe.mod, self.device)
        if self.device.is_gpu:  # copied to the device once, shared by every call
            self._constants = [_nd.array(a, self.device) for a in exe.constants]
        else:
            self._constants = [NDArray(_nd._aligned_empty(a.shape, a.dtype)) for a in exe.constants]
            for nd_, a in zip(self._constants, exe.constants):
                np.copyto(nd_._data, a)
        self._kernels: dict = {}
        # the program's rules (verify.py), before anything of it becomes a closure
        self._multi_written = verify_program(
            exe.program, kernel_infos(exe.mod), len(exe.constants), "VirtualMachine"
        )
        self._functions: dict[str, _Function] = {}
        for name, prog in exe.program["functions"].items():
            self._functions[name] = self._make_function(prog)
        self._profiled: dict[str, _Function] = {}
        self.profile_enabled = profile

    def _make_function(self, prog: dict) -> _Function:
        if self.device.is_gpu:
            from .device_function import DeviceFunction  # beside us: it extends _Function

            return DeviceFunction(self, prog)
        return _Function(self, prog)

    def _kernel(self, name: str, caller: str):
        if name not in self._kernels:
            if self._module is None or name not in self._module:
                raise MiniTVMError(
                    f"relax function '{caller}' calls kernel '{name}', which the executable's "
                    "native module does not have"
                )
            self._kernels[name] = self._module[name]
        return self._kernels[name]

    def _get(self, name: str) -> _Function:
        try:
            return self._functions[name]
        except KeyError:
            raise MiniTVMError(
                f"the executable has no relax function '{name}'; it has {sorted(self._functions)}"
            ) from None

    def __getitem__(self, name: str) -> Callable:
        saved = self._saved(name) if name not in self._functions else None
        if saved is not None:  # save_function's binding: called without arguments
            return saved
        fn = self._get(name)
        return lambda *args: fn(args)

    def invoke(self, name: str, *args: Any) -> Any:
        return self._get(name)(args)

    # ------------------------------------------------------------------ timing and profiling
    @property
    def module(self) -> VirtualMachine:
        """TVM's `vm.module`: the VM itself implements the runtime Module protocol used on it
        (`vm.module.time_evaluator("main", dev)(*args)`)."""
        return self

    def time_evaluator(
        self,
        func_name: str,
        dev: Device | None = None,
        number: int = 10,
        repeat: int = 1,
        min_repeat_ms: float = 0,
        cache_flush_bytes: int = 0,
        f_preproc: str | Callable = "",
        **unused_options: Any,
    ) -> Callable[..., ProfileResult]:
        """A callable that times `func_name` on given args (the runtime Module's protocol,
        `f_preproc` and `cache_flush_bytes` included, on the CPU)."""
        saved = self._saved(func_name) if func_name not in self._functions else None
        if saved is not None:  # a save_function binding times its stored call
            sync = self.device.sync if self.device.is_gpu else (lambda: None)
            return lambda: time_calls(lambda: (saved(), sync()), number, repeat, min_repeat_ms)
        if func_name == "invoke_stateful" and func_name not in self._functions:
            return self._stateful_timer(number, repeat, min_repeat_ms)
        fn = self._get(func_name)
        before = timing_preproc(dev, number, repeat, f_preproc, cache_flush_bytes)
        if before is not None and self.device.is_gpu:
            raise MiniTVMError(
                "time_evaluator: f_preproc / cache_flush_bytes flush CPU caches; this VM runs "
                f"on {self.device}"
            )

        def evaluator(*args: Any) -> ProfileResult:
            if not self.device.is_gpu:
                args = tuple(
                    _wrap(a, fn.where, fn.params[i] if i < len(fn.params) else "?", i)
                    for i, a in enumerate(args)
                )
                preproc = None if before is None else (lambda: before(*args))
                return time_calls(lambda: fn(args), number, repeat, min_repeat_ms, preproc)
            sync = self.device.sync  # device arguments are checked by the call itself

            def run_and_wait() -> None:  # a call counts until its kernels have finished
                fn(args)
                sync()

            return time_calls(run_and_wait, number, repeat, min_repeat_ms)

        return evaluator

    def profile(self, func_name: str, *args: Any, number: int = 1) -> Report:
        """Run `func_name` `number` times with every instruction timed; returns a Report
        (print it: per-op name, calls, total µs, percent, sorted by time)."""
        fn = self._get(func_name)
        if func_name not in self._profiled:
            # on a GPU each op is timed until its kernels finish, not only their launch
            sync = self.device.sync if self.device.is_gpu else None
            self._profiled[func_name] = _profiled_copy(fn, sync)
        pfn = self._profiled[func_name]
        # warm up the timed copy itself (its frames and first checked calls are not what the
        # report is about), then start counting afresh
        pfn.acc = {}
        pfn(args)
        acc = pfn.acc = {}
        start = time.perf_counter()
        for _ in range(number):
            pfn(args)
        total = time.perf_counter() - start
        return Report(func_name, acc, total, number)


def _check_kernels_for(mod: Any, device: Device) -> None:
    """Refuse a VM whose device cannot run the executable's kernels (built for another target)."""
    if mod is None:
        return
    kind = getattr(mod, "type_key", "llvm")
    kind = kind if kind in gpu_kinds() else "llvm"  # CPU modules: llvm (or a loaded one's key)
    target = device.name if device.is_gpu else "llvm"
    if kind != target:
        raise ArgumentError(
            f"VirtualMachine: the executable's kernels were built for {kind!r} and cannot run on "
            f"{device}; build it with relax.build(mod, target={target!r}) for this device"
        )


# where each match instruction keeps its dims
_MATCH_DIMS: dict[str, Callable] = {
    "MatchTensor": lambda ins: ins[5] or (),
    "MatchShape": lambda ins: ins[4] or (),
    "MatchPrim": lambda ins: (ins[3],),
    "MatchTuple": lambda ins: (),
}


def _param_dim_slots(prog: dict) -> set:
    return {
        d[1]
        for ins in prog["code"]
        if ins[0] in _MATCH_DIMS and ins[-1] == "param"
        for d in _MATCH_DIMS[ins[0]](ins)
        if type(d) is not int and d[0] == "bind"
    }
