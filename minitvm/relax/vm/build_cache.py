"""The whole-build cache of `relax.build`: the Executable of a module built before, in any
process, loaded from the compile cache before any graph pass or schedule runs.

The key (driver/compile_cache.py's `make_build_key`) holds the printed input module (relax and
TIR functions) with every constant moved out of the text and described by its dtype, shape and
the sha256 of its bytes, the bit patterns of the module's float immediates (the script prints
`-0.0` as `0`), the target, the PassContext's opt_level, required/disabled passes and config,
the lowering settings, and compile_cache's versions and source digest. Anything that cannot be
described so (pass instruments, a meta_schedule database in scope, non-JSON config values, user
TIR passes, IR dumps, LLVM IR imports, GPU targets) makes the build uncacheable: it runs as
before. The entry is the Executable's export (`Executable.export_library`'s zip plus the key);
a hit is read by compile_cache's `get_entry`, i.e. load_module's checks, then the key compared
byte for byte, then the executable's own loader (program verification, object checks).
"""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Any

import numpy as np

from ...ir.module import IRModule
from ...tir.function import PrimFunc
from ..expr import Function, PrimValue
from ..functor import ExprVisitor

KIND = "relax.build"
_DATABASE_MODULE = "minitvm.meta_schedule.database"


def build_key(mod: IRModule, target: Any) -> Any:
    """The compile-cache key of `relax.build(mod, target)` in the current PassContext, or None
    when the cache is off or the build cannot be keyed exactly."""
    from ... import driver
    from ...driver import compile_cache
    from ...error import MiniTVMError
    from ...ir.transform import PassContext
    from ...target import Target
    from ...target.kinds import gpu_kinds

    if compile_cache.cache_dir() is None:
        return None
    try:
        target = Target(target)
    except MiniTVMError:
        return None  # the build reports the bad target itself
    if target.kind.name in gpu_kinds():
        return None
    flags = driver._lowering_flags()
    ctx = PassContext.current()
    if flags is None or ctx.instruments or ctx.trace is not None or _database_in_scope():
        return None  # user code runs in the build: no key can stand for it
    if _user_ops_registered():
        return None  # a user's op row (its TE compute) is code the key cannot describe
    try:
        config = json.loads(json.dumps(ctx.config, sort_keys=True, allow_nan=False))
    except (TypeError, ValueError):
        return None
    described = describe_module(mod)
    if described is None:
        return None
    options = {
        "opt_level": ctx.opt_level,
        "required_pass": sorted(ctx.required_pass),
        "disabled_pass": sorted(ctx.disabled_pass),
        "config": config,
    }
    return compile_cache.make_build_key(KIND, {**described, "pass_context": options}, target,
                                        flags)  # fmt: skip


def _user_ops_registered() -> bool:
    """An op row registered from outside minitvm (relax.op.register_op): its shape rule and TE
    compute shape the build, and a later process may register another under the same name."""
    from ..op import OP_TABLE

    return any(
        not getattr(fn, "__module__", "minitvm").startswith("minitvm")
        for d in OP_TABLE.values()
        for fn in (d.infer, d.te)
        if fn is not None
    )


def _database_in_scope() -> bool:
    """A `with database:` is active (ApplyCurrentDatabase would apply its tuned schedules);
    never true when meta_schedule was not imported."""
    module = sys.modules.get(_DATABASE_MODULE)
    return module is not None and module.Database.current() is not None


def describe_module(mod: IRModule) -> dict | None:
    """JSON data that differs whenever `mod` differs: its script (constants out of line), each
    constant's dtype, shape and sha256, the float immediates' bits; None when it imports LLVM
    IR (the IR may come from a file)."""
    from ...driver.kernel_cache import _kernel
    from ..printer import script_and_constants

    text, constants = script_and_constants(mod)
    floats: dict[str, list[str]] = {}
    for gv, func in mod.functions_items():
        if isinstance(func, PrimFunc):
            kernel = _kernel(func)
            if kernel.imports_llvm:
                return None
            floats[gv.name_hint] = list(kernel.key.floats)
        elif isinstance(func, Function):
            floats[gv.name_hint] = _relax_floats(func)
    return {
        "script": text,
        "constants": [_constant_digest(c.data.numpy()) for c in constants],
        "floats": floats,
    }


def _constant_digest(a: np.ndarray) -> list:
    """dtype, shape and the sha256 of the little-endian bytes of constant `a`."""
    a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
    return [str(a.dtype), list(a.shape), hashlib.sha256(a.reshape(-1).view(np.uint8)).hexdigest()]


class _Floats(ExprVisitor):
    """The bit patterns of float immediates in PrimValues and op attributes of a function."""

    def __init__(self) -> None:
        super().__init__()
        self.bits: list[str] = []

    def visit_expr(self, e: Any) -> None:
        if isinstance(e, PrimValue):
            self._collect(e.value)
        super().visit_expr(e)

    def visit_call(self, call: Any) -> None:
        super().visit_call(call)
        for value in call.attrs.values() if call.attrs else ():
            self._collect(value)

    def _collect(self, value: Any) -> None:
        from ...tir.expr import FloatImm, PrimExpr
        from ...tir.functor import post_order_visit

        if isinstance(value, float):
            self.bits.append(value.hex())
        elif isinstance(value, tuple | list):
            for v in value:
                self._collect(v)
        elif isinstance(value, PrimExpr):
            post_order_visit(value, lambda n: self._collect(float(n.value))
                             if isinstance(n, FloatImm) else None)  # fmt: skip


def _relax_floats(func: Function) -> list[str]:
    visitor = _Floats()
    visitor.visit_expr(func)
    return visitor.bits


def load(key: Any) -> Any:
    """The Executable stored for `key` (verified as load_module verifies a file), or None."""
    from ...driver import compile_cache
    from .executable import KIND as EXECUTABLE
    from .executable import _load

    return compile_cache.get_entry(key, EXECUTABLE, _load)


def store(key: Any, ex: Any) -> None:
    """Keep `ex`, just built for `key`, in the compile cache (never fails the build)."""
    from ...driver import compile_cache
    from .executable import write_executable

    compile_cache.put_entry(key, lambda path, extra: write_executable(ex, path, extra))
