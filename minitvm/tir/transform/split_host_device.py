"""Host/device split (TVM's SplitHostDevice): each kernel of a lowered GPU PrimFunc becomes a
device PrimFunc, and the function itself a host function that launches them in order.

The form is the lowered-GPU contract of docs/contracts.md: a host PrimFunc (the user's name,
params and buffer_map, attr "target" = the host) whose body is asserts around a sequence of
`tvm_call_packed(kernel_symbol, *kernel_args, *launch_extents)`; a kernel PrimFunc per launch
with attrs global_symbol, calling_conv 2, target, tir.is_global_func and
tir.kernel_launch_params, whose params are the buffers' data handles and the scalar sizes it
reads. Everything at the host level must be a kernel: a loop there is a loop nobody bound to a
thread, and its error says which and how to bind it.
"""

from __future__ import annotations

from typing import Any

from ...error import BuildError
from ...ir.module import IRModule
from ..expr import BufferLoad, Call, IterVar, Let, StringImm, Var
from ..function import PrimFunc
from ..functor import Visitor, post_order_visit
from ..names import ATTR_IS_GLOBAL_FUNC, ATTR_KERNEL_LAUNCH_PARAMS, ATTR_NOALIAS, TVM_CALL_PACKED
from ..stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    BufferStore,
    DeclBuffer,
    Evaluate,
    For,
    LetStmt,
    SeqStmt,
    Stmt,
    seq,
)  # fmt: skip
from .thread_sync import allocated_scope
from .verify_private_memory import verify_no_write_race, verify_private_memory

CALLING_CONV_DEVICE = 2


class _Free(Visitor):
    """Variables a kernel uses but does not define, in order of first use."""

    def __init__(self) -> None:
        self.defined: set[int] = set()
        self.free: dict[int, Var] = {}

    def _define(self, v: Var) -> None:
        self.defined.add(id(v))

    def _binding(self, n: For | LetStmt | Let | Allocate) -> None:
        """A loop, let or allocation defines its variable (its `_def_fields`)."""
        for field in type(n)._def_fields:
            self._define(getattr(n, field))
        self.generic_visit(n)

    visit_For = visit_LetStmt = visit_Let = visit_Allocate = _binding

    def visit_AttrStmt(self, attr: AttrStmt) -> None:
        if attr.attr_key == "thread_extent" and isinstance(attr.node, IterVar):
            self._define(attr.node.var)
            self.visit(attr.value)  # the extent is the launch's, evaluated on the host
            self.visit(attr.body)
            return
        self.generic_visit(attr)

    def visit_BufferLoad(self, load: Any) -> None:
        self.visit_Var(load.buffer.data)
        for i in load.indices:
            self.visit(i)

    def visit_BufferStore(self, store: BufferStore) -> None:
        self.visit_Var(store.buffer.data)
        self.visit(store.value)
        for i in store.indices:
            self.visit(i)

    def visit_DeclBuffer(self, decl: DeclBuffer) -> None:
        self.visit(decl.body)

    def visit_Var(self, v: Var) -> None:
        if id(v) not in self.defined:
            self.free.setdefault(id(v), v)

    visit_SizeVar = visit_Var


def _thread_chain(attr: AttrStmt) -> list[AttrStmt]:
    chain = []
    while isinstance(attr, AttrStmt) and attr.attr_key == "thread_extent":
        chain.append(attr)
        attr = attr.body
    return chain


def _loads(e: Any) -> list[BufferLoad]:
    found: list[BufferLoad] = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, BufferLoad) else None)
    return found


def _var_names(e: Any) -> list[Var]:
    f = _Free()
    f.visit(e)
    return list(f.free.values())


