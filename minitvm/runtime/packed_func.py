"""The one wrapper through which Python calls compiled code: check every argument, then call.

For each FuncInfo (docs/contracts.md §3) we generate a small Python function specialised to
it (see `PackedFunc.checker_source`): it unwraps each argument, compares dtype and shape
with precomputed values, refuses read-only outputs and overlapping arguments, fills
preallocated ctypes argument arrays and calls the native entry (ABI of contracts.md §2). Any
failed check hands over to `_explain`, a plain, generic checker that raises the error naming
the function, the argument and the dimension. Bad arguments never reach native code.

Metadata is data: the generated source names everything positionally (a0, p1, v2) and holds
no string from the FuncInfo; ints enter it through repr() after validation, and shape
expressions are parsed into a small tree of int constants, + - * // % min max and positional
names, which is evaluated by `_eval` (never eval()) or printed by `_expr_code`.
"""

from __future__ import annotations

import ctypes
import threading
import types

import numpy as np

from ..error import ArgumentError, DTypeError, InternalError, RuntimeError_, ShapeError
from ..ir.dtype import DataType
from .ndarray import NDArray
from .packed_plan import (
    _CPU_DEVICES,
    _MAX_INT,
    _NATIVE,
    _Buffer,
    _Dim,
    _divides,
    _eval,
    _expr_code,
    _Plan,
    _plan,
    _Scalar,
)


# --- the generated fast path -------------------------------------------------------------
def _generate(plan: _Plan, overlap: bool = True) -> str:
    """Python source of `fast(*args)` for this plan (readable on purpose: see checker_source).

    Every name in it is positional: a<k> argument k, d<s>/p<s>/s<s> data, pointer and shape
    of buffer slot s, v<i> symbolic dim i, n<s> byte size of slot s. The overlap test is a
    cheap filter (an empty array inside another one also trips it); `_explain` decides
    exactly and then calls the twin generated with `overlap=False`."""
    names = [f"a{p.position}" for p in plan.params]
    ptr_list = ", ".join(f"p{b.slot}" for b in plan.buffers)
    lines = [
        "def fast(*args):",
        f"    if len(args) != {len(plan.params)!r}:",
        "        return slow(args)",
    ]
    if plan.params:
        lines.append(f"    {', '.join(names)}{',' if len(names) == 1 else ''} = args")
    for b in plan.buffers:
        lines += _unwrap_lines(b)
    for i, s in enumerate(plan.syms):
        lines.append(f"    v{i} = s{plan.buffer_at(s.position).slot}[{s.dim!r}]")
        hi = _int_range(s.dtype)[1]
        if hi < _MAX_INT:  # the native code holds it in a narrower int
            lines += [f"    if v{i} > {hi!r}:", "        return slow(args)"]
    slot_values = [f"v{i}" for i in range(len(plan.syms))]
    float_slots = []
    for s in plan.scalars:
        a = f"a{s.position}"
        lines += [f"    if not ({_scalar_test(a, s.dtype)}):", "        return slow(args)"]
        if s.dtype.is_float:
            float_slots.append((s.slot, a))
            slot_values.append("0")
        else:
            slot_values.append(a)
    lines += _shape_lines(plan)
    lines += _overlap_lines(plan) if overlap else []
    lines += [
        "    if acquire(False):",
        "        try:",
        *[f"            ptrs[{b.slot}] = p{b.slot}" for b in plan.buffers],
        *[f"            ints[{j}] = {v}" for j, v in enumerate(slot_values) if v != "0"],
        *[f"            floats[{j}] = {a}" for j, a in float_slots],
        "            rc = native(ptrs_addr, ints_addr)",
        *([f"            out = {_ret_read(plan, 'ints', 'floats')}"] if plan.ret else []),
        "        finally:",
        "            release()",
        "    else:  # another thread is inside this function: use fresh argument arrays",
        f"        fresh_ptrs = PtrArray({ptr_list})",
        f"        fresh_ints = IntArray({', '.join(slot_values)})",
        *[f"        FloatArray.from_buffer(fresh_ints)[{j}] = {a}" for j, a in float_slots],
        "        rc = native(addressof(fresh_ptrs), addressof(fresh_ints))",
        *(
            [f"        out = {_ret_read(plan, 'fresh_ints', 'FloatArray.from_buffer(fresh_ints)')}"]
            if plan.ret
            else []
        ),
        "    if rc:",
        "        failed(rc)",
        *(["    return out"] if plan.ret else []),
    ]
    return "\n".join(lines) + "\n"


