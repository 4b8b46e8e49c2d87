"""Relay type inference: fills every expression's `checked_type`.

An op call's type comes from the op's relax form (relay/op/_registry.py) built on relax
variables of the argument types: the relax shape rules are the one source of truth.
"""

from __future__ import annotations

import re
from typing import Any

from ..error import MiniTVMError, ShapeError
from ..ir.module import GlobalVar, IRModule
from ..ir.recursion import deep_recursion
from ..relax import expr as rx
from ..relax.struct_info import TensorStructInfo, TupleStructInfo
from ..tir.expr import IntImm
from .expr import Call, Constant, Expr, Function, If, Let, Op, Tuple, TupleGetItem, Var
from .expr_functor import ExprFunctor
from .ty import FuncType, TensorType, TupleType, Type


class RelayTypeError(ShapeError):
    """A Relay program whose types do not check (wrong shapes or dtypes for an op)."""


def to_struct_info(ty: Type) -> Any:
    """The relax struct info of a relay type."""
    if isinstance(ty, TensorType):
        return TensorStructInfo(ty.shape, ty.dtype)
    if isinstance(ty, TupleType):
        return TupleStructInfo([to_struct_info(f) for f in ty.fields])
    raise RelayTypeError(f"a {type(ty).__name__} cannot be an operator argument")


def from_struct_info(sinfo: Any, where: str) -> Type:
    """The relay type of a relax struct info (shapes must be known)."""
    if isinstance(sinfo, TensorStructInfo):
        if sinfo.shape is None:
            raise RelayTypeError(f"{where}: the result shape is unknown ({sinfo})")
        dims = [int(d.value) if isinstance(d, IntImm) else d for d in sinfo.shape]
        return TensorType(dims, str(sinfo.dtype))
    if isinstance(sinfo, TupleStructInfo):
        return TupleType([from_struct_info(f, where) for f in sinfo.fields])
    raise RelayTypeError(f"{where}: unsupported result {sinfo}")


def _identity(value: Any) -> Any:
    return value


def _describe_args(types: list[Type]) -> str:
    return ", ".join(str(t) for t in types)


def op_result_type(op: Op, arg_types: list[Type], attrs: Any) -> Type:
    """The type of `op(args)` for arguments of `arg_types` (raises RelayTypeError)."""
    if op.op_def is None:
        raise RelayTypeError(f"op {op.name!r} has no definition in the Relay op table")
    params = [rx.Var(f"arg{i}", to_struct_info(t)) for i, t in enumerate(arg_types)]
    try:
        out = op.op_def.to_relax(_identity, params, attrs)
        return from_struct_info(out.struct_info, op.name)
    except RelayTypeError:
        raise
    except MiniTVMError as err:
        # the relax rule's own op prefix is dropped: the message names the Relay call instead
        message = re.sub(r"^relax\.[\w.]+: ", f"{op.name}: ", str(err))
        message = message.replace("relax.op.astype", "relay.cast")
        raise RelayTypeError(
            f"type error in a call of {op.name}({_describe_args(arg_types)}): {message}"
        ) from err


