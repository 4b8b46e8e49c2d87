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
import functools
import inspect
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..error import MiniTVMError, ParseError
from ..ir.dtype import DataType
from ..tir.analysis.blocks import contains_block
from ..tir.analysis.region import infer_access_regions
from ..tir.buffer import Buffer
from ..tir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BufferLoad,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    IterType,
    IterVar,
    Mul,
    Not,
    Or,
    PrimExpr,
    Range,
    Select,
    SizeVar,
    Sub,
    Var,
    as_expr,
    logical_and,
    logical_or,
)
from ..tir.function import PrimFunc
from ..tir.op import buffer_access_ptr, power
from ..tir.stmt import (
    Allocate,
    AllocateConst,
    AssertStmt,
    AttrStmt,
    Block,
    BlockRealize,
    BufferRegion,
    BufferStore,
    DeclBuffer,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    MatchBufferRegion,
    Stmt,
    While,
    regions_over_sources,
    seq,
)
from . import tir as T
from .source import Source, TVMScriptError
from .tir import (
    AllocateConstSpec,
    AllocateSpec,
    AttrSpec,
    AxisSpec,
    BlockHeader,
    BlockSpec,
    BufferSpec,
    EnvThreadSpec,
    InitSpec,
    LaunchSpec,
    LoopSpec,
    RemapSpec,
    VarDecl,
)

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


@dataclass
class _FuncFrame:
    name: str
    params: list = field(default_factory=list)
    buffer_map: dict = field(default_factory=dict)
    attrs: dict = field(default_factory=dict)
    root_allocs: list = field(default_factory=list)


@dataclass
class _Wrap:
    """A statement that scopes over the rest of its statement list (let, allocate, ...)."""

    build: Callable[[Stmt], Stmt]


_PYTHON_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}
# ast operator -> how to build TIR when an operand is an expression
_TIR_BINOPS: dict[type, Callable[[Any, Any], PrimExpr]] = {
    ast.Add: Add,
    ast.Sub: Sub,
    ast.Mult: Mul,
    ast.Div: Div,
    ast.FloorDiv: FloorDiv,
    ast.Mod: FloorMod,
    ast.Pow: power,
    ast.BitAnd: logical_and,
    ast.BitOr: logical_or,
}
_PYTHON_CMP: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_TIR_CMP: dict[type, type] = {
    ast.Eq: EQ,
    ast.NotEq: NE,
    ast.Lt: LT,
    ast.LtE: LE,
    ast.Gt: GT,
    ast.GtE: GE,
}
_SYNTAX_NAMES: dict[type, str] = {
    ast.ListComp: "list comprehensions",
    ast.SetComp: "set comprehensions",
    ast.DictComp: "dict comprehensions",
    ast.GeneratorExp: "generator expressions",
    ast.Lambda: "lambda",
    ast.NamedExpr: "assignment expressions (:=)",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.JoinedStr: "f-strings",
    ast.Set: "sets",
    ast.Try: "try",
    ast.Raise: "raise",
    ast.FunctionDef: "nested def",
    ast.ClassDef: "class",
    ast.Import: "import",
    ast.ImportFrom: "import",
    ast.Global: "global",
    ast.Nonlocal: "nonlocal",
    ast.Delete: "del",
    ast.Break: "break",
    ast.Continue: "continue",
    ast.AsyncFor: "async for",
    ast.AsyncWith: "async with",
    ast.AsyncFunctionDef: "async def",
    ast.Match: "match",
}
_SCRIPT_BUILTINS = {"range": T.range_}
# Python builtins a script may call (parsing text must not reach eval, open, __import__, ...)
_PYTHON_BUILTINS = {
    "int",
    "float",
    "bool",
    "str",
    "len",
    "min",
    "max",
    "abs",
    "tuple",
    "list",
    "dict",
    "zip",
    "enumerate",
    "sum",
    "round",
    "divmod",
    "True",
    "False",
    "None",
}
_NUMBER = (int, float, bool)

# Buffer methods of TVM's TVMScript: `B.access_ptr("r")` -> tir/op.py's builder with B bound.
_BUFFER_METHODS = {"access_ptr": buffer_access_ptr}


