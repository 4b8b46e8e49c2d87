"""TVMScript entry points: `@T.prim_func`, `@I.ir_module`, `from_source`, and the tables that
map a decorator to its function parser and an alias (`T`, `I`, later `R`) to its namespace."""

from __future__ import annotations

import ast
from collections import ChainMap
from collections.abc import Callable, Mapping
from typing import Any

from ..error import ParseError
from ..ir.diagnostics import report_error
from ..ir.module import GlobalVar, IRModule
from ..tir.function import PrimFunc
from ..tir.functor import allows_deep_recursion
from . import tir as T
from .metadata import META_KEY, META_NAME, decode_metadata, find_metadata
from .parser import TIRParser, _unsupported
from .source import Source, TVMScriptError, source_of

# ----------------------------------------------------------------------------- entry points


def _decorator_kind(parser: TIRParser, dec: ast.expr) -> tuple[Any, dict]:
    """The decorator object and its keyword arguments (`T.prim_func(private=True)`)."""
    if isinstance(dec, ast.Call):
        return parser.eval(dec.func), {kw.arg: parser.eval(kw.value) for kw in dec.keywords}
    return parser.eval(dec), {}


def _parse_tir_function(
    source: Source, fdef: ast.FunctionDef, env: Mapping, name: str, private: bool
) -> PrimFunc:
    return TIRParser(source, env).parse_function(fdef, name, private)


# decorator object -> function parser (source, def, env, name, private) -> function
_FUNCTION_PARSERS: dict[Any, Callable[..., Any]] = {T.prim_func: _parse_tir_function}


def register_function_parser(decorator: Any, fn: Callable[..., Any]) -> None:
    """Let `@decorator` functions inside `@I.ir_module` classes be parsed by `fn` (relax hook)."""
    _FUNCTION_PARSERS[decorator] = fn


# names every script sees (from_source text has no imports): namespace alias -> module
_NAMESPACES: dict[str, Any] = {"T": T, "tir": T}


def register_namespace(alias: str, namespace: Any) -> None:
    """Make `alias` (e.g. "R") resolve to `namespace` in every script (relax hook)."""
    _NAMESPACES[alias] = namespace


def _default_env() -> dict[str, Any]:
    from . import ir as I

    return {"I": I, "ir": I, **_NAMESPACES}


class ModuleAttrs:
    """`I.module_attrs({...})` inside an `@I.ir_module` class."""

    def __init__(self, attrs: Mapping):
        self.attrs = dict(attrs)


@allows_deep_recursion
def verify_parsed(parsed: Any, where: str) -> Any:
    """Raise ParseError unless `parsed` (a PrimFunc, relax Function or IRModule) is well formed:
    PrimFuncs by `tir.analysis.verify_well_formed`, relax functions by
    `relax.analysis.well_formed`. What `check_well_formed=False` turns off."""
    from ..error import InternalError

    funcs = parsed.functions_items() if isinstance(parsed, IRModule) else [(None, parsed)]
    problems: list[str] = []
    for gv, func in funcs:
        name = gv.name_hint if gv is not None else where
        if isinstance(func, PrimFunc):
            from ..tir.analysis.verify import verify_well_formed

            try:
                verify_well_formed(func)
            except InternalError as err:
                problems.append(f"{name}: {err}")
        elif type(func).__module__.startswith("minitvm.relax") and hasattr(func, "body"):
            # relax Functions; an ExternFunc (a pyfunc) has no body to check
            from ..relax.analysis import _WellFormed

            checker = _WellFormed(parsed if isinstance(parsed, IRModule) else None)
            checker.where = name
            checker.function(func, gv.name_hint if gv is not None else None)
            problems += checker.errors
    if problems:
        raise ParseError(
            f"{where}: the parsed IR is not well formed:\n  "
            + "\n  ".join(problems)
            + "\nfix the script, or pass check_well_formed=False to parse it anyway"
        )
    return parsed


