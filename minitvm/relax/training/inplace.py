"""In-place execution of an optimizer's flat-form update (`Optimizer.compile()`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...error import MiniTVMError
from ...ir.module import IRModule
from ...runtime import NDArray, nd
from ...tir.function import PrimFunc
from ..expr import Call, Constant, Function, Op, Tuple, TupleGetItem, Var
from ..functor import argument_vars
from ..struct_info import TupleStructInfo

if TYPE_CHECKING:
    from .optimizer import Optimizer


class InPlaceUpdate:
    """Runs an optimizer's function with its outputs written into the inputs' storage.

    The function goes through LegalizeOps, FuseOps/FuseTIR and the default schedule; its kernels
    are compiled into one native module. Each kernel is then called in destination-passing style:
    an output that becomes parameter i (state k) is written into parameter i's (state k's)
    NDArray, unless a later kernel still reads the old value (then a temporary is used and
    copied back). `inplace` lists the outputs written directly into their input's storage.
    """

    def __init__(self, opt: Optimizer, target: str = "llvm") -> None:
        from ... import driver
        from .. import transform

        self.opt = opt
        func = opt.get_flat_function()
        mod = IRModule({"main": func})
        for p in (
            transform.LegalizeOps(),
            transform.AnnotateTIROpPattern(),
            transform.FuseOps(),
            transform.FuseTIR(),
            transform.DeadCodeElimination(),
            transform.DefaultSchedule(),
        ):
            mod = p(mod)
        prims = IRModule()
        for gv, f in mod.functions_items():
            if isinstance(f, PrimFunc):
                prims[gv.name_hint] = f.with_attr("global_symbol", gv.name_hint)
        native = driver.build(prims, target=target)
        self.n_params = len(opt.param_sinfo)
        self.state = [nd.array(s) for s in opt.state_init()]
        self.num_kernels = 0
        self._plan(mod["main"], native)

    def _plan(self, main: Function, native: Any) -> None:
        params = list(main.params)
        n = self.n_params
        # input slot of each function param: ("param", i) / ("grad", i) / ("state", k)
        slot = {
            p: ("param", k) if k < n else ("grad", k - n) if k < 2 * n else ("state", k - 2 * n)
            for k, p in enumerate(params)
        }
        bindings = [b for block in main.body.blocks for b in block.bindings]
        out = main.body.body
        while isinstance(out, Var) and any(b.var is out for b in bindings):
            value = next(b.value for b in bindings if b.var is out)
            if not isinstance(value, Tuple):
                break
            out = value
        if not isinstance(out, Tuple):
            raise MiniTVMError("optimizer: the fused function does not end in a tuple of outputs")
        # which output var (or tuple field) becomes which input slot
        target_of: dict[Any, tuple] = {}
        for j, f in enumerate(out.fields):
            dest = ("param", j) if j < n else ("state", j - n)
            target_of[f] = dest
        alias = {}
        for b in bindings:  # var -> (call var, field) for TupleGetItem of a multi-output kernel
            if isinstance(b.value, TupleGetItem):
                alias[b.var] = (b.value.tuple_value, b.value.index)
        later_reads: list[set] = []
        seen: set = set()
        for b in reversed(bindings):
            later_reads.append(set(seen))
            seen |= set(argument_vars(b.value))
        later_reads.reverse()
        later_reads_out = set(argument_vars(out))
        steps = []
        self.inplace: list[tuple] = []
        self.copies: list[tuple] = []
        for k, b in enumerate(bindings):
            v = b.value
            if not (isinstance(v, Call) and isinstance(v.op, Op) and v.op.name == "relax.call_tir"):
                if isinstance(v, TupleGetItem | Tuple | Var):
                    steps.append(("bind", b.var, v))
                    continue
                raise MiniTVMError(
                    f"optimizer: unexpected binding {b.var.name_hint} = {v!r} after fusion"
                )
            fn = native[v.args[0].name_hint]
            self.num_kernels += 1
            args = [
                nd.array(a.data.numpy()) if isinstance(a, Constant) else a for a in v.args[1].fields
            ]
            sinfo = v.sinfo_args[0]
            fields = list(sinfo.fields) if isinstance(sinfo, TupleStructInfo) else [sinfo]
            outs = []
            for i, s in enumerate(fields):
                who = (
                    b.var
                    if len(fields) == 1
                    else next(
                        (a for a, (cv, idx) in alias.items() if cv is b.var and idx == i), None
                    )
                )
                dest = target_of.get(who)
                if dest is not None:
                    src = next(p for p, sl in slot.items() if sl == dest)
                    if src not in later_reads[k] and src not in later_reads_out:
                        outs.append(("input", dest))
                        self.inplace.append(dest)
                        continue
                    self.copies.append(dest)
                outs.append(("new", tuple(int(d) for d in s.shape), s.dtype.numpy_dtype(), dest))
            steps.append(("call", b.var, fn, args, outs, len(fields) > 1))
        self._steps = steps
        self._slot = slot
        self._out = out

    def __call__(self, params: Sequence[NDArray], grads: Sequence[NDArray]) -> None:
        """One update: `params` (and the optimizer state) are updated in place."""
        if len(params) != self.n_params or len(grads) != self.n_params:
            raise MiniTVMError(
                f"{self.opt.name}: expected {self.n_params} params and grads, got {len(params)} and {len(grads)}"
            )
        inputs = {"param": list(params), "grad": list(grads), "state": self.state}
        env: dict = {p: inputs[kind][i] for p, (kind, i) in self._slot.items()}
        copy_back = []
        for step in self._steps:
            if step[0] == "bind":
                _, var, v = step
                env[var] = _eval(v, env)
                continue
            _, var, fn, args, outs, is_tuple = step
            arrays = []
            for o in outs:
                if o[0] == "input":
                    kind, i = o[1]
                    arrays.append(inputs[kind][i])
                else:
                    arr = nd.empty(o[1], o[2])
                    arrays.append(arr)
                    if o[3] is not None:
                        copy_back.append((o[3], arr))
            fn(*[a if isinstance(a, NDArray) else env[a] for a in args], *arrays)
            env[var] = tuple(arrays) if is_tuple else arrays[0]
        for (kind, i), arr in copy_back:
            inputs[kind][i].copyfrom(arr)

    step = __call__


def _eval(e: Any, env: dict) -> Any:
    if isinstance(e, Var):
        return env[e]
    if isinstance(e, Tuple):
        return tuple(_eval(f, env) for f in e.fields)
    return _eval(e.tuple_value, env)[e.index]


__all__ = ["InPlaceUpdate"]