def _ret_read(plan: _Plan, ints: str, floats: str) -> str:
    """The expression reading T.ret's value back from its 64-bit slot (see codegen's _ret)."""
    k = plan.ret_slot
    if plan.ret.is_float:
        return f"{floats}[{k!r}]"
    if plan.ret.is_bool:
        return f"{ints}[{k!r}] != 0"
    if plan.ret.is_uint:
        return f"{ints}[{k!r}] % 18446744073709551616"  # the i64 bit pattern, unsigned
    return f"{ints}[{k!r}]"


def _unwrap_lines(b: _Buffer) -> list[str]:
    """Data, pointer and shape of buffer slot b.slot; a written buffer must be writable."""
    a, k = f"a{b.position}", b.slot
    nd_check = [f"        if not d{k}.flags.writeable:", "            return slow(args)"]
    return [
        f"    # argument {b.position}: buffer slot {k}{', written' if b.written else ''}",
        f"    if type({a}) is NDArray:",
        f"        d{k} = {a}._data",
        f"        p{k} = {a}._ptr",
        *(nd_check if b.written else []),
        f"    elif type({a}) is ndarray and {a}.flags.c_contiguous:",
        f"        d{k} = {a}",
        "        try:  # 4x faster than .ctypes.data; needs a writable, non-empty buffer",
        f"            p{k} = addressof(char_from_buffer({a}))",
        "        except (TypeError, ValueError):",
        *(
            [f"            if not {a}.flags.writeable:", "                return slow(args)"]
            if b.written
            else []
        ),
        f"            p{k} = {a}.ctypes.data",
        "    else:",
        "        return slow(args)",
        f"    s{k} = d{k}.shape",
        f"    if d{k}.dtype is not dt{k} and d{k}.dtype != dt{k}{_rank_test(b)}:",
        "        return slow(args)",
    ]


def _rank_test(b: _Buffer) -> str:
    """The rank test, unless the whole shape is compared later and no dim is read before."""
    compared_later = b.dims and not any(d.defines for d in b.dims)
    return "" if compared_later else f" or len(s{b.slot}) != {len(b.dims)!r}"


def _shape_lines(plan: _Plan) -> list[str]:
    lines = []
    for b in plan.buffers:
        if not b.dims or all(d.defines for d in b.dims):
            continue
        expected = ", ".join(_dim_code(d) for d in b.dims)
        expected = f"({expected},)" if len(b.dims) == 1 else f"({expected})"
        if any(d.expr is not None and _divides(d.expr) for d in b.dims):
            lines += [
                "    try:",
                f"        if s{b.slot} != {expected}:",
                "            return slow(args)",
                "    except ZeroDivisionError:",
                "        return slow(args)",
            ]
        else:
            lines += [f"    if s{b.slot} != {expected}:", "        return slow(args)"]
    return lines


def _overlap_lines(plan: _Plan) -> list[str]:
    """Refuse memory overlap between a written buffer and any other buffer argument, except
    the exact same array for an (input, output) pair the function updates elementwise."""
    pairs = _overlap_pairs(plan)
    if not pairs:
        return []
    lines, sizes = [], {}  # byte-size code -> the n<s> variable holding it
    for b in {b.slot: b for pair in pairs for b in pair}.values():
        code = _nbytes_code(b)
        if code not in sizes and not code.isdigit():
            sizes[code] = f"n{b.slot}"
            lines.append(f"    n{b.slot} = {code}")
    for x, y in pairs:
        nx, ny = (sizes.get(_nbytes_code(b), _nbytes_code(b)) for b in (x, y))
        if "0" in (nx, ny):
            continue  # an empty buffer overlaps nothing
        # [px, px + nx) and [py, py + ny) intersect iff -nx < px - py < ny
        test = f"-{nx} < p{x.slot} - p{y.slot} < {ny}"
        if (x.position, y.position) in plan.alias_ok or (y.position, x.position) in plan.alias_ok:
            test += f" and (p{x.slot} != p{y.slot} or s{x.slot} != s{y.slot})"
        lines += [f"    if {test}:", "        return slow(args)"]
    return lines