class _Inferer(ExprFunctor):
    """Computes each node's type once and stores it in the node's `_checked_type_`."""

    def __init__(self, mod: IRModule | None):
        super().__init__()
        self.mod = mod
        self.bound: dict[Var, Type] = {}  # let-bound vars and call-bound function params
        self.globals: dict[str, Type] = {}

    def visit(self, expr: Any) -> Type:
        ty = super().visit(expr)
        if isinstance(expr, Expr) and not isinstance(expr, Op):
            object.__setattr__(expr, "_checked_type_", ty)
        return ty

    def visit_var(self, v: Var) -> Type:
        ty = self.bound.get(v) or v.type_annotation
        if ty is None:
            raise RelayTypeError(
                f"variable %{v.name_hint} has no type: give it one, e.g. "
                f"relay.var({v.name_hint!r}, shape=(1, 3), dtype='float32')"
            )
        return ty

    def visit_constant(self, c: Constant) -> Type:
        return TensorType(c.data.shape, c.data.dtype)

    def visit_tuple(self, tup: Tuple) -> Type:
        return TupleType([self.visit(f) for f in tup.fields])

    def visit_tuple_getitem(self, item: TupleGetItem) -> Type:
        ty = self.visit(item.tuple_value)
        if not isinstance(ty, TupleType):
            raise RelayTypeError(f"TupleGetItem [{item.index}] of a non-tuple of type {ty}")
        if not 0 <= item.index < len(ty.fields):
            raise RelayTypeError(f"TupleGetItem [{item.index}] of a {len(ty.fields)}-tuple {ty}")
        return ty.fields[item.index]

    def visit_op(self, op: Op) -> Type:
        raise RelayTypeError(f"op {op.name} used as a value; call it: relay.{op.name}(...)")

    def visit_global_var(self, gv: GlobalVar) -> Type:
        if gv.name_hint not in self.globals:
            if self.mod is None or gv not in self.mod:
                raise RelayTypeError(f"call of @{gv.name_hint}, which is not in the module")
            self.globals[gv.name_hint] = self.visit(self.mod[gv])
        return self.globals[gv.name_hint]

    def visit_call(self, c: Call) -> Type:
        if isinstance(c.op, Op):
            return op_result_type(c.op, self._op_arg_types(c), c.attrs)
        arg_types = [self.visit(a) for a in c.args]
        if isinstance(c.op, Function):
            self._bind_params(c.op, arg_types)
        fty = self.visit(c.op)
        if not isinstance(fty, FuncType):
            raise RelayTypeError(f"call of a non-function of type {fty}")
        if len(fty.arg_types) != len(arg_types):
            raise RelayTypeError(
                f"function of {len(fty.arg_types)} parameters called with {len(arg_types)} arguments"
            )
        for i, (want, got) in enumerate(zip(fty.arg_types, arg_types)):
            if want != got:
                raise RelayTypeError(f"argument {i}: function expects {want}, got {got}")
        return fty.ret_type

    def _op_arg_types(self, c: Call) -> list[Type]:
        """Argument types; untyped weight variables get theirs from the op's fill rule."""
        untyped = [
            isinstance(a, Var) and a.type_annotation is None and a not in self.bound for a in c.args
        ]
        types = [None if u else self.visit(a) for a, u in zip(c.args, untyped)]
        rule = _FILL.get(c.op.name)
        if any(untyped) and rule is not None and isinstance(types[0], TensorType):
            for arg, ty, u in zip(c.args, rule(types, c.attrs), untyped):
                if u and ty is not None:
                    self.bound[arg] = ty
        return [self.visit(a) if u else t for a, t, u in zip(c.args, types, untyped)]

    def _bind_params(self, func: Function, arg_types: list[Type]) -> None:
        """Parameters without annotations take the types of the call's arguments."""
        for p, t in zip(func.params, arg_types):
            if p.type_annotation is None:
                self.bound.setdefault(p, t)

    def visit_function(self, func: Function) -> Type:
        ret = self.visit(func.body)  # first: it may give untyped weight params their types
        params = [self.visit(p) for p in func.params]
        if func.ret_type is not None and not _declared_fits(func.ret_type, ret):
            raise RelayTypeError(f"function declared to return {func.ret_type}, its body is {ret}")
        return FuncType(params, ret)

    def visit_let(self, let: Let) -> Type:
        value = self.visit(let.value)
        if let.var.type_annotation is not None and not _declared_fits(
            let.var.type_annotation, value
        ):
            raise RelayTypeError(
                f"let %{let.var.name_hint}: annotated {let.var.type_annotation}, value is {value}"
            )
        self.bound[let.var] = value
        self.visit(let.var)
        return self.visit(let.body)

    def visit_if(self, node: If) -> Type:
        cond = self.visit(node.cond)
        if not (isinstance(cond, TensorType) and cond.shape == () and cond.dtype == "bool"):
            raise RelayTypeError(f"if: the condition must be a bool scalar, got {cond}")
        then, other = self.visit(node.true_branch), self.visit(node.false_branch)
        if then != other:
            raise RelayTypeError(f"if: the branches have different types: {then} and {other}")
        return then


