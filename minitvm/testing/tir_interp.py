"""The reference interpreter of TensorIR: runs a PrimFunc on numpy arrays, at any lowering stage.

It is the oracle of tests and of the fuzz suite, so it follows the compiler's semantics exactly
(integer `Div`/`Mod` truncate, `FloorDiv`/`FloorMod` round toward -inf, integers wrap, float32
arithmetic stays float32, casts as numpy's `astype`) and it never guesses: an out-of-bounds
access, an integer division by zero, an undefined shift, a block binding outside its domain, a
data race between iterations of a parallel loop or a failed assert raises `InterpreterError`.

Blocks (predicates, `T.init`, `alloc_buffer`, `match_buffer`) and lowered code (flat buffers,
`Allocate`, `Ramp`/`Broadcast` vectors, `LetStmt`, `While`, `AssertStmt`) are both run;
parallel, vectorized, unrolled and thread-bound loops run serially (parallel ones recording
which iteration touched which element, to find races). Each node is compiled once
into a Python closure (dispatch per node class), so small kernels run at about 1e6 ops/s.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..error import RuntimeError_
from ..ir.dtype import DataType
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.function import PrimFunc
from ..tir.names import IF_THEN_ELSE, REINTERPRET
from .tir_interp_values import (
    _BITWISE,
    _CALLS,
    _COMPARE,
    _INT_DIVISIONS,
    _SCALAR_BINARY,
    _VECTOR_BINARY,
    _kind,
    _np_dtype,
    _scalar_of,
    _wrapper,
)

__all__ = ["InterpreterError", "run_prim_func"]

Thunk = Callable[[], Any]


class InterpreterError(RuntimeError_):
    """The interpreted program did something undefined (out-of-bounds access, x // 0, ...)."""


def run_prim_func(func: Any, *args: Any, **sym: Any) -> list[Any]:
    """Interpret `func` on `args` (numpy arrays for buffer params, written in place; Python
    numbers for scalar params) and return `args` as a list.

    `func` may be a PrimFunc or an IRModule with one PrimFunc; `sym` gives values of free
    symbolic variables by name (dims are normally bound from the arrays' shapes).
    `run_prim_func(f, a, np.zeros(4, "float32"))[1]` is the output.
    """
    func = _the_prim_func(func)
    if len(args) != len(func.params):
        raise InterpreterError(
            f"run_prim_func: '{func.name or 'main'}' takes {len(func.params)} arguments "
            f"({', '.join(p.name for p in func.params)}), got {len(args)}"
        )
    interp = _Interp(sym)
    copies_back = interp.bind_params(func, args)
    body = interp.stmt(func.body)
    with np.errstate(all="ignore"):
        body()
    for dst, src in copies_back:
        np.copyto(dst, src)
    return list(args)


def _the_prim_func(func: Any) -> PrimFunc:
    if isinstance(func, PrimFunc):
        return func
    funcs = (
        [f for _, f in func.functions_items() if isinstance(f, PrimFunc)]
        if hasattr(func, "functions_items")
        else []
    )
    if len(funcs) != 1:
        raise InterpreterError(
            f"run_prim_func needs a PrimFunc or an IRModule with exactly one, got {type(func).__name__}"
            f" with {len(funcs)} PrimFuncs; pass mod['name']"
        )
    return funcs[0]


# ----------------------------------------------------------------------------- the interpreter


def _dispatch(table: dict, cls: type, prefix: str) -> Callable:
    """The `_Interp` method for node class `cls` (looked up along the MRO once per class)."""
    method = table.get(cls)
    if method is None:
        for klass in cls.__mro__:
            method = getattr(_Interp, f"{prefix}{klass.__name__}", None)
            if method is not None:
                break
        else:
            raise InterpreterError(f"run_prim_func: cannot interpret {cls.__name__} nodes")
        table[cls] = method
    return method


class _Races:
    """The accesses of one parallel loop's iterations: an element that one iteration writes
    and another reads or writes is a data race (the compiled loop runs them concurrently)."""

    def __init__(self, loop: str) -> None:
        self.loop, self.iteration = loop, 0
        self.writes: dict[tuple, int] = {}
        self.reads: dict[tuple, int] = {}  # -1: read by several iterations
        self.keep: dict[int, np.ndarray] = {}  # memory stays alive, so its id stays unique

    def access(self, m: np.ndarray, off: Any, name: str, writing: bool) -> None:
        self.keep[id(m)] = m
        t = self.iteration
        for o in off.tolist() if isinstance(off, np.ndarray) else (off,):
            loc = (id(m), o)
            w, r = self.writes.get(loc, t), self.reads.get(loc, t)
            if w != t or (writing and r != t):
                other = w if w != t else ("several others" if r == -1 else r)
                raise InterpreterError(
                    f"data race in parallel loop '{self.loop}': iteration {t} "
                    f"{'writes' if writing else 'reads'} element {o} of '{name}', which "
                    f"iteration {other} {'writes' if w != t else 'reads'}"
                )
            if writing:
                self.writes[loc] = t
            else:
                self.reads[loc] = t if r == t else -1


_EXPR_TABLE: dict[type, Callable] = {}
_STMT_TABLE: dict[type, Callable] = {}
# Statements with one `body` that only bind something first; compiled as a flat chain so a
# long run of LetStmts does not nest Python calls.
_WRAPPERS = (S.LetStmt, S.AssertStmt, S.Allocate, S.DeclBuffer, S.AttrStmt)


class _Interp:
    """Compiles IR nodes into closures over one environment and one memory."""

    def __init__(self, sym: dict[str, Any]) -> None:
        self.env: dict[int, Any] = {}  # id(Var) -> value
        self.mem: dict[int, np.ndarray] = {}  # id(data Var) -> flat memory
        self.views: dict[int, tuple] = {}  # id(matched Buffer) -> (base, strides, extents)
        self.matched: set[int] = set()
        self.races: _Races | None = None  # set while a parallel loop runs
        self.sym = sym
        self._memo: dict[int, Thunk] = {}

    # --- parameters ------------------------------------------------------
    def bind_params(self, func: PrimFunc, args: tuple) -> list[tuple[np.ndarray, np.ndarray]]:
        """Bind scalars and buffers; returns (array, contiguous copy) pairs to copy back."""
        copies = []
        for param, arg in zip(func.params, args):
            buf = func.buffer_map.get(param)
            if buf is None:
                self.env[id(param)] = self._scalar_arg(param, arg)
                continue
            arr = np.asarray(
                arg.numpy() if hasattr(arg, "numpy") and not isinstance(arg, np.ndarray) else arg
            )
            if arr.dtype != _np_dtype(buf.dtype) or arr.ndim != len(buf.shape):
                raise InterpreterError(
                    f"run_prim_func: buffer '{buf.name}' is {buf.dtype} with {len(buf.shape)} "
                    f"dims, got a {arr.dtype} array of shape {arr.shape}"
                )
            flat, strides = self._flat_memory(buf, arr)
            if flat is None:
                flat = np.ascontiguousarray(arr)
                copies.append((arr, flat))
                flat = flat.reshape(-1)
            self.mem[id(buf.data)] = flat
            for dim, n in zip(buf.shape, arr.shape):
                self._bind_or_check(dim, n, buf.name)
            for s, n in zip(buf.strides, strides):
                self._bind_or_check(s, n, buf.name)
            self._bind_or_check(buf.elem_offset, 0, buf.name)
        return copies

    def _flat_memory(self, buf: Any, arr: np.ndarray) -> tuple[np.ndarray | None, tuple]:
        """A flat view of `arr`'s memory and its element strides (None when a copy is needed)."""
        item = arr.itemsize
        if arr.flags.c_contiguous:
            strides = tuple(int(np.prod(arr.shape[d + 1 :])) for d in range(arr.ndim))
            return arr.reshape(-1), strides
        if not buf.strides or any(s < 0 or s % item for s in arr.strides):
            return None, ()
        strides = tuple(s // item for s in arr.strides)
        span = 1 + sum((n - 1) * s for n, s in zip(arr.shape, strides)) if arr.size else 0
        flat = np.lib.stride_tricks.as_strided(arr, shape=(span,), strides=(item,))
        return flat, strides

    def _bind_or_check(self, dim: Any, n: int, name: str) -> None:
        if isinstance(dim, E.Var) and id(dim) not in self.env:
            self.env[id(dim)] = int(n)
            return
        want = self.expr(dim)()
        if want != n:
            shown = want if isinstance(dim, E.IntImm) else f"{dim} = {want}"
            raise InterpreterError(
                f"run_prim_func: buffer '{name}' needs {shown} here, the array has {n}"
            )

    def _scalar_arg(self, param: E.Var, arg: Any) -> Any:
        dtype = param.dtype
        if dtype.is_handle:
            raise InterpreterError(f"run_prim_func: handle parameter '{param.name}' has no buffer")
        if dtype.is_integer:
            return _wrapper(dtype)(int(arg))
        return _scalar_of(dtype)(arg)

    # --- expressions -----------------------------------------------------
    def expr(self, e: Any) -> Thunk:
        """The closure that evaluates `e` (compiled once per node)."""
        f = self._memo.get(id(e))
        if f is None:
            f = _dispatch(_EXPR_TABLE, type(e), "e_")(self, e)
            self._memo[id(e)] = f
        return f

    def e_Var(self, v: E.Var) -> Thunk:
        env, key, name, sym = self.env, id(v), v.name, self.sym

        def var():
            try:
                return env[key]
            except KeyError:
                if name in sym:
                    env[key] = sym[name]
                    return env[key]
                raise InterpreterError(f"variable '{name}' is used but not defined") from None

        return var

    def e_IntImm(self, e: E.IntImm) -> Thunk:
        value = bool(e.value) if e.dtype.is_bool else e.value
        return lambda: value

    def e_FloatImm(self, e: E.FloatImm) -> Thunk:
        value = _np_dtype(e.dtype).type(e.value)
        return lambda: value

    def e_StringImm(self, e: E.StringImm) -> Thunk:
        return lambda: e.value

    def e_BinaryOpExpr(self, e: Any) -> Thunk:
        a, b, cls, dtype = self.expr(e.a), self.expr(e.b), type(e), e.a.dtype
        vector = dtype.lanes > 1
        if cls in _COMPARE:
            op = _COMPARE[cls]
            return (lambda: op(a(), b())) if vector else (lambda: bool(op(a(), b())))
        op = (_VECTOR_BINARY if vector else _SCALAR_BINARY).get((cls, _kind(dtype)))
        if op is None:
            raise InterpreterError(
                f"run_prim_func: cannot interpret {cls.__name__} on {dtype}: `{e}`"
            )
        if not dtype.is_integer:
            return lambda: op(a(), b())
        checked = self._int_division(op, e) if cls in _INT_DIVISIONS else op
        if vector:
            return lambda: checked(a(), b())
        wrap = _wrapper(dtype)
        return lambda: wrap(checked(a(), b()))

    def _int_division(self, op: Callable, e: Any) -> Callable:
        def divide(x, y):
            if np.any(np.asarray(y) == 0):
                raise InterpreterError(
                    f"integer division by zero in `{e}` ({e.dtype}): the divisor is {y}"
                )
            return op(x, y)

        return divide

    def e_Not(self, e: E.Not) -> Thunk:
        a = self.expr(e.a)
        return (lambda: np.logical_not(a())) if e.dtype.lanes > 1 else (lambda: not a())

    def e_Select(self, e: E.Select) -> Thunk:
        c, t, f = self.expr(e.condition), self.expr(e.true_value), self.expr(e.false_value)
        if e.dtype.lanes > 1:
            return lambda: np.where(c(), t(), f())

        def select():
            x, y = t(), f()  # both sides are evaluated, as in the code generator
            return x if c() else y

        return select

    def e_Cast(self, e: E.Cast) -> Thunk:
        v, src, dst = self.expr(e.value), e.value.dtype, e.dtype
        to_np = _np_dtype(dst)
        if dst.lanes > 1:
            if dst.is_bool:
                return lambda: np.asarray(v()) != 0
            return lambda: np.asarray(v()).astype(to_np)
        if dst.is_bool:
            return lambda: bool(v() != 0)  # NaN is true
        if dst.is_integer and not src.is_float:
            wrap = _wrapper(dst)
            return lambda: wrap(int(v()))
        from_np = _np_dtype(src)
        convert = _scalar_of(dst)
        return lambda: convert(np.asarray(v(), from_np).astype(to_np)[()])

    def e_Ramp(self, e: E.Ramp) -> Thunk:
        base, stride, dt = self.expr(e.base), self.expr(e.stride), _np_dtype(e.dtype)
        lanes = np.arange(e.lanes, dtype=dt)
        return lambda: lanes * dt.type(stride()) + dt.type(base())

    def e_Broadcast(self, e: E.Broadcast) -> Thunk:
        v, lanes, dt = self.expr(e.value), e.lanes, _np_dtype(e.dtype)
        return lambda: np.full(lanes, v(), dtype=dt)

    def e_Let(self, e: E.Let) -> Thunk:
        env, key, value, body = self.env, id(e.var), self.expr(e.value), self.expr(e.body)

        def let():
            env[key] = value()
            return body()

        return let

    def e_Call(self, e: E.Call) -> Thunk:
        name = e.op.name if isinstance(e.op, E.Op) else e.op
        args = [self.expr(a) for a in e.args]
        if name == IF_THEN_ELSE:
            return self._if_then_else(e, *args)
        if name == REINTERPRET:
            src, dst = _np_dtype(e.args[0].dtype), _np_dtype(e.dtype)
            convert = _scalar_of(e.dtype) if e.dtype.lanes == 1 else (lambda x: x)
            return lambda: convert(np.asarray(args[0](), src).view(dst)[()])
        if name in _BITWISE:
            return self._bitwise(e, _BITWISE[name], args)
        if name not in _CALLS:
            raise InterpreterError(
                f"run_prim_func: cannot interpret a call of {name!r} (`{e}`); "
                "only minitvm's intrinsics are known to the interpreter"
            )
        fn, coerce = _CALLS[name], self._coerce(e.dtype)
        if len(args) == 1:
            (a,) = args
            return lambda: coerce(fn(a()))
        return lambda: coerce(fn(*[a() for a in args]))

    def _if_then_else(self, e: E.Call, c: Thunk, t: Thunk, f: Thunk) -> Thunk:
        if e.dtype.lanes > 1:
            return lambda: np.where(c(), t(), f())
        return lambda: t() if c() else f()  # only the chosen side runs

    def _bitwise(self, e: E.Call, fn: Callable, args: list[Thunk]) -> Thunk:
        dtype = e.dtype
        shift = e.op.name.startswith("tir.shift")
        if dtype.lanes > 1:
            wrap = lambda x: x  # noqa: E731 - numpy arrays wrap, and ~ on bool arrays is not
        elif dtype.is_bool:
            wrap = lambda x: bool(x & 1)  # noqa: E731 - ~True is -2 in Python, False in i1
        else:
            wrap = _wrapper(dtype)

        def bitwise():
            values = [a() for a in args]
            if shift and np.any(
                (np.asarray(values[1]) < 0) | (np.asarray(values[1]) >= dtype.bits)
            ):
                raise InterpreterError(
                    f"`{e}` shifts a {dtype.bits}-bit value by {values[1]} bits: undefined; "
                    f"shift amounts must be in [0, {dtype.bits})"
                )
            return wrap(fn(*values))

        return bitwise

    @staticmethod
    def _coerce(dtype: DataType) -> Callable[[Any], Any]:
        if dtype.lanes > 1:
            dt = _np_dtype(dtype)
            return lambda x: np.asarray(x).astype(dt)
        if dtype.is_integer:
            wrap = _wrapper(dtype)
            return lambda x: wrap(int(x))
        return _scalar_of(dtype)

    def e_BufferLoad(self, e: E.BufferLoad) -> Thunk:
        locate = self._locator(e.buffer, e.indices, e.dtype.lanes, "load")
        convert = _scalar_of(e.dtype) if e.dtype.lanes == 1 else np.copy

        def load():
            m, off = locate()
            return convert(m[off])

        return load

    # --- buffer addressing -------------------------------------------------
    def _locator(self, buf: Any, indices: tuple, lanes: int, what: str) -> Thunk:
        """A closure returning (flat memory, offset or offset vector) of `buf[indices]`,
        bounds-checked per dimension and against the memory."""
        idx = [self.expr(i) for i in indices]
        vector = any(i.dtype.lanes > 1 for i in indices)
        # a vector access at a scalar index covers `lanes` consecutive elements
        span = np.arange(lanes) if lanes > 1 and not vector else None
        mem, key, name, interp = self.mem, id(buf.data), buf.name, self
        writing = what == "store"
        if id(buf) in self.matched:
            views, bkey = self.views, id(buf)
            layout = lambda: views[bkey]  # noqa: E731 - bound when the block is entered
        elif all(isinstance(x, E.IntImm) for x in (*buf.shape, *buf.strides, buf.elem_offset)):
            extents = [int(d) for d in buf.shape]
            fixed = (
                int(buf.elem_offset),
                [int(s) for s in buf.strides] or _row_major(extents),
                extents,
            )
            layout = lambda: fixed  # noqa: E731 - a static layout is computed once
        else:
            shape = [self.expr(d) for d in buf.shape]
            strides = [self.expr(s) for s in buf.strides]
            offset0 = self.expr(buf.elem_offset)

            def layout():
                extents = [d() for d in shape]
                steps = [s() for s in strides] or _row_major(extents)
                return offset0(), steps, extents

        def out_of_bounds(values, extents, detail=""):
            shown = ", ".join(str(v) for v in values)
            return InterpreterError(
                f"{what} of {name}[{shown}] is out of bounds: '{name}' has shape "
                f"({', '.join(map(str, extents))}){detail}"
            )

        def locate():
            try:
                m = mem[key]
            except KeyError:
                raise InterpreterError(
                    f"{what} of buffer '{name}' outside the scope that allocates it"
                ) from None
            base, steps, extents = layout()
            values = [i() for i in idx]
            off = base
            for x, step, n in zip(values, steps, extents):
                if vector:
                    x = np.asarray(x, dtype=np.int64)
                    if x.size and (x.min() < 0 or x.max() >= n):
                        raise out_of_bounds(values, extents)
                elif not 0 <= x < n:
                    raise out_of_bounds(values, extents)
                off = off + x * step
            if span is not None:
                off = off + span
            if vector or span is not None:
                if np.any(off < 0) or np.any(off >= m.shape[0]):
                    raise out_of_bounds(values, extents, f"; memory holds {m.shape[0]} elements")
            elif not 0 <= off < m.shape[0]:
                raise out_of_bounds(values, extents, f"; memory holds {m.shape[0]} elements")
            if interp.races is not None and what != "match_buffer":
                interp.races.access(m, off, name, writing)
            return m, off

        return locate

    # --- statements --------------------------------------------------------
    def stmt(self, s: Any) -> Thunk:
        """The closure that runs `s`."""
        if isinstance(s, _WRAPPERS):
            return self._chain(s)
        return _dispatch(_STMT_TABLE, type(s), "s_")(self, s)

    def _chain(self, s: Any) -> Thunk:
        """A run of single-body statements (LetStmt, Allocate, ...) as one flat closure."""
        steps: list[Thunk] = []
        while isinstance(s, _WRAPPERS):
            step = _dispatch(_STMT_TABLE, type(s), "s_")(self, s)
            if step is not None:
                steps.append(step)
            s = s.body
        body = self.stmt(s)

        def chain():
            for step in steps:
                step()
            body()

        return chain

    def s_LetStmt(self, s: S.LetStmt) -> Thunk:
        env, key, value = self.env, id(s.var), self.expr(s.value)

        def let():
            env[key] = value()

        return let

    def s_AssertStmt(self, s: S.AssertStmt) -> Thunk:
        cond, message = self.expr(s.condition), s.message

        def check():
            if not cond():
                raise InterpreterError(f"assertion failed: {message}")

        return check

    def s_Allocate(self, s: S.Allocate) -> Thunk:
        extents = [self.expr(x) for x in s.extents]
        mem, key, dt = self.mem, id(s.buffer_var), _np_dtype(s.dtype)

        def allocate():
            mem[key] = _fresh(math.prod(x() for x in extents), dt)

        return allocate

    def s_DeclBuffer(self, s: S.DeclBuffer) -> None:
        return None

    def s_AttrStmt(self, s: S.AttrStmt) -> None:
        return None

    def s_SeqStmt(self, s: S.SeqStmt) -> Thunk:
        parts = [self.stmt(x) for x in s.seq]

        def seq():
            for part in parts:
                part()

        return seq

    def s_For(self, s: S.For) -> Thunk:
        env, key = self.env, id(s.loop_var)
        lo, ext, body = self.expr(s.min), self.expr(s.extent), self.stmt(s.body)

        def loop():
            start = lo()
            for v in range(start, start + ext()):
                env[key] = v
                body()

        if s.kind != S.ForKind.PARALLEL:
            return loop
        name = s.loop_var.name

        def parallel_loop():
            if self.races is not None:  # nested: the outer loop's iterations are checked
                return loop()
            start, races = lo(), _Races(name)
            self.races = races
            try:
                for v in range(start, start + ext()):
                    races.iteration = env[key] = v
                    body()
            finally:
                self.races = None

        return parallel_loop

    def s_While(self, s: S.While) -> Thunk:
        cond, body = self.expr(s.condition), self.stmt(s.body)

        def loop():
            while cond():
                body()

        return loop

    def s_IfThenElse(self, s: S.IfThenElse) -> Thunk:
        cond, then = self.expr(s.condition), self.stmt(s.then_case)
        other = self.stmt(s.else_case) if s.else_case is not None else (lambda: None)

        def branch():
            if cond():
                then()
            else:
                other()

        return branch

    def s_Evaluate(self, s: S.Evaluate) -> Thunk:
        return self.expr(s.value)

    def s_BufferStore(self, s: S.BufferStore) -> Thunk:
        lanes = max([s.value.dtype.lanes] + [i.dtype.lanes for i in s.indices])
        locate = self._locator(s.buffer, s.indices, s.value.dtype.lanes, "store")
        value = self.expr(s.value)
        buf = s.buffer

        def store():
            v = value()
            m, off = locate()
            try:
                m[off] = v
            except (OverflowError, ValueError) as err:
                raise InterpreterError(
                    f"store of {v!r} into '{buf.name}' ({buf.dtype}, {lanes} lanes) failed: {err}"
                ) from err

        return store

    def s_BlockRealize(self, s: S.BlockRealize) -> Thunk:
        block = s.block
        pred = self.expr(s.predicate)
        values = [self.expr(v) for v in s.iter_values]
        env = self.env
        iters = [
            (id(iv.var), iv.var.name, self.expr(iv.dom.min), self.expr(iv.dom.extent))
            for iv in block.iter_vars
        ]
        reduce_keys = [
            (id(iv.var), self.expr(iv.dom.min))
            for iv in block.iter_vars
            if iv.iter_type == E.IterType.CommReduce
        ]
        run_block = self._block(block, reduce_keys)

        def realize():
            bound = [value() for value in values]
            for (key, _, _, _), v in zip(iters, bound):
                env[key] = v
            if not pred():  # evaluated with the iterators bound, so T.where may use them
                return
            for (key, name, lo, ext), v in zip(iters, bound):
                start = lo()
                if not start <= v < start + ext():
                    raise InterpreterError(
                        f"block '{block.name_hint}': iterator '{name}' is bound to {v}, outside "
                        f"its domain [{start}, {start + ext()})"
                    )
            run_block()

        return realize

    def s_Block(self, block: S.Block) -> Thunk:
        return self._block(block, [])

    def _block(self, block: S.Block, reduce_keys: list) -> Thunk:
        env, mem = self.env, self.mem
        allocs = [
            (id(b.data), [self.expr(d) for d in b.shape], _np_dtype(b.dtype))
            for b in block.alloc_buffers
        ]
        for m in block.match_buffers:
            self.matched.add(id(m.buffer))
        matches = [self._match(m) for m in block.match_buffers]
        init = self.stmt(block.init) if block.init is not None else None
        body = self.stmt(block.body)

        def run():
            for key, shape, dt in allocs:
                mem[key] = _fresh(math.prod(d() for d in shape), dt)
            for match in matches:
                match()
            # T.init runs on the first iteration of every reduction iterator
            if init is not None and all(env[key] == lo() for key, lo in reduce_keys):
                init()
            body()

        return run

    def _match(self, m: S.MatchBufferRegion) -> Thunk:
        """Binds a match_buffer: its memory is the source's, its layout the region's."""
        buf, src = m.buffer, m.source
        where = self._locator(src.buffer, tuple(r.min for r in src.region), 1, "match_buffer")
        extents = [self.expr(r.extent) for r in src.region]
        if id(src.buffer) in self.matched:
            src_layout = lambda views=self.views, k=id(src.buffer): views[k][1]
        else:
            shape = [self.expr(d) for d in src.buffer.shape]
            strides = [self.expr(s) for s in src.buffer.strides]
            src_layout = lambda: [s() for s in strides] or _row_major([d() for d in shape])  # noqa: E731
        mem, views = self.mem, self.views
        ndim = len(buf.shape)

        def match():
            m_, base = where()
            sizes = [x() for x in extents]
            steps = src_layout()
            lead = len(sizes) - ndim
            if lead < 0 or any(n != 1 for n in sizes[:lead]):
                raise InterpreterError(
                    f"match_buffer '{buf.name}' ({ndim} dims) cannot view region {sizes} of "
                    f"'{src.buffer.name}'"
                )
            mem[id(buf.data)] = m_
            views[id(buf)] = (base, steps[lead:], sizes[lead:])
            for dim, n in zip(buf.shape, sizes[lead:]):
                self._bind_view(dim, n, buf.name, check=True)
            for s, n in zip(buf.strides, steps[lead:]):
                self._bind_view(s, n, buf.name)
            self._bind_view(buf.elem_offset, base, buf.name)

        return match

    def _bind_view(self, dim: Any, n: int, name: str, check: bool = False) -> None:
        """Bind a symbolic dim/stride/offset of a matched buffer; constant dims must agree."""
        if isinstance(dim, E.Var):
            self.env[id(dim)] = n
        elif check and self.expr(dim)() != n:
            raise InterpreterError(
                f"match_buffer '{name}': dim {dim} must be {n}, the region's extent"
            )


def _row_major(extents: list[int]) -> list[int]:
    steps, acc = [], 1
    for n in reversed(extents):
        steps.append(acc)
        acc *= n
    return steps[::-1]


def _fresh(n: int, dt: np.dtype) -> np.ndarray:
    """New memory filled with a value that makes reads before writes visible."""
    if n < 0:
        raise InterpreterError(f"allocation of {n} elements of {dt}: a negative size")
    if dt.kind == "f":
        return np.full(n, np.nan, dt)
    if dt.kind == "b":
        return np.ones(n, dt)
    return np.full(n, np.iinfo(dt).max // 3 + 7, dt)
