"""TVMScript parser for `@R.function`: Python `ast` → relax Function.

Reuses the TIR parser's expression evaluator (names, constants, tuples, calls, attribute
lookup in namespaces, PrimExpr arithmetic for shape dims) and adds what a relax body says:
bindings (`lv = R.add(x, y)`, `lv: R.Tensor(...) = ...`), `with R.dataflow():` blocks closed by
`R.output(...)`, `R.match_cast`, `if` (a binding, or a tail where both branches return),
`return`. Every binding's struct info comes from the op table's inference rule; an error there
is reported at the binding's line. String dims ("m") are one `tir.Var` per function.

`cls.foo`, `Module.foo` and a bare `foo` name the GlobalVar of function `foo` of the enclosing
`@I.ir_module` class (entry.py hands the module's GlobalVars over under MODULE_SCOPE_KEY).
"""

from __future__ import annotations

import ast
import importlib
import warnings
from collections import ChainMap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..error import MiniTVMError
from ..ir.module import GlobalVar
from ..ir.node import FrozenDict
from ..ir.structural import structural_equal
from ..relax.analysis import definable_tir_vars_in_struct_info
from ..relax.analysis_struct_info import erase_to_well_defined
from ..relax.expr import (
    BindingBlock,
    Call,
    DataflowBlock,
    DataflowVar,
    Expr,
    Function,
    If,
    MatchCast,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..relax.struct_info import (
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from ..relax.transform.normalize import _refined_ret
from ..tir.expr import FloatImm, IntImm
from ..tir.expr import Var as TirVar
from ..topi.utils import prove_equal
from . import relax as R
from .entry import MODULE_SCOPE_KEY, ModuleScope, _default_env
from .parser import _EXPR_HANDLERS, TIRParser, _unsupported
from .source import Source, source_of
from .tir import VarDecl


@dataclass(frozen=True)
class _Expired:
    """A dataflow var after its block ended: using it is an error."""

    name: str


def _deprecated(old: str, new: str) -> None:
    warnings.warn(
        f"TVMScript `{old}` is the 2022 relax spelling; write `{new}` "
        "(from minitvm.script import relax as R)",
        DeprecationWarning,
        stacklevel=4,
    )


def _legacy_tensor() -> Any:
    _deprecated("Tensor(shape, dtype)", "R.Tensor(shape, dtype)")
    return R.Tensor


def _relax_module() -> Any:
    return importlib.import_module("minitvm.relax")


# bare names 2022 scripts used without defining them (the parser supplied them)
_LEGACY_NAMES: dict[str, Callable[[], Any]] = {"Tensor": _legacy_tensor, "relax": _relax_module}


def _is_legacy_relax_name(base: Any, attr: str) -> bool:
    """`relax.dataflow()`, `relax.output(...)`, `relax.add(...)`: the 2022 script spellings
    of R constructs and ops (names the Python `relax` package lacks, or has as something else)."""
    if base is not _relax_module() or attr not in R.__all__:
        return False
    return attr in ("dataflow", "output") or not hasattr(base, attr)


def _bound_names(stmt: ast.stmt) -> list[str]:
    """The names an assignment statement binds (`a = ...`, `a: T = ...`, `a, b = ...`)."""
    targets = (
        stmt.targets
        if isinstance(stmt, ast.Assign)
        else [stmt.target]
        if isinstance(stmt, ast.AnnAssign)
        else []
    )
    out: list[str] = []
    for t in targets:
        elts = t.elts if isinstance(t, ast.Tuple | ast.List) else [t]
        out += [e.id for e in elts if isinstance(e, ast.Name)]
    return out


class _Frame:
    """Bindings being collected into the current block."""

    def __init__(self, dataflow: bool, outputs: frozenset[str] = frozenset()):
        self.dataflow = dataflow
        self.outputs = outputs
        self.bindings: list[Any] = []


class RelaxParser(TIRParser):
    """Parses one `@R.function` FunctionDef into a relax Function."""

    def __init__(self, source: Source, env: Mapping[str, Any]):
        super().__init__(source, env)
        self.module: ModuleScope | None = env.get(MODULE_SCOPE_KEY)
        self.dims: dict[str, TirVar] = {}
        self.attrs: dict[str, Any] = {}
        self.frame = _Frame(dataflow=False)

    # -- names
    def lookup(self, name: str, node: ast.AST) -> Any:
        for scope in reversed(self.scopes):
            if name in scope:
                value = scope[name]
                if isinstance(value, _Expired):
                    raise self.error(
                        node,
                        f"dataflow var '{name}' is used outside its dataflow block; list it in "
                        "that block's R.output(...) to use it after the block",
                    )
                return value
        if self.module is not None:
            if name in ("cls", self.module.name):
                return self.module
            if name in self.module.gvars:
                return self.module.gvars[name]
        if name in _LEGACY_NAMES and name not in self.env:
            return _LEGACY_NAMES[name]()
        value = super().lookup(name, node)
        if isinstance(value, VarDecl):  # `n = T.int64()` outside the function: a symbolic dim
            var = self.dims.get(name)
            if var is None:
                var = self.dims[name] = TirVar(name, value.dtype)
            return var
        return value

    def expr_attribute(self, node: ast.Attribute) -> Any:
        base = self.eval(node.value)
        if (base is R or base is R.nn) and node.attr not in base.__all__:
            where = "R.nn" if base is R.nn else "R"
            raise self.error(
                node,
                f"unknown name '{ast.unparse(node)}' in TVMScript: it is neither an R construct "
                f"nor a relax op; known names under {where}: {', '.join(base.__all__)}",
            )
        if base is R or base is R.nn:
            return getattr(base, node.attr)
        if _is_legacy_relax_name(base, node.attr):
            _deprecated(f"relax.{node.attr}", f"R.{node.attr}")
            return getattr(R, node.attr)
        try:
            return getattr(base, node.attr)
        except AttributeError as err:
            raise self.error(node, str(err)) from err

    def expr_call(self, node: ast.Call) -> Any:
        fn = self.eval(node.func)
        if not isinstance(fn, GlobalVar):
            return super().expr_call(node)
        if node.keywords:
            raise self.error(node, f"calling {ast.unparse(node.func)}: no keyword arguments")
        args = []
        for a in node.args:
            value = _as_relax(self.eval(a))
            if value is None:
                raise self.error(a, f"calling {ast.unparse(node.func)}: arguments are relax values")
            args.append(value)
        return self.guard(node, lambda: Call(fn, tuple(args)))

    def expr_subscript(self, node: ast.Subscript) -> Any:
        base = self.eval(node.value)
        if isinstance(base, Expr):
            index = self.eval(node.slice)
            if not isinstance(index, int):
                raise self.error(node.slice, "a tuple is indexed by an integer constant: t[0]")
            return self.guard(node, lambda: _checked_item(base, index))
        return super().expr_subscript(node)

    # -- functions
    def parse_function(self, fdef: ast.FunctionDef, name: str, private: bool) -> Function:
        pure = self.decorator_flag(fdef, "pure", True)
        args = fdef.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            raise self.error(fdef, "relax functions take plain positional parameters only")
        for dim in _param_dim_names(args.args):  # as in TVM, the body may use them by name
            self.define(dim, self.dims.setdefault(dim, TirVar(dim, "int64")))
        with R.dim_scope(self.dims):
            params = [self.parameter(a) for a in args.args]
            ret = None if fdef.returns is None else self.struct_info(fdef.returns)
            body = self.seq(fdef.body, fdef, tail="return")
        ret = self.guard(fdef, lambda: _function_ret(ret, params, body))
        attrs = dict(self.attrs)
        if not private:
            attrs.setdefault("global_symbol", name)
        return self.guard(
            fdef, lambda: Function(tuple(params), body, ret, FrozenDict(attrs), bool(pure))
        )

    def decorator_flag(self, fdef: ast.FunctionDef, key: str, default: Any) -> Any:
        for dec in fdef.decorator_list[:1]:
            if isinstance(dec, ast.Call):
                for kw in dec.keywords:
                    if kw.arg == key:
                        return self.eval(kw.value)
        return default

    def parameter(self, arg: ast.arg) -> Var:
        if arg.annotation is None:
            raise self.error(
                arg, f"parameter '{arg.arg}' needs a struct info: R.Tensor((n, 4), \"float32\")"
            )
        var = Var(arg.arg, self.struct_info(arg.annotation))
        self.define(arg.arg, var)
        return var

    def struct_info(self, node: ast.AST) -> StructInfo:
        value = self.eval(node)
        return self.guard(node, lambda: R.as_struct_info(value))

    # -- statement sequences
    def seq(self, stmts: list[ast.stmt], owner: ast.AST, tail: str) -> SeqExpr:
        """A SeqExpr from statements; `tail` is "return" (ends in `return v`) or the name of the
        variable a branch assigns last (`y = v`)."""
        blocks: list[BindingBlock] = []
        outer_frame, self.frame = self.frame, _Frame(dataflow=False)
        try:
            for i, node in enumerate(stmts):
                last = i == len(stmts) - 1
                if isinstance(node, ast.Return):
                    if tail != "return" or not last:
                        raise self.error(
                            node, "`return` must be the last statement of the function"
                        )
                    result = self.as_leaf(self.value(node.value, node), node)  # as TVM does
                    self.flush(blocks)
                    return SeqExpr(tuple(blocks), result)
                if last and tail != "return" and _assigns(node, tail):
                    self.flush(blocks)
                    return SeqExpr(tuple(blocks), self.value(node.value, node))
                if isinstance(node, ast.If):
                    result = self.stmt_relax_if(node, last and tail == "return")
                    if isinstance(result, Expr):  # both branches return: the function's tail
                        self.flush(blocks)
                        return SeqExpr(tuple(blocks), result)
                    continue
                if isinstance(node, ast.With):
                    self.flush(blocks)
                    blocks.append(self.dataflow_block(node))
                    continue
                self.statement(node)
        finally:
            self.frame = outer_frame
        if tail == "return":
            raise self.error(owner, "a relax function must end with `return value`")
        raise self.error(owner, f"each branch of the `if` must end by assigning '{tail}'")

    def flush(self, blocks: list[BindingBlock]) -> None:
        if self.frame.bindings:
            blocks.append(BindingBlock(tuple(self.frame.bindings)))
            self.frame.bindings = []

    def statement(self, node: ast.stmt) -> None:
        handler = _STMTS.get(type(node))
        if handler is None:
            raise self.error(node, _unsupported(node))
        handler(self, node)

    def stmt_pass(self, node: ast.Pass) -> None:
        return None

    def stmt_expr(self, node: ast.Expr) -> None:
        value = self.eval(node.value)
        if isinstance(value, R.OutputSpec):
            raise self.error(
                node, "R.output(...) must be the last statement of a `with R.dataflow():` block"
            )
        if isinstance(value, R.FuncAttrSpec):
            self.attrs.update(value.attrs)
            return
        if value is None or isinstance(value, str):  # docstrings
            return
        if isinstance(_as_relax(value), Call):  # run for its effect (R.print): bound to "_"
            self.bind_name(ast.Name(id="_", ctx=ast.Store()), value, node, None)
            return
        raise self.error(
            node,
            "this expression statement has no meaning in a relax function; bind it: lv = ...",
        )

    def stmt_assign(self, node: ast.Assign) -> None:
        if len(node.targets) != 1:
            raise self.error(node, "chained assignment (a = b = ...) is not supported in TVMScript")
        target = node.targets[0]
        value = self.eval(node.value)
        if isinstance(target, ast.Tuple | ast.List):
            if not isinstance(value, tuple | list) or len(value) != len(target.elts):
                raise self.error(
                    node,
                    f"cannot unpack into {len(target.elts)} names; bind the tuple and index it: "
                    "t = ...; a = t[0]",
                )
            for t, v in zip(target.elts, value):
                self.bind_name(t, v, node, None)
            return
        self.bind_name(target, value, node, None)

    def stmt_ann_assign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            raise self.error(node, "an annotated binding needs a value: lv: R.Tensor(...) = ...")
        annotation = self.struct_info(node.annotation)
        self.bind_name(node.target, self.eval(node.value), node, annotation)

    def bind_name(
        self, target: ast.AST, value: Any, node: ast.AST, annotation: StructInfo | None
    ) -> None:
        if not isinstance(target, ast.Name):
            raise self.error(target, "binding targets must be names")
        name = target.id
        if isinstance(value, VarDecl):  # `n = T.int64()`: a symbolic dim of this function
            var = self.dims.get(name)
            if var is None:
                var = self.dims[name] = TirVar(name, value.dtype)
            self.define(name, var)
            return
        if isinstance(value, R.MatchCastSpec):
            sinfo = value.struct_info if annotation is None else annotation
            var = self.new_var(name, sinfo)
            self.frame.bindings.append(MatchCast(var, value.value, sinfo))
            self.define(name, var)
            return
        expr = _as_relax(value)
        if expr is None:  # a Python value or an alias (cls = Module)
            if annotation is not None:
                raise self.error(node, f"'{name}' is annotated but its value is not a relax value")
            self.define(name, value)
            return
        if _is_global_call(expr):  # another function of the module: annotated or declared
            inferred = annotation or self.declared_result(expr)
            if inferred is None:
                raise self.error(
                    node,
                    f"binding '{name}': annotate the result of calling '{expr.op.name_hint}' "
                    f"(or its return type): {name}: R.Tensor(...) = ...",
                )
        else:
            inferred = self.guard(node.value, lambda: expr.struct_info)
        sinfo = inferred
        if annotation is not None:
            if not _accepts(annotation, inferred):
                raise self.error(
                    node,
                    f"binding '{name}': annotated struct info {annotation} does not match the "
                    f"inferred {inferred}; fix the annotation or the value",
                )
            sinfo = annotation if inferred is annotation else _refine(annotation, inferred)
        var = self.new_var(name, sinfo)
        self.frame.bindings.append(VarBinding(var, self.normal_form(expr, node)))
        self.define(name, var)

    def normal_form(self, expr: Expr, node: ast.AST) -> Expr:
        """`expr` with nested calls bound first (`w = R.add(R.exp(y), x)` becomes
        `lv = R.exp(y); w = R.add(lv, x)`), as TVM's parser normalises: passes such as
        FuseOps see one call per binding."""
        if isinstance(expr, Call):
            args = tuple(self.as_leaf(a, node) for a in expr.args)
            changed = any(a is not b for a, b in zip(args, expr.args))
            return expr.replace(args=args) if changed else expr
        if isinstance(expr, Tuple):
            fields = tuple(self.as_leaf(f, node) for f in expr.fields)
            changed = any(a is not b for a, b in zip(fields, expr.fields))
            return expr.replace(fields=fields) if changed else expr
        if isinstance(expr, TupleGetItem):
            base = self.as_leaf(expr.tuple_value, node)
            return expr if base is expr.tuple_value else expr.replace(tuple_value=base)
        return expr

    def as_leaf(self, expr: Any, node: ast.AST) -> Any:
        """A nested call (or item of one) bound to a fresh var; anything else as it is. A call
        of another function of the module stays nested: its result type is only known from an
        annotation."""
        if isinstance(expr, Tuple):
            return self.normal_form(expr, node)
        if not isinstance(expr, Call | TupleGetItem) or _is_global_call(expr):
            return expr
        value = self.normal_form(expr, node)
        sinfo = self.guard(node, lambda: value.struct_info)
        name = self.fresh_name("lv")
        var = self.new_var(name, sinfo)
        self.frame.bindings.append(VarBinding(var, value))
        self.define(name, var)
        return var

    def fresh_name(self, hint: str) -> str:
        """`hint`, `hint1`, ...: the first name no scope or the environment holds."""
        taken = lambda n: n in self.env or any(n in scope for scope in self.scopes)
        count = 0
        while taken(f"{hint}{count or ''}"):
            count += 1
        return f"{hint}{count or ''}"

    def new_var(self, name: str, sinfo: StructInfo) -> Var:
        if self.frame.dataflow and name not in self.frame.outputs:
            return DataflowVar(name, sinfo)
        return Var(name, sinfo)

    def value(self, node: ast.AST | None, owner: ast.AST) -> Expr:
        if node is None:
            raise self.error(owner, "a relax function returns a value: return lv")
        value = self.eval(node)
        expr = _as_relax(value)
        if expr is None:
            raise self.error(node, f"expected a relax value here, got {value!r}")
        if not _is_global_call(expr):  # a call of a module function: its declaration says
            self.guard(node, lambda: expr.struct_info)
        return expr

    def declared_result(self, call: Call) -> StructInfo | None:
        """What calling another function of the module gives, from the callee's return
        annotation (None when it has none). The callee may be defined later in the class. Its
        symbolic dims belong to the callee, so a result that names any keeps only its rank and
        dtype: true of every call, if less precise than matching the arguments."""
        fdef = self.module.defs.get(call.op.name_hint) if self.module is not None else None
        if fdef is None or fdef.returns is None:
            return None
        probe = RelaxParser(self.source, self.env)
        try:
            with R.dim_scope(probe.dims):
                sinfo = probe.struct_info(fdef.returns)
        except MiniTVMError:  # an annotation only its own function's scope can read
            return None
        return _without_symbolic_dims(sinfo)

    # -- dataflow blocks
    def dataflow_block(self, node: ast.With) -> DataflowBlock:
        if len(node.items) != 1 or node.items[0].optional_vars is not None:
            raise self.error(node, "a relax `with` takes one item: with R.dataflow():")
        ctx = self.eval(node.items[0].context_expr)
        if not isinstance(ctx, R.DataflowSpec):
            raise self.error(node.items[0].context_expr, "expected `with R.dataflow():`")
        if self.frame.dataflow:
            raise self.error(node, "dataflow blocks cannot be nested")
        *stmts, last = node.body
        outputs = self.output_names(last)
        # a name bound more than once leaves the block from its last binding only: the earlier
        # ones stay dataflow vars (TVM's rule; the exporter's `gv = lv` forms rely on it)
        final = {name: k for k, stmt in enumerate(stmts) for name in _bound_names(stmt)}
        outer_frame, self.frame = self.frame, _Frame(True, frozenset(outputs))
        self.scopes.append({})
        try:
            for k, stmt in enumerate(stmts):
                if isinstance(stmt, ast.If | ast.Return | ast.With):
                    what = {ast.If: "if", ast.Return: "return", ast.With: "with"}[type(stmt)]
                    raise self.error(stmt, f"`{what}` is not allowed inside a dataflow block")
                self.frame.outputs = frozenset(n for n in outputs if final.get(n, k) == k)
                self.statement(stmt)
            values = self.eval(last.value).values
            bindings = tuple(self.frame.bindings)
        finally:
            inner = self.scopes.pop()
            self.frame = outer_frame
        for name, value in zip(outputs, values):
            if not (isinstance(value, Var) and inner.get(name) is value):
                raise self.error(
                    last, f"R.output: '{name}' is not a variable bound in this dataflow block"
                )
        for name, value in inner.items():
            self.define(name, _Expired(name) if isinstance(value, DataflowVar) else value)
        return DataflowBlock(bindings)

    def output_names(self, last: ast.stmt) -> list[str]:
        call = last.value if isinstance(last, ast.Expr) else None
        if not (isinstance(call, ast.Call) and self.eval(call.func) is R.output):
            raise self.error(
                last, "a dataflow block must end with R.output(...) naming the vars used after it"
            )
        names = []
        for a in call.args:
            if not isinstance(a, ast.Name):
                raise self.error(a, "R.output takes variable names: R.output(lv1, gv)")
            names.append(a.id)
        return names

    # -- if
    def stmt_relax_if(self, node: ast.If, may_return: bool) -> Expr | None:
        cond = self.eval(node.test)
        if not isinstance(cond, Expr):
            raise self.error(node.test, "a relax `if` condition must be a relax value")
        if not node.orelse:
            raise self.error(node, "a relax `if` needs an `else` branch")
        if self.frame.dataflow:
            raise self.error(node, "`if` is not allowed inside a dataflow block")
        returns = [isinstance(b[-1], ast.Return) for b in (node.body, node.orelse)]
        if all(returns):
            if not may_return:
                raise self.error(node, "an `if` whose branches return must end the function")
            then, other = (
                self.branch(node.body, node, "return"),
                self.branch(node.orelse, node, "return"),
            )
            return self.guard(node, lambda: _checked_if(cond, then, other))
        last = node.body[-1]
        name = _assigned_name(last)
        if name is None:
            raise self.error(
                last, "each branch of a relax `if` must end by assigning the same variable: y = ..."
            )
        then = self.branch(node.body, node, name)
        other = self.branch(node.orelse, node, name)
        value = self.guard(node, lambda: _checked_if(cond, then, other))
        var = Var(name, value.struct_info)
        self.frame.bindings.append(VarBinding(var, value))
        self.define(name, var)
        return None

    def branch(self, stmts: list[ast.stmt], owner: ast.AST, tail: str) -> SeqExpr:
        self.scopes.append({})
        try:
            return self.seq(stmts, owner, tail)
        finally:
            self.scopes.pop()


def _assigns(node: ast.stmt, name: str) -> bool:
    return _assigned_name(node) == name


def _assigned_name(node: ast.stmt) -> str | None:
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        target = node.target
    else:
        return None
    return target.id if isinstance(target, ast.Name) else None


def _as_relax(value: Any) -> Expr | None:
    """A relax expression from a parsed value (Python tuples of relax values become Tuples)."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, tuple | list):
        fields = [_as_relax(v) for v in value]
        if all(f is not None for f in fields):
            return Tuple(tuple(fields))
    return None


def _function_ret(ret: StructInfo | None, params: list[Var], body: SeqExpr) -> StructInfo:
    """The declared return struct info, or the body's when that is more specific, with the
    dims that the parameters do not define erased, as TVM's Function constructor does after
    the parser normalizes the body. Without a declaration: the body's, as BlockBuilder does."""
    if ret is None:
        return body.struct_info
    refined = _refined_ret(ret, body)
    if refined is ret:
        return ret
    defined = {v: v for p in params for v in definable_tir_vars_in_struct_info(p.struct_info)}
    erased = erase_to_well_defined(refined, defined)
    return ret if structural_equal(erased, ret) else erased


def _without_symbolic_dims(sinfo: StructInfo) -> StructInfo:
    """`sinfo` with every shape that names a symbolic dim reduced to its rank."""
    if isinstance(sinfo, TensorStructInfo) and sinfo.shape is not None:
        if all(isinstance(d, IntImm) for d in sinfo.shape):
            return sinfo
        return TensorStructInfo(None, sinfo.dtype, len(sinfo.shape), vdevice=sinfo.vdevice)
    if isinstance(sinfo, ShapeStructInfo) and sinfo.values is not None:
        if all(isinstance(d, IntImm) for d in sinfo.values):
            return sinfo
        return ShapeStructInfo(ndim=len(sinfo.values))
    if isinstance(sinfo, PrimStructInfo) and sinfo.value is not None:
        return sinfo if isinstance(sinfo.value, IntImm | FloatImm) else PrimStructInfo(sinfo.dtype)
    if isinstance(sinfo, TupleStructInfo):
        return TupleStructInfo(tuple(_without_symbolic_dims(f) for f in sinfo.fields))
    if isinstance(sinfo, TensorStructInfo | ShapeStructInfo | PrimStructInfo | ObjectStructInfo):
        return sinfo
    return ObjectStructInfo()  # a function value: its signature may name dims too


def _is_global_call(e: Expr) -> bool:
    return isinstance(e, Call) and isinstance(e.op, GlobalVar) and not e.sinfo_args


def _checked_item(base: Expr, index: int) -> TupleGetItem:
    item = TupleGetItem(base, index)
    item.struct_info  # noqa: B018 - raises when base is not a tuple or index is out of range
    return item


def _checked_if(cond: Expr, then: Expr, other: Expr) -> If:
    result = If(cond, then, other)
    result.struct_info  # noqa: B018 - validates both branches
    return result


def _same_dim(a: Any, b: Any) -> bool:
    return structural_equal(a, b) or prove_equal(a, b)


def _accepts(annotation: StructInfo, inferred: StructInfo) -> bool:
    """Whether a binding's annotation agrees with what inference says about its value."""
    if structural_equal(annotation, inferred) or isinstance(annotation, ObjectStructInfo):
        return True
    if isinstance(annotation, TensorStructInfo) and isinstance(inferred, TensorStructInfo):
        if None not in (annotation.dtype, inferred.dtype) and annotation.dtype != inferred.dtype:
            return False
        if -1 not in (annotation.ndim, inferred.ndim) and annotation.ndim != inferred.ndim:
            return False
        if annotation.shape is None or inferred.shape is None:
            return True
        return all(_same_dim(a, b) for a, b in zip(annotation.shape, inferred.shape))
    if isinstance(annotation, TupleStructInfo) and isinstance(inferred, TupleStructInfo):
        return len(annotation.fields) == len(inferred.fields) and all(
            _accepts(a, b) for a, b in zip(annotation.fields, inferred.fields)
        )
    return False


def _refine(annotation: StructInfo, inferred: StructInfo) -> StructInfo:
    """The struct info a binding's var gets: the annotation (it may say less than inference,
    as TVM's parser allows), except that a tensor annotation without a dtype keeps the
    inferred dtype (`R.Tensor((1, 6, 1, 1))` on a float32 reshape is a float32 tensor)."""
    if isinstance(annotation, TensorStructInfo) and isinstance(inferred, TensorStructInfo):
        if annotation.dtype is None and inferred.dtype is not None:
            if annotation.shape is None:
                return TensorStructInfo(
                    ndim=annotation.ndim, dtype=inferred.dtype, vdevice=annotation.vdevice
                )
            return TensorStructInfo(
                shape=annotation.shape, dtype=inferred.dtype, vdevice=annotation.vdevice
            )
        return annotation
    if isinstance(annotation, TupleStructInfo) and isinstance(inferred, TupleStructInfo):
        return TupleStructInfo([_refine(a, b) for a, b in zip(annotation.fields, inferred.fields)])
    return annotation


# the TIR parser's expression handlers, with the relax parser's overrides
_EXPRS: dict[type, Callable[[RelaxParser, Any], Any]] = {
    **_EXPR_HANDLERS,
    ast.Attribute: RelaxParser.expr_attribute,
    ast.Subscript: RelaxParser.expr_subscript,
    ast.Call: RelaxParser.expr_call,
}
RelaxParser._expr_handlers = _EXPRS
_STMTS: dict[type, Callable[[RelaxParser, Any], None]] = {
    ast.Assign: RelaxParser.stmt_assign,
    ast.AnnAssign: RelaxParser.stmt_ann_assign,
    ast.Expr: RelaxParser.stmt_expr,
    ast.Pass: RelaxParser.stmt_pass,
}


# ----------------------------------------------------------------------------- entry points


def parse_relax_function(
    source: Source, fdef: ast.FunctionDef, env: Mapping, name: str, private: bool
) -> Function:
    """The function parser registered for `@R.function` (see entry.register_function_parser)."""
    return RelaxParser(source, env).parse_function(fdef, name, private)


def parse_relax_function_object(fn: Any, env: Mapping, private: bool) -> Function:
    """`@R.function` on a Python function outside an IRModule class."""
    source = source_of(fn, ast.FunctionDef)
    full_env = ChainMap(dict(env), _default_env())
    return parse_relax_function(source, source.node, full_env, fn.__name__, private)


__all__ = ["RelaxParser", "parse_relax_function", "parse_relax_function_object"]


def _param_dim_names(params: list[ast.arg]) -> list[str]:
    """The symbolic dims the parameters' shapes name (`"n"` in `R.Tensor(("n", 4))`), in order.

    As in TVM, every parameter's plain dim names are defined before any annotation is read, so
    a dim expression may use a name that only a later parameter introduces
    (`A: R.Tensor(["n - 2"]), B: R.Tensor(["n"])`)."""
    names: list[str] = []
    for param in params:
        if param.annotation is None:
            continue
        for node in ast.walk(param.annotation):
            if not isinstance(node, ast.List | ast.Tuple):
                continue
            for elt in node.elts:
                is_str = isinstance(elt, ast.Constant) and isinstance(elt.value, str)
                text = elt.value.strip() if is_str else ""
                if text.isidentifier() and text not in names:
                    names.append(text)
    return names
