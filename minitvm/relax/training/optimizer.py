"""Optimizers as graph programs: SGD, momentum SGD, Adam.

Each optimizer builds a relax function

    main(p_1..p_n, g_1..g_n, s_1..s_m) -> (p'_1..p'_n, s'_1..s'_m)

(`get_function()`), which the reference evaluator or the VM can run like any other. To train,
`opt.compile(target)` returns an `InPlaceUpdate`: the function legalized and fused by the normal
passes, its kernels compiled, and run in destination-passing style with each updated parameter
(and state) written into the parameter's (state's) own storage — the VM allocates fresh outputs,
so the in-place step is this small executor, not the VM.

    opt = SGD(0.1).init([(784, 256), (256,)])
    step = opt.compile()
    step(params, grads)        # params (NDArrays) updated in place
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...error import MiniTVMError
from ...ir.module import IRModule
from ...runtime import NDArray, nd
from ...tir.function import PrimFunc
from .. import op as R
from ..block_builder import BlockBuilder
from ..expr import Call, Constant, Function, Op, Tuple, TupleGetItem, Var, const
from ..struct_info import TensorStructInfo, TupleStructInfo


def _sinfo(p: Any) -> TensorStructInfo:
    if isinstance(p, Var):
        return p.struct_info
    if isinstance(p, np.ndarray | NDArray):
        return TensorStructInfo(tuple(p.shape), str(p.dtype))
    if isinstance(p, TensorStructInfo):
        return p
    return TensorStructInfo(tuple(p), "float32")


class Optimizer:
    """Base: subclasses list their state (`_state_specs`) and one update rule (`_update`)."""

    name = "optimizer"

    def __init__(self, lr: float) -> None:
        self.lr = float(lr)
        self.param_sinfo: list[TensorStructInfo] | None = None

    def init(self, params: Sequence[Any]) -> Optimizer:
        """Parameters as relax Vars, arrays, TensorStructInfos or shapes (float32)."""
        self.param_sinfo = [_sinfo(p) for p in params]
        for k, s in enumerate(self.param_sinfo):
            if s.shape is None or s.dtype is None or not s.dtype.is_float:
                raise MiniTVMError(
                    f"{self.name}: parameter {k} must be a float tensor of known shape, got {s}"
                )
        return self

    def _require_init(self) -> list[TensorStructInfo]:
        if self.param_sinfo is None:
            raise MiniTVMError(f"{self.name}: call .init(params) before using the optimizer")
        return self.param_sinfo

    # subclasses ---------------------------------------------------------------
    def _state_specs(self) -> list[TensorStructInfo]:
        return []

    def _update(
        self, bb: BlockBuilder, params: list, grads: list, state: list
    ) -> tuple[list, list]:
        raise NotImplementedError

    # ---------------------------------------------------------------------------
    def state_init(self) -> list[np.ndarray]:
        """Initial state values (zeros)."""
        self._require_init()
        return [
            np.zeros(tuple(int(d) for d in s.shape), dtype=s.dtype.numpy_dtype())
            for s in self._state_specs()
        ]

    def get_function(self) -> Function:
        """The update as a relax function (see the module docstring)."""
        sinfos = self._require_init()
        params = [Var(f"p{k}", s) for k, s in enumerate(sinfos)]
        grads = [Var(f"g{k}", s) for k, s in enumerate(sinfos)]
        state = [Var(f"s{k}", s) for k, s in enumerate(self._state_specs())]
        bb = BlockBuilder()
        with bb.function("main", params + grads + state):
            with bb.dataflow():
                new_params, new_state = self._update(bb, params, grads, state)
                out = bb.emit_output(Tuple(tuple(new_params) + tuple(new_state)))
            bb.emit_func_output(out)
        return bb.get()["main"]

    def compile(self, target: str = "llvm") -> InPlaceUpdate:
        """The in-place update step (see `InPlaceUpdate`)."""
        return InPlaceUpdate(self, target)


def _c(x: Any, v: float) -> Any:
    return const(v, str(x.struct_info.dtype))


class SGD(Optimizer):
    """p' = p - lr * (g + weight_decay * p)."""

    name = "SGD"

    def __init__(self, lr: float, weight_decay: float = 0.0) -> None:
        super().__init__(lr)
        self.weight_decay = float(weight_decay)

    def _update(self, bb, params, grads, state):
        out = []
        for p, g in zip(params, grads):
            if self.weight_decay:
                g = R.add(g, R.multiply(p, _c(p, self.weight_decay)))
            out.append(bb.emit(R.subtract(p, R.multiply(g, _c(p, self.lr)))))
        return out, []


