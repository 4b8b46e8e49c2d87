"""Reverse-mode automatic differentiation on relax functions (`relax.transform.Gradient`).

`Gradient("main")(mod)` adds `main_adjoint`, which computes main's bindings, then the backward
pass, and returns `(original output, (grad of each required param, ...))`. The backward pass is
made of ordinary op calls produced by the op table's gradient rules (relax/op/grad.py), so it
is legalized, fused and memory-planned like the forward pass, and can be differentiated again.

`backprop` is the one mechanism: given bindings recorded in order, a target variable and the
variables to differentiate against, it emits the adjoint bindings through the same builder.
The dlsys API (`minitvm.autodiff.gradients`) uses it too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...error import ShapeError, TVMError
from ...ir.module import IRModule
from ...topi.utils import const_int, fmt_shape
from ..block_builder import BlockBuilder
from ..expr import (
    Call,
    Constant,
    Expr,
    Function,
    MatchCast,
    Op,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
    is_leaf,
)
from ..functor import argument_vars, substitute_vars
from ..op import elementwise
from ..op.base import call_tir
from ..op.grad import ones_like, zeros_like
from ..struct_info import TensorStructInfo, TupleStructInfo
from .gradient_checkpoint import Regions, Rematerializer, marker_of


class Emitter:
    """Emits values through a BlockBuilder in A-normal form and records every binding, so a
    backward pass can walk them (nested calls are bound first, and recorded, by this class)."""

    def __init__(self, bb: BlockBuilder) -> None:
        self.bb = bb
        self.bindings: list[tuple[Var, Expr]] = []
        self._values: dict[int, Expr] = {}  # id(var) -> its value (bindings keep vars alive)
        self.bound: dict[Var, Expr] = {}  # var -> the value the function binds it to
        self.rewrite: Any = None  # set for the backward pass of a checkpointed function

    def value_of(self, var: Expr) -> Expr | None:
        """The value `var` was bound to by this emitter, or None."""
        return self._values.get(id(var))

    def emit(self, expr: Expr, name_hint: str = "", lower: Any = None) -> Expr:
        """Bind `expr`, recorded for the backward pass; `lower(value)`, when given and not None,
        is an equivalent value the function holds instead (a call_tir_with_grad's call_tir)."""
        if is_leaf(expr):
            return expr
        value = self._leaves(expr)
        if self.rewrite is not None:
            value = self.rewrite(value)
        emitted = lower(value) if lower is not None else None
        bound = value if emitted is None else emitted
        var = self.bb.emit(bound, name_hint)
        self.bindings.append((var, value))
        self._values[id(var)] = value
        self.bound[var] = bound
        return var

    def match_cast(self, value: Expr, sinfo: Any, name_hint: str = "") -> Var:
        """Bind `value` with struct info `sinfo` checked at run time (it names the dims of a
        data-dependent shape, so TE kernels can take it). Recorded as an alias of `value`: the
        adjoint passes through unchanged."""
        value = self._leaf(value)
        if self.rewrite is not None:
            value = self.rewrite(value)
        var = self.bb.match_cast(value, sinfo, name_hint)
        self.bindings.append((var, value))
        self._values[id(var)] = value
        self.bound[var] = value
        return var

    def _leaf(self, e: Any) -> Any:
        if is_leaf(e):
            return e
        if isinstance(e, Tuple):
            return Tuple(tuple(self._leaf(f) for f in e.fields))
        return self.emit(e)

    def _leaves(self, e: Expr) -> Expr:
        if isinstance(e, Call):
            return Call(e.op, tuple(self._leaf(a) for a in e.args), e.attrs, e.sinfo_args)
        if isinstance(e, Tuple):
            return Tuple(tuple(self._leaf(f) for f in e.fields))
        if isinstance(e, TupleGetItem):
            return TupleGetItem(self._leaf(e.tuple_value), e.index)
        return e


def _is_float(sinfo: Any) -> bool:
    if isinstance(sinfo, TensorStructInfo):
        return sinfo.dtype is not None and sinfo.dtype.is_float
    if isinstance(sinfo, TupleStructInfo):
        return any(_is_float(f) for f in sinfo.fields)
    return False


class _Adjoints:
    """The adjoint of each variable, summed as contributions arrive (tensors: one running sum;
    tuples: one per field). Each contribution is emitted when it arrives, so a parameter's
    gradient is computed next to the forward values it reads, which are then dead."""

    def __init__(self, em: Emitter) -> None:
        self.em = em
        self.parts: dict[Var, Any] = {}

    def _accumulate(self, total: Expr | None, grad: Expr, hint: str) -> Expr:
        grad = self.em.emit(grad, hint)
        return grad if total is None else self.em.emit(elementwise.add(total, grad), hint)

    def add(self, var: Var, grad: Any) -> None:
        if grad is None:
            return
        hint = f"{var.name_hint}_adjoint"
        if isinstance(var.struct_info, TupleStructInfo):
            n = len(var.struct_info.fields)
            slots = self.parts.setdefault(var, [None] * n)
            for i, gi in enumerate(_fields_of(grad, n)):
                if gi is not None:
                    gi = _as_expr(var.struct_info.fields[i], gi)
                    slots[i] = self._accumulate(slots[i], gi, hint)
        else:
            self.parts[var] = self._accumulate(self.parts.get(var), grad, hint)

    def add_field(self, var: Var, index: int, grad: Any) -> None:
        n = len(var.struct_info.fields)
        grad = _as_expr(var.struct_info.fields[index], grad)
        slots = self.parts.setdefault(var, [None] * n)
        slots[index] = self._accumulate(slots[index], grad, f"{var.name_hint}_adjoint")

    def total(self, var: Var) -> Any:
        """The summed adjoint (None if nothing flowed in; a list per field for tuples)."""
        return self.parts.get(var)


class GradientError(TVMError, ValueError):
    """relax.Gradient cannot differentiate the function as asked (a TVMError, as in TVM; a
    ValueError too, which TVM raises for a function name the module lacks)."""


def _check_target(target: Expr) -> None:
    sinfo = target.struct_info
    if not isinstance(sinfo, TensorStructInfo) or not _is_float(sinfo):
        raise GradientError(
            f"relax.Gradient: the target {target!r} must be a float tensor, got {sinfo}"
        )


def backprop(
    em: Emitter,
    target: Var,
    wrt: Sequence[Var],
    seed: Expr | None = None,
    bindings: Sequence[tuple[Var, Expr]] | None = None,
) -> list[Expr | None]:
    """Emit the adjoints of `wrt` for `target` (seeded with `seed`, default ones) through `em`.

    Walks `bindings` (default: all recorded by `em`) backwards from target's binding; returns one
    emitted adjoint per `wrt` variable, or None where target does not depend on it.
    """
    bindings = list(em.bindings if bindings is None else bindings)
    _check_target(target)
    pos = next((k for k, (v, _) in enumerate(bindings) if v is target), None)
    prefix = bindings[: pos + 1] if pos is not None else []
    needs: set[Var] = {w for w in wrt if _is_float(w.struct_info)}
    for var, value in prefix:
        if _is_float(var.struct_info) and any(v in needs for v in argument_vars(value)):
            needs.add(var)
    adj = _Adjoints(em)
    adj.add(target, seed if seed is not None else ones_like(target))
    for var, value in reversed(prefix):
        if var not in needs or var not in adj.parts:
            continue
        g = adj.total(var)
        _propagate(var, value, g, needs, adj, em)
    return [adj.total(w) if w in needs else None for w in wrt]


def _fields_of(g: Any, n: int) -> list:
    """The per-field adjoints of a tuple adjoint given as a list, a Tuple or a tuple-valued expr."""
    if isinstance(g, list):
        return g
    if isinstance(g, Tuple):
        return list(g.fields)
    return [TupleGetItem(g, i) for i in range(n)]


def _as_expr(sinfo: Any, g: Any) -> Expr:
    """An adjoint as one expression: lists of field adjoints become Tuples (zeros where None)."""
    if not isinstance(sinfo, TupleStructInfo) or not isinstance(g, list):
        return g
    from ..op import create

    fields = []
    for fs, gi in zip(sinfo.fields, g):
        if gi is None:
            gi = (
                create.zeros(tuple(fs.shape), str(fs.dtype))
                if isinstance(fs, TensorStructInfo)
                else _as_expr(fs, [None] * len(fs.fields))
            )
        fields.append(_as_expr(fs, gi))
    return Tuple(tuple(fields))


def _distribute(field: Any, g: Any, needs: set, adj: _Adjoints) -> None:
    """Send adjoint `g` to `field`, a variable or a (nested) Tuple literal of them."""
    if g is None:
        return
    if isinstance(field, Var):
        if field in needs:
            adj.add(field, g)
    elif isinstance(field, Tuple):
        for f, gi in zip(field.fields, _fields_of(g, len(field.fields))):
            _distribute(f, gi, needs, adj)


def _propagate(var: Var, value: Expr, g: Any, needs: set, adj: _Adjoints, em: Emitter) -> None:
    if isinstance(value, Var | Tuple):
        _distribute(value, g, needs, adj)
        return
    if isinstance(value, TupleGetItem):
        tv = value.tuple_value
        if isinstance(tv, Var) and tv in needs and g is not None:
            adj.add_field(tv, value.index, g)
        return
    if isinstance(value, Constant) or is_leaf(value):
        return
    if not isinstance(value, Call) or not isinstance(value.op, Op):
        raise GradientError(
            f"relax.Gradient: cannot differentiate through {value!r} (bound to '{var.name_hint}'); "
            "only calls of relax ops (relax.op.*) have gradient rules"
        )
    rule = value.op.op_def.grad if value.op.op_def is not None else None
    if rule is None:
        raise GradientError(
            f"relax.Gradient: op {value.op.name} (bound to '{var.name_hint}') has no gradient rule; "
            "add one to GRAD_RULES in minitvm/relax/op/grad.py, or stop the gradient before it"
        )
    grads = rule(var, value, _as_expr(var.struct_info, g), em)
    for arg, ga in zip(value.args, grads):
        _distribute(arg, ga, needs, adj)


# ----------------------------------------------------------------------------- the pass


def _zeros_of(p: Var) -> Expr:
    """Zeros shaped like parameter `p` (a Tuple of zeros for a tuple parameter)."""
    if isinstance(p.struct_info, TupleStructInfo):
        return _as_expr(p.struct_info, [None] * len(p.struct_info.fields))
    return zeros_like(p)


def _require(func: Function, require_grads: Any, func_name: str) -> list[Var]:
    """The Vars to differentiate against: parameters, or (as in TVM) variables bound in the
    function's body, whose gradient is their adjoint."""
    if require_grads is None:
        return [p for p in func.params if _is_float(p.struct_info)]
    items = require_grads if isinstance(require_grads, list | tuple) else [require_grads]
    by_name = {p.name_hint: p for p in func.params}
    bound = [b.var for block in func.body.blocks for b in block.bindings]
    out = []
    for r in items:
        p = by_name.get(r) if isinstance(r, str) else r
        if p is None or not any(p is q for q in (*func.params, *bound)):
            raise GradientError(
                f"relax.Gradient: {r!r} is not a parameter of {func_name!r} nor a variable bound "
                f"in it; parameters are {[q.name_hint for q in func.params]}"
            )
        out.append(p)
    return out


def _as_call_tir(value: Expr) -> Expr | None:
    """A call_tir_with_grad's plain call_tir (its TE gradient is read from the recorded call,
    so the adjoint function holds the call_tir, as TVM's Gradient leaves it); else None."""
    if not (isinstance(value, Call) and isinstance(value.op, Op)):
        return None
    if value.op.name != "relax.call_tir_with_grad":
        return None
    return call_tir(value.args[0], value.args[1], value.sinfo_args[0])


def _forward(func: Function, func_name: str, em: Emitter, vmap: dict) -> Regions:
    """Emit func's bindings through `em` (vmap: func's Vars -> the adjoint's); checkpoint
    markers are dropped (their outputs alias their inputs) and their regions returned."""
    regions = Regions()
    for block in func.body.blocks:
        for b in block.bindings:
            regions.observe(b.var, b.value)
            value = substitute_vars(b.value, vmap)
            if isinstance(b, MatchCast):  # names dims (of a data-dependent shape, say)
                vmap[b.var] = em.match_cast(value, b.struct_info, b.var.name_hint)
            elif marker_of(value) is not None:
                vmap[b.var] = value.args[0]
            else:
                vmap[b.var] = em.emit(value, b.var.name_hint, _as_call_tir)
    return regions


def _check_wrt(new_wrt: list, wrt: list) -> None:
    for new, old in zip(new_wrt, wrt):
        if not isinstance(new, Var):
            raise GradientError(
                f"relax.Gradient: require_grads names '{old.name_hint}', which is bound to "
                f"{new!r}, not to a computed value; ask for the gradient of that value instead"
            )


def gradient(
    mod: IRModule, func_name: str, require_grads: Any = None, target_index: int = 0
) -> IRModule:
    """Add `<func_name>_adjoint` to `mod` (see the module docstring)."""
    if func_name not in mod:
        raise GradientError(f"relax.Gradient: the module has no function {func_name!r}")
    func = mod[func_name]
    if not isinstance(func, Function) or not isinstance(func.body, SeqExpr):
        raise GradientError(f"relax.Gradient: {func_name!r} is not a relax Function with a body")
    wrt = _require(func, require_grads, func_name)
    # the adjoint gets its own parameter Vars (a Var belongs to one function)
    params = [Var(p.name_hint, p.struct_info) for p in func.params]
    vmap: dict = dict(zip(func.params, params))
    bb = BlockBuilder(mod)
    with bb.function(f"{func_name}_adjoint", params):
        with bb.dataflow():
            em = Emitter(bb)
            regions = _forward(func, func_name, em, vmap)
            out = substitute_vars(func.body.body, vmap)
            target = out
            if isinstance(out.struct_info, TupleStructInfo):
                n = len(out.struct_info.fields)
                if not 0 <= target_index < n:
                    raise GradientError(
                        f"relax.Gradient: target_index={target_index}, but {func_name!r} returns "
                        f"a tuple of {n} values"
                    )
                target = (
                    out.fields[target_index]
                    if isinstance(out, Tuple)
                    else em.emit(TupleGetItem(out, target_index))
                )
            elif target_index != 0:
                raise GradientError(
                    f"relax.Gradient: target_index={target_index}, but {func_name!r} returns one "
                    "value, not a tuple; leave target_index at 0"
                )
            if not isinstance(target.struct_info, TensorStructInfo):
                raise GradientError(
                    f"relax.Gradient: the target (return value {target_index} of {func_name!r}) "
                    f"must be a tensor, got {target.struct_info}"
                )
            if not isinstance(target, Var):
                target = em.emit(target, "loss")
            sinfo = target.struct_info
            shape = getattr(sinfo, "shape", None)
            if getattr(sinfo, "ndim", None) == 0:
                shape = ()
            if shape is None or not all(const_int(d) == 1 for d in shape):
                raise ShapeError(
                    f"relax.Gradient: {func_name!r} must return a scalar loss (shape () or (1,)), "
                    f"got {fmt_shape(shape) if shape is not None else sinfo}; reduce it with "
                    "relax.op.sum or relax.op.mean"
                )
            new_wrt = [vmap[w] for w in wrt]
            _check_wrt(new_wrt, wrt)
            if regions.any():
                recomputed = {vmap[v] for v in regions.recomputed} - {vmap[v] for v in regions.kept}
                em.rewrite = Rematerializer(bb, {v: em.bound[v] for v in recomputed}).rewrite
            grads = backprop(em, target, new_wrt)
            grads = [
                _as_expr(p.struct_info, g) if g is not None else em.emit(_zeros_of(p))
                for g, p in zip(grads, new_wrt)
            ]
            result = bb.emit_output(Tuple((out, Tuple(tuple(grads)))))
        bb.emit_func_output(result)
    return bb.get()


__all__ = ["Emitter", "GradientError", "backprop", "gradient"]