# ----------------------------------------------------------------------------- weight types
# TVM's classic style leaves weights untyped (`relay.var("weight")`) and lets inference find
# their shapes from the data and the attrs. op -> rule(arg types, attrs) giving the types of
# the weights it can deduce (data, argument 0, is typed).


def _channels(data: TensorType, axis: int) -> TensorType:
    return TensorType((data.shape[axis % data.ndim],), data.dtype)


def _fill_conv2d(types: list, attrs: Any) -> list:
    data = types[0]
    if (
        attrs.channels is None
        or attrs.kernel_size is None
        or set(attrs.kernel_layout) != set("OIHW")
    ):
        return types
    in_channels = data.shape[attrs.data_layout.index("C")]
    dims = {"O": attrs.channels, "I": in_channels // attrs.groups, "H": attrs.kernel_size[0]}
    dims["W"] = attrs.kernel_size[1]
    return [data, TensorType([dims[a] for a in attrs.kernel_layout], data.dtype)]


def _fill_dense(types: list, attrs: Any) -> list:
    data = types[0]
    if attrs.units is None:
        return types
    return [data, TensorType((attrs.units, data.shape[-1]), data.dtype)]


def _fill_per_channel(types: list, attrs: Any) -> list:
    return [types[0]] + [_channels(types[0], attrs.axis)] * (len(types) - 1)


def _fill_conv2d_transpose(types: list, attrs: Any) -> list:
    data = types[0]
    if attrs.channels is None or attrs.kernel_size is None or attrs.kernel_layout != "IOHW":
        return types
    in_channels = data.shape[attrs.data_layout.index("C")]
    shape = (in_channels, attrs.channels // attrs.groups, *attrs.kernel_size)
    return [data, TensorType(shape, data.dtype)]


_FILL = {
    "nn.conv2d": _fill_conv2d,
    "nn.conv2d_transpose": _fill_conv2d_transpose,
    "nn.dense": _fill_dense,
    "nn.bias_add": _fill_per_channel,
    "nn.batch_norm": _fill_per_channel,
    "nn.layer_norm": _fill_per_channel,
}


def _with_ret_type(func: Function) -> Function:
    """The function with its inferred return type written in `ret_type` (as TVM prints it)."""
    if func.ret_type is not None:
        return func
    out = func.replace(ret_type=func.checked_type.ret_type)
    object.__setattr__(out, "_checked_type_", func.checked_type)
    return out


def infer_type(mod_or_expr: IRModule | Expr, mod: IRModule | None = None) -> Any:
    """Fill `checked_type` everywhere; a module comes back as a new module, an expr as itself."""
    with deep_recursion():
        if isinstance(mod_or_expr, IRModule):
            inferer = _Inferer(mod_or_expr)
            out = mod_or_expr.copy()
            for gv, func in mod_or_expr.functions_items():
                if isinstance(func, Function):
                    inferer.visit_global_var(gv)
                    out[gv] = _with_ret_type(func)
            return out
        _Inferer(mod).visit(mod_or_expr)
        return mod_or_expr


def _is_any_dim(d: Any) -> bool:
    name = getattr(d, "name", None)
    return isinstance(name, str) and name.startswith("any_dim")


def _declared_fits(declared: Type, actual: Type) -> bool:
    """An annotation agrees with an inferred type: equal, except that a `?` dim
    (`relay.Any()`) of the annotation accepts any size, as TVM's type unifier does."""
    if declared == actual:
        return True
    if isinstance(declared, TensorType) and isinstance(actual, TensorType):
        return (
            declared.dtype == actual.dtype
            and len(declared.shape) == len(actual.shape)
            and all(
                _is_any_dim(d) or d == a
                for d, a in zip(declared.shape, actual.shape)
            )
        )
    if isinstance(declared, TupleType) and isinstance(actual, TupleType):
        return len(declared.fields) == len(actual.fields) and all(
            _declared_fits(d, a) for d, a in zip(declared.fields, actual.fields)
        )
    return False