def _overlap_pairs(plan: _Plan) -> list[tuple[_Buffer, _Buffer]]:
    buffers = plan.buffers
    return [
        (x, y) for i, x in enumerate(buffers) for y in buffers[i + 1 :] if x.written or y.written
    ]


def _nbytes_code(b: _Buffer) -> str:
    """The buffer's byte size as code over the checked dims (its shape equals them by now)."""
    n = b.static_nbytes
    if n is not None:
        return repr(n)
    return " * ".join([_dim_code(d) for d in b.dims] + [repr(b.dtype.itemsize)])


def _dim_code(d: _Dim) -> str:
    if d.value is not None:
        return repr(d.value)
    return f"v{d.sym!r}" if d.sym is not None else _expr_code(d.expr)


def _scalar_test(a: str, dtype: DataType) -> str:
    if dtype.is_float:
        return f"type({a}) is float or type({a}) is int"
    if dtype.is_bool:
        return f"type({a}) is bool"
    lo, hi = _int_range(dtype)
    return f"type({a}) is int and {lo!r} <= {a} <= {hi!r}"


def _int_range(dtype: DataType) -> tuple[int, int]:
    if dtype.is_uint:
        return 0, 2**dtype.bits - 1  # uint64 above 2**63 travels as its i64 bit pattern
    return -(2 ** (dtype.bits - 1)), 2 ** (dtype.bits - 1) - 1


# --- the slow path: convert foreign arguments or explain what is wrong -------------------
def _slow(plan: _Plan, fast, trusted, args: tuple):
    converted = tuple(_convert(plan, i, a) for i, a in enumerate(args))
    if any(c is not a for c, a in zip(converted, args)):
        return fast(*converted)
    _explain(plan, args)
    return trusted(*args)  # all is well: the fast filter was conservative (an empty array)


def _unexplained(plan: _Plan, args: tuple):
    _explain(plan, args)
    raise InternalError(f"calling '{plan.name}': the argument check failed without a reason")


def _convert(plan: _Plan, i: int, arg):
    """DLPack tensors and ndarray subclasses become plain numpy views (zero-copy); numpy
    scalars become Python scalars. Anything else is returned unchanged."""
    if i >= len(plan.params):
        return arg
    if isinstance(plan.params[i], _Scalar):
        return arg.item() if isinstance(arg, np.generic) else arg
    if type(arg) is np.ndarray or isinstance(arg, NDArray):  # a device array: _explain says why
        return arg
    if isinstance(arg, np.ndarray):
        return arg.view(np.ndarray)
    if hasattr(arg, "__dlpack__"):
        b = plan.params[i]
        return import_dlpack(arg, f"calling '{plan.name}': {_arg(b)}", str(b.dtype))
    return arg


def import_dlpack(arg, where: str, want: str = "float32") -> np.ndarray:
    """A DLPack tensor as a zero-copy numpy view, or an ArgumentError that says why not and
    what to do: move it to the CPU, or convert a dtype numpy lacks (bfloat16) to `want`."""
    try:
        return np.from_dlpack(arg)
    except (RuntimeError, TypeError, BufferError, ValueError) as err:
        raise _dlpack_error(where, arg, err, want) from err


def _dlpack_error(where: str, arg, err: Exception, want: str) -> ArgumentError:
    try:
        device = arg.__dlpack_device__()[0]
    except Exception:  # noqa: BLE001 - a producer without a device query: judge by the error
        device = None
    if device is not None and device not in _CPU_DEVICES:
        return ArgumentError(
            f"{where} is a {type(arg).__name__} on a non-CPU device ({err}); "
            "move it to the CPU first"
        )
    dtype = getattr(arg, "dtype", None)
    if "dtype" in str(err).lower() or "data type" in str(err).lower():
        return ArgumentError(
            f"{where} is a {type(arg).__name__} of dtype {dtype}, which cannot be read through "
            f"DLPack ({err}); convert it to {want} first (e.g. x.float() / x.astype('{want}'))"
        )
    return ArgumentError(
        f"{where} is a {type(arg).__name__} that cannot be read through DLPack ({err}); "
        "pass a C-contiguous CPU tensor (detach a torch tensor that requires grad)"
    )


