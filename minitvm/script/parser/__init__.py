"""TVMScript parser: Python `ast` of `@T.prim_func` / `@I.ir_module` source → TIR and IRModule.

The function body is never executed. Names resolve, innermost first, to script variables
(loop vars, buffers, iter vars, lets), then to the Python names visible where the decorator
ran (so `n = 128` outside the function works), then to builtins. `T.<name>` resolves through
the namespace's `__all__`; declarations come back as specs (see script/tir.py) and the
statement handlers below turn them into IR. Function decorators map to function parsers in
`_FUNCTION_PARSERS` (the relax namespace adds its own entry).

Entry points (decorators, `from_source`, the decorator → function-parser table) live in
script/entry.py; source lookup and error formatting in script/source.py.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...error import MiniTVMError, ParseError
from ...ir.dtype import DataType
from ...tir.analysis.blocks import contains_block
from ...tir.analysis.region import infer_access_regions
from ...tir.expr import (
    NE,
    BufferLoad,
    IntImm,
    IterType,
    IterVar,
    PrimExpr,
    StringImm,
    Var,
    as_expr,
)
from ...tir.function import PrimFunc
from ...tir.stmt import (
    AssertStmt,
    AttrStmt,
    Block,
    BlockRealize,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    Stmt,
    While,
    regions_over_sources,
    seq,
)
from .. import bounded
from .. import tir as T
from ..parser_bind import _Binder
from ..parser_common import _TIR_BINOPS, _is_expr, _unsupported, _Wrap
from ..parser_expr import (
    _EXPR_HANDLERS,  # noqa: F401 - relax_parser.py extends it
    _ExprEvaluator,
)
from ..source import Source, TVMScriptError
from ..tir import (
    AttrSpec,
    BlockHeader,
    BlockSpec,
    BufferSpec,
    InitSpec,
    LaunchSpec,
    LetSpec,
    LoopSpec,
    RemapSpec,
)
from ..tir_specs import annotation_dtype

# ----------------------------------------------------------------------------- frames


@dataclass
class _BlockFrame:
    name: str
    iter_vars: list = field(default_factory=list)
    iter_values: list = field(default_factory=list)
    predicate: Any = None
    reads: tuple | None = None
    writes: tuple | None = None
    annotations: dict = field(default_factory=dict)
    alloc_buffers: list = field(default_factory=list)
    match_buffers: list = field(default_factory=list)
    init: Stmt | None = None
    headers: set = field(default_factory=set)  # T.reads/T.writes/T.where/T.block_attr seen


@dataclass
class _FuncFrame:
    name: str
    params: list = field(default_factory=list)
    buffer_map: dict = field(default_factory=dict)
    attrs: dict = field(default_factory=dict)
    root_allocs: list = field(default_factory=list)


_SCRIPT_BUILTINS = {"range": T.range_}
_NUMBER = (int, float, bool)


# ----------------------------------------------------------------------------- the parser


class TIRParser(_Binder, _ExprEvaluator):
    """Parses one `@T.prim_func` FunctionDef into a PrimFunc."""

    def __init__(self, source: Source, env: Mapping[str, Any]):
        self.source = source
        self.env = env
        self.scopes: list[dict[str, Any]] = [{}]
        self.loops: dict[int, tuple[PrimExpr, PrimExpr]] = {}
        self.blocks: list[_BlockFrame] = []
        self.func: _FuncFrame | None = None
        self.keep: list[Any] = []
        self.env_threads: dict[int, str] = {}  # T.env_thread var id -> thread tag

    def error(self, node: ast.AST | None, message: str) -> TVMScriptError:
        return self.source.error(node, message)

    # -- names
    def lookup(self, name: str, node: ast.AST) -> Any:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name in _SCRIPT_BUILTINS:
            return _SCRIPT_BUILTINS[name]
        if name in self.env:
            return self.env[name]
        if name in bounded.BUILTIN_NAMES:  # parsing text must not reach eval, open, ...
            return getattr(builtins, name)
        raise self.error(node, f"undefined variable '{name}'")

    def with_names(self, names: dict[str, Any], fn: Callable[[], Any]) -> Any:
        self.scopes.append(dict(names))
        try:
            return fn()
        finally:
            self.scopes.pop()

    def define(self, name: str, value: Any) -> None:
        self.scopes[-1][name] = value

    def in_scope(self, value: Any) -> bool:
        """Whether `value` is already one of the script's names (a loop var, a param, ...)."""
        return any(v is value for scope in self.scopes for v in scope.values())

    # -- functions
    def parse_function(self, fdef: ast.FunctionDef, name: str, private: bool) -> PrimFunc:
        frame = _FuncFrame(name)
        self.func = frame
        if not private:
            frame.attrs["global_symbol"] = name
        args = fdef.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            raise self.error(fdef, "TVMScript functions take plain positional parameters only")
        for arg in args.args:
            self.parameter(arg)
        body = self.body(fdef.body) or seq()
        if private and "global_symbol" in frame.attrs:
            raise self.error(
                fdef,
                f"private function '{name}' sets a global_symbol in T.func_attr; a private "
                "function has none (drop private=True to export it under that name)",
            )
        if frame.root_allocs or (contains_block(body) and not _is_root(body)):
            root = Block((), (), (), "root", body, None, tuple(frame.root_allocs))
            body = BlockRealize((), True, root)
        # buffer_map in parameter order, whether a buffer came from an annotation or match_buffer
        buffer_map = {p: frame.buffer_map[p] for p in frame.params if p in frame.buffer_map}
        return PrimFunc(tuple(frame.params), body, None, buffer_map, frame.attrs)

    def parameter(self, arg: ast.arg) -> None:
        if arg.annotation is None:
            raise self.error(
                arg, f"parameter '{arg.arg}' needs a type: T.Buffer(...), T.handle or T.int32"
            )
        ann = self.eval(arg.annotation)
        if isinstance(ann, BufferSpec):
            param = Var(arg.arg, DataType("handle"))
            buf = self.make_buffer(arg.arg, ann, arg.annotation)
            self.func.buffer_map[param] = buf
            self.func.params.append(param)
            self.define(arg.arg, buf)
            return
        dtype = annotation_dtype(ann)
        if dtype is None:
            raise self.error(
                arg.annotation,
                f"parameter '{arg.arg}': expected T.Buffer(...), T.handle or a dtype like T.int32",
            )
        param = Var(arg.arg, dtype)
        self.func.params.append(param)
        self.define(arg.arg, param)

    # -- statements
    def body(self, stmts: list[ast.stmt]) -> Stmt | None:
        out: list[Stmt] = []
        for i, node in enumerate(stmts):
            handler = _STMT_HANDLERS.get(type(node))
            if handler is None:
                raise self.error(node, _unsupported(node))
            result = handler(self, node)
            if isinstance(result, _Wrap):
                rest = self.body(stmts[i + 1 :]) or seq()
                out.append(self.guard(node, lambda r=result, b=rest: r.build(b)))
                break
            if result is not None:
                out.append(result)
        if not out:
            return None
        return seq(*out)

    def scoped_body(self, stmts: list[ast.stmt]) -> Stmt:
        self.scopes.append({})
        try:
            return self.body(stmts) or seq()
        finally:
            self.scopes.pop()

    def guard(self, node: ast.AST, fn: Callable[[], Any]) -> Any:
        """Run an IR constructor, reporting its errors at `node`."""
        try:
            return fn()
        except TVMScriptError:
            raise
        except (MiniTVMError, TypeError, ValueError, KeyError, IndexError) as err:
            raise self.error(node, str(err)) from err

    def stmt_for(self, node: ast.For) -> Stmt:
        if node.orelse:
            raise self.error(node.orelse[0], "for ... else is not supported in TVMScript")
        it = self.eval(node.iter)
        specs = it if isinstance(it, list) else [it]
        if not specs or not all(isinstance(s, LoopSpec) for s in specs):
            raise self.error(
                node.iter,
                "a TVMScript loop iterates over range(...), T.grid(...), T.serial(...), T.parallel(...), ...",
            )
        targets = node.target.elts if isinstance(node.target, ast.Tuple) else [node.target]
        grouped = None  # `for ij in T.grid(m, n):` binds `ij` to the tuple of loop vars
        if isinstance(node.target, ast.Name) and len(specs) > 1:
            grouped = node.target.id
            targets = [ast.Name(f"{grouped}_{k}", ast.Store()) for k in range(len(specs))]
        if len(targets) != len(specs):
            raise self.error(node.target, f"{len(targets)} loop variables for {len(specs)} loops")
        self.scopes.append({})
        try:
            loop_vars = []
            for target, spec in zip(targets, specs):
                if not isinstance(target, ast.Name):
                    raise self.error(target, "loop variables must be plain names")
                lo, ext = self.guard(node.iter, lambda s=spec: _loop_range(s))
                var = Var(target.id, ext.dtype)
                self.loops[id(var)] = (lo, ext)
                self.keep.append(var)
                self.define(target.id, var)
                loop_vars.append((var, lo, ext, spec))
            if grouped is not None:
                self.define(grouped, tuple(v for v, *_ in loop_vars))
            body = self.body(node.body) or seq()
        finally:
            self.scopes.pop()
        for var, lo, ext, spec in reversed(loop_vars):
            binding = None
            if spec.thread is not None:
                binding = IterVar(
                    None, Var(spec.thread, ext.dtype), IterType.ThreadIndex, spec.thread
                )
            args = (var, lo, ext, spec.kind, body, binding, spec.annotations or {})
            body = self.guard(node, lambda a=args: For(*a))
        return body

    def stmt_with(self, node: ast.With) -> Stmt | None:
        item = node.items[0]
        if len(node.items) == 1 and isinstance(item.optional_vars, ast.Name):
            ctx = self.eval(item.context_expr)
            if isinstance(ctx, LaunchSpec):  # with T.launch_thread("threadIdx.x", n) as tx:
                self.scopes.append({})
                try:
                    wrap = self.bind_launch(item.optional_vars.id, ctx, node)
                    body = self.body(node.body) or seq()
                finally:
                    self.scopes.pop()
                return self.guard(node, lambda: wrap.build(body))
            if isinstance(ctx, LetSpec):
                return self.let_frame(node, ctx, item.optional_vars.id)
        if len(node.items) == 1 and item.optional_vars is None:
            ctx = self.eval(item.context_expr)
            if isinstance(ctx, LetSpec):
                return self.let_frame(node, ctx, None)
        if len(node.items) != 1 or node.items[0].optional_vars is not None:
            raise self.error(
                node, 'TVMScript `with` takes one item without `as`: with T.block("name"):'
            )
        ctx = self.eval(node.items[0].context_expr)
        if isinstance(ctx, BlockSpec):
            return self.block(node, ctx)
        if isinstance(ctx, InitSpec):
            if not self.blocks:
                raise self.error(node, "T.init() must be inside a T.block")
            if self.blocks[-1].init is not None:
                raise self.error(node, "T.init() is given twice in this block; give it once")
            self.blocks[-1].init = self.scoped_body(node.body)
            return None
        if isinstance(ctx, AttrSpec):
            body = self.scoped_body(node.body)
            return self.guard(node, lambda: _attr_stmt(ctx, body))
        raise self.error(
            node.items[0].context_expr, "expected T.block(...), T.init() or T.attr(...) in `with`"
        )

    def let_frame(self, node: ast.With, spec: LetSpec, name: str | None) -> Stmt:
        """`with T.LetStmt(value) as v:` is `LetStmt(v, value, body)`."""
        value = as_expr(spec.value)
        var = spec.var
        if var is None:
            if name is None:
                raise self.error(node, "T.LetStmt needs `as name` or var=")
            dtype = annotation_dtype(spec.type_annotation) or value.dtype
            var = self.guard(node, lambda: Var(name, dtype))
        elif not isinstance(var, Var):
            raise self.error(node, f"T.LetStmt(var=...) takes a tir Var, got {type(var).__name__}")
        self.scopes.append({})
        try:
            if name is not None:
                self.define(name, var)
            body = self.body(node.body) or seq()
        finally:
            self.scopes.pop()
        return self.guard(node, lambda: LetStmt(var, value, body))

    def block(self, node: ast.With, spec: BlockSpec) -> Stmt:
        frame = _BlockFrame(spec.name)
        self.blocks.append(frame)
        self.scopes.append({})
        try:
            body = self.body(node.body) or seq()
        finally:
            self.scopes.pop()
            self.blocks.pop()

        def build() -> BlockRealize:
            block = Block(
                tuple(frame.iter_vars),
                (),
                (),
                frame.name,
                body,
                frame.init,
                tuple(frame.alloc_buffers),
                tuple(frame.match_buffers),
                frame.annotations,
            )
            if frame.reads is None or frame.writes is None:
                reads, writes = (
                    regions_over_sources(block, r) for r in infer_access_regions(block)
                )
                block = block.replace(
                    reads=reads if frame.reads is None else frame.reads,
                    writes=writes if frame.writes is None else frame.writes,
                )
            else:
                block = block.replace(reads=frame.reads, writes=frame.writes)
            pred = True if frame.predicate is None else frame.predicate
            return BlockRealize(tuple(frame.iter_values), pred, block)

        return self.guard(node, build)

    def stmt_if(self, node: ast.If) -> Stmt | None:
        cond = self.eval(node.test)
        if not _is_expr(cond):  # a Python-level condition picks a branch at parse time
            chosen = node.body if cond else node.orelse
            return self.scoped_body(chosen) if chosen else None
        if cond.dtype.lanes == 1 and cond.dtype.is_integer:
            cond = NE(cond, IntImm(cond.dtype, 0))  # `if i:` tests non-zero, as in Python and TVM
        then = self.scoped_body(node.body)
        other = self.scoped_body(node.orelse) if node.orelse else None
        return self.guard(node, lambda: IfThenElse(cond, then, other))

    def stmt_while(self, node: ast.While) -> Stmt:
        cond = self.eval(node.test)
        if not _is_expr(cond) or node.orelse:
            raise self.error(
                node.test,
                "unsupported Python syntax in TVMScript: while needs a TIR condition (and no else)",
            )
        body = self.scoped_body(node.body)
        return self.guard(node, lambda: While(cond, body))

    def stmt_assert(self, node: ast.Assert) -> _Wrap:
        cond = self.eval(node.test)
        msg = self.eval(node.msg) if node.msg is not None else ""
        return _Wrap(lambda rest: AssertStmt(as_expr(cond), str(msg), rest))

    def stmt_expr(self, node: ast.Expr) -> Stmt | _Wrap | None:
        # a T.macro call pastes the macro's body here (only a name or attribute is looked up
        # twice: evaluating it has no effect)
        if isinstance(node.value, ast.Call) and isinstance(
            node.value.func, ast.Name | ast.Attribute
        ):
            from ..tir_macro import TIRMacro, expand_macro

            callee = self.eval(node.value.func)
            if isinstance(callee, TIRMacro):
                return expand_macro(self, node.value, callee)
        value = self.eval(node.value)
        if isinstance(value, BlockHeader):
            self.header(node, value)
            return None
        if isinstance(value, LaunchSpec):
            return self.bind_launch(None, value, node)
        if isinstance(value, AttrSpec | LetSpec):  # without `with`: scopes the rest of the body
            return self.scope_rest(node, value)
        if isinstance(value, Stmt):
            return value
        if _is_expr(value):
            return Evaluate(value)
        if value is None or isinstance(value, str):  # docstrings, calls returning None
            return None
        raise self.error(
            node, f"this expression statement has no meaning in TVMScript (value {value!r})"
        )

    def scope_rest(self, node: ast.Expr, spec: AttrSpec | LetSpec) -> _Wrap:
        """`T.attr(n, key, v)` or `T.LetStmt(v, var=x)` as a statement: it wraps the statements
        after it, as TVM's frames do."""
        if isinstance(spec, AttrSpec):
            return _Wrap(lambda rest: self.guard(node, lambda: _attr_stmt(spec, rest)))
        if not isinstance(spec.var, Var):
            raise self.error(node, "T.LetStmt(value) as a statement needs var=, a tir Var")
        value = as_expr(spec.value, like=spec.var.dtype)
        return _Wrap(lambda rest: self.guard(node, lambda: LetStmt(spec.var, value, rest)))

    def header(self, node: ast.AST, h: BlockHeader) -> None:
        if h.what == "func_attr":
            self.func.attrs.update(h.value)
            return
        if not self.blocks:
            raise self.error(node, f"T.{h.what}(...) must be inside a T.block")
        frame = self.blocks[-1]
        if h.what in frame.headers:
            raise self.error(node, f"T.{h.what}(...) is given twice in this block; give it once")
        frame.headers.add(h.what)
        if h.what == "block_attr":
            frame.annotations.update(h.value)
        elif h.what == "where":
            frame.predicate = h.value
        else:
            setattr(frame, h.what, h.value)

    def stmt_pass(self, node: ast.Pass) -> None:
        return None

    def stmt_return(self, node: ast.Return) -> Stmt | None:
        """`return x` is `T.evaluate(T.ret(x))`, as TVM: a PrimFunc returns one scalar."""
        value = None if node.value is None else self.eval(node.value)
        if value is None:
            return None
        if not (_is_expr(value) or isinstance(value, bool | int | float)):
            raise self.error(
                node,
                f"a PrimFunc returns one scalar (T.ret) or nothing, not {type(value).__name__}; "
                "write array results into output buffers",
            )
        return self.guard(node, lambda: Evaluate(T.ret(value)))

    def stmt_aug_assign(self, node: ast.AugAssign) -> Stmt:
        if not isinstance(node.target, ast.Subscript):
            raise self.error(node, "augmented assignment works on buffer elements only: C[i] += x")
        load = self.eval(node.target)
        value = self.eval(node.value)
        op = _TIR_BINOPS.get(type(node.op))
        if op is None or not isinstance(load, BufferLoad):
            raise self.error(node, _unsupported(node))
        return self.guard(node, lambda: BufferStore(load.buffer, op(load, value), load.indices))

    def stmt_ann_assign(self, node: ast.AnnAssign) -> _Wrap | None:
        if not isinstance(node.target, ast.Name):
            raise self.error(node, "annotated assignment declares a scalar: x: T.int32 = value")
        dtype = annotation_dtype(self.eval(node.annotation))
        if dtype is None:
            raise self.error(node.annotation, "expected a dtype like T.int32 or T.float32")
        var = Var(node.target.id, dtype)
        if node.value is None:
            self.define(node.target.id, var)
            return None
        value = self.eval(node.value)
        self.define(node.target.id, var)
        return _Wrap(lambda rest: LetStmt(var, as_expr(value, like=dtype), rest))

    def stmt_assign(self, node: ast.Assign) -> Stmt | _Wrap | None:
        if len(node.targets) != 1:
            raise self.error(node, "chained assignment (a = b = ...) is not supported in TVMScript")
        target = node.targets[0]
        value = self.operand(node.value)  # `B[0:4] = A[0:4]`: a vector copy, as TVM
        if isinstance(target, ast.Subscript):
            return self.store(target, value, node)
        if _is_meta_var_call(self, node.value):  # `N, M = T.meta_var(...)`: Python names, no let
            names = target.elts if isinstance(target, ast.Tuple | ast.List) else [target]
            values = value if isinstance(target, ast.Tuple | ast.List) else [value]
            if not all(isinstance(t, ast.Name) for t in names) or len(values) != len(names):
                raise self.error(node, f"cannot unpack T.meta_var(...) into {len(names)} names")
            for t, v in zip(names, values):
                self.define(t.id, v)
            return None
        if isinstance(target, ast.Tuple | ast.List):
            names = target.elts
            if isinstance(value, RemapSpec):
                return self.remap(node, names, value)
            if not isinstance(value, tuple | list) or len(value) != len(names):
                raise self.error(node, f"cannot unpack into {len(names)} names")
            wraps = [self.bind(t, v, node) for t, v in zip(names, value)]
            if any(w is not None for w in wraps):
                raise self.error(node, "let bindings and allocations need one name per statement")
            return None
        return self.bind(target, value, node)


