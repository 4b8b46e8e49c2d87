"""IRModule: a named collection of functions (PrimFuncs and graph functions)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..error import ArgumentError, MiniTVMError
from .node import FrozenDict, Node, node


class BaseFunc(Node):
    """Base class of functions stored in an IRModule."""

    __slots__ = ()

    def with_attr(self, key: str | Mapping, value: Any = None):
        attrs = dict(self.attrs or {})  # type: ignore[attr-defined]
        attrs.update(key if isinstance(key, Mapping) else {key: value})
        return self.replace(attrs=FrozenDict(attrs))

    def with_attrs(self, attrs: Mapping):
        return self.with_attr(attrs)

    def without_attr(self, key: str):
        """A copy without attribute `key` (unchanged when it is absent), as in TVM."""
        attrs = {k: v for k, v in dict(self.attrs or {}).items() if k != key}  # type: ignore[attr-defined]
        return self.replace(attrs=FrozenDict(attrs))


@node
class GlobalVar(Node):
    """The name of a function in an IRModule; compared by identity."""

    name_hint: str
    _is_var = True
    dtype = None  # lets structural equality treat GlobalVars like variables

    __hash__ = object.__hash__

    def __call__(self, *args: Any) -> Any:
        """`gv(a, b)`: a Relay call of this global function when the arguments are Relay
        expressions (as in TVM); anything else is refused."""
        make = getattr(args[0], "_call_global", None) if args else None
        if make is None or not all(hasattr(a, "_call_global") for a in args):
            raise ArgumentError(
                f"GlobalVar {self.name_hint!r}: calling it builds a Relay call and needs Relay "
                f"expressions as arguments, got ({', '.join(type(a).__name__ for a in args)}); "
                "for relax use relax.Call(gv, args) or BlockBuilder.call_te"
            )
        return make(self, args)


class IRModule:
    """A mutable container of functions keyed by GlobalVar, as in TVM (`mod["main"]`)."""

    __slots__ = ("_class_name", "_funcs", "attrs", "global_infos")

    def __init__(
        self,
        functions: Mapping | None = None,
        attrs: Mapping | None = None,
        global_infos: Mapping | None = None,
    ):
        self._funcs: dict[str, tuple[GlobalVar, BaseFunc]] = {}
        self._class_name: str | None = None  # the class `@I.ir_module` parsed, as TVM's __name__
        self.attrs = FrozenDict(attrs or {})
        # name -> tuple of GlobalInfo (TVM: `I.module_global_infos({"vdevice": [...]})`)
        self.global_infos = FrozenDict({k: tuple(v) for k, v in (global_infos or {}).items()})
        for key, func in (functions or {}).items():
            self[key] = func

    @staticmethod
    def from_expr(
        func: Any, functions: Any = None, type_defs: Any = None, *, name: str = "main"
    ) -> "IRModule":
        """A module whose `main` (or `name`) is `func`. A Relay expression that is not a
        function becomes `fn (<its free variables>) { expr }`, as in TVM; `functions` adds
        other global functions. (A str second argument is minitvm's older `name`.)"""
        if isinstance(functions, str):
            functions, name = None, functions
        if type_defs:
            raise ArgumentError("IRModule.from_expr: type definitions (ADTs) are not supported")
        if not isinstance(func, BaseFunc):
            as_function = getattr(func, "_as_function", None)
            if as_function is None:
                raise ArgumentError(
                    f"IRModule.from_expr: expected a function or a Relay expression, got "
                    f"{type(func).__name__}"
                )
            func = as_function()
        mod = IRModule(dict(functions or {}))
        mod[name] = func
        return mod

    # mapping protocol
    def __getitem__(self, key: str | GlobalVar) -> BaseFunc:
        name = key.name_hint if isinstance(key, GlobalVar) else key
        try:
            return self._funcs[name][1]
        except KeyError:
            raise MiniTVMError(
                f"IRModule has no function {name!r}; it has {sorted(self._funcs)}"
            ) from None

    def __setitem__(self, key: str | GlobalVar, func: BaseFunc) -> None:
        if isinstance(key, GlobalVar):
            gv = key
        elif key in self._funcs:
            gv = self._funcs[key][0]
        else:
            gv = GlobalVar(key)
        self._funcs[gv.name_hint] = (gv, func)

    def update_func(self, gv: GlobalVar, func: BaseFunc) -> None:
        self[gv] = func

    def remove(self, key: str | GlobalVar) -> None:
        name = key.name_hint if isinstance(key, GlobalVar) else key
        del self._funcs[name]

    def __contains__(self, key: object) -> bool:
        name = key.name_hint if isinstance(key, GlobalVar) else key
        return name in self._funcs

    def __iter__(self) -> Iterator[str]:
        return iter(self._funcs)

    def __len__(self) -> int:
        return len(self._funcs)

    @property
    def functions(self) -> dict[GlobalVar, BaseFunc]:
        return {gv: f for gv, f in self._funcs.values()}

    def functions_items(self) -> list[tuple[GlobalVar, BaseFunc]]:
        return list(self._funcs.values())

    def items(self) -> list[tuple[GlobalVar, BaseFunc]]:
        return list(self._funcs.values())

    def get_global_var(self, name: str) -> GlobalVar:
        try:
            return self._funcs[name][0]
        except KeyError:
            raise MiniTVMError(f"IRModule has no function {name!r}") from None

    def get_global_vars(self) -> list[GlobalVar]:
        return [gv for gv, _ in self._funcs.values()]

    @property
    def __name__(self) -> str:
        """The name of the class `@I.ir_module` made this module from."""
        if self._class_name is None:
            raise AttributeError("this IRModule was not made from a class, so it has no __name__")
        return self._class_name

    def update_global_info(self, name: str, global_info: Any) -> None:
        """Set the list of global infos named `name` (in place, as TVM), e.g. the module's
        `"vdevice"` list that `R.Tensor(..., "cuda:0")` annotations refer to."""
        from .vdevice import GlobalInfo

        infos = tuple(global_info)
        for info in infos:
            if not isinstance(info, GlobalInfo):
                raise MiniTVMError(
                    f"IRModule.update_global_info({name!r}): {info!r} is not a GlobalInfo; "
                    "give tvm.ir.VDevice or tvm.ir.DummyGlobalInfo objects"
                )
        self.global_infos = self.global_infos.set(name, infos)

    def copy(self) -> "IRModule":
        out = IRModule(attrs=self.attrs, global_infos=self.global_infos)
        out._funcs = dict(self._funcs)
        return out

    def map_functions(self, kind: type, fn: Callable[[Any], Any]) -> IRModule:
        """A new module with `fn` applied to every function that is a `kind` (e.g. every
        PrimFunc); the others, and functions `fn` returns unchanged, are kept as they are."""
        out = self.copy()
        for gv, func in self.functions_items():
            if isinstance(func, kind):
                new = fn(func)
                if new is not func:
                    out[gv] = new
        return out

    def with_attr(self, key: str, value: Any) -> "IRModule":
        out = self.copy()
        out.attrs = self.attrs.set(key, value)
        return out

    def without_attr(self, key: str) -> "IRModule":
        """A copy without module attribute `key` (unchanged when it is absent), as in TVM."""
        out = self.copy()
        out.attrs = FrozenDict({k: v for k, v in self.attrs.items() if k != key})
        return out

    def script(self, **kwargs: Any) -> str:
        from .node import _printer_for

        return _printer_for(IRModule)(self, **kwargs)

    def show(self, **kwargs: Any) -> None:
        print(self.script(**kwargs))  # noqa: T201 - explicit user request to print

    def astext(self, show_meta_data: bool = True) -> str:
        """TVM's text form: Relay's for a module holding Relay functions (with the constants'
        metadata section when `show_meta_data`), else the script."""
        from .node import _printer_for

        return _printer_for(IRModule)(self, show_meta_data=show_meta_data)

    def __str__(self) -> str:
        return self.script()

    __repr__ = __str__

    def __reduce__(self):
        raise TypeError("IRModule is not picklable by design; use .script()")