class MomentumSGD(Optimizer):
    """v' = momentum * v + (g + weight_decay * p); p' = p - lr * v' (PyTorch's form)."""

    name = "MomentumSGD"

    def __init__(self, lr: float, momentum: float = 0.9, weight_decay: float = 0.0) -> None:
        super().__init__(lr)
        self.momentum, self.weight_decay = float(momentum), float(weight_decay)

    def _state_specs(self):
        return list(self._require_init())

    def _update(self, bb, params, grads, state):
        new_p, new_v = [], []
        for p, g, v in zip(params, grads, state):
            if self.weight_decay:
                g = R.add(g, R.multiply(p, _c(p, self.weight_decay)))
            v2 = bb.emit(R.add(R.multiply(v, _c(v, self.momentum)), g))
            new_v.append(v2)
            new_p.append(bb.emit(R.subtract(p, R.multiply(v2, _c(p, self.lr)))))
        return new_p, new_v


class Adam(Optimizer):
    """Adam (Kingma & Ba) with bias correction; state: (step, m_1..m_n, v_1..v_n)."""

    name = "Adam"

    def __init__(
        self,
        lr: float = 1e-3,
        beta1: float = 0.9,
        beta2: float = 0.999,
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__(lr)
        self.beta1, self.beta2, self.eps = float(beta1), float(beta2), float(eps)
        self.weight_decay = float(weight_decay)

    def _state_specs(self):
        sinfos = self._require_init()
        return [TensorStructInfo((), sinfos[0].dtype)] + list(sinfos) + list(sinfos)

    def _update(self, bb, params, grads, state):
        n = len(params)
        t, ms, vs = state[0], state[1 : n + 1], state[n + 1 :]
        t2 = bb.emit(R.add(t, _c(t, 1.0)))
        corr1 = bb.emit(R.subtract(_c(t, 1.0), R.power(_c(t, self.beta1), t2)))
        corr2 = bb.emit(R.subtract(_c(t, 1.0), R.power(_c(t, self.beta2), t2)))
        new_p, new_m, new_v = [], [], []
        for p, g, m, v in zip(params, grads, ms, vs):
            if self.weight_decay:
                g = R.add(g, R.multiply(p, _c(p, self.weight_decay)))
            m2 = bb.emit(
                R.add(R.multiply(m, _c(m, self.beta1)), R.multiply(g, _c(g, 1 - self.beta1)))
            )
            v2 = bb.emit(
                R.add(
                    R.multiply(v, _c(v, self.beta2)),
                    R.multiply(R.multiply(g, g), _c(g, 1 - self.beta2)),
                )
            )
            mhat = R.divide(m2, corr1)
            vhat = R.divide(v2, corr2)
            step = R.divide(R.multiply(mhat, _c(p, self.lr)), R.add(R.sqrt(vhat), _c(p, self.eps)))
            new_p.append(bb.emit(R.subtract(p, step)))
            new_m.append(m2)
            new_v.append(v2)
        return new_p, [t2] + new_m + new_v


# ----------------------------------------------------------------------------- in-place execution


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
        func = opt.get_function()
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
            seen |= set(_vars(b.value))
        later_reads.reverse()
        later_reads_out = set(_vars(out))
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


def _vars(e: Any) -> list:
    if isinstance(e, Var):
        return [e]
    if isinstance(e, Call):
        return [v for a in e.args for v in _vars(a)]
    if isinstance(e, Tuple):
        return [v for f in e.fields for v in _vars(f)]
    if isinstance(e, TupleGetItem):
        return _vars(e.tuple_value)
    return []


def _eval(e: Any, env: dict) -> Any:
    if isinstance(e, Var):
        return env[e]
    if isinstance(e, Tuple):
        return tuple(_eval(f, env) for f in e.fields)
    return _eval(e.tuple_value, env)[e.index]


__all__ = ["SGD", "Adam", "InPlaceUpdate", "MomentumSGD", "Optimizer"]