def _explain(plan: _Plan, args: tuple, check_buffer=None, check_overlap=None) -> dict:
    """Raise the error for the first bad argument (the generic twin of the generated check);
    return the values of the symbolic dims ("v<i>") and scalars ("a<k>"). The buffer and
    overlap checks default to host memory's; device functions pass their own."""
    where = f"calling '{plan.name}'"
    if len(args) != len(plan.params):
        names = ", ".join(p.name for p in plan.params)
        raise ArgumentError(
            f"{where}: expected {len(plan.params)} arguments ({names}), got {len(args)}"
        )
    check_buffer = check_buffer or _check_buffer
    arrays = {b.position: check_buffer(where, b, args[b.position]) for b in plan.buffers}
    values, origin = {}, {}
    for i, s in enumerate(plan.syms):
        got = arrays[s.position].shape[s.dim]
        values[f"v{i}"] = got
        origin[i] = f"set by argument '{plan.params[s.position].name}' dim {s.dim}"
        if got > _int_range(s.dtype)[1]:
            label = s.label
            raise ArgumentError(
                f"{where}: dim {s.dim} of '{plan.params[s.position].name}' is {got}, which does "
                f"not fit symbolic dim '{label}' ({s.dtype}); declare it "
                f"te.var('{label}', 'int64')"
            )
    for s in plan.scalars:
        _check_scalar(where, s, args[s.position])
        values[f"a{s.position}"] = args[s.position]
    for b in plan.buffers:
        shape = arrays[b.position].shape
        for k, d in enumerate(b.dims):
            _check_dim(where, b, shape, k, d, values, origin)
    for b in plan.buffers:
        flags = getattr(arrays[b.position], "flags", None)  # device arrays are always writable
        if b.written and flags is not None and not flags.writeable:
            raise ArgumentError(
                f"{where}: {_arg(b)} is read-only; the function writes it; pass a writable "
                f"array (np.array(x) copies)"
            )
    (check_overlap or _check_overlap)(where, plan, arrays)
    return values


def _arg(b) -> str:
    return f"argument '{b.name}' (position {b.position})"


def _check_buffer(where: str, b: _Buffer, x) -> np.ndarray:
    if isinstance(x, NDArray) and x.device.is_gpu:
        raise ArgumentError(
            f"{where}: {_arg(b)} is on {x.device}, but '{where[9:-1]}' runs on the CPU; "
            f"copy it to the host first (x.numpy() or x.copyto(tvm.cpu(0)))"
        )
    if isinstance(x, NDArray):
        data = x._data
    elif isinstance(x, np.ndarray):
        data = x
        if not x.flags.c_contiguous:
            raise ArgumentError(
                f"{where}: {_arg(b)} is not C-contiguous (strides {x.strides}); "
                f"pass np.ascontiguousarray({b.name}) or a tvm.nd.array"
            )
    else:
        raise ArgumentError(
            f"{where}: {_arg(b)} must be a tvm.nd.NDArray or numpy.ndarray, got {type(x).__name__}"
        )
    _check_dtype_and_rank(where, b, data.dtype, data.shape, "convert with .astype('{dtype}')")
    return data


def _check_dtype_and_rank(
    where: str, b: _Buffer, npdtype: np.dtype, shape: tuple, fix: str, shown: str | None = None
) -> None:
    """What every buffer argument is checked for, on the host or a device: its dtype (`shown`
    as the user sees it; `fix`, formatted with the expected dtype, says how to convert) and
    its number of dimensions."""
    if npdtype != b.dtype:
        want = DataType(b.dtype)
        raise DTypeError(
            f"{where}: {_arg(b)} has dtype {shown or npdtype}, expected {want}; "
            + fix.format(dtype=want)
        )
    if len(shape) != len(b.dims):
        raise ShapeError(
            f"{where}: {_arg(b)} has shape {shape}, expected {b.shape_text}: "
            f"expected {len(b.dims)} dimensions, got {len(shape)}."
        )


