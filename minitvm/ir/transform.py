"""Pass infrastructure: a pass is a pure function; Pass objects wrap it in one line.

A pass called directly (`FoldConstant()(mod)`) runs unless the PassContext disables it by
name; a `Sequential` also skips the passes above the context's `opt_level` (unless they are
in `required_pass`) and first runs the passes each of its passes names in `required`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..error import ArgumentError, MiniTVMError


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
        trace: Any = None,
        trace_stack: Sequence[Any] | None = None,
        make_traceable: Sequence[str] | None = None,
        num_evals: int = 0,
        tuning_api_database: Any = None,
    ):
        # TVM's relax tuning API (traces of pass choices, a tuning database) is not part of
        # minitvm; the defaults are accepted so contexts can be copied, anything else refused
        for name, value in (
            ("trace_stack", trace_stack),
            ("make_traceable", make_traceable),
            ("tuning_api_database", tuning_api_database),
        ):
            if value:
                raise ArgumentError(
                    f"PassContext({name}=...): minitvm has no relax tuning API (traced pass "
                    "choices, tuning databases); leave it unset, or tune kernels with "
                    "minitvm.meta_schedule"
                )
        if isinstance(required_pass, str) or isinstance(disabled_pass, str):
            raise ArgumentError(
                "PassContext: required_pass and disabled_pass are lists of pass names, got a "
                "string; write disabled_pass=['FoldConstant']"
            )
        self.opt_level = opt_level
        self.required_pass = tuple(required_pass or ())
        self.disabled_pass = tuple(disabled_pass or ())
        self.config = dict(config or {})
        self.instruments = tuple(instruments or ())
        self.trace = trace
        self.trace_stack: list[Any] = []
        self.make_traceable: list[str] = []
        self.num_evals = int(num_evals)
        self._tuning_api_database = None

    def get_tuning_api_database(self) -> Any:
        """The tuning-API database of this context: always None (see __init__)."""
        return self._tuning_api_database

    @classmethod
    def current(cls) -> PassContext:
        stack = getattr(cls._local, "stack", None)
        return stack[-1] if stack else _DEFAULT

    def __enter__(self) -> PassContext:
        if not hasattr(self._local, "stack"):
            self._local.stack = []
        self._enter_instruments(self.instruments)
        self._local.stack.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self._local.stack.pop()
        self._exit_instruments()

    # --- instruments (tvm.instrument): called around every pass run in this context ---------
    def _enter_instruments(self, instruments: Sequence[Any]) -> None:
        """enter_pass_ctx of each; when one raises, those already entered are exited (last
        first) and the context keeps no instruments (as TVM does)."""
        entered = []
        try:
            for inst in instruments:
                _call_hook(inst, "enter_pass_ctx")
                entered.append(inst)
        except BaseException:
            self.instruments = ()
            for inst in reversed(entered):
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
        """Ask every instrument's should_run (all must agree; a required pass is not asked
        about), then call run_before_pass."""
        should_run = True
        asked = () if info.name in self.required_pass else self.instruments
        for inst in asked:  # every instrument is asked, as in TVM
            should_run &= _call_hook(inst, "should_run", mod, info) is not False
        if should_run:
            for inst in self.instruments:
                _call_hook(inst, "run_before_pass", mod, info)
        return should_run

    def instrument_after_pass(self, mod: Any, info: PassInfo) -> None:
        for inst in self.instruments:
            _call_hook(inst, "run_after_pass", mod, info)

    def enabled(self, p: Pass) -> bool:
        """Whether a Sequential runs `p` here: not disabled, and within opt_level or required."""
        if p.name in self.disabled_pass:
            return False
        return p.opt_level <= self.opt_level or p.name in self.required_pass

    def __repr__(self) -> str:
        return (
            f"PassContext(opt_level={self.opt_level}, required_pass={list(self.required_pass)}, "
            f"disabled_pass={list(self.disabled_pass)})"
        )


_DEFAULT = PassContext()


def _call_hook(inst: Any, name: str, *args: Any) -> Any:
    """inst.<name>(*args) when the instrument defines it (any object with some of the hooks)."""
    hook = getattr(inst, name, None)
    return hook(*args) if hook is not None else None


class PassInfo:
    """A pass's name, opt_level and the names of the passes it needs to run first."""

    def __init__(self, opt_level: int, name: str, required: Sequence[str] = ()):
        self.opt_level, self.name, self.required = opt_level, name, tuple(required)

    def __repr__(self) -> str:
        return f"The meta data of the pass - pass name: {self.name}, opt_level: {self.opt_level}"


class Pass:
    """A module-to-module transformation. Call it on an IRModule: `mod = MyPass()(mod)`."""

    def __init__(
        self,
        fn: Callable[[Any], Any],
        name: str,
        opt_level: int = 0,
        required: Sequence[str] = (),
    ):
        self.fn, self.name, self.opt_level = fn, name, opt_level
        self.required = tuple(required)

    @property
    def info(self) -> PassInfo:
        return PassInfo(self.opt_level, self.name, self.required)

    def __call__(self, mod: Any) -> Any:
        ctx = PassContext.current()
        if self.name in ctx.disabled_pass:
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


