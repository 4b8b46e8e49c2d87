"""What a workload read from a database file may hold: a TensorIR function, never code to link.

A workload is the TVMScript of a tuned function, stored beside the records. Its text is parsed
as data (the parser evaluates only its own namespaces, with bounded arithmetic), but the IR it
describes could still reach native code if it were built: `T.call_extern("int32", "system",
...)` calls any symbol of the process, `T.call_packed` any registered function, and a
`pragma_import_llvm` / `pragma_import_c` annotation links code (or reads a file named by it).
A loaded workload with any of these is refused. Records are matched to the user's own module
by structural equality and replayed on it, so refusing changes nothing for honest files: only
a module that itself calls extern code cannot be reloaded from a database (tune it again).
"""

from __future__ import annotations

import functools
from typing import Any

from ..error import TuningError
from ..ir import IRModule
from ..tir import AttrStmt, Block, Call, For, PrimFunc
from ..tir.functor import post_order_visit
from ..tir.names import TVM_CALL_PACKED
from ..tir.schedule.trace_check import LOADABLE_ANNOTATION_KEYS

# Intrinsics that call or name native code or registered functions.
_CODE_INTRINSICS = frozenset(
    {
        "tir.call_extern",
        "tir.call_pure_extern",
        "tir.call_llvm_intrin",
        "tir.call_llvm_pure_intrin",
        TVM_CALL_PACKED,
        "tir.tvm_call_cpacked",
        "tir.tvm_call_packed_lowered",
        "tir.tvm_call_cpacked_lowered",
        "tir.tvm_call_trace_packed",
        "tir.tvm_call_trace_packed_lowered",
        "tir.anylist_setitem_call_packed",
        "tir.anylist_setitem_call_cpacked",
    }
)


def check_workload(mod: IRModule, where: str) -> None:
    """Refuse a loaded workload that is not plain TensorIR (see the module's docstring)."""
    for gv, func in mod.functions_items():
        if not isinstance(func, PrimFunc):
            raise TuningError(
                f"{where}: function '{gv.name_hint}' is a {type(func).__name__}; a tuning "
                "workload holds TensorIR functions (PrimFuncs) only"
            )
        problems: list[str] = []
        post_order_visit(func.body, functools.partial(_note, problems=problems))
        if problems:
            raise TuningError(
                f"{where}: function '{gv.name_hint}' {problems[0]}; a workload read from a "
                "file may not call or link native code. Only load databases you trust; a "
                "function that needs such calls is tuned from your own module, not reloaded"
            )


def _note(node: Any, problems: list[str]) -> None:
    if isinstance(node, Call):
        if isinstance(node.op, str):
            problems.append(f"calls the extern symbol '{node.op[:80]}' (T.call_extern)")
        elif getattr(node.op, "name", None) in _CODE_INTRINSICS:
            problems.append(f"uses the intrinsic {node.op.name}")
    elif isinstance(node, For | Block):
        problems.extend(_annotation_problem(k) for k in node.annotations if _is_code_key(k))
    elif isinstance(node, AttrStmt) and _is_code_key(node.attr_key):
        problems.append(_annotation_problem(node.attr_key))


def _is_code_key(key: Any) -> bool:
    """pragma_* keys are the ones lowering hands to codegen (pragma_import_llvm links IR)."""
    return str(key).startswith("pragma_") and key not in LOADABLE_ANNOTATION_KEYS


def _annotation_problem(key: Any) -> str:
    return f"has the annotation {str(key)[:80]!r}, which is not on the list of harmless keys"