def _check_dim(where, b: _Buffer, shape, k, d: _Dim, values, origin) -> None:
    got = shape[k]
    if d.value is not None:
        if got == d.value:
            return
        rule = f"dim {k} must be {d.value}"
    elif d.sym is not None:
        want = values[f"v{d.sym}"]
        if got == want:
            return
        rule = f"dim {k} must equal {d.text} = {want} ({origin[d.sym]})"
    else:
        try:
            want = _eval(d.expr, values)
        except ZeroDivisionError:
            raise ShapeError(
                f"{where}: {_arg(b)} has shape {shape}, expected {b.shape_text}: dim {k} is "
                f"{d.text}, which divides by zero for these arguments."
            ) from None
        if got == want:
            return
        rule = f"dim {k} must equal {d.text} = {want}"
    raise ShapeError(f"{where}: {_arg(b)} has shape {shape}, expected {b.shape_text}: {rule}.")


def _check_overlap(where: str, plan: _Plan, arrays: dict) -> None:
    for x, y in _overlap_pairs(plan):
        dx, dy = arrays[x.position], arrays[y.position]
        px, py = dx.ctypes.data, dy.ctypes.data
        if not (dx.nbytes and dy.nbytes and px < py + dy.nbytes and py < px + dx.nbytes):
            continue
        same = px == py and dx.shape == dy.shape
        if same and (
            (x.position, y.position) in plan.alias_ok or (y.position, x.position) in plan.alias_ok
        ):
            continue
        if x.written and y.written:
            why = "the function writes both, so the result would be wrong; pass separate arrays"
        else:
            read, written = (x, y) if y.written else (y, x)
            why = (
                f"the function reads {read.name} at other positions than it writes "
                f"{written.name}, so the result would be wrong; pass a copy"
            )
        raise ArgumentError(
            f"{where}: arguments '{x.name}' (position {x.position}) and '{y.name}' (position "
            f"{y.position}) overlap in memory; {why}"
        )


def _check_scalar(where: str, s: _Scalar, x) -> None:
    if s.dtype.is_float:
        if type(x) not in (float, int):
            raise ArgumentError(
                f"{where}: {_arg(s)} must be a number ({s.dtype}), got {type(x).__name__}"
            )
    elif s.dtype.is_bool:
        if type(x) is not bool:
            raise ArgumentError(f"{where}: {_arg(s)} must be a bool, got {type(x).__name__}")
    else:
        if type(x) is not int:
            raise ArgumentError(
                f"{where}: {_arg(s)} must be an int ({s.dtype}), got {type(x).__name__}"
            )
        lo, hi = _int_range(s.dtype)
        if not lo <= x <= hi:
            raise ArgumentError(f"{where}: {_arg(s)} = {x} does not fit in {s.dtype} [{lo}, {hi}]")


