"""Pass infrastructure: a pass is a pure function; Pass objects wrap it in one line."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..error import MiniTVMError


class PassContext:
    """Options for running passes: `with tvm.transform.PassContext(opt_level=3): ...`."""

    _local = threading.local()

    def __init__(
        self,
        opt_level: int = 2,
        required_pass: Sequence[str] = (),
        disabled_pass: Sequence[str] = (),
        config: dict | None = None,
        instruments: Sequence[Any] = (),
    ):
        self.opt_level = opt_level
        self.required_pass = tuple(required_pass)
        self.disabled_pass = tuple(disabled_pass)
        self.config = dict(config or {})
        self.instruments = tuple(instruments)

    @classmethod
    def current(cls) -> "PassContext":
        stack = getattr(cls._local, "stack", None)
        return stack[-1] if stack else _DEFAULT

    def __enter__(self) -> "PassContext":
        if not hasattr(self._local, "stack"):
            self._local.stack = []
        self._enter_instruments(self.instruments)
        self._local.stack.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._local.stack.pop()
        self._exit_instruments()

    # --- instruments (tvm.instrument): called around every pass run in this context ---------
    def _enter_instruments(self, instruments: Sequence[Any]) -> None:
        """enter_pass_ctx of each; when one raises, those already entered are exited and the
        context keeps no instruments (as TVM does)."""
        entered = []
        try:
            for inst in instruments:
                _call_hook(inst, "enter_pass_ctx")
                entered.append(inst)
        except BaseException:
            self.instruments = ()
            for inst in entered:
                _call_hook(inst, "exit_pass_ctx")
            raise

    def _exit_instruments(self) -> None:
        """exit_pass_ctx of each; when one raises, the context keeps no instruments."""
        try:
            for inst in self.instruments:
                _call_hook(inst, "exit_pass_ctx")
        except BaseException:
            self.instruments = ()
            raise

    def override_instruments(self, instruments: Sequence[Any]) -> None:
        """Replace the instruments: the old ones exit, the new ones enter."""
        self._exit_instruments()
        self.instruments = tuple(instruments)
        self._enter_instruments(self.instruments)

    def instrument_before_pass(self, mod: Any, info: PassInfo) -> bool:
        """Ask every instrument's should_run (all must agree), then call run_before_pass."""
        should_run = True
        for inst in self.instruments:  # every instrument is asked, as in TVM
            should_run &= _call_hook(inst, "should_run", mod, info) is not False
        if should_run:
            for inst in self.instruments:
                _call_hook(inst, "run_before_pass", mod, info)
        return should_run

    def instrument_after_pass(self, mod: Any, info: PassInfo) -> None:
        for inst in self.instruments:
            _call_hook(inst, "run_after_pass", mod, info)

    def enabled(self, p: "Pass") -> bool:
        if p.name in self.disabled_pass:
            return False
        return p.opt_level <= self.opt_level or p.name in self.required_pass


_DEFAULT = PassContext()


def _call_hook(inst: Any, name: str, *args: Any) -> Any:
    """inst.<name>(*args) when the instrument defines it (any object with some of the hooks)."""
    hook = getattr(inst, name, None)
    return hook(*args) if hook is not None else None


class PassInfo:
    def __init__(self, opt_level: int, name: str, required: Sequence[str] = ()):
        self.opt_level, self.name, self.required = opt_level, name, tuple(required)

    def __repr__(self) -> str:
        return f"The meta data of the pass - pass name: {self.name}, opt_level: {self.opt_level}"


class Pass:
    """A module-to-module transformation. Call it on an IRModule: `mod = MyPass()(mod)`."""

    def __init__(self, fn: Callable[[Any], Any], name: str, opt_level: int = 0):
        self.fn, self.name, self.opt_level = fn, name, opt_level

    @property
    def info(self) -> PassInfo:
        return PassInfo(self.opt_level, self.name)

    def __call__(self, mod: Any) -> Any:
        ctx = PassContext.current()
        if not ctx.enabled(self):
            return mod
        info = self.info
        if not ctx.instrument_before_pass(mod, info):
            return mod  # an instrument's should_run skipped this pass
        out = self.fn(mod)
        if out is None:
            raise MiniTVMError(f"pass {self.name} returned None; a pass must return the module")
        ctx.instrument_after_pass(out, info)
        return out

    def __repr__(self) -> str:
        return f"Pass({self.name}, opt_level={self.opt_level})"


class Sequential(Pass):
    """Run passes in order: `tvm.transform.Sequential([p1, p2])(mod)`."""

    def __init__(self, passes: Sequence[Pass] = (), opt_level: int = 0, name: str = "sequential"):
        self.passes = list(passes)

        def run(mod: Any) -> Any:
            for p in self.passes:
                mod = p(mod)
            return mod

        super().__init__(run, name, opt_level)


def module_pass(
    pass_func: Callable | None = None, opt_level: int = 0, name: str | None = None, required: Sequence[str] = ()
):
    """Decorator making a `fn(mod, ctx) -> mod` (or a class with transform_module) a Pass."""

    def wrap(fn: Any) -> Any:
        if isinstance(fn, type):
            def make(*args: Any, **kwargs: Any) -> Pass:
                inst = fn(*args, **kwargs)
                return Pass(lambda m: inst.transform_module(m, PassContext.current()), name or fn.__name__, opt_level)
            return make
        return Pass(lambda m: fn(m, PassContext.current()), name or fn.__name__, opt_level)

    return wrap(pass_func) if pass_func is not None else wrap


class PrintIR(Pass):
    def __init__(self, header: str = ""):
        def show(mod: Any) -> Any:
            print(header, mod.script() if hasattr(mod, "script") else mod)  # noqa: T201 - debug pass
            return mod

        super().__init__(show, "PrintIR")
