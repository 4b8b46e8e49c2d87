"""The SLP vectorizer is skipped on huge functions only (codegen/llvm.py): the attribute that
tells it to leave a function alone goes on functions over SLP_MAX_INSTRUCTIONS, and the
optimised code of a huge straight-line function still computes the same values."""

from __future__ import annotations

import llvmlite.binding as llvm

from minitvm.codegen import llvm as cg


def _module(n_small: int, n_big: int) -> llvm.ModuleRef:
    def body(name: str, n: int) -> str:
        lines = [f"define i32 @{name}(i32 %x) {{", "  %v0 = add i32 %x, 1"]
        lines += [f"  %v{i} = add i32 %v{i - 1}, {i}" for i in range(1, n)]
        lines += [f"  ret i32 %v{n - 1}", "}"]
        return "\n".join(lines)

    return llvm.parse_assembly(body("small", n_small) + "\n" + body("big", n_big))


def _attrs(f) -> bytes:
    return b" ".join(f.attributes)


def test_only_functions_over_the_limit_skip_slp():
    mod = _module(10, cg.SLP_MAX_INSTRUCTIONS + 5)
    cg._skip_slp_on_huge_functions(mod)
    funcs = {f.name: f for f in mod.functions}
    assert b"noimplicitfloat" in _attrs(funcs["big"])
    assert b"noimplicitfloat" not in _attrs(funcs["small"])


def test_a_huge_function_still_computes_the_same():
    n = cg.SLP_MAX_INSTRUCTIONS + 5
    mod = _module(10, n)
    from minitvm.target import Target

    tm = Target("llvm").create_target_machine()
    cg._optimize(mod, tm, 3)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    import ctypes

    big = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32)(engine.get_function_address("big"))
    assert big(7) == 7 + 1 + sum(range(1, n))  # x + 1 + 1 + 2 + ... + (n - 1)