# --- the callable ------------------------------------------------------------------------
class PackedFunc:
    """A compiled function: `f(*args)` checks the arguments, then runs native code.

    `f.checker_source` shows the generated check; `f.info` is its FuncInfo. The FuncInfo is
    planned (and refused when invalid) here; the checker is generated on first use, so loading
    a module of many kernels does not compile a checker for each.
    """

    __slots__ = ("_fast", "_keepalive", "_plan", "_source", "address", "info", "name")

    def __init__(self, info: dict, address: int, keepalive=None) -> None:
        self._plan = _plan(info)
        self.name = info["name"]
        self.info = info
        self.address = address
        self._keepalive = keepalive  # the engine that owns the code
        self._source = None
        self._fast = self._first_call

    @property
    def checker_source(self) -> str:
        """The generated Python source of this function's argument check."""
        if self._source is None:
            self._source = _generate(self._plan)
        return self._source

    def _first_call(self, *args) -> None:
        # concurrent first calls may each build a checker: they are equal, either one serves
        fast = _build_fast(self._plan, self.checker_source, _NATIVE(self.address), self._failed)
        self._fast = fast
        return fast(*args)

    def _failed(self, rc: int) -> None:
        errors = self._plan.errors
        if 1 <= rc <= len(errors):
            from .packed_callback import take_error  # a packed function's own exception, if any

            raise RuntimeError_(f"calling '{self.name}': {errors[rc - 1]}") from take_error()
        raise RuntimeError_(
            f"calling '{self.name}': an assertion in the compiled code failed (return code {rc})"
        )

    def __call__(self, *args):
        """Run the compiled function; returns what its T.ret returns (None without one)."""
        return self._fast(*args)

    def prepare(self, *args):
        """Check `args` through the checked path (raising what a call would raise) and return
        `(native, ptrs, ints)`: the raw entry `native(addressof(ptrs), addressof(ints)) -> rc`
        and its argument arrays filled for `args` (ptrs[k] is the k-th buffer param's data).

        The unchecked fast entry for callers that proved later arguments have the same dtypes
        and shapes (the relax VM: same input-shape signature) and only swap pointers in `ptrs`.
        Never hand it user arguments unchecked; a non-zero rc must go to `self.fail(rc)`."""
        n_ptrs = max(len(self._plan.buffers), 1)
        n_ints = self._plan.n_ints
        ptrs, ints = _capture(self, args, n_ptrs, n_ints)
        return _NATIVE(self.address), ptrs, ints

    def fail(self, rc: int) -> None:
        """Raise the error for a non-zero return code of the native entry."""
        self._failed(rc)

    def bind(self, *args):
        """Check `args` once and return a zero-argument callable that runs the native code on
        them with no further checks (used by time_evaluator); the arrays must stay alive."""
        native, ptrs, ints = self.prepare(*args)
        pa, ia = ctypes.addressof(ptrs), ctypes.addressof(ints)

        def run() -> None:
            rc = native(pa, ia)
            if rc:
                self._failed(rc)

        run.keepalive = (args, ptrs, ints)
        return run

    def __repr__(self) -> str:
        return f"<PackedFunc {self.name}>"


def _build_fast(plan: _Plan, source: str, native, failed):
    """Execute the generated source with its own preallocated argument arrays and lock; the
    result's slow path explains bad arguments and runs good ones through the trusted twin."""
    fast = _exec_checker(plan, source, native, failed)
    trusted = _exec_checker(plan, _generate(plan, overlap=False), native, failed)
    trusted.__globals__["slow"] = lambda args: _unexplained(plan, args)
    fast.__globals__["slow"] = lambda args: _slow(plan, fast, trusted, args)
    return fast


def _exec_checker(plan: _Plan, source: str, native, failed):
    n_ptrs = max(len(plan.buffers), 1)
    n_ints = plan.n_ints
    ptrs, ints = (ctypes.c_void_p * n_ptrs)(), (ctypes.c_int64 * n_ints)()
    lock = threading.Lock()
    namespace = {
        "NDArray": NDArray,
        "ndarray": np.ndarray,
        "addressof": ctypes.addressof,
        "char_from_buffer": ctypes.c_char.from_buffer,
        "PtrArray": ctypes.c_void_p * n_ptrs,
        "IntArray": ctypes.c_int64 * n_ints,
        "FloatArray": ctypes.c_double * n_ints,
        "ptrs": ptrs,
        "ints": ints,
        "floats": (ctypes.c_double * n_ints).from_buffer(ints),
        "ptrs_addr": ctypes.addressof(ptrs),
        "ints_addr": ctypes.addressof(ints),
        "acquire": lock.acquire,
        "release": lock.release,
        "native": native,
        "failed": failed,
        **{f"dt{b.slot}": b.dtype for b in plan.buffers},
    }
    # the source names everything positionally and holds no string from the FuncInfo
    exec(_compiled(source), namespace)  # noqa: S102
    return namespace["fast"]


# Compiled checker sources: a training step calls ~150 kernels from ~400 places, and kernels
# of one shape share their checker text, so the first step compiled the same text many times
# (0.42 of its 0.8 s). The code object is shared; each checker still runs in its own namespace.
_CODE: dict[str, types.CodeType] = {}


def _compiled(source: str) -> types.CodeType:
    code = _CODE.get(source)
    if code is None:
        code = compile(source, "<minitvm argument check>", "exec")
        if len(_CODE) >= 4096:
            _CODE.clear()
        _CODE[source] = code
    return code


