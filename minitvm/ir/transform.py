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
        self._local.stack.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._local.stack.pop()

    def enabled(self, p: "Pass") -> bool:
        if p.name in self.disabled_pass:
            return False
        return p.opt_level <= self.opt_level or p.name in self.required_pass


_DEFAULT = PassContext()


class PassInfo:
    def __init__(self, opt_level: int, name: str, required: Sequence[str] = ()):
        self.opt_level, self.name, self.required = opt_level, name, tuple(required)


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
        for inst in ctx.instruments:
            if hasattr(inst, "run_before_pass"):
                inst.run_before_pass(mod, self.info)
        out = self.fn(mod)
        if out is None:
            raise MiniTVMError(f"pass {self.name} returned None; a pass must return the module")
        for inst in ctx.instruments:
            if hasattr(inst, "run_after_pass"):
                inst.run_after_pass(out, self.info)
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
