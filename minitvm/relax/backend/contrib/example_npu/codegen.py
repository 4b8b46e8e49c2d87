"""`relax.ext.example_npu`: the example NPU's code generator, a host emulation (see RunCodegen)."""

from __future__ import annotations

from typing import Any

from .....error import MiniTVMError
from .....ir.module import IRModule
from .....runtime.registry import register_func
from .... import expr as rx
from ....transform.run_codegen import inline_composites


@register_func("relax.ext.example_npu", override=True)
def example_npu_codegen(functions: list, options: dict, mod: IRModule) -> list[rx.Function]:
    """Each offloaded function as the host function computing the same thing."""
    return [inline_composites(f, mod) for f in functions]


@register_func("runtime.ExampleNPUJSONRuntimeCreate", override=True)
def example_npu_runtime_create(*args: Any) -> None:
    """TVM's example NPU runtime loads a JSON graph; minitvm's example NPU has none to load,
    because RunCodegen already turned the offloaded functions into host code."""
    raise MiniTVMError(
        "runtime.ExampleNPUJSONRuntimeCreate: minitvm emulates the example NPU on the host; "
        "RunCodegen compiles offloaded functions with the rest of the module, so there is no "
        "JSON runtime to create. Build the module with relax.build after RunCodegen instead."
    )
