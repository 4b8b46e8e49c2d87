"""BlockBuilder: build graph-level functions binding by binding, in A-normal form.

bb = relax.BlockBuilder()
with bb.function("main", [x, w]):
    with bb.dataflow():
        lv = bb.emit_te(topi.matmul, x, w)
        gv = bb.emit_output(bb.emit_te(topi.nn.relu, lv))
    bb.emit_func_output(gv)
mod = bb.get()
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import te
from ..error import MiniTVMError
from ..ir.module import GlobalVar, IRModule
from ..ir.node import FrozenDict
from ..ir.op import Op
from ..ir.structural import structural_equal, structural_hash
from ..tir.expr import IntImm, PrimExpr
from ..tir.expr import Var as TirVar
from ..tir.function import PrimFunc
from . import expr as rx
from .op.base import call_tir
from .struct_info import PrimStructInfo, StructInfo, TensorStructInfo, TupleStructInfo, shape_vars


class _FunctionFrame:
    def __init__(self, name: str, params: list[rx.Var] | None, attrs: dict, pure: bool):
        self.name, self.params, self.attrs, self.pure = name, params, attrs, pure
        self.blocks: list[rx.BindingBlock] = []
        self.output: rx.Expr | None = None


class _Scope:
    """`with bb.function(...)` / `with bb.dataflow()`: enter/exit call back into the builder."""

    def __init__(self, enter: Callable[[], Any], exit_: Callable[[bool], None]):
        self._enter, self._exit = enter, exit_

    def __enter__(self) -> Any:
        return self._enter()

    def __exit__(self, exc_type: Any, *_: object) -> None:
        self._exit(exc_type is not None)


class BlockBuilder:
    """Builds functions into an IRModule; `emit*` return fresh variables bound to normalised values."""

    _current: list[BlockBuilder] = []

    def __init__(self, mod: IRModule | None = None):
        self._mod = mod.copy() if mod is not None else IRModule()
        self._func: _FunctionFrame | None = None
        self._bindings: list | None = None  # bindings of the open block
        self._dataflow = False
        self._names: dict[str, int] = {}
        self._prim_index: dict[int, list[GlobalVar]] = {}
        # call_te's PrimFuncs by what they are made of (see _te_key): a te function applied to
        # tensors of the same shapes with the same attributes makes the same PrimFunc
        self._te_cache: dict[tuple, tuple[GlobalVar, PrimFunc, list]] = {}
        for gv, f in self._mod.functions_items():
            if isinstance(f, PrimFunc):
                self._prim_index.setdefault(structural_hash(f, map_free_vars=True), []).append(gv)

    @staticmethod
    def current() -> BlockBuilder | None:
        return BlockBuilder._current[-1] if BlockBuilder._current else None

    # ------------------------------------------------------------------ scopes
    def function(
        self,
        name: str,
        params: Sequence[rx.Var] | rx.Var | None = None,
        attrs: dict | None = None,
        pure: bool = True,
        private: bool = False,
    ) -> _Scope:
        """Open a function scope; finish it with `emit_func_output`."""
        if self._func is not None:
            raise MiniTVMError(
                f"bb.function({name!r}): already inside function {self._func.name!r}"
            )
        if isinstance(params, rx.Var):
            params = [params]
        attrs = dict(attrs or {})
        if not private:  # as in TVM: a public function carries its symbol name
            attrs.setdefault("global_symbol", name)
        frame = _FunctionFrame(name, list(params) if params is not None else None, attrs, pure)

        def enter() -> BlockBuilder:
            self._func = frame
            self._begin_block(dataflow=False)
            BlockBuilder._current.append(self)
            return self

        def exit_(failed: bool) -> None:
            BlockBuilder._current.pop()
            self._func, self._bindings = None, None
            if not failed and frame.output is None:
                raise MiniTVMError(
                    f"bb.function({name!r}) ended without bb.emit_func_output(...); call it last "
                    "inside the `with bb.function(...)` block"
                )

        return _Scope(enter, exit_)

    def testing_scope(self, def_vars: Sequence[TirVar] = ()) -> _Scope:
        """A scope for unit tests (as TVM's): bindings may be emitted and normalised outside
        any function; `def_vars` are the symbolic vars taken as defined in it. What is
        emitted is dropped at exit."""
        for v in def_vars:
            if not isinstance(v, TirVar):
                raise MiniTVMError(
                    f"bb.testing_scope: def_vars must be tir.Vars, got {v!r} (a {type(v).__name__})"
                )
        if self._func is not None:
            raise MiniTVMError(f"bb.testing_scope(): already inside function {self._func.name!r}")
        frame = _FunctionFrame("testing_scope", None, {}, pure=False)

        def enter() -> BlockBuilder:
            self._func = frame
            self._begin_block(dataflow=False)
            BlockBuilder._current.append(self)
            return self

        def exit_(failed: bool) -> None:
            BlockBuilder._current.pop()
            self._func, self._bindings, self._dataflow = None, None, False

        return _Scope(enter, exit_)

    def dataflow(self) -> _Scope:
        """Open a dataflow block: emitted values are DataflowVars until `emit_output`."""

        def enter() -> None:
            self._require_function("bb.dataflow()")
            if self._dataflow:
                raise MiniTVMError("bb.dataflow(): dataflow blocks cannot be nested")
            self._end_block()
            self._begin_block(dataflow=True)

        def exit_(failed: bool) -> None:
            if failed:
                return
            self._end_block()
            self._begin_block(dataflow=False)

        return _Scope(enter, exit_)

    def _begin_block(self, dataflow: bool) -> None:
        self._bindings, self._dataflow = [], dataflow

    def _end_block(self) -> None:
        if self._bindings:
            block_cls = rx.DataflowBlock if self._dataflow else rx.BindingBlock
            self._func.blocks.append(block_cls(tuple(self._bindings)))
        self._bindings, self._dataflow = [], False

    # A bare block with no function around it, for PyExprMutator: it re-emits a function's
    # bindings one block at a time, and user code may bb.emit(...) into the same block.
    def _begin_rewrite_block(self, dataflow: bool) -> None:
        self._rewrite_stack = getattr(self, "_rewrite_stack", [])
        self._rewrite_stack.append((self._func, self._bindings, self._dataflow))
        if self._func is None:
            self._func = _FunctionFrame("<rewrite>", [], {}, True)
        self._begin_block(dataflow)

    def _end_rewrite_block(self) -> list:
        bindings = self._bindings
        self._func, self._bindings, self._dataflow = self._rewrite_stack.pop()
        return bindings

    def _append_binding(self, binding: Any) -> None:
        self._require_function("re-emitting a binding")
        self._bindings.append(binding)

    def _require_function(self, what: str) -> None:
        if self._func is None or self._bindings is None:
            raise MiniTVMError(f"{what} must be called inside `with bb.function(...)`")

    # ------------------------------------------------------------------ names
    def _fresh_name(self, hint: str) -> str:
        count = self._names.get(hint, 0)
        self._names[hint] = count + 1
        return hint if count == 0 else f"{hint}{count}"

    # ------------------------------------------------------------------ emit
    def emit(self, expr: rx.Expr, name_hint: str = "") -> rx.Var:
        """Bind `expr` (normalised: nested calls are bound first) to a fresh variable."""
        self._require_function("bb.emit")
        value = self.normalize(expr)
        return self._bind(value, self.infer_struct_info(value), name_hint)

    def _bind(self, value: rx.Expr, sinfo: StructInfo, name_hint: str) -> rx.Var:
        cls = rx.DataflowVar if self._dataflow else rx.Var
        var = cls(self._fresh_name(name_hint or ("lv" if self._dataflow else "gv")), sinfo)
        self._bindings.append(rx.VarBinding(var, value))
        return var

    def emit_output(self, output: rx.Expr | Sequence[rx.Expr], name_hint: str = "") -> rx.Var:
        """Inside a dataflow block: bind `output` to a Var that is visible after the block."""
        self._require_function("bb.emit_output")
        if not self._dataflow:
            raise MiniTVMError(
                "bb.emit_output is only for dataflow blocks; use bb.emit outside them"
            )
        if isinstance(output, list | tuple):
            output = rx.Tuple(tuple(output))
        value = self.normalize(output)
        var = rx.Var(self._fresh_name(name_hint or "gv"), self.infer_struct_info(value))
        self._bindings.append(rx.VarBinding(var, value))
        return var

    def match_cast(self, value: rx.Expr, struct_info: StructInfo, name_hint: str = "") -> rx.Var:
        """Bind `value` to a var of `struct_info`, checked at run time (defines new symbolic dims)."""
        self._require_function("bb.match_cast")
        value = self.normalize(value)
        cls = rx.DataflowVar if self._dataflow else rx.Var
        var = cls(self._fresh_name(name_hint or ("lv" if self._dataflow else "gv")), struct_info)
        self._bindings.append(rx.MatchCast(var, value, struct_info))
        return var

    def emit_func_output(
        self, output: rx.Expr | Sequence[rx.Expr], params: Sequence[rx.Var] | rx.Var | None = None
    ) -> GlobalVar:
        """Finish the current function with `output` and add it to the module."""
        self._require_function("bb.emit_func_output")
        frame = self._func
        if self._dataflow:
            raise MiniTVMError(
                "bb.emit_func_output must be called after the `with bb.dataflow()` block"
            )
        if frame.output is not None:
            raise MiniTVMError(f"function {frame.name!r} already has an output")
        if params is not None:
            if frame.params is not None:
                raise MiniTVMError(
                    f"function {frame.name!r}: params were already given to bb.function"
                )
            frame.params = [params] if isinstance(params, rx.Var) else list(params)
        if frame.params is None:
            raise MiniTVMError(
                f"function {frame.name!r} has no params; pass them to bb.function or here"
            )
        if isinstance(output, list | tuple):
            output = rx.Tuple(tuple(output))
        output = self.normalize(output)
        if not (rx.is_leaf(output) or isinstance(output, rx.Tuple)):
            output = self._bind(output, self.infer_struct_info(output), "gv")
        self._end_block()
        output = self._expose_dataflow_outputs(output)
        _check_no_dataflow_var(output, frame.name)
        frame.output = output
        attrs = FrozenDict(frame.attrs) if frame.attrs else FrozenDict()
        body = rx.SeqExpr(tuple(frame.blocks), output)
        func = rx.Function(
            tuple(frame.params), body, self.infer_struct_info(output), attrs, frame.pure
        )
        return self.add_func(func, frame.name, dedupe=False)

    def _expose_dataflow_outputs(self, output: rx.Expr) -> rx.Expr:
        """A returned DataflowVar that was passed to `emit_output` stands for the var emit_output
        bound to it (TVM accepts this; the MLC course's `from_fx` ends so). Any other DataflowVar
        is left for _check_no_dataflow_var to report."""
        items = output.fields if isinstance(output, rx.Tuple) else (output,)
        if not [e for e in items if isinstance(e, rx.DataflowVar)]:
            return output
        exposed = {
            b.value: b.var
            for block in self._func.blocks
            if isinstance(block, rx.DataflowBlock)
            for b in block.bindings
            if isinstance(b, rx.VarBinding)
            and isinstance(b.value, rx.DataflowVar)
            and not isinstance(b.var, rx.DataflowVar)
        }
        new_items = tuple(exposed.get(e, e) for e in items)
        return rx.Tuple(new_items) if isinstance(output, rx.Tuple) else new_items[0]

    # ------------------------------------------------------------------ normalisation
    def normalize(self, expr: Any) -> rx.Expr:
        """A-normal form: call arguments and tuple fields become leaves (nested calls are bound).

        The result's struct info is inferred here, as TVM's normalizer does, so a call that its
        op rejects (shapes that do not broadcast, an axis out of range) raises now rather than
        when something first reads the result's struct info."""
        if isinstance(expr, rx.Call):
            result = self._with_leaves(expr, "args")
        elif isinstance(expr, rx.Tuple):
            result = self._with_leaves(expr, "fields")
        elif isinstance(expr, rx.TupleGetItem):
            result = expr.replace(tuple_value=self._as_leaf(expr.tuple_value))
        else:
            result = None
        if result is not None:
            if not isinstance(result, rx.Call) or isinstance(result.op, Op):
                self.infer_struct_info(result)
            return result
        if isinstance(expr, rx.Expr | GlobalVar):
            return expr
        raise MiniTVMError(
            f"cannot emit {expr!r} (a {type(expr).__name__}); expected a relax expression"
        )

    def _with_leaves(self, expr: rx.Expr, field: str) -> rx.Expr:
        """`expr` with every item of its tuple field `field` made a leaf; `expr` itself when
        they all are already."""
        old = getattr(expr, field)
        new = tuple(self._as_leaf(a) for a in old)
        return expr.replace(**{field: new}) if any(a is not b for a, b in zip(new, old)) else expr

    def _as_leaf(self, e: Any) -> Any:
        if rx.is_leaf(e):
            return e
        if isinstance(e, rx.Tuple):
            return self.normalize(e)
        if self._bindings is None:
            raise MiniTVMError("nested calls can only be normalised inside a function scope")
        value = self.normalize(e)
        return self._bind(value, self.infer_struct_info(value), "")

    def infer_struct_info(self, expr: rx.Expr) -> StructInfo:
        """The struct info of `expr`, looking up callees in this module."""
        if isinstance(expr, rx.Call) and isinstance(expr.op, GlobalVar) and not expr.sinfo_args:
            callee = self._mod[expr.op]
            if isinstance(callee, rx.Function):
                # the callee's symbolic dims, bound by the arguments (TVM's normalizer)
                from .analysis_struct_info import derive_call_ret_struct_info

                return derive_call_ret_struct_info(callee.struct_info, expr)
            raise MiniTVMError(
                f"calling {expr.op.name_hint!r} directly: it is a {type(callee).__name__}; use "
                "relax.call_tir for PrimFuncs"
            )
        if isinstance(expr, rx.Tuple):
            return TupleStructInfo(tuple(self.infer_struct_info(f) for f in expr.fields))
        return expr.struct_info

    # ------------------------------------------------------------------ TE
    def call_te(self, func: Callable, *args: Any, **kwargs: Any) -> rx.Call:
        """`call_tir` of the PrimFunc made from `func(*te placeholders)` (the func is added to the module)."""
        name_hint = kwargs.pop("primfunc_name_hint", None) or getattr(func, "__name__", "te_func")
        if not name_hint.isidentifier():  # a lambda's "<lambda>" cannot name a function in TVMScript
            name_hint = "te_func"
        canonical = kwargs.pop("_canonical_names", False)
        conv = _TEArgs(canonical)
        te_args = conv.convert(list(args))
        te_kwargs = conv.convert(dict(kwargs))
        # only op definitions (canonical names: LegalizeOps, FoldConstant) are cached; a user's
        # te function may read state that changes between calls
        key = _te_key(func, name_hint, conv, te_args, te_kwargs) if canonical else None
        hit = self._te_cache.get(key) if key is not None else None
        if hit is not None and self._holds(*hit[:2]):
            return call_tir(hit[0], conv.exprs, _one_or_list(hit[2]), _tir_vars_arg(hit[3]))
        out = func(*te_args, **te_kwargs)
        outs = list(out) if isinstance(out, list | tuple) else [out]
        for o in outs:
            if not isinstance(o, te.Tensor):
                raise MiniTVMError(
                    f"emit_te: {name_hint} must return te Tensors, got {type(o).__name__}"
                )
        # a dim var no tensor holds as a plain dim (e.g. `n` of a (4 * n,) input or of full's
        # (n, 4) output), or one only a scalar argument holds (full's fill value
        # `R.prim_value(n)`), reaches the kernel as a scalar param, passed as tir_vars by the caller
        extra = _unbound_dim_vars(conv.placeholders + outs, (te_args, te_kwargs))
        prim = te.create_prim_func(conv.placeholders + outs + extra)
        if "global_symbol" in prim.attrs:  # named by its GlobalVar in the module instead
            prim = prim.replace(
                attrs=FrozenDict({k: v for k, v in prim.attrs.items() if k != "global_symbol"})
            )
        gv = self.add_func(prim, name_hint)
        out_sinfo = [TensorStructInfo(o.shape, o.dtype) for o in outs]
        if key is not None:
            self._te_cache[key] = (gv, self._mod[gv], out_sinfo, tuple(extra))
        return call_tir(gv, conv.exprs, _one_or_list(out_sinfo), _tir_vars_arg(extra))

    def _holds(self, gv: GlobalVar, func: Any) -> bool:
        """`gv` is in the module and names `func` still (update_func may have replaced it)."""
        return (
            gv.name_hint in self._mod
            and self._mod.get_global_var(gv.name_hint) is gv
            and (self._mod[gv] is func)
        )

    def emit_te(self, func: Callable, *args: Any, **kwargs: Any) -> rx.Var:
        """Emit `call_te(func, *args)`: the MLC course's `bb.emit_te(te_matmul, x, w)`."""
        name_hint = kwargs.pop("name_hint", "")
        return self.emit(self.call_te(func, *args, **kwargs), name_hint)

    def call_te_with_grad(
        self,
        func: Callable,
        *args: Any,
        te_grad_name: str,
        te_grad_kwargs: Any = None,
        **kwargs: Any,
    ) -> rx.Call:
        """`call_te`, as a `call_tir_with_grad` whose gradient is the TE function registered as
        `te_grad_name` (relax.training.utils.register_te_gradient)."""
        from .op.call_tir_grad import call_tir_with_grad

        call = self.call_te(func, *args, **kwargs)
        if len(call.args) > 2:
            raise MiniTVMError(
                f"call_te_with_grad: {getattr(func, '__name__', 'the TE function')} needs symbolic "
                "dims passed as tir_vars, which call_tir_with_grad does not carry; use call_te"
            )
        return call_tir_with_grad(
            call.args[0], call.args[1], call.sinfo_args[0], te_grad_name, te_grad_kwargs
        )

    def emit_te_with_grad(self, func: Callable, *args: Any, **kwargs: Any) -> rx.Var:
        """Emit `call_te_with_grad(func, *args, te_grad_name=...)`."""
        name_hint = kwargs.pop("name_hint", "")
        return self.emit(self.call_te_with_grad(func, *args, **kwargs), name_hint)

    # ------------------------------------------------------------------ module
    def add_func(self, func: Any, func_name: str, dedupe: bool = True) -> GlobalVar:
        """Add `func` under a unique name (an identical PrimFunc already present is reused)."""
        key = None
        if dedupe and isinstance(func, PrimFunc):
            key = structural_hash(func, map_free_vars=True)
            for gv in self._prim_index.get(key, []):
                if structural_equal(self._mod[gv], func, map_free_vars=True):
                    return gv
        name = func_name
        if name in self._mod:
            n = 1
            while f"{func_name}{n}" in self._mod:
                n += 1
            name = f"{func_name}{n}"
        gv = GlobalVar(name)
        self._mod[gv] = func
        if key is not None:
            self._prim_index.setdefault(key, []).append(gv)
        return gv

    def update_func(self, gv: GlobalVar, func: Any) -> None:
        self._mod[gv] = func

    def get(self) -> IRModule:
        """The module built so far."""
        return self._mod.copy()

    finalize = get


def _check_no_dataflow_var(output: rx.Expr, fname: str) -> None:
    items = output.fields if isinstance(output, rx.Tuple) else (output,)
    for e in items:
        if isinstance(e, rx.DataflowVar):
            raise MiniTVMError(
                f"function {fname!r}: output {e.name_hint!r} is a dataflow variable, invisible outside "
                "its dataflow block; bind it with bb.emit_output(...) inside the block"
            )


class _TEArgs:
    """Converts emit_te arguments: tensor exprs → te placeholders, shapes → dims, scalars → PrimExprs."""

    def __init__(self, canonical: bool):
        self.canonical = canonical
        self.placeholders: list[te.Tensor] = []
        self.exprs: list[rx.Expr] = []
        self._memo: dict[int, te.Tensor] = {}

    def convert(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.convert(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self.convert(v) for v in value)
        if isinstance(value, dict):
            return {k: self.convert(v) for k, v in value.items()}
        if isinstance(value, rx.Tuple):
            return [self.convert(f) for f in value.fields]
        if isinstance(value, rx.ShapeExpr):
            return value.values
        if isinstance(value, rx.PrimValue):
            return value.value
        if isinstance(value, rx.Expr) and isinstance(value.struct_info, TupleStructInfo):
            # a variable bound to a tuple (concat(lv) with lv = (a, b)): its fields
            n = len(value.struct_info.fields)
            return [self.convert(rx.TupleGetItem(value, i)) for i in range(n)]
        if isinstance(value, rx.Expr) and isinstance(value.struct_info, PrimStructInfo):
            return self._scalar_param(value)
        if isinstance(value, rx.Expr):
            return self._placeholder(value)
        return value

    def _scalar_param(self, e: rx.Expr) -> Any:
        """A scalar (R.Prim) argument: its known value, or a scalar parameter of the kernel
        (TVM's `rhs: T.float32`), passed by call_tir in the argument's position."""
        sinfo = e.struct_info
        if sinfo.value is not None:
            return sinfo.value
        if id(e) in self._memo:
            return self._memo[id(e)]
        n = len(self.placeholders)
        name = _canonical_name(n) if self.canonical else getattr(e, "name_hint", f"arg{n}")
        param = TirVar(name, sinfo.dtype)
        self._memo[id(e)] = param
        self.placeholders.append(param)
        self.exprs.append(e)
        return param

    def _placeholder(self, e: rx.Expr) -> te.Tensor:
        if id(e) in self._memo:
            return self._memo[id(e)]
        sinfo = e.struct_info
        if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None or sinfo.dtype is None:
            name = getattr(e, "name_hint", type(e).__name__)
            raise MiniTVMError(
                f"emit_te: argument {name!r} has struct info {sinfo}; te functions need tensors of known "
                "shape and dtype (use bb.match_cast to give it one)"
            )
        n = len(self.placeholders)
        if self.canonical:
            name = _canonical_name(n)
        else:
            name = (
                e.name_hint
                if isinstance(e, rx.Var)
                else ("const" if isinstance(e, rx.Constant) else f"arg{n}")
            )
        ph = te.placeholder(sinfo.shape, str(sinfo.dtype), name=name)
        self._memo[id(e)] = ph
        self.placeholders.append(ph)
        self.exprs.append(e)
        return ph


def _unbound_dim_vars(tensors: list[te.Tensor], scalars: Any = ()) -> list[TirVar]:
    """Vars in the tensors' shapes or in the PrimExprs of `scalars` (converted arguments:
    nested lists, tuples and dicts) that no tensor has as a plain dim, in order of appearance."""
    plain: set[int] = set()
    seen: dict[int, TirVar] = {}
    for t in tensors:
        if isinstance(t, TirVar):  # a scalar parameter (an R.Prim argument) is bound already
            plain.add(id(t))
            continue
        plain.update(id(d) for d in t.shape if isinstance(d, TirVar))
        for v in shape_vars(TensorStructInfo(t.shape, t.dtype)):
            seen.setdefault(id(v), v)
    for v in _scalar_vars(scalars):
        seen.setdefault(id(v), v)
    return [v for k, v in seen.items() if k not in plain]


def _scalar_vars(value: Any) -> list[TirVar]:
    """The tir.Vars in the PrimExprs of `value` (nested lists, tuples and dicts; te Tensors
    are not PrimExprs: their dims count as tensor dims), in order of appearance."""
    from ..tir.functor import post_order_visit

    out: list[TirVar] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(reversed(list(v.values())))
        elif isinstance(v, list | tuple):
            stack.extend(reversed(v))
        elif isinstance(v, PrimExpr):
            post_order_visit(v, lambda n: out.append(n) if isinstance(n, TirVar) else None)
    return out


def _tir_vars_arg(extra: Sequence[TirVar]) -> rx.ShapeExpr | None:
    """The call_tir's tir_vars: the caller's own vars, evaluated where the call runs."""
    return rx.ShapeExpr(tuple(extra)) if extra else None


def _one_or_list(out_sinfo: list) -> Any:
    return out_sinfo if len(out_sinfo) > 1 else out_sinfo[0]


# Values a call_te argument or attribute may hold that `_te_key` spells out exactly.
_PLAIN = (int, str, bool, type(None))


def _te_key(func: Callable, name: str, conv: _TEArgs, args: list, kwargs: dict) -> tuple | None:
    """What the PrimFunc made by `func(*args, **kwargs)` depends on, or None when an argument
    is of a kind not spelled out here (such a call is not cached)."""
    slots = {id(p): k for k, p in enumerate(conv.placeholders)}
    keep: list = []  # symbolic dims keyed by identity stay alive with the key

    def key(v: Any) -> Any:
        if isinstance(v, te.Tensor) and id(v) in slots:
            return ("tensor", slots[id(v)])
        if isinstance(v, float):
            return (float, repr(v))  # -0.0 is not 0.0 here, and nan is nan
        if isinstance(v, _PLAIN):
            return (type(v), v)
        if isinstance(v, IntImm):
            return ("imm", str(v.dtype), v.value)
        if isinstance(v, TirVar):
            keep.append(v)
            return ("var", id(v))
        if isinstance(v, list | tuple):
            items = [key(x) for x in v]
            return None if None in items else (type(v), *items)
        return None

    parts = [key(list(args)), key(sorted(kwargs.items()))]
    parts += [key((tuple(getattr(p, "shape", ())), str(p.dtype))) for p in conv.placeholders]
    if None in parts:
        return None
    return (func, name, conv.canonical, tuple(parts), tuple(keep))


def _canonical_name(n: int) -> str:
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return letters[n] if n < len(letters) else f"A{n}"
