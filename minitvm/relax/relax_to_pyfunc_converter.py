"""`RelaxToPyFuncConverter`: relax functions as Python functions, to check a module's numbers
at any stage of compilation against an eager reference (TVM 0.24's converter).

TVM maps each relax op to a PyTorch call; here each op runs through its numpy reference from
the op table (`relax.eval_ref`, the same oracle the test suite uses) and `call_tir` runs the
compiled PrimFunc. The converted functions take torch tensors, numpy or minitvm arrays and
return torch tensors when given torch tensors, else numpy arrays.

    converted = RelaxToPyFuncConverter(mod).convert(["main"])
    out = converted.pyfuncs["main"](x, w, b)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..error import MiniTVMError
from ..ir.module import IRModule
from . import expr as rx
from .eval_ref import Evaluator


class PyFuncIRModule(IRModule):
    """An IRModule with the Python functions converted from its relax functions (`.pyfuncs`)."""

    __slots__ = ("pyfuncs",)

    def __init__(self, functions: Any = None, attrs: Any = None):
        super().__init__(functions, attrs)
        self.pyfuncs: dict[str, Callable] = {}

    def copy(self) -> PyFuncIRModule:
        out = PyFuncIRModule(self.functions, self.attrs)
        out.pyfuncs = dict(self.pyfuncs)
        return out


class RelaxToPyFuncConverter:
    """Converts the relax functions of `ir_module` into Python functions (see the module doc)."""

    def __init__(self, ir_module: IRModule):
        if not isinstance(ir_module, IRModule):
            raise MiniTVMError(
                f"RelaxToPyFuncConverter: expected an IRModule, got {type(ir_module).__name__}"
            )
        self.ir_module = ir_module
        self._evaluator = Evaluator(ir_module)

    def convert(self, relax_function_names: str | list[str]) -> PyFuncIRModule:
        """A copy of the module whose `.pyfuncs` maps each named relax function to Python."""
        names = (
            [relax_function_names]
            if isinstance(relax_function_names, str)
            else list(relax_function_names)
        )
        out = PyFuncIRModule(self.ir_module.functions, self.ir_module.attrs)
        if isinstance(self.ir_module, PyFuncIRModule):
            out.pyfuncs.update(self.ir_module.pyfuncs)
        for name in names:
            func = self.ir_module[name] if name in self.ir_module else None  # noqa: SIM401
            if not isinstance(func, rx.Function):
                known = [gv.name_hint for gv, f in self.ir_module.functions_items()]
                raise MiniTVMError(
                    f"RelaxToPyFuncConverter.convert: '{name}' is not a relax function of the "
                    f"module; its relax functions are "
                    f"{[n for n in known if isinstance(self.ir_module[n], rx.Function)]}"
                )
            out.pyfuncs[name] = self._converted(name, func)
        return out

    def _converted(self, name: str, func: rx.Function) -> Callable:
        evaluator = self._evaluator

        def converted(*args: Any) -> Any:
            if len(args) != len(func.params):
                raise MiniTVMError(
                    f"{name}: expected {len(func.params)} arguments "
                    f"({', '.join(p.name_hint for p in func.params)}), got {len(args)}"
                )
            want_torch = any(_is_torch(a) for a in args)
            result = evaluator.run(name, *[_as_numpy(a) for a in args])
            return _as_result(result, want_torch)

        converted.__name__ = name
        converted.__doc__ = f"The relax function '{name}', run eagerly by its numpy references."
        return converted


def _is_torch(value: Any) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "detach")


def _as_numpy(value: Any) -> Any:
    if _is_torch(value):
        return value.detach().cpu().numpy()
    if isinstance(value, list | tuple):
        return tuple(_as_numpy(v) for v in value)
    return value


def _as_result(value: Any, want_torch: bool) -> Any:
    if isinstance(value, tuple | list):
        return type(value)(_as_result(v, want_torch) for v in value)
    if want_torch and isinstance(value, np.ndarray):
        import torch

        return torch.from_numpy(np.ascontiguousarray(value))
    return value


__all__ = ["PyFuncIRModule", "RelaxToPyFuncConverter"]