class _Splitter:
    def __init__(self, func: PrimFunc, target: Any, host_target: Any) -> None:
        self.func = func
        self.name = func.attrs.get("global_symbol", "main")
        self.target, self.host_target = target, host_target
        self.kernels: list[PrimFunc] = []
        self.host_vars: set[int] = {id(p) for p in func.params}
        self.data_order = {id(b.data): k for k, b in enumerate(func.buffer_map.values())}
        for buf in func.buffer_map.values():
            for v in _var_names(buf.data) + [
                x for e in (*buf.shape, *buf.strides, buf.elem_offset) for x in _var_names(e)
            ]:
                self.host_vars.add(id(v))

    def _param_rank(self, v: Var) -> int:
        """Kernel handles in the order of the function's buffers (then any others)."""
        return self.data_order.get(id(v), len(self.data_order))

    def host(self, stmt: Stmt) -> Stmt:
        if isinstance(stmt, SeqStmt):
            return seq(*(self.host(s) for s in stmt.seq))
        if isinstance(stmt, AssertStmt):
            self._no_device_read(stmt.condition, "an assert")
            return stmt.replace(body=self.host(stmt.body))
        if isinstance(stmt, LetStmt):
            self._no_device_read(stmt.value, f"the value of '{stmt.var.name}'")
            self.host_vars.add(id(stmt.var))
            return stmt.replace(body=self.host(stmt.body))
        if isinstance(stmt, DeclBuffer):
            return self.host(stmt.body)
        if isinstance(stmt, Allocate) and allocated_scope(stmt) == "global":
            return self.workspace(stmt)
        if isinstance(stmt, AttrStmt) and stmt.attr_key == "thread_extent":
            return self.launch(stmt)
        if isinstance(stmt, Evaluate) and not _var_names(stmt.value):
            return stmt
        raise BuildError(self._unbound_message(stmt))

    def workspace(self, alloc: Allocate) -> Stmt:
        """A global buffer between kernels (a stage one kernel writes and a later one reads):
        the host allocates it on the device, sized from the arguments, for the kernels."""
        name = alloc.buffer_var.name
        for e in alloc.extents:
            self._no_device_read(e, f"the size of buffer '{name}'")
            unknown = [v for v in _var_names(e) if id(v) not in self.host_vars]
            if unknown:
                raise BuildError(
                    f"function '{self.name}': buffer '{name}' between the kernels has extent "
                    f"{e}, which uses '{unknown[0].name}', not known before the kernels run; "
                    "size it from the input shapes"
                )
        self.host_vars.add(id(alloc.buffer_var))
        return alloc.replace(body=self.host(alloc.body))

    def _no_device_read(self, e: Any, what: str) -> None:
        """The host cannot read device memory: a load outside the kernels is refused."""
        loads = _loads(e)
        if loads:
            raise BuildError(
                f"function '{self.name}': {what} ({e}) reads buffer '{loads[0].buffer.name}' "
                "outside every kernel, but its memory is on the device and the host code only "
                "launches kernels; read it inside a bound loop (a kernel) instead"
            )

    def _unbound_message(self, stmt: Stmt) -> str:
        if isinstance(stmt, For) and stmt.thread_binding is not None:
            tag = stmt.thread_binding.thread_tag
            return (
                f"function '{self.name}': loop '{stmt.loop_var.name}' is bound to the virtual "
                f"thread '{tag}' but no loop in or around it is bound to blockIdx/threadIdx, so "
                "there is no kernel to run it in; bind the loops around or inside it to "
                "blockIdx/threadIdx (vthreads are serial loops of every GPU thread)"
            )
        if isinstance(stmt, For):
            what = f"loop '{stmt.loop_var.name}'"
        elif isinstance(stmt, Allocate):
            return (
                f"function '{self.name}': buffer '{stmt.buffer_var.name}' in scope "
                f"'{allocated_scope(stmt)}' is allocated outside every kernel, but such memory "
                "lives only while one kernel runs; compute_at its stage under the bound loops "
                "of its consumer (or give it scope 'global' to pass it between kernels)"
            )
        else:
            what = f"a {type(stmt).__name__} statement"
        return (
            f"function '{self.name}': {what} is not bound to GPU threads, so it would run "
            "outside any kernel; bind the outer loops of every stage to blockIdx/threadIdx "
            "(sch.bind(loop, 'threadIdx.x') / s[T].bind(axis, te.thread_axis('threadIdx.x'))), "
            "and compute_inline or compute_at intermediate stages under the bound loops"
        )

    def launch(self, stmt: AttrStmt) -> Stmt:
        chain = _thread_chain(stmt)
        tags = [a.node.thread_tag for a in chain]
        extents = [a.value for a in chain]
        for tag, ext in zip(tags, extents):
            loads = _loads(ext)
            if loads:
                raise BuildError(
                    f"function '{self.name}': the extent {ext} of the loop bound to '{tag}' "
                    f"reads buffer '{loads[0].buffer.name}', which is in device memory: the "
                    "launch sizes are computed on the host before the kernel runs, from the "
                    "function's scalar arguments and buffer shapes only; bind a loop of a "
                    "shape-derived extent and guard the body with the loaded value instead"
                )
            unknown = [v for v in _var_names(ext) if id(v) not in self.host_vars]
            if unknown:
                raise BuildError(
                    f"function '{self.name}': the extent {ext} of the loop bound to '{tag}' "
                    f"uses '{unknown[0].name}', which is not known when the kernel is launched "
                    "(only the function's arguments and their shapes are); bind a loop whose "
                    "extent depends only on the input shapes, e.g. split by a constant factor"
                )
        verify_private_memory(stmt, f"function '{self.name}'")
        verify_no_write_race(stmt, f"function '{self.name}'")
        free = _Free()
        free.visit(stmt)
        params = list(free.free.values())
        handles = sorted((v for v in params if v.dtype.is_handle), key=self._param_rank)
        scalars = [v for v in params if not v.dtype.is_handle]
        symbol = self.name + "_kernel" + (f"_{len(self.kernels)}" if self.kernels else "")
        attrs = {
            "global_symbol": symbol,
            "calling_conv": CALLING_CONV_DEVICE,
            "target": self.target,
            ATTR_IS_GLOBAL_FUNC: True,
            ATTR_NOALIAS: True,
            ATTR_KERNEL_LAUNCH_PARAMS: tags,
        }
        self.kernels.append(PrimFunc(tuple(handles + scalars), stmt, attrs=attrs))
        args = (StringImm(symbol), *handles, *scalars, *extents)
        return Evaluate(Call("int32", TVM_CALL_PACKED, args))


def split_host_device(func: PrimFunc, target: Any, host_target: Any = None) -> list[PrimFunc]:
    """[host function, kernel, ...] of a GPU-lowered `func` (module doc)."""
    sp = _Splitter(func, target, host_target)
    body = sp.host(func.body)
    host_attrs = dict(func.attrs)
    if host_target is not None:
        host_attrs["target"] = host_target
    host = PrimFunc(func.params, body, func.ret_type, func.buffer_map, attrs=host_attrs)
    return [host, *sp.kernels]


def SplitHostDevice(target: Any = None, host_target: Any = None):
    """TVM's `tir.transform.SplitHostDevice()`: an IRModule pass giving host + kernel funcs."""
    from ...ir.transform import Pass

    def run(mod: IRModule) -> IRModule:
        out = IRModule(attrs=mod.attrs)
        for gv, func in mod.functions_items():
            if not isinstance(func, PrimFunc):
                out[gv.name_hint] = func
                continue
            tgt = target if target is not None else func.attrs.get("target")
            host, *kernels = split_host_device(func, tgt, host_target)
            out[gv.name_hint] = host
            for k in kernels:
                out[k.attrs["global_symbol"]] = k
        return out

    return Pass(run, "SplitHostDevice")