class ModulePass(Pass):
    """A pass over the whole module (what `module_pass` makes)."""


# Passes that other passes may name in `required`: name -> factory of the pass. Front ends
# register theirs (Relay registers InferType) so a Sequential can run them first.
_REQUIRED_FACTORIES: dict[str, Callable[[], Pass]] = {}


def register_required_pass(name: str, factory: Callable[[], Pass]) -> None:
    """Let passes name `name` in `required`: a Sequential runs `factory()` before them."""
    _REQUIRED_FACTORIES[name] = factory


def _required_pass(name: str, by: str) -> Pass:
    try:
        return _REQUIRED_FACTORIES[name]()
    except KeyError:
        raise MiniTVMError(
            f"pass {by!r} requires pass {name!r}, which is not registered; known: "
            f"{sorted(_REQUIRED_FACTORIES)}"
        ) from None


class Sequential(Pass):
    """Run passes in order: `tvm.transform.Sequential([p1, p2])(mod)`.

    Under the current PassContext a pass is skipped when disabled, or when its opt_level is
    above the context's and it is not in `required_pass`; the passes a pass names in its
    `required` run just before it.
    """

    def __init__(
        self,
        passes: Sequence[Pass] = (),
        opt_level: int = 0,
        name: str = "sequential",
        required: Sequence[str] = (),
    ):
        self.passes = list(passes)
        for p in self.passes:
            if not isinstance(p, Pass):
                raise ArgumentError(
                    f"Sequential {name!r}: expected Pass objects, got {type(p).__name__} "
                    f"{p!r:.60}; call the pass factory, e.g. FoldConstant() not FoldConstant"
                )
        super().__init__(self._run, name, opt_level, required)

    def _run(self, mod: Any) -> Any:
        ctx = PassContext.current()
        for p in self.passes:
            if not ctx.enabled(p):
                continue
            for name in p.required:
                mod = _required_pass(name, p.name)(mod)
            mod = p(mod)
        return mod


def _make_pass_decorator(
    pass_cls: type[Pass], method: str, runner: Callable[[Callable, Any], Any]
) -> Callable:
    """Build a decorator like `module_pass`: turns a function or a class with `method` into a
    pass; `runner(transform, mod)` applies `transform(unit, mod, ctx)` to the module."""

    def decorator(
        pass_func: Callable | None = None,
        opt_level: int | None = None,
        name: str | None = None,
        required: Sequence[str] = (),
    ) -> Any:
        if opt_level is None:
            raise ArgumentError(f"{pass_cls.__name__}: opt_level is required, e.g. opt_level=1")

        def wrap(fn: Any) -> Any:
            pass_name = name or fn.__name__
            if isinstance(fn, type):
                return _pass_class(fn, pass_name)
            if not callable(fn):
                raise ArgumentError(
                    f"{pass_cls.__name__}: expected a function or a class with {method}, got "
                    f"{type(fn).__name__}"
                )
            return pass_cls(lambda m: runner(fn, m), pass_name, opt_level, required)

        def _pass_class(cls: type, pass_name: str) -> type:
            if not hasattr(cls, method):
                raise ArgumentError(
                    f"{pass_cls.__name__}: class {cls.__name__} has no method {method}"
                )

            def __init__(self: Pass, *args: Any, **kwargs: Any) -> None:
                inst = cls(*args, **kwargs)
                transform = getattr(inst, method)
                pass_cls.__init__(
                    self, lambda m: runner(transform, m), pass_name, opt_level, required
                )
                self._inner = inst

            def __getattr__(self: Pass, attr: str) -> Any:
                if attr == "_inner":
                    raise AttributeError(attr)
                return getattr(self._inner, attr)

            body = {"__init__": __init__, "__getattr__": __getattr__, "__doc__": cls.__doc__}
            out = type(cls.__name__, (pass_cls,), body)
            out.__module__, out.__qualname__ = cls.__module__, cls.__qualname__
            return out

        return wrap(pass_func) if pass_func is not None else wrap

    return decorator


def _run_module(transform: Callable, mod: Any) -> Any:
    return transform(mod, PassContext.current())


module_pass = _make_pass_decorator(ModulePass, "transform_module", _run_module)
module_pass.__name__ = "module_pass"
module_pass.__doc__ = """Make a pass of a `fn(mod, ctx) -> mod` or a class with
`transform_module(self, mod, ctx)`: `@tvm.transform.module_pass(opt_level=2)`."""


class PrintIR(Pass):
    """A pass that prints the module (Relay text for Relay modules) and returns it unchanged."""

    def __init__(self, header: str = "", show_meta_data: bool = False):
        def show(mod: Any) -> Any:
            print(f"PrintIR({header}):\n{mod}")
            return mod

        super().__init__(show, "PrintIR")


__all__ = [
    "ModulePass",
    "Pass",
    "PassContext",
    "PassInfo",
    "PrintIR",
    "Sequential",
    "module_pass",
    "register_required_pass",
]