@allows_deep_recursion
def parse_prim_func_object(
    fn: Callable, env: Mapping, private: bool, well_formed: bool = False
) -> PrimFunc:
    source = source_of(fn, ast.FunctionDef)
    env = ChainMap(dict(env), _default_env())
    func = _parse_tir_function(source, source.node, env, fn.__name__, private)
    return verify_parsed(func, fn.__name__) if well_formed else func


@allows_deep_recursion
def parse_ir_module_class(cls: type, env: Mapping, well_formed: bool = False) -> IRModule:
    source = source_of(cls, ast.ClassDef)
    env = ChainMap(
        {k: v for k, v in vars(cls).items() if not callable(v)},
        _decoded_metadata(env),
        dict(env),
        _default_env(),
    )
    mod = _parse_class(source, source.node, env)
    return verify_parsed(mod, cls.__name__) if well_formed else mod


def _decoded_metadata(env: Mapping) -> dict[str, Any]:
    """A printed module pasted into a file, its `metadata = \"\"\"...\"\"\"` section above it."""
    text = env.get(META_NAME)
    if isinstance(text, str) and f'"{META_KEY}"' in text:
        return {META_NAME: decode_metadata(text, META_NAME)}
    return {}


# env key under which function parsers find the module being parsed (its GlobalVars)
MODULE_SCOPE_KEY = "__tvmscript_module__"


class ModuleScope:
    """The IRModule class being parsed: `cls.foo` / `Module.foo` give the GlobalVar of `foo`."""

    def __init__(
        self, name: str, gvars: Mapping[str, GlobalVar], defs: Mapping[str, Any] | None = None
    ):
        self.name = name
        self.gvars = dict(gvars)
        # each method's FunctionDef: a call of a function defined later in the class reads the
        # callee's return annotation from it (forward references, as TVM's parser allows)
        self.defs = dict(defs or {})

    def __getattr__(self, attr: str) -> GlobalVar:
        gvars = self.__dict__.get("gvars", {})
        if attr not in gvars:
            raise AttributeError(
                f"module {self.__dict__.get('name')!r} has no function {attr!r}; "
                f"it has {sorted(gvars)}"
            )
        return gvars[attr]


def _parse_class(source: Source, cdef: ast.ClassDef, env: Mapping) -> IRModule:
    from . import ir as I

    token = I.current_vdevices.set(())
    try:
        return _parse_class_body(source, cdef, env)
    finally:
        I.current_vdevices.reset(token)


def _parse_class_body(source: Source, cdef: ast.ClassDef, env: Mapping) -> IRModule:
    from . import ir as I

    mod = IRModule()
    gvars: dict[str, GlobalVar] = {}
    defs: dict[str, ast.FunctionDef] = {}
    for item in cdef.body:
        if isinstance(item, ast.FunctionDef):
            defs[item.name] = item
            if item.name in gvars:  # Python keeps the last; the IR would silently lose one
                raise source.error(
                    item,
                    f"the IRModule class defines '{item.name}' twice; give each function "
                    "(prim_func, relax function or pyfunc) its own name",
                )
            gvars[item.name] = GlobalVar(item.name)
    env = ChainMap({MODULE_SCOPE_KEY: ModuleScope(cdef.name, gvars, defs)}, env)
    probe = TIRParser(source, env)
    for item in cdef.body:
        if isinstance(item, ast.FunctionDef):
            if not item.decorator_list:
                raise source.error(
                    item, f"method '{item.name}' of an IRModule needs a decorator like @T.prim_func"
                )
            kind, kwargs = _decorator_kind(probe, item.decorator_list[0])
            parser = _FUNCTION_PARSERS.get(kind)
            if parser is None:
                dec = ast.unparse(item.decorator_list[0])
                raise source.error(
                    item.decorator_list[0],
                    f"functions decorated with @{dec} are not supported in an IRModule yet",
                )
            mod[gvars[item.name]] = parser(
                source, item, env, item.name, bool(kwargs.get("private", False))
            )
        elif isinstance(item, ast.Expr):
            value = probe.eval(item.value)
            if isinstance(value, ModuleAttrs):
                for k, v in value.attrs.items():
                    mod = mod.with_attr(k, v)
            elif isinstance(value, I.ModuleGlobalInfos):
                for k, v in value.infos.items():
                    mod.update_global_info(k, v)
                I.current_vdevices.set(mod.global_infos.get("vdevice", ()))
            elif not isinstance(value, str):  # docstrings are fine
                raise source.error(
                    item,
                    "only I.module_attrs({...}), I.module_global_infos({...}) and methods may "
                    "appear in an IRModule class",
                )
        elif isinstance(item, ast.Assign) and (extern := _extern_member(probe, item)):
            name = item.targets[0].id
            if name in gvars:
                raise source.error(item, f"the IRModule class defines '{name}' twice")
            gvars[name] = GlobalVar(name)
            mod[gvars[name]] = extern
        elif isinstance(item, ast.Pass | ast.Assign):
            continue
        else:
            raise source.error(item, _unsupported(item))
    return mod