def _capture(func: PackedFunc, args: tuple, n_ptrs: int, n_ints: int):
    """Run the checked call path once against a recording stub instead of native code; return
    copies of the argument arrays it filled (so raw calls see what a checked call would)."""
    seen = {}

    def record(ptrs_addr: int, ints_addr: int) -> int:
        seen["ptrs"] = (ctypes.c_void_p * n_ptrs).from_buffer_copy(
            (ctypes.c_void_p * n_ptrs).from_address(ptrs_addr)
        )
        seen["ints"] = (ctypes.c_int64 * n_ints).from_buffer_copy(
            (ctypes.c_int64 * n_ints).from_address(ints_addr)
        )
        return 0

    _build_fast(func._plan, func.checker_source, record, func._failed)(*args)
    return seen["ptrs"], seen["ints"]


# --- device functions: the same plan and checks, arguments in device memory ----------------
def _check_device_buffer(kind: str, where: str, b: _Buffer, x):
    """A buffer argument of a function running on `kind` ("opencl", "cuda") devices."""
    device = getattr(x, "device", None)
    if isinstance(x, NDArray) and device.name == kind:
        fix = "convert it on the host and copy it again"
        _check_dtype_and_rank(where, b, x._npdtype, x.shape, fix, shown=x.dtype)
        return x
    if isinstance(x, NDArray | np.ndarray) or hasattr(x, "__dlpack__"):
        seen = device if isinstance(x, NDArray) else "host memory"
        raise ArgumentError(
            f"{where}: {_arg(b)} is on {seen}, but '{where[9:-1]}' runs on {kind} devices; "
            f"copy it there first: tvm.nd.array(x, tvm.{kind}(0))"
        )
    raise ArgumentError(
        f"{where}: {_arg(b)} must be a tvm.nd.NDArray on a {kind} device, got {type(x).__name__}"
    )


def _check_device_overlap(where: str, plan: _Plan, arrays: dict) -> None:
    """Device arrays are whole allocations: two arguments overlap only when they are one array."""
    for x, y in _overlap_pairs(plan):
        ax, ay = arrays[x.position], arrays[y.position]
        if ax is not ay or not ax.nbytes:
            continue
        if (x.position, y.position) in plan.alias_ok or (y.position, x.position) in plan.alias_ok:
            continue
        raise ArgumentError(
            f"{where}: arguments '{x.name}' (position {x.position}) and '{y.name}' (position "
            f"{y.position}) are the same array, and the function writes one of them while "
            "reading the other elsewhere; pass separate arrays"
        )


class DevicePackedFunc:
    """A function whose kernels run on a GPU: `f(*args)` checks the arguments with the same
    plan as PackedFunc (FuncInfo: count, dtype, rank, every dim, symbolic dims, overlap), all
    buffers on one device of kind `kind`, then calls `launch(device, args, values)` with the
    symbolic dims ("v<i>") and int scalars ("a<k>") the check found."""

    __slots__ = ("_buffers", "_check", "_launch", "_plan", "info", "kind", "name")

    def __init__(self, info: dict, kind: str, launch) -> None:
        self._plan = _plan(info)
        self._buffers = self._plan.buffers
        self.info, self.kind, self.name = info, kind, info["name"]
        self._launch = launch
        self._check = lambda where, b, x: _check_device_buffer(kind, where, b, x)

    def __call__(self, *args) -> None:
        values = _explain(self._plan, args, self._check, _check_device_overlap)
        devices = {args[b.position].device for b in self._buffers}
        if len(devices) > 1:
            listed = ", ".join(f"'{b.name}' on {args[b.position].device}" for b in self._buffers)
            raise ArgumentError(
                f"calling '{self.name}': the arguments are on different devices ({listed}); "
                "copy them to one device"
            )
        device = devices.pop() if devices else None
        self._launch(device, args, values)

    def bind(self, *args):
        """A zero-argument callable running `self(*args)` (for time_evaluator)."""
        return lambda: self(*args)

    def __repr__(self) -> str:
        return f"<DevicePackedFunc {self.name} on {self.kind}>"
