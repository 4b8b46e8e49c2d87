"""TVM's stateful calling style on the VirtualMachine: `set_input` then `invoke_stateful` then
`get_outputs`, plus `save_function` (a function bound to its arguments) and the signature
queries `get_function_arity` / `get_function_param_name`.

These are conveniences over the plain call `vm[name](*args)`: the inputs are checked (count,
parameter names) when they are set, and each query names the function and what to call first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...error import ArgumentError, TVMError


class StatefulCallError(TVMError, ValueError):
    """invoke_stateful / get_outputs called out of order (a ValueError, as TVM raises)."""


class StatefulCalls:
    """Mixed into VirtualMachine; `_get(name)` returns the function object with `.params`."""

    _get: Callable[[str], Any]

    def _stateful(self) -> dict:
        if "_stateful_state" not in self.__dict__:
            self.__dict__["_stateful_state"] = {"inputs": {}, "outputs": {}, "saved": {}}
        return self.__dict__["_stateful_state"]

    def _bind(self, func_name: str, args: tuple, kwargs: dict, what: str) -> tuple:
        """Positional then keyword arguments of `func_name` in parameter order."""
        params = list(self._get(func_name).params)
        if len(args) > len(params):
            raise ArgumentError(
                f"{what}('{func_name}'): {len(args)} positional inputs for {len(params)} "
                f"parameters ({', '.join(params)})"
            )
        values: list[Any] = list(args) + [None] * (len(params) - len(args))
        given = [True] * len(args) + [False] * (len(params) - len(args))
        for key, value in kwargs.items():
            if key not in params:
                raise ArgumentError(
                    f"{what}('{func_name}'): no parameter named '{key}'; the parameters are "
                    f"{', '.join(params)}"
                )
            i = params.index(key)
            if given[i]:
                raise ArgumentError(
                    f"{what}('{func_name}'): parameter '{key}' is given twice (by position "
                    "and by name)"
                )
            values[i], given[i] = value, True
        missing = [p for p, g in zip(params, given) if not g]
        if missing:
            raise ArgumentError(
                f"{what}('{func_name}'): no value for parameter(s) {', '.join(missing)}; pass "
                f"all {len(params)} inputs"
            )
        return tuple(values)

    def set_input(self, func_name: str, *args: Any, **kwargs: Any) -> None:
        """Set the inputs of `func_name` for `invoke_stateful`: positional in parameter order,
        or by parameter name."""
        self._stateful()["inputs"][func_name] = self._bind(func_name, args, kwargs, "set_input")
        self._stateful()["outputs"].pop(func_name, None)

    def invoke_stateful(self, func_name: str) -> None:
        """Call `func_name` on the inputs `set_input` gave it; `get_outputs` returns the result."""
        state = self._stateful()
        if func_name not in state["inputs"]:
            self._get(func_name)  # an unknown name says which functions exist
            raise StatefulCallError(
                f"invoke_stateful('{func_name}'): no inputs were set; call "
                f"vm.set_input('{func_name}', ...) first"
            )
        state["outputs"][func_name] = self._get(func_name)(state["inputs"][func_name])

    def get_outputs(self, func_name: str) -> Any:
        """The result of the last `invoke_stateful(func_name)` (a tuple for tuple results)."""
        outputs = self._stateful()["outputs"]
        if func_name not in outputs:
            self._get(func_name)
            raise StatefulCallError(
                f"get_outputs('{func_name}'): the function has not run since its inputs were "
                f"set; call vm.invoke_stateful('{func_name}') first"
            )
        return outputs[func_name]

    def _stateful_timer(self, number: int, repeat: int, min_repeat_ms: float) -> Callable:
        """TVM's `vm.time_evaluator("invoke_stateful", dev)("main")`: times the stateful call
        of the function named when the evaluator is called."""
        from ...runtime.module import time_calls

        return lambda name: time_calls(
            lambda: self.invoke_stateful(name), number, repeat, min_repeat_ms
        )

    def get_function_arity(self, func_name: str) -> int:
        """How many parameters `func_name` takes."""
        return len(self._get(func_name).params)

    def get_function_param_name(self, func_name: str, index: int) -> str:
        """The name of parameter `index` of `func_name`."""
        params = self._get(func_name).params
        if not isinstance(index, int) or not 0 <= index < len(params):
            raise ArgumentError(
                f"get_function_param_name('{func_name}', {index!r}): the function has "
                f"{len(params)} parameters"
            )
        return params[index]

    def save_function(
        self, func_name: str, saved_name: str, *args: Any, include_return: bool = True,
        **kwargs: Any,
    ) -> None:  # fmt: skip
        """Bind `func_name` to these arguments under `saved_name`: `vm[saved_name]()` then calls
        it (for timing a call without passing its arguments each time)."""
        values = self._bind(func_name, args, kwargs, "save_function")
        fn = self._get(func_name)

        def call() -> Any:
            out = fn(values)
            return out if include_return else None

        self._stateful()["saved"][saved_name] = call

    def _saved(self, name: str) -> Callable | None:
        return self._stateful()["saved"].get(name)