def _is_meta_var_call(parser: TIRParser, node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name | ast.Attribute)
        and parser.eval(node.func) is T.meta_var
    )


def _loop_range(spec: LoopSpec) -> tuple[PrimExpr, PrimExpr]:
    lo, ext = spec.min, spec.extent
    if _is_expr(ext) and not _is_expr(lo):
        lo = as_expr(lo, like=ext.dtype)
    elif _is_expr(lo) and not _is_expr(ext):
        ext = as_expr(ext, like=lo.dtype)
    else:
        lo, ext = as_expr(lo), as_expr(ext)
    if not (lo.dtype.is_integer and ext.dtype.is_integer):
        raise ParseError(f"loop bounds must be integers, got `{lo}` and `{ext}`")
    return lo, ext


def _is_root(s: Stmt) -> bool:
    return isinstance(s, BlockRealize) and s.block.name_hint == "root" and not s.block.iter_vars


_STMT_HANDLERS: dict[type, Callable[[TIRParser, Any], Any]] = {
    ast.For: TIRParser.stmt_for,
    ast.With: TIRParser.stmt_with,
    ast.If: TIRParser.stmt_if,
    ast.While: TIRParser.stmt_while,
    ast.Assert: TIRParser.stmt_assert,
    ast.Expr: TIRParser.stmt_expr,
    ast.Pass: TIRParser.stmt_pass,
    ast.Return: TIRParser.stmt_return,
    ast.Assign: TIRParser.stmt_assign,
    ast.AugAssign: TIRParser.stmt_aug_assign,
    ast.AnnAssign: TIRParser.stmt_ann_assign,
}


def _attr_stmt(spec: AttrSpec, body: Stmt) -> AttrStmt:
    # a string value is a StringImm, as TVM converts it (`T.attr(n, "pragma", "auto")`)
    value = StringImm(spec.value) if isinstance(spec.value, str) else as_expr(spec.value)
    return AttrStmt(spec.node, spec.key, value, body)


def __getattr__(name: str) -> Any:
    """`tvm.script.parser.tir` / `.ir` / `.relax` / `.ir_module`: TVM's spelling of the
    namespaces, which in TVM live inside its parser package."""
    import importlib

    if name in ("ir", "tir", "relax"):
        return importlib.import_module(f"minitvm.script.{name}")
    if name == "ir_module":
        return importlib.import_module("minitvm.script.ir").ir_module
    if name == "from_source":
        return importlib.import_module("minitvm.script.entry").from_source
    raise AttributeError(f"module 'minitvm.script.parser' has no attribute {name!r}")