def _is_expr(x: Any) -> bool:
    return isinstance(x, PrimExpr)


def _unsupported(node: ast.AST) -> str:
    what = _SYNTAX_NAMES.get(type(node), type(node).__name__)
    return f"unsupported Python syntax in TVMScript: {what}"


# ----------------------------------------------------------------------------- the parser


class TIRParser:
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
        if name in _PYTHON_BUILTINS:
            return getattr(builtins, name)
        raise self.error(node, f"undefined variable '{name}'")

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
        dtype = getattr(ann, "_tvmscript_dtype", None)
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
            self.blocks[-1].init = self.scoped_body(node.body)
            return None
        if isinstance(ctx, AttrSpec):
            body = self.scoped_body(node.body)
            return self.guard(node, lambda: AttrStmt(ctx.node, ctx.key, as_expr(ctx.value), body))
        raise self.error(
            node.items[0].context_expr, "expected T.block(...), T.init() or T.attr(...) in `with`"
        )

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
        value = self.eval(node.value)
        if isinstance(value, BlockHeader):
            self.header(node, value)
            return None
        if isinstance(value, LaunchSpec):
            return self.bind_launch(None, value, node)
        if isinstance(value, Stmt):
            return value
        if _is_expr(value):
            return Evaluate(value)
        if value is None or isinstance(value, str):  # docstrings, calls returning None
            return None
        raise self.error(
            node, f"this expression statement has no meaning in TVMScript (value {value!r})"
        )

    def header(self, node: ast.AST, h: BlockHeader) -> None:
        if h.what == "func_attr":
            self.func.attrs.update(h.value)
            return
        if not self.blocks:
            raise self.error(node, f"T.{h.what}(...) must be inside a T.block")
        frame = self.blocks[-1]
        if h.what == "block_attr":
            frame.annotations.update(h.value)
        elif h.what == "where":
            frame.predicate = h.value
        else:
            setattr(frame, h.what, h.value)

    def stmt_pass(self, node: ast.Pass) -> None:
        return None

    def stmt_return(self, node: ast.Return) -> None:
        if node.value is not None and self.eval(node.value) is not None:
            raise self.error(
                node, "a PrimFunc returns nothing; write its results into output buffers"
            )

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
        dtype = getattr(self.eval(node.annotation), "_tvmscript_dtype", None)
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
        value = self.eval(node.value)
        if isinstance(target, ast.Subscript):
            return self.store(target, value, node)
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

    def store(self, target: ast.Subscript, value: Any, node: ast.AST) -> Stmt:
        buf = self.eval(target.value)
        if not isinstance(buf, Buffer):
            raise self.error(target.value, "only buffer elements can be assigned: A[i, j] = value")
        indices = self.indices(target, buf)
        return self.guard(node, lambda: BufferStore(buf, value, indices))

    def bind(self, target: ast.AST, value: Any, node: ast.AST) -> _Wrap | None:
        if not isinstance(target, ast.Name):
            raise self.error(target, "assignment targets must be names or buffer elements")
        name = target.id
        if isinstance(value, RemapSpec):
            return self.remap(node, [target], value)
        binder = _BINDERS.get(type(value))
        if binder is not None:
            return binder(self, name, value, node)
        if type(value) in (Var, SizeVar) and not self.in_scope(value):
            self.define(name, value)  # `n = te.var("n")`: a new free variable, named here
            return None
        if _is_expr(value):  # `x = expr`: a let binding
            var = Var(name, value.dtype)
            self.define(name, var)
            return _Wrap(lambda rest: LetStmt(var, value, rest))
        self.define(name, value)  # a Python value or an alias of a script object
        return None

    def bind_axis(self, name: str, spec: AxisSpec, node: ast.AST) -> None:
        if not self.blocks:
            raise self.error(node, "T.axis.* must be inside a T.block")
        value = as_expr(spec.value)
        dom = spec.dom
        if isinstance(dom, tuple | list):
            dom = self.guard(node, lambda: Range(*T.min_extent(dom[0], dom[1])))
        elif not isinstance(dom, Range):
            dom = self.guard(node, lambda: Range(0, as_expr(dom, like=value.dtype)))
        var = Var(name, dom.extent.dtype)
        self.blocks[-1].iter_vars.append(IterVar(dom, var, spec.iter_type))
        self.blocks[-1].iter_values.append(value)
        self.define(name, var)

    def remap(self, node: ast.Assign, targets: list[ast.AST], spec: RemapSpec) -> None:
        if not self.blocks:
            raise self.error(node, "T.axis.remap must be inside a T.block")
        kinds, values = spec.kinds, spec.values
        if len(kinds) != len(values):
            raise self.error(
                node.value,
                f'T.axis.remap: kinds "{kinds}" has {len(kinds)} letters but {len(values)} loop variables are given',
            )
        if len(targets) != len(values):
            raise self.error(
                node,
                f"T.axis.remap binds {len(values)} iter vars but {len(targets)} names are assigned",
            )
        kind_of = {"S": IterType.DataPar, "R": IterType.CommReduce}
        for target, kind, value in zip(targets, kinds, values):
            if kind not in kind_of:
                raise self.error(
                    node.value,
                    f"T.axis.remap: unknown iter kind {kind!r}; use 'S' (spatial) or 'R' (reduce)",
                )
            if not isinstance(value, Var) or id(value) not in self.loops:
                raise self.error(
                    node.value, f"T.axis.remap binds loop variables only; got `{value}`"
                )
            if not isinstance(target, ast.Name):
                raise self.error(target, "iter var targets must be names")
            lo, ext = self.loops[id(value)]
            var = Var(target.id, value.dtype)
            self.blocks[-1].iter_vars.append(IterVar(Range(lo, ext), var, kind_of[kind]))
            self.blocks[-1].iter_values.append(value)
            self.define(target.id, var)

    def bind_var(self, name: str, decl: VarDecl, node: ast.AST) -> None:
        self.define(name, (SizeVar if decl.is_size_var else Var)(name, decl.dtype))

    def bind_buffer(self, name: str, spec: BufferSpec, node: ast.AST) -> _Wrap | None:
        if isinstance(spec.source, BufferLoad):
            spec = replace(spec, source=_point_region(spec.source))
        buf = self.make_buffer(name, spec, node)
        self.define(name, buf)
        if spec.kind == "alloc":
            (self.blocks[-1].alloc_buffers if self.blocks else self.func.root_allocs).append(buf)
        elif spec.kind == "match" and isinstance(spec.source, BufferRegion):
            if not self.blocks:
                raise self.error(node, "T.match_buffer of a buffer region must be inside a T.block")
            self.blocks[-1].match_buffers.append(MatchBufferRegion(buf, spec.source))
        elif spec.kind == "match":
            source = spec.source
            if self.blocks or not isinstance(source, Var) or source not in self.func.params:
                raise self.error(
                    node,
                    "T.match_buffer binds a T.handle parameter of the function at its top level, "
                    "or a buffer region (A[i, 0:16]) inside a T.block",
                )
            if any(p is source for p in self.func.buffer_map):
                raise self.error(node, f"parameter '{source.name}' is already bound to a buffer")
            self.func.buffer_map[source] = buf
        elif spec.kind == "decl" and spec.data is not None:
            return _Wrap(lambda rest: DeclBuffer(buf, rest))
        elif spec.kind == "decl":  # TVM: a decl_buffer without data= allocates its storage
            scope = {"storage_scope": buf.storage_scope}
            return _Wrap(
                lambda rest: Allocate(
                    buf.data, buf.dtype, buf.shape, True, DeclBuffer(buf, rest), scope
                )
            )
        return None

    def bind_allocate(self, name: str, spec: AllocateSpec, node: ast.AST) -> _Wrap:
        var = Var(name, DataType("handle"))
        self.define(name, var)
        annotations = dict(spec.annotations or {})
        if spec.scope is not None:
            annotations = {"storage_scope": spec.scope, **annotations}
        return _Wrap(
            lambda rest: Allocate(var, spec.dtype, spec.extents, spec.condition, rest, annotations)
        )

    def bind_allocate_const(self, name: str, spec: AllocateConstSpec, node: ast.AST) -> _Wrap:
        var = Var(name, DataType("handle"))
        self.define(name, var)
        return _Wrap(
            lambda rest: AllocateConst(
                var, spec.dtype, spec.extents, spec.data, rest, spec.annotations or {}
            )
        )

    def bind_env_thread(self, name: str, spec: EnvThreadSpec, node: ast.AST) -> None:
        var = Var(name, DataType("int32"))
        self.env_threads[id(var)] = spec.tag
        self.keep.append(var)
        self.define(name, var)

    def bind_launch(self, name: str | None, spec: LaunchSpec, node: ast.AST) -> _Wrap:
        """A thread extent over the rest of the statements (TVM's T.launch_thread frame)."""
        if isinstance(spec.thread, str):
            var = Var(name or spec.thread.replace(".", "_"), DataType("int32"))
            tag = spec.thread
        elif isinstance(spec.thread, Var) and id(spec.thread) in self.env_threads:
            var, tag = spec.thread, self.env_threads[id(spec.thread)]
        else:
            raise self.error(
                node, 'T.launch_thread takes a thread tag ("threadIdx.x") or a T.env_thread var'
            )
        if name is not None:
            self.define(name, var)
        self.env_threads[id(var)] = tag  # a later T.launch_thread(var, n) launches it again
        self.keep.append(var)
        extent = as_expr(spec.extent, like=var.dtype)
        iv = self.guard(node, lambda: IterVar(Range(0, extent), var, IterType.ThreadIndex, tag))
        return _Wrap(lambda rest: AttrStmt(iv, "thread_extent", extent, rest))

    def make_buffer(self, name: str, spec: BufferSpec, node: ast.AST) -> Buffer:
        name = spec.name or name
        if isinstance(spec.source, BufferLoad):  # T.match_buffer(A[i, j], ()): one element
            spec = replace(spec, source=_point_region(spec.source))
        spec = _region_defaults(spec)
        if spec.shape is None:
            raise self.error(node, f"buffer '{name}' needs a shape")
        data = spec.data if spec.data is not None else Var(name, DataType("handle"))
        index = _index_dtype(spec.shape)
        offset = spec.elem_offset
        if offset is None:  # TVM: a region matched with an offset_factor has a variable offset
            implicit = spec.kind == "match" and spec.source is not None and spec.offset_factor
            offset = Var(f"{name}_elem_offset", index) if implicit else 0
        strides = tuple(_stride_var(name, k, s, index) for k, s in enumerate(spec.strides))
        return self.guard(
            node,
            lambda: Buffer(
                data,
                spec.dtype or "float32",
                spec.shape,
                strides,
                offset,
                name,
                spec.scope,
                spec.align,
                spec.offset_factor or 1,
                spec.axis_separators,
            ),
        )

    # -- expressions
    def eval(self, node: ast.AST) -> Any:
        handler = _EXPR_HANDLERS.get(type(node))
        if handler is None:
            raise self.error(node, _unsupported(node))
        return handler(self, node)

    def expr_constant(self, node: ast.Constant) -> Any:
        return node.value

    def expr_name(self, node: ast.Name) -> Any:
        return self.lookup(node.id, node)

    def expr_attribute(self, node: ast.Attribute) -> Any:
        base = self.eval(node.value)
        if getattr(base, "__tvmscript__", False):
            if node.attr not in getattr(base, "__all__", ()):
                raise self.error(node, f"unknown name '{ast.unparse(node)}' in TVMScript")
            return getattr(base, node.attr)
        if node.attr.startswith("_"):
            raise self.error(node, f"private attribute '{node.attr}' cannot be used in TVMScript")
        if isinstance(base, Buffer) and node.attr in _BUFFER_METHODS:
            return functools.partial(_BUFFER_METHODS[node.attr], base)
        try:
            return getattr(base, node.attr)
        except AttributeError as err:
            raise self.error(
                node, f"'{ast.unparse(node.value)}' has no attribute '{node.attr}'"
            ) from err

    def expr_call(self, node: ast.Call) -> Any:
        fn = self.eval(node.func)
        args: list[Any] = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(self.eval(a.value))
            else:
                args.append(self.eval(a))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                kwargs.update(self.eval(kw.value))
            else:
                kwargs[kw.arg] = self.eval(kw.value)
        if not callable(fn):
            raise self.error(node.func, f"'{ast.unparse(node.func)}' is not callable")
        try:
            inspect.signature(fn).bind(*args, **kwargs)
        except TypeError as err:
            raise self.error(node, f"wrong arguments to {ast.unparse(node.func)}: {err}") from err
        except ValueError:
            pass  # builtins without a signature
        return self.guard(node, lambda: fn(*args, **kwargs))

    def expr_subscript(self, node: ast.Subscript) -> Any:
        base = self.eval(node.value)
        if isinstance(base, Buffer):
            idx = self.indices(node, base)
            if any(isinstance(i, slice) for i in idx):
                return self.guard(node, lambda: _region(base, idx))
            return self.guard(node, lambda: BufferLoad(base, idx))
        key = self.eval(node.slice)
        return self.guard(node, lambda: base[key])

    def indices(self, node: ast.Subscript, buf: Buffer) -> tuple:
        sl = node.slice
        items = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        idx = tuple(self.eval(i) for i in items)
        if len(idx) != len(buf.shape):
            raise self.error(
                node,
                f"buffer '{buf.name}' has {len(buf.shape)} dimensions but is indexed with {len(idx)} indices",
            )
        return idx

    def expr_slice(self, node: ast.Slice) -> slice:
        parts = [None if p is None else self.eval(p) for p in (node.lower, node.upper, node.step)]
        return slice(*parts)

    def expr_tuple(self, node: ast.Tuple) -> tuple:
        return tuple(self.eval(e) for e in node.elts)

    def expr_list(self, node: ast.List) -> list:
        return [self.eval(e) for e in node.elts]

    def expr_dict(self, node: ast.Dict) -> dict:
        if any(k is None for k in node.keys):
            raise self.error(node, _unsupported(node))
        return {self.eval(k): self.eval(v) for k, v in zip(node.keys, node.values)}

    def expr_binop(self, node: ast.BinOp) -> Any:
        a, b = self.eval(node.left), self.eval(node.right)
        if not (_is_expr(a) or _is_expr(b)):
            fn = _PYTHON_BINOPS.get(type(node.op))
        else:
            fn = _TIR_BINOPS.get(type(node.op))
        if fn is None:
            raise self.error(node, _unsupported(node.op))
        return self.guard(node, lambda: fn(a, b))

    def expr_unaryop(self, node: ast.UnaryOp) -> Any:
        x = self.eval(node.operand)
        if isinstance(node.op, ast.UAdd):
            return x
        if isinstance(node.op, ast.USub):
            if isinstance(x, IntImm | FloatImm):
                return type(x)(x.dtype, -x.value)
            return self.guard(node, lambda: -x)
        if isinstance(node.op, ast.Not):
            return self.guard(node, lambda: Not(x) if _is_expr(x) else not x)
        return self.guard(node, lambda: ~x)

    def expr_boolop(self, node: ast.BoolOp) -> Any:
        values = [self.eval(v) for v in node.values]
        if not any(_is_expr(v) for v in values):
            fn = all if isinstance(node.op, ast.And) else any
            return fn(values)
        cls = And if isinstance(node.op, ast.And) else Or
        out = values[0]
        for v in values[1:]:
            out = self.guard(node, lambda o=out, v=v: cls(o, v))
        return out

    def expr_compare(self, node: ast.Compare) -> Any:
        left = self.eval(node.left)
        terms = []
        for op, comp in zip(node.ops, node.comparators):
            right = self.eval(comp)
            if _is_expr(left) or _is_expr(right):
                cls = _TIR_CMP.get(type(op))
                if cls is None:
                    raise self.error(node, _unsupported(op))
                terms.append(self.guard(node, lambda c=cls, a=left, b=right: c(a, b)))
            else:
                terms.append(
                    _PYTHON_CMP.get(type(op), lambda a, b, op=op: _py_cmp(op, a, b))(left, right)
                )
            left = right
        out = terms[0]
        for t in terms[1:]:
            out = self.guard(
                node, lambda o=out, t=t: And(o, t) if _is_expr(o) or _is_expr(t) else o and t
            )
        return out

    def expr_ifexp(self, node: ast.IfExp) -> Any:
        cond = self.eval(node.test)
        if not _is_expr(cond):
            return self.eval(node.body if cond else node.orelse)
        a, b = self.eval(node.body), self.eval(node.orelse)
        return self.guard(node, lambda: Select(cond, a, b))


