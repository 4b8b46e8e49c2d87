"""`relax.call_tir_with_grad`: a `call_tir` that names a TE function computing its gradient
(TVM's API for differentiating a hand-written kernel).

    @register_te_gradient("f_mul_grad")
    def f_mul_grad(output_grad, a, b):              # te tensors in, one te tensor per input out
        return [te.compute(a.shape, lambda *i: b[i] * output_grad[i]), ...]

    lv = R.call_tir_with_grad(cls.f_mul, (a, b), out_sinfo=..., te_grad_name="f_mul_grad")

It runs exactly as `call_tir` (LegalizeOps rewrites it to one). `relax.transform.Gradient`
calls the registered function with the output's adjoint, the kernel's inputs and
`te_grad_kwargs`, and turns it into a PrimFunc of the module (`call_te`): one gradient per
input. The registry holds Python functions the program registered; nothing read from a file
can name one that is not registered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...error import TVMError
from ...ir.module import GlobalVar
from ...ir.node import FrozenDict
from ...topi.utils import prove_equal
from ..expr import Call, TupleGetItem
from ..struct_info import StructInfo, TupleStructInfo
from ._table import OpPattern, make_call, register_op
from .base import _args_tuple, _out_sinfo, call_tir
from .shape_ops import BUILTIN_LOWERING

TE_GRADIENTS: dict[str, Callable[..., Any]] = {}


def register_te_gradient(te_grad_name: str, te_grad_func: Callable | None = None) -> Any:
    """Register `te_grad_func(output_grad, *inputs, **te_grad_kwargs) -> [te.Tensor per input]`
    under `te_grad_name`; used as a decorator when `te_grad_func` is omitted."""

    def register(func: Callable) -> Callable:
        if not callable(func):
            raise TVMError(f"register_te_gradient({te_grad_name!r}): expected a function")
        TE_GRADIENTS[str(te_grad_name)] = func
        return func

    return register if te_grad_func is None else register(te_grad_func)


def _infer(call: Call) -> StructInfo:
    return call.sinfo_args[0]


_call_tir_with_grad = register_op("relax.call_tir_with_grad", _infer, None, None, OpPattern.OPAQUE)


def call_tir_with_grad(
    gvar: GlobalVar,
    args: Any,
    out_sinfo: Any,
    te_grad_name: str,
    te_grad_kwargs: dict | None = None,
    tir_vars: Any = None,
) -> Call:
    """`call_tir(gvar, args, out_sinfo)` whose gradient is the TE function `te_grad_name`."""
    if not isinstance(gvar, GlobalVar):
        raise TVMError(
            f"call_tir_with_grad: the callee must be a GlobalVar of a PrimFunc, got {gvar!r}"
        )
    if tir_vars is not None:
        raise TVMError("call_tir_with_grad: tir_vars are not supported; use call_tir")
    attrs = {"te_grad_name": str(te_grad_name), "te_grad_kwargs": FrozenDict(te_grad_kwargs or {})}
    return make_call(
        _call_tir_with_grad,
        (gvar, _args_tuple(args)),
        attrs,
        sinfo_args=(_out_sinfo(out_sinfo, "call_tir_with_grad"),),
    )


def _lower(call: Call) -> Call:
    return call_tir(call.args[0], call.args[1], call.sinfo_args[0])


BUILTIN_LOWERING["relax.call_tir_with_grad"] = _lower


def _grad_rule(var, call, g, em) -> list:
    name = call.attrs["te_grad_name"]
    func = TE_GRADIENTS.get(name)
    if func is None:
        raise TVMError(
            f"relax.Gradient: call_tir_with_grad names the gradient {name!r}, which is not "
            f"registered; register it with relax.training.utils.register_te_gradient({name!r}) "
            f"(registered: {sorted(TE_GRADIENTS)})"
        )
    if isinstance(var.struct_info, TupleStructInfo):
        raise TVMError(
            f"relax.Gradient: call_tir_with_grad {name!r} returns a tuple; only kernels with one "
            "output can carry a TE gradient"
        )
    inputs = list(call.args[1].fields)
    kwargs = dict(call.attrs["te_grad_kwargs"])
    bb = getattr(em, "bb", em)  # relax.Gradient's emitter, or a BlockBuilder (FPrimalGradient)
    out = em.emit(bb.call_te(func, g, *inputs, primfunc_name_hint=name, **kwargs))
    n = len(inputs)
    fields = [out] if not isinstance(out.struct_info, TupleStructInfo) else None
    got = 1 if fields else len(out.struct_info.fields)
    if got != n:
        raise TVMError(
            f"relax.Gradient: the TE gradient {name!r} returned {got} tensors for a kernel of "
            f"{n} inputs; return one gradient per input"
        )
    fields = fields or [em.emit(TupleGetItem(out, i)) for i in range(n)]
    for k, (grad, x) in enumerate(zip(fields, inputs)):
        a, b = grad.struct_info, x.struct_info
        same = (
            getattr(a, "dtype", None) == getattr(b, "dtype", None)
            and a.shape is not None
            and b.shape is not None
            and len(a.shape) == len(b.shape)
            and all(prove_equal(p, q) for p, q in zip(a.shape, b.shape))
        )
        if not same:
            raise TVMError(
                f"relax.Gradient: the TE gradient {name!r} gives input {k} a gradient of {a}, "
                f"but the input is {b}; each gradient must have its input's shape and dtype"
            )
    return [None, fields]


def _install() -> None:
    import dataclasses

    from ._table import OP_TABLE

    op = _call_tir_with_grad
    # The rule is the user's TE function, so it is not a GRAD_RULES row (whose rows each have a
    # torch case in the tests); tests/relax/test_grad_tvm_api.py checks it against torch.
    op.op_def = dataclasses.replace(op.op_def, grad=_grad_rule)
    OP_TABLE[op.name] = op.op_def


_install()

__all__ = ["TE_GRADIENTS", "call_tir_with_grad", "register_te_gradient"]
