"""`tvm.lower` and `tvm.build`: from a schedule, TE tensors, a PrimFunc or an IRModule to a
readable loop nest, or to a compiled runtime.Module."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import Any

from ..error import BuildError
from ..ir.module import IRModule
from ..ir.recursion import allows_deep_recursion
from ..target import Target
from ..target.kinds import gpu_kinds
from ..tir.function import PrimFunc
from ..tir.schedule.verify import verify_block_bindings, verify_loop_kinds
from ..tir.transform.lower_thread_binding import has_thread_bindings
from ..tir.transform.pipeline import lower_primfunc
from . import build_profile, compile_cache, kernel_cache, parallel_build

_INPUTS = "a te.Schedule (with args), a list of te.Tensors, a tir.PrimFunc or an IRModule"


def _named(func: PrimFunc, name: str) -> PrimFunc:
    return func.with_attr("global_symbol", name)


def _check_binds(binds: Any, where: str) -> None:
    if binds:
        raise BuildError(
            f"{where}: `binds` (custom buffers for tensors) is not supported; declare the "
            "buffer layout in the PrimFunc (T.match_buffer / T.Buffer) instead"
        )


def _check_unique_symbols(mod: IRModule, where: str) -> None:
    seen: dict[str, str] = {}
    for gv, func in mod.functions_items():
        other = seen.setdefault(func.name, gv.name_hint)
        if other != gv.name_hint:
            raise BuildError(
                f"{where}: functions '{other}' and '{gv.name_hint}' both have global_symbol "
                f"'{func.name}'; give each a unique name with "
                "func.with_attr('global_symbol', name)"
            )


def _to_module(inp: Any, args: Any, name: str, binds: Any, where: str) -> IRModule:
    """Normalise every accepted input to an IRModule of PrimFuncs with global symbols set."""
    _check_binds(binds, where)
    if isinstance(inp, IRModule):
        out = IRModule(attrs=inp.attrs)
        for gv, func in inp.functions_items():
            if not isinstance(func, PrimFunc):
                raise BuildError(
                    f"{where}: function '{gv.name_hint}' is a {type(func).__name__}, not a "
                    "tir.PrimFunc; build graph-level modules with relax.build"
                )
            out[gv.name_hint] = func if func.name else _named(func, gv.name_hint)
        _check_unique_symbols(out, where)
        return out
    if isinstance(inp, PrimFunc):  # TVM names a lone PrimFunc by its global_symbol
        symbol = name or inp.name or "main"
        return IRModule({symbol: _named(inp, symbol)})
    name = name or "main"
    if hasattr(inp, "build_prim_func"):  # a te Schedule (te.create_schedule)
        if args is None:
            raise BuildError(
                f"{where}: a schedule needs `args`, the tensors that become the function's "
                "parameters, e.g. tvm.lower(s, [A, B, C])"
            )
        return IRModule({name: _named(inp.build_prim_func(list(args), name), name)})
    if isinstance(inp, list | tuple) and inp:
        from ..te import create_prim_func  # te sits above tir; imported when used

        return IRModule({name: _named(create_prim_func(list(inp)), name)})
    raise BuildError(f"{where}: expected {_INPUTS}, got {type(inp).__name__}")


@allows_deep_recursion
def lower(
    inp: Any,
    args: Any = None,
    name: str | None = None,
    binds: Any = None,
    simple_mode: bool = False,
) -> IRModule:
    """The loop nest of `inp` after block lowering and simplification (multi-dim indices kept).

    >>> print(tvm.lower(s, [A, B, C], simple_mode=True).script())
    """
    mod = _to_module(inp, args, name, binds, "tvm.lower")
    out = IRModule(attrs=mod.attrs)
    for gv, func in mod.functions_items():
        # a function with loops bound to GPU threads prints its launch scopes and barriers
        out[gv.name_hint] = _lower_checked(func, flatten=False, gpu=has_thread_bindings(func))
    return out


def _lower_checked(func: PrimFunc, flatten: bool = True, gpu: bool = False) -> PrimFunc:
    """Lower `func` after the scheduler's legality rules hold for it: a function written already
    scheduled (TVMScript `T.parallel` over a reduction, a binding outside its domain) gets the
    same ScheduleError the primitive would have raised. Every front end builds through here."""
    verify_loop_kinds(func)
    verify_block_bindings(func)
    return lower_primfunc(func, flatten=flatten, gpu=gpu)


@allows_deep_recursion
def build(
    inp: Any,
    args: Any = None,
    target: Any = "llvm",
    target_host: Any = None,
    name: str | None = None,
    binds: Any = None,
):
    """Lower and compile `inp` for `target`; returns a runtime.Module (`mod[name](*arrays)`).

    >>> f = tvm.build(s, [A, B, C], "llvm", name="add"); f(a, b, c)
    """
    target = Target(target)
    if target_host is not None:
        Target(target_host)  # validated; the host is the CPU target itself
    mod = _to_module(inp, args, name, binds, "tvm.build")
    given = [func for _, func in mod.functions_items()]
    if not given:
        raise BuildError("tvm.build: the IRModule has no PrimFunc to compile")
    if target.kind.name in gpu_kinds():
        return _build_gpu(given, target)
    from .. import runtime

    # identical kernels are lowered and compiled once; a rebuild reuses lowering and object
    # code, in this process (kernel_cache) or from the persistent cache (compile_cache)
    distinct, aliases, kernels = kernel_cache.distinct_kernels(given)
    flags = _lowering_flags()
    names = [f.name for f in given]
    entry = name if name in names else names[0]
    cacheable = flags is not None and not any(k.imports_llvm for k in kernels)
    stored: dict[str, Any] = {}  # what compile_all found or made for the persistent cache

    def compile_all() -> Any:
        profile = build_profile.current()
        key = None
        if cacheable:
            with _timed(profile, "compile cache"):
                key = compile_cache.make_key(distinct, _alias_kernels(aliases, kernels),
                                             target, flags)  # fmt: skip
                hit = compile_cache.get(key, entry) if key is not None else None
            if profile is not None and key is not None:
                state = "hit: no lowering, no LLVM" if hit is not None else "miss: entry written"
                profile.notes.append(f"compile cache {state} ({len(distinct)} kernels)")
            if hit is not None:
                stored["module"] = hit
                return hit._result
        stored["key"] = key
        with _collector_paused():
            return _compile(distinct, aliases, kernels, target, flags, profile)

    result = kernel_cache.cached_object(kernels, aliases, str(target), compile_all, flags)
    module = stored.get("module")
    if module is None or module._result is not result:
        module = runtime.Module.from_codegen(result, entry_name=entry)
    if stored.get("key") is not None:
        compile_cache.put(stored["key"], module)
    return module


def _alias_kernels(aliases: list[tuple[PrimFunc, str]], kernels: list) -> list:
    """(alias's _Kernel, twin name) pairs: the key records each alias's own names."""
    by_name = {k.func.name: k for k in kernels}
    return [(by_name[f.name], twin) for f, twin in aliases]


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while kernels are lowered and emitted.

    Lowering and IR emission allocate millions of objects, nearly all freed by reference
    counting, so the collector ran ~500 times per cold ResNet-18 build and its full passes
    walked every live IR node and llvmlite value: 0.5-0.9 s (16%) of the build. The cycles
    made meanwhile (llvmlite's IR values point to their parents) go in one pass once the
    collector is back on; it is turned back on only if it was on.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _timed(profile: Any, stage: str, kernel: str | None = None) -> Any:
    return profile.timed(stage, kernel) if profile is not None else contextlib.nullcontext()


def _compile(distinct: list, aliases: list, kernels: list, target: Target, flags: Any,
             profile: Any) -> Any:  # fmt: skip
    """The CodegenResult of a build: in worker processes when it pays, else serially (one
    kernel at a time, each timed, while a build is profiled)."""
    from .. import codegen

    def lower(kernel: Any) -> PrimFunc:
        with _timed(profile, "TIR lowering", kernel.func.name):
            return kernel_cache.lowered(kernel, _lower_checked, flags)

    imports = any(k.imports_llvm for k in kernels)
    if profile is not None and not imports and flags is not None:
        return _compile_profiled(distinct, aliases, target, lower, profile)
    n_jobs = parallel_build.jobs(len(distinct))
    if n_jobs > 1 and flags is not None and not imports:
        result = parallel_build.build(distinct, aliases, target, lower, n_jobs)
        if result is not None:
            return result
    lowered = [lower(k) for k in distinct]
    with _timed(profile, "LLVM (IR, optimisation, object)"):
        return codegen.llvm.build(lowered, target, aliases)


def _compile_profiled(distinct: list, aliases: list, target: Target, lower: Any,
                      profile: Any) -> Any:  # fmt: skip
    """Each kernel lowered and optimised on its own, then linked: the code of a parallel build
    (parallel_build.py), with every kernel's stages timed."""
    from .. import codegen

    parts = []
    for kernel in distinct:
        name = kernel.func.name
        twins = [(f, t) for f, t in aliases if t == name]
        times: dict[str, float] = {}
        parts.append(codegen.llvm.build_partition([lower(kernel)], target, twins, times))
        for stage, seconds in times.items():
            profile.add(stage, seconds, name)
    by_name = {info["name"]: info for _, infos in parts for info in infos}
    order = [k.func.name for k in distinct] + [f.name for f, _ in aliases]
    with profile.timed("object emission"):
        return codegen.llvm.link_partitions([bc for bc, _ in parts], [by_name[n] for n in order],
                                            target)  # fmt: skip


def lower_gpu(funcs: list[PrimFunc], target: Target) -> IRModule:
    """SplitHostDevice's module for a GPU target: host launchers and checked device kernels."""
    from ..tir.transform.split_host_device import split_host_device
    from ..tir.transform.verify_gpu_code import verify_gpu_code

    out = IRModule()
    for func in funcs:
        host, *kernels = split_host_device(
            _lower_checked(func, gpu=True), target, getattr(target, "host", None)
        )
        out[host.attrs["global_symbol"]] = host
        for k in kernels:
            verify_gpu_code(k, target)
            out[k.attrs["global_symbol"]] = k
    return out


def _build_gpu(funcs: list[PrimFunc], target: Target) -> Any:
    """tvm.build for opencl/cuda: the GPU lowering, then the device code generator."""
    from ..codegen.device import build_device_module

    return build_device_module(lower_gpu(funcs, target), target)


def _lowering_flags() -> Any:
    """What lowering depends on besides the function (the cache key's part); None (no cache)
    while MINITVM_DUMP_IR asks for the IR of every pass or the PassContext adds user passes
    (arbitrary Python: no key can stand for them)."""
    from .. import env
    from ..tir.transform import pipeline

    if env.dump_ir_dir() or pipeline._user_phases():
        return None
    return pipeline.PIPELINE, env.verify_ir()


# tvm.driver.build_module, which re-exports lower/build: imported after they are defined
from . import build_module as build_module
from .build_module import schedule_to_module as schedule_to_module