def _py_cmp(op: ast.cmpop, a: Any, b: Any) -> Any:
    if isinstance(op, ast.In):
        return a in b
    if isinstance(op, ast.NotIn):
        return a not in b
    if isinstance(op, ast.Is):
        return a is b
    return a is not b


def _region(buf: Buffer, idx: tuple) -> BufferRegion:
    ranges = []
    for dim, i in zip(buf.shape, idx):
        if isinstance(i, slice):
            if i.step not in (None, 1):
                raise ParseError("buffer regions take no step: write A[lo:hi]")
            ranges.append(Range(*T.min_extent(i.start, dim if i.stop is None else i.stop)))
        else:
            ranges.append(Range(i, 1))
    return BufferRegion(buf, tuple(ranges))


def _point_region(load: BufferLoad) -> BufferRegion:
    """`A[i, j]` as a region of one element (T.match_buffer(A[i, j], ()))."""
    return BufferRegion(load.buffer, tuple(Range(i, 1) for i in load.indices))


def _region_defaults(spec: BufferSpec) -> BufferSpec:
    """A matched region's shape and dtype, when not given: its extents and its buffer's dtype."""
    if not isinstance(spec.source, BufferRegion):
        return spec
    shape = spec.shape
    if shape is None:
        shape = tuple(r.extent for r in spec.source.region)
    return replace(spec, shape=shape, dtype=spec.dtype or spec.source.buffer.dtype)