def _extern_member(probe: TIRParser, item: ast.Assign) -> Any:
    """The ExternFunc of `name = R.ExternFunc("symbol")` in a class body (how a module member
    that is an ExternFunc prints); None for other assignments (`cls = Module`)."""
    from ..ir.module import BaseFunc

    value = item.value
    if len(item.targets) != 1 or not isinstance(item.targets[0], ast.Name):
        return None
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)):
        return None
    if value.func.attr != "ExternFunc":
        return None
    func = probe.eval(value)
    return func if isinstance(func, BaseFunc) else None


def from_source(
    text: str, filename: str = "<string>", check_well_formed: bool = True
) -> PrimFunc | IRModule:
    """Parse TVMScript text: an `@I.ir_module` class gives an IRModule, a function a PrimFunc.

    `from_source(func.script())` is structurally equal to `func`. With `check_well_formed`
    (the default, as in TVM) the result must pass the well-formedness checks of its IR.
    """
    try:
        parsed = _from_source(text, filename)
    except TVMScriptError as err:  # tvm.ir.diagnostics.override_renderer sees it first
        report_error(err.msg, err.filename, err.lineno, err.col + 1)
        raise
    return verify_parsed(parsed, filename) if check_well_formed else parsed


@allows_deep_recursion
def _from_source(text: str, filename: str) -> PrimFunc | IRModule:
    lines = text.splitlines(keepends=True)
    try:
        tree = ast.parse(text, filename)
    except SyntaxError as err:
        raise TVMScriptError(
            f"invalid Python syntax: {err.msg}",
            filename,
            err.lineno or 1,
            (err.offset or 1) - 1,
            (err.text or "").rstrip("\n"),
        ) from err
    except (RecursionError, MemoryError, ValueError) as err:
        # nesting past what Python's parser takes (a chain of 100000 operators), a NUL byte
        raise ParseError(
            f"{filename}: the text cannot be parsed as Python ({type(err).__name__}: "
            f"{str(err)[:100]}); TVMScript nests far less deeply"
        ) from err
    env = _default_env()
    metadata = find_metadata(tree, filename)
    if metadata is not None:
        env[META_NAME] = metadata
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            return _parse_class(Source(filename, lines, node), node, env)
        if isinstance(node, ast.FunctionDef):
            source = Source(filename, lines, node)
            parser, kwargs = _parse_tir_function, {}
            if node.decorator_list:
                kind, kwargs = _decorator_kind(TIRParser(source, env), node.decorator_list[0])
                parser = _FUNCTION_PARSERS.get(kind, _parse_tir_function)
            return parser(source, node, env, node.name, bool(kwargs.get("private", False)))
    raise ParseError(f"{filename}: no @T.prim_func function or @I.ir_module class found")


__all__ = [
    "TVMScriptError",
    "from_source",
    "register_function_parser",
    "register_namespace",
]
