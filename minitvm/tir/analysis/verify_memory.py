"""TVM's verify_memory: in a function for a GPU (or FPGA) target, host code must not touch
the memory of the function's arguments; only code inside a thread launch may."""

from __future__ import annotations

from typing import Any

from ...error import BuildError
from ..expr import BufferLoad, Call, Var
from ..function import PrimFunc
from ..functor import Visitor
from ..names import is_call
from ..stmt import AttrStmt, BufferStore, LetStmt

# DLPack device codes whose memory the host cannot address: CUDA, OpenCL, AOCL, SDAccel,
# Vulkan, Metal, ROCm, OpenGL
_DEVICE_MEMORY = frozenset({2, 4, 5, 6, 7, 8, 10, 11})
_THREAD_ENV_KEYS = frozenset({"thread_extent", "pipeline_exec_scope"})
_STRUCT_GET = "tir.tvm_struct_get"


class _HostAccess(Visitor):
    def __init__(self, func: PrimFunc) -> None:
        self.func = func
        self.arg_data = {id(b.data) for b in func.buffer_map.values()}
        self.lets: dict[int, Any] = {}
        self.in_thread = False
        self.errors: list[str] = []

    def visit_LetStmt(self, s: LetStmt) -> None:
        self.lets[id(s.var)] = s.value
        self.generic_visit(s)

    def visit_AttrStmt(self, s: AttrStmt) -> None:
        if self.in_thread or s.attr_key not in _THREAD_ENV_KEYS:
            self.generic_visit(s)
            return
        self.in_thread = True
        self.generic_visit(s)
        self.in_thread = False

    def visit_BufferLoad(self, load: BufferLoad) -> None:
        self._access(load.buffer.data)
        self.generic_visit(load)

    def visit_BufferStore(self, store: BufferStore) -> None:
        self._access(store.buffer.data)
        self.generic_visit(store)

    def _from_args(self, v: Any) -> bool:
        """A parameter buffer's data, the first parameter, or a field read out of it."""
        if id(v) in self.arg_data:
            return True
        first = self.func.params[0] if self.func.params else None
        while isinstance(v, Var):
            if v is first:
                return True
            value = self.lets.get(id(v))
            if not (isinstance(value, Call) and is_call(value, _STRUCT_GET)):
                return False
            v = value.args[0]
        return False

    def _access(self, data: Var) -> None:
        if not self.in_thread and self._from_args(data):
            self.errors.append(
                f"variable '{data.name}' is accessed directly by host code (outside every "
                "thread launch), but it is the memory of a function argument on the device"
            )


def memory_errors(func: PrimFunc) -> list[str]:
    """Why `func` accesses device memory from the host (nothing for CPU targets or for
    functions with a non-default calling convention)."""
    target = (func.attrs or {}).get("target")
    if target is None:
        raise BuildError(
            "verify_memory: the function has no 'target' attribute; bind one first "
            "(tvm.tir.transform.BindTarget(target) or func.with_attr('target', target))"
        )
    if int((func.attrs or {}).get("calling_conv", 0)) != 0:
        return []
    if target.get_target_device_type() not in _DEVICE_MEMORY:
        return []
    checker = _HostAccess(func)
    checker.visit(func.body)
    return list(dict.fromkeys(checker.errors))  # one line per variable


def verify_memory(func: PrimFunc) -> bool:
    """Whether host code of `func` leaves its device-side arguments alone."""
    return not memory_errors(func)