def _index_dtype(shape: tuple) -> DataType:
    """The index dtype of a buffer's implicit variables: its first dimension's (as TVM)."""
    first = shape[0] if shape else None
    return first.dtype if isinstance(first, PrimExpr) else DataType("int32")


def _stride_var(buffer: str, k: int, stride: Any, index: DataType) -> Any:
    """TVM spells an unknown stride as a name (strides=["s0", "s1"]) or T.int32(): a new var."""
    if isinstance(stride, str):
        return Var(stride, index)
    if isinstance(stride, VarDecl):
        return Var(f"{buffer}_s{k}", stride.dtype)
    return stride


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
_EXPR_HANDLERS: dict[type, Callable[[TIRParser, Any], Any]] = {
    ast.Constant: TIRParser.expr_constant,
    ast.Name: TIRParser.expr_name,
    ast.Attribute: TIRParser.expr_attribute,
    ast.Call: TIRParser.expr_call,
    ast.Subscript: TIRParser.expr_subscript,
    ast.Slice: TIRParser.expr_slice,
    ast.Tuple: TIRParser.expr_tuple,
    ast.List: TIRParser.expr_list,
    ast.Dict: TIRParser.expr_dict,
    ast.BinOp: TIRParser.expr_binop,
    ast.UnaryOp: TIRParser.expr_unaryop,
    ast.BoolOp: TIRParser.expr_boolop,
    ast.Compare: TIRParser.expr_compare,
    ast.IfExp: TIRParser.expr_ifexp,
}
# what `name = <spec>` means, by spec class
_BINDERS: dict[type, Callable[[TIRParser, str, Any, ast.AST], Any]] = {
    AxisSpec: TIRParser.bind_axis,
    VarDecl: TIRParser.bind_var,
    BufferSpec: TIRParser.bind_buffer,
    AllocateSpec: TIRParser.bind_allocate,
    AllocateConstSpec: TIRParser.bind_allocate_const,
    LaunchSpec: TIRParser.bind_launch,
    EnvThreadSpec: TIRParser.bind_env_thread,
}
