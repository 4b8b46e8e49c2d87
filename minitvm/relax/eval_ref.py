"""A reference evaluator for graph-level functions: the oracle for tests (and later for the VM).

High-level ops run through their numpy reference from the op table; `call_tir` compiles the
PrimFunc with the build driver and calls it; `call_dps_packed` calls the registered function.
Symbolic dims are bound from the argument shapes (and checked for consistency).

    out = relax.eval_ref.evaluate(mod, x_np, w_np)          # runs mod["main"]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..error import MiniTVMError, ShapeError
from ..ir.module import GlobalVar, IRModule
from ..ir.structural import structural_hash
from ..tir.expr import IntImm, PrimExpr
from ..tir.expr import Var as TirVar
from ..tir.function import PrimFunc
from ..tir.functor import substitute
from . import expr as rx
from . import struct_info as si


def eval_dim(d: PrimExpr, env: Mapping[TirVar, int], what: str = "dim") -> int:
    """The integer value of a shape expression under the bindings in `env`."""
    if isinstance(d, IntImm):
        return d.value
    from ..arith import Analyzer

    value = Analyzer().simplify(substitute(d, {v: IntImm(v.dtype, n) for v, n in env.items()}))
    if not isinstance(value, IntImm):
        raise ShapeError(f"{what}: cannot evaluate {d}: some symbolic dims are not bound ({value})")
    return value.value


class Evaluator:
    """Runs relax Functions of `mod` on numpy arrays."""

    def __init__(self, mod: IRModule, target: str = "llvm"):
        self.mod, self.target = mod, target
        self._kernels: dict[int, list[tuple[PrimFunc, Any]]] = {}

    def run(self, name: str, *args: Any) -> Any:
        func = self.mod[name]
        if not isinstance(func, rx.Function):
            raise MiniTVMError(
                f"evaluate: {name!r} is a {type(func).__name__}, not a relax Function"
            )
        return self.call_function(func, [_as_value(a) for a in args], name)

    # ------------------------------------------------------------------ functions
    def call_function(self, func: rx.Function, args: list[Any], name: str) -> Any:
        if len(args) != len(func.params):
            raise MiniTVMError(f"{name}: expected {len(func.params)} arguments, got {len(args)}")
        env: dict[Any, Any] = {}
        dims: dict[TirVar, int] = {}
        for p, a in zip(func.params, args):  # a dim expression may use a later param's dim
            _bind_plain_dims(p.struct_info, a, dims)
        for p, a in zip(func.params, args):
            _match(p.struct_info, a, dims, f"{name}: argument '{p.name_hint}'")
            env[p] = a
        out = self.eval(func.body, env, dims)
        _match(func.ret_struct_info, out, dict(dims), f"{name}: return value")
        return out

    def eval(self, e: Any, env: dict, dims: dict) -> Any:
        if isinstance(e, rx.Var):
            return env[e]
        if isinstance(e, rx.Constant):
            return e.data.numpy()
        if isinstance(e, rx.ShapeExpr):
            return tuple(eval_dim(d, dims) for d in e.values)
        if isinstance(e, rx.PrimValue):
            return eval_prim(e.value, dims)
        if isinstance(e, rx.StringImm):
            return e.value
        if isinstance(e, rx.Tuple):
            return tuple(self.eval(f, env, dims) for f in e.fields)
        if isinstance(e, rx.TupleGetItem):
            return self.eval(e.tuple_value, env, dims)[e.index]
        if isinstance(e, rx.SeqExpr):
            for block in e.blocks:
                for b in block.bindings:
                    value = self.eval(b.value, env, dims)
                    if isinstance(b, rx.MatchCast):
                        _match(b.struct_info, value, dims, f"match_cast to '{b.var.name_hint}'")
                    env[b.var] = value
            return self.eval(e.body, env, dims)
        if isinstance(e, rx.If):
            cond = bool(np.asarray(self.eval(e.cond, env, dims)))
            return self.eval(e.true_branch if cond else e.false_branch, env, dims)
        if isinstance(e, rx.Call):
            return self.call(e, env, dims)
        raise MiniTVMError(f"evaluate: cannot evaluate a {type(e).__name__}")

    # ------------------------------------------------------------------ calls
    def call(self, call: rx.Call, env: dict, dims: dict) -> Any:
        op = call.op
        if isinstance(op, rx.Op):
            if op.name == "relax.call_tir":
                return self._call_tir(call, env, dims)
            if op.name == "relax.call_dps_packed":
                return self._call_dps_packed(call, env, dims)
            ref = op.op_def.numpy if op.op_def is not None else None
            if ref is None:
                raise MiniTVMError(f"evaluate: op {op.name} has no numpy reference")
            args = [self.eval(a, env, dims) for a in call.args]
            out = ref(*args, **dict(call.attrs))
            return tuple(out) if isinstance(out, list | tuple) else np.asarray(out)
        if isinstance(op, GlobalVar):
            callee = self.mod[op]
            if not isinstance(callee, rx.Function):
                raise MiniTVMError(
                    f"evaluate: {op.name_hint} is not a relax Function; use call_tir"
                )
            return self.call_function(
                callee, [self.eval(a, env, dims) for a in call.args], op.name_hint
            )
        raise MiniTVMError(f"evaluate: cannot call {op!r}")

    def _outputs(self, call: rx.Call, dims: dict) -> tuple[list[np.ndarray], bool]:
        sinfo = call.sinfo_args[0]
        fields = list(sinfo.fields) if isinstance(sinfo, si.TupleStructInfo) else [sinfo]
        outs = []
        for s in fields:
            shape = tuple(eval_dim(d, dims, "call output") for d in s.shape)
            outs.append(np.empty(shape, dtype=s.dtype.numpy_dtype()))
        return outs, isinstance(sinfo, si.TupleStructInfo)

    def _call_tir(self, call: rx.Call, env: dict, dims: dict) -> Any:
        gv = call.args[0]
        kernel = self.kernel(self.mod[gv], gv.name_hint)
        inputs = [np.array(a, order="C") for a in self.eval(call.args[1], env, dims)]
        outs, is_tuple = self._outputs(call, dims)
        # tir_vars: the caller's symbolic expressions, passed after the tensors as int scalars
        scalars = self.eval(call.args[2], env, dims) if len(call.args) > 2 else ()
        kernel(*inputs, *outs, *scalars)
        return tuple(outs) if is_tuple else outs[0]

    def _call_dps_packed(self, call: rx.Call, env: dict, dims: dict) -> Any:
        from ..runtime import get_global_func, nd

        fn = get_global_func(call.args[0].global_symbol)
        inputs = [nd.array(np.array(a, order="C")) for a in self.eval(call.args[1], env, dims)]
        outs, is_tuple = self._outputs(call, dims)
        out_nd = [nd.array(o) for o in outs]
        fn(*inputs, *out_nd)
        results = [o.numpy() for o in out_nd]
        return tuple(results) if is_tuple else results[0]

    def kernel(self, prim: PrimFunc, name: str) -> Any:
        """The compiled PrimFunc (built once per structurally distinct function)."""
        from ..driver import build

        key = structural_hash(prim, map_free_vars=True)
        for cached, fn in self._kernels.get(key, []):
            if cached is prim:
                return fn
        module = build(prim, target=self.target, name=name)
        fn = module[name]
        self._kernels.setdefault(key, []).append((prim, fn))
        return fn


def evaluate(mod: IRModule | rx.Function, *args: Any, func_name: str = "main") -> Any:
    """Run `mod[func_name]` (or the Function itself) on numpy arrays; returns arrays / tuples."""
    if isinstance(mod, rx.Function):
        mod = IRModule({func_name: mod})
    return Evaluator(mod).run(func_name, *args)


# ----------------------------------------------------------------------------- values and matching


def _as_value(a: Any) -> Any:
    if isinstance(a, tuple | list):
        return tuple(_as_value(x) for x in a)
    if hasattr(a, "numpy") and not isinstance(a, np.ndarray):
        return np.asarray(a.numpy())
    return np.asarray(a) if not isinstance(a, int | float) else a


def eval_prim(e: PrimExpr, dims: Mapping[TirVar, int]) -> Any:
    from ..arith import Analyzer

    value = Analyzer().simplify(substitute(e, {v: IntImm(v.dtype, n) for v, n in dims.items()}))
    if not hasattr(value, "value"):
        raise MiniTVMError(f"evaluate: cannot evaluate the scalar {e}")
    return value.value


def _match(sinfo: si.StructInfo, value: Any, dims: dict, what: str) -> None:
    """Check `value` against `sinfo`, binding symbolic dims seen for the first time."""
    if isinstance(sinfo, si.ObjectStructInfo):
        return
    if isinstance(sinfo, si.TupleStructInfo):
        if not isinstance(value, tuple) or len(value) != len(sinfo.fields):
            raise ShapeError(
                f"{what}: expected a tuple of {len(sinfo.fields)} values, got {type(value).__name__}"
            )
        for n, (s, v) in enumerate(zip(sinfo.fields, value)):
            _match(s, v, dims, f"{what}[{n}]")
        return
    if isinstance(sinfo, si.ShapeStructInfo):
        if sinfo.values is not None:  # R.Shape(["n"]) binds n from the value
            _match_dims(sinfo.values, tuple(value), dims, what)
        return
    if isinstance(sinfo, si.PrimStructInfo):
        if sinfo.value is not None and str(sinfo.dtype).startswith(("int", "uint")):
            _match_dims((sinfo.value,), (int(value),), dims, what)
        return
    if isinstance(sinfo, si.TensorStructInfo):
        if not isinstance(value, np.ndarray):
            raise ShapeError(f"{what}: expected a tensor, got {type(value).__name__}")
        if sinfo.dtype is not None and np.dtype(value.dtype) != sinfo.dtype.numpy_dtype():
            raise ShapeError(f"{what}: dtype is {value.dtype}, expected {sinfo.dtype}")
        if sinfo.ndim != -1 and value.ndim != sinfo.ndim:
            raise ShapeError(f"{what}: has {value.ndim} dims {value.shape}, expected {sinfo.ndim}")
        if sinfo.shape is not None:
            _match_dims(sinfo.shape, value.shape, dims, what)
        return
    raise MiniTVMError(f"{what}: cannot check struct info {type(sinfo).__name__}")


def _bind_plain_dims(sinfo: si.StructInfo, value: Any, dims: dict) -> None:
    """Bind the dims a tensor argument gives as plain vars (`n` of `(n, n - 2)`); `_match`
    then checks every dim, these included."""
    shape = getattr(sinfo, "shape", None) if isinstance(sinfo, si.TensorStructInfo) else None
    if shape is None or not isinstance(value, np.ndarray) or value.ndim != len(shape):
        return
    for d, n in zip(shape, value.shape):
        if isinstance(d, TirVar) and d not in dims:
            dims[d] = n


def _match_dims(want_dims: Any, values: tuple, dims: dict, what: str) -> None:
    """Bind each dim var seen for the first time; check every other dim against `values`."""
    if len(want_dims) != len(values):
        raise ShapeError(f"{what}: has {len(values)} dims {values}, expected {len(want_dims)}")
    for k, (d, n) in enumerate(zip(want_dims, values)):
        if isinstance(d, TirVar) and d not in dims:
            dims[d] = n
            continue
        want = eval_dim(d, dims, what)
        if want != n:
            raise ShapeError(f"{what}: dim {k} is {n}, expected {want} ({d}) for shape {values}")


__all__ = ["Evaluator", "eval_dim", "evaluate"]
