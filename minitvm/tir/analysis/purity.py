"""Whether a PrimFunc is pure (TVM's is_pure_function): it writes no memory it did not
allocate itself and calls nothing with a side effect."""

from __future__ import annotations

from typing import Any

from ...error import TVMError
from ..expr import Call, Var
from ..function import PrimFunc
from ..functor import Visitor
from ..stmt import Allocate, Block, BufferStore

# Ops marked impure (`Op.pure` False) that only read state, jump or build call arguments: TVM
# gives them the effect kinds ReadState, ControlJump or SpecialCallArg, which keep a function
# pure. Extern functions (calls by name) are opaque, hence impure.
_NO_SIDE_EFFECT = frozenset(
    {
        "tir.ret",
        "tir.tvm_struct_get",
        "tir.tvm_access_ptr",
        "tir.tvm_stack_make_shape",
        "tir.tvm_stack_make_array",
        "tir.tvm_stack_alloca",
        "tir.tvm_warp_activemask",
        "tir.lookup_param",
    }
)


class PurityError(TVMError, AssertionError):
    """assert_pure_function found a write to outside memory or an impure call."""


class _Purity(Visitor):
    def __init__(self, func: PrimFunc) -> None:
        self.func = func
        self.internal: set[int] = set()  # data Vars of the function's own allocations
        self.keep: list[Var] = []
        self.problems: list[str] = []

    def visit_Allocate(self, alloc: Allocate) -> None:
        self.internal.add(id(alloc.buffer_var))
        self.keep.append(alloc.buffer_var)
        self.generic_visit(alloc)

    def visit_Block(self, block: Block) -> None:
        for buf in block.alloc_buffers:  # block-level TIR allocates here instead
            self.internal.add(id(buf.data))
            self.keep.append(buf.data)
        self.generic_visit(block)

    def visit_BufferStore(self, store: BufferStore) -> None:
        self.generic_visit(store)
        if id(store.buffer.data) not in self.internal:
            self.problems.append(
                f"it stores to buffer '{store.buffer.name}', which it did not allocate"
            )

    def visit_Call(self, call: Call) -> None:
        self.generic_visit(call)
        name = getattr(call.op, "name", call.op)
        if isinstance(call.op, str):
            self.problems.append(f"it calls the extern function '{name}' (an opaque effect)")
        elif not call.op.pure and name not in _NO_SIDE_EFFECT:
            self.problems.append(f"it calls '{name}', which has a side effect")


def _problems(func: PrimFunc) -> list[str]:
    checker = _Purity(func)
    checker.visit(func.body)
    return checker.problems


def is_pure_function(func: PrimFunc) -> bool:
    """Whether `func` only computes its return value: no store to a buffer it did not
    allocate, no call with a side effect (extern calls count as one)."""
    return not _problems(func)


def assert_pure_function(func: PrimFunc) -> Any:
    """Raise PurityError (an AssertionError) saying why `func` is not pure; True otherwise."""
    problems = _problems(func)
    if problems:
        name = (func.attrs or {}).get("global_symbol", "the function")
        raise PurityError(
            f"{name} is not pure: {problems[0]}"
            + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
            + "; a pure function may only write buffers it allocates and call pure ops"
        )
    return True
